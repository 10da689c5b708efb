// The cross-replica collectives' graph side (aspen/Collectives.hpp): each call adds one
// CrossReplicaAllReduce step; the engine runs it (lib/engine/Collectives.cpp).
#include <aspen/Collectives.hpp>
#include <aspen/Error.hpp>

#include <vector>

namespace aspen::collectives {

const char *toString(CollectiveOperator op) {
  switch (op) {
  case CollectiveOperator::ADD:
    return "ADD";
  case CollectiveOperator::MEAN:
    return "MEAN";
  case CollectiveOperator::MUL:
    return "MUL";
  case CollectiveOperator::MIN:
    return "MIN";
  case CollectiveOperator::MAX:
    return "MAX";
  case CollectiveOperator::LOGICAL_AND:
    return "LOGICAL_AND";
  case CollectiveOperator::LOGICAL_OR:
    return "LOGICAL_OR";
  case CollectiveOperator::SQUARE_ADD:
    return "SQUARE_ADD";
  case CollectiveOperator::LOCAL:
    return "LOCAL";
  }
  return "?";
}

namespace {

// GCL's options tune the IPU fabric only; Aspen takes none of its own yet, so any is refused.
void checkOptions(const OptionFlags &options, const char *what) {
  for (const auto &[key, value] : options)
    throw invalid_option(std::string("collectives::") + what + ": option '" + key + "' = '" +
                         value + "' is not known (the collectives take no options yet)");
}

} // namespace

Tensor allReduceCrossReplica(Graph &graph, const Tensor &data, CollectiveOperator op,
                             program::Sequence &prog, const DebugContext &debug,
                             const OptionFlags &options) {
  checkOptions(options, "allReduceCrossReplica");
  Tensor result = graph.clone(data, {debug, "result"});
  prog.add(program::CrossReplicaAllReduce(data, result, op, {debug, "allReduce"}));
  return result;
}

void allReduceInPlaceCrossReplica(Graph &, Tensor &data, CollectiveOperator op,
                                  program::Sequence &prog, const DebugContext &debug,
                                  const OptionFlags &options) {
  checkOptions(options, "allReduceInPlaceCrossReplica");
  prog.add(program::CrossReplicaAllReduce(data, data, op, {debug, "allReduce"}));
}

void allReduceToDestinationCrossReplica(Graph &, const Tensor &data, Tensor &destination,
                                        CollectiveOperator op, program::Sequence &prog,
                                        const DebugContext &debug, const OptionFlags &options) {
  checkOptions(options, "allReduceToDestinationCrossReplica");
  prog.add(program::CrossReplicaAllReduce(data, destination, op, {debug, "allReduce"}));
}

Tensor reduceScatterCrossReplica(Graph &graph, const Tensor &data, CollectiveOperator op,
                                 program::Sequence &prog, const DebugContext &debug,
                                 const OptionFlags &options) {
  checkOptions(options, "reduceScatterCrossReplica");
  const std::size_t r = graph.getReplicationFactor(), n = data.numElements();
  Tensor result = graph.addVariable(data.elementType(), {(n + r - 1) / r},
                                    VariableMappingMethod::LINEAR, {debug, "result"});
  prog.add(program::CrossReplicaReduceScatter(data, result, op, {debug, "reduceScatter"}));
  return result;
}

Tensor allGatherCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                             const DebugContext &debug, const OptionFlags &options) {
  checkOptions(options, "allGatherCrossReplica");
  std::vector<std::size_t> shape{graph.getReplicationFactor()};
  for (std::size_t d : data.shape())
    shape.push_back(d);
  Tensor result = graph.addVariable(data.elementType(), shape, VariableMappingMethod::LINEAR,
                                    {debug, "result"});
  prog.add(program::CrossReplicaAllGather(data, result, {debug, "allGather"}));
  return result;
}

Tensor broadcastCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                             unsigned rootReplica, const DebugContext &debug,
                             const OptionFlags &options) {
  checkOptions(options, "broadcastCrossReplica");
  Tensor result = graph.clone(data, {debug, "result"});
  prog.add(program::CrossReplicaBroadcast(data, result, rootReplica, {debug, "broadcast"}));
  return result;
}

} // namespace aspen::collectives
