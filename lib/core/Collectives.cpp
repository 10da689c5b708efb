// The cross-replica collectives' graph side (aspen/Collectives.hpp): each call adds one
// collective step (program::CrossReplica*; a multi-tensor all-reduce one a type) and makes its
// result; the steps' rules are CollectiveSteps.cpp's, and the engine runs them
// (lib/engine/Collectives.cpp).
#include "CollectiveSteps.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <algorithm>
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

const char *toString(CommGroupType type) {
  switch (type) {
  case CommGroupType::ALL:
    return "ALL";
  case CommGroupType::CONSECUTIVE:
    return "CONSECUTIVE";
  case CommGroupType::ORTHOGONAL:
    return "ORTHOGONAL";
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

// The size of `group`'s groups in graph's replicas, to size a result before its step is made
// (which checks the group again).
std::size_t groupSize(const Graph &graph, const CommGroup &group, const char *what,
                      const DebugContext &debug) {
  return detail::replicaGroupsOf(group, graph.getReplicationFactor(),
                                 fmt::format("collectives::{} '{}'", what, debug.getPathName()))
      .size;
}

// The all-reduce of datas[i] into results[i] for every i, one step a type: the tensors of a
// type flattened and concatenated in list order, the types in order of first appearance.
void fusedAllReduce(const std::vector<Tensor> &datas, const std::vector<Tensor> &results,
                    CollectiveOperator op, program::Sequence &prog, const CommGroup &group,
                    const DebugContext &debug, const char *what) {
  if (datas.size() != results.size())
    throw shape_error(fmt::format("collectives::{} '{}': {} data tensors for {} destinations; "
                                  "the lists must be as long as each other",
                                  what, debug.getPathName(), datas.size(), results.size()));
  std::vector<Type> types;
  for (std::size_t i = 0; i < datas.size(); ++i) {
    if (!datas[i].valid() || !results[i].valid())
      throw control_program_error(fmt::format("collectives::{} '{}': tensor {} of the list is "
                                              "invalid (default-constructed)",
                                              what, debug.getPathName(), i));
    const Type t = datas[i].elementType();
    if (results[i].elementType() != t || results[i].numElements() != datas[i].numElements())
      throw type_error(fmt::format(
          "collectives::{} '{}': destination {} {} is {} {}, its data {} {} {}; each destination "
          "must have its data's type and element count",
          what, debug.getPathName(), i, results[i].getDebugStr(),
          results[i].elementType().toString(), results[i].shapeToString(),
          datas[i].getDebugStr(), t.toString(), datas[i].shapeToString()));
    if (std::find(types.begin(), types.end(), t) == types.end())
      types.push_back(t);
  }
  for (Type t : types) {
    std::vector<Tensor> in, out;
    for (std::size_t i = 0; i < datas.size(); ++i)
      if (datas[i].elementType() == t) {
        in.push_back(datas[i].flatten());
        out.push_back(results[i].flatten());
      }
    prog.add(program::CrossReplicaAllReduce(concat(in), concat(out), op, group,
                                            {debug, "allReduce/" + t.toString()}));
  }
}

} // namespace

Tensor allReduceCrossReplica(Graph &graph, const Tensor &data, CollectiveOperator op,
                             program::Sequence &prog, const CommGroup &group,
                             const DebugContext &debug, const OptionFlags &options) {
  checkOptions(options, "allReduceCrossReplica");
  Tensor result = graph.clone(data, {debug, "result"});
  prog.add(program::CrossReplicaAllReduce(data, result, op, group, {debug, "allReduce"}));
  return result;
}

void allReduceInPlaceCrossReplica(Graph &, Tensor &data, CollectiveOperator op,
                                  program::Sequence &prog, const CommGroup &group,
                                  const DebugContext &debug, const OptionFlags &options) {
  checkOptions(options, "allReduceInPlaceCrossReplica");
  prog.add(program::CrossReplicaAllReduce(data, data, op, group, {debug, "allReduce"}));
}

void allReduceToDestinationCrossReplica(Graph &, const Tensor &data, Tensor &destination,
                                        CollectiveOperator op, program::Sequence &prog,
                                        const CommGroup &group, const DebugContext &debug,
                                        const OptionFlags &options) {
  checkOptions(options, "allReduceToDestinationCrossReplica");
  prog.add(program::CrossReplicaAllReduce(data, destination, op, group, {debug, "allReduce"}));
}

std::vector<Tensor> allReduceCrossReplica(Graph &graph, const std::vector<Tensor> &datas,
                                          CollectiveOperator op, program::Sequence &prog,
                                          const CommGroup &group, const DebugContext &debug,
                                          const OptionFlags &options) {
  checkOptions(options, "allReduceCrossReplica");
  std::vector<Tensor> results;
  for (std::size_t i = 0; i < datas.size(); ++i)
    results.push_back(datas[i].valid()
                          ? graph.clone(datas[i], {debug, "result" + std::to_string(i)})
                          : Tensor());
  fusedAllReduce(datas, results, op, prog, group, debug, "allReduceCrossReplica");
  return results;
}

void allReduceInPlaceCrossReplica(Graph &, std::vector<Tensor> &datas, CollectiveOperator op,
                                  program::Sequence &prog, const CommGroup &group,
                                  const DebugContext &debug, const OptionFlags &options) {
  checkOptions(options, "allReduceInPlaceCrossReplica");
  fusedAllReduce(datas, datas, op, prog, group, debug, "allReduceInPlaceCrossReplica");
}

void allReduceToDestinationCrossReplica(Graph &, const std::vector<Tensor> &datas,
                                        const std::vector<Tensor> &destinations,
                                        CollectiveOperator op, program::Sequence &prog,
                                        const CommGroup &group, const DebugContext &debug,
                                        const OptionFlags &options) {
  checkOptions(options, "allReduceToDestinationCrossReplica");
  fusedAllReduce(datas, destinations, op, prog, group, debug,
                 "allReduceToDestinationCrossReplica");
}

Tensor reduceScatterCrossReplica(Graph &graph, const Tensor &data, CollectiveOperator op,
                                 program::Sequence &prog, const CommGroup &group,
                                 const DebugContext &debug, const OptionFlags &options) {
  checkOptions(options, "reduceScatterCrossReplica");
  const std::size_t k = groupSize(graph, group, "reduceScatterCrossReplica", debug),
                    n = data.numElements();
  Tensor result = graph.addVariable(data.elementType(), {(n + k - 1) / k},
                                    VariableMappingMethod::LINEAR, {debug, "result"});
  prog.add(program::CrossReplicaReduceScatter(data, result, op, group, {debug, "reduceScatter"}));
  return result;
}

Tensor allGatherCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                             const CommGroup &group, const DebugContext &debug,
                             const OptionFlags &options) {
  checkOptions(options, "allGatherCrossReplica");
  std::vector<std::size_t> shape{groupSize(graph, group, "allGatherCrossReplica", debug)};
  for (std::size_t d : data.shape())
    shape.push_back(d);
  Tensor result = graph.addVariable(data.elementType(), shape, VariableMappingMethod::LINEAR,
                                    {debug, "result"});
  prog.add(program::CrossReplicaAllGather(data, result, group, {debug, "allGather"}));
  return result;
}

Tensor allToAllCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                            const CommGroup &group, const DebugContext &debug,
                            const OptionFlags &options) {
  checkOptions(options, "allToAllCrossReplica");
  Tensor result = graph.clone(data, {debug, "result"});
  prog.add(program::CrossReplicaAllToAll(data, result, group, {debug, "allToAll"}));
  return result;
}

Tensor broadcastCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                             const CommGroup &group, unsigned rootReplica,
                             const DebugContext &debug, const OptionFlags &options) {
  checkOptions(options, "broadcastCrossReplica");
  Tensor result = graph.clone(data, {debug, "result"});
  prog.add(
      program::CrossReplicaBroadcast(data, result, rootReplica, group, {debug, "broadcast"}));
  return result;
}

// The calls without a group: one group of all replicas.

Tensor allReduceCrossReplica(Graph &graph, const Tensor &data, CollectiveOperator op,
                             program::Sequence &prog, const DebugContext &debug,
                             const OptionFlags &options) {
  return allReduceCrossReplica(graph, data, op, prog, CommGroup(), debug, options);
}
void allReduceInPlaceCrossReplica(Graph &graph, Tensor &data, CollectiveOperator op,
                                  program::Sequence &prog, const DebugContext &debug,
                                  const OptionFlags &options) {
  allReduceInPlaceCrossReplica(graph, data, op, prog, CommGroup(), debug, options);
}
void allReduceToDestinationCrossReplica(Graph &graph, const Tensor &data, Tensor &destination,
                                        CollectiveOperator op, program::Sequence &prog,
                                        const DebugContext &debug, const OptionFlags &options) {
  allReduceToDestinationCrossReplica(graph, data, destination, op, prog, CommGroup(), debug,
                                     options);
}
std::vector<Tensor> allReduceCrossReplica(Graph &graph, const std::vector<Tensor> &datas,
                                          CollectiveOperator op, program::Sequence &prog,
                                          const DebugContext &debug,
                                          const OptionFlags &options) {
  return allReduceCrossReplica(graph, datas, op, prog, CommGroup(), debug, options);
}
void allReduceInPlaceCrossReplica(Graph &graph, std::vector<Tensor> &datas,
                                  CollectiveOperator op, program::Sequence &prog,
                                  const DebugContext &debug, const OptionFlags &options) {
  allReduceInPlaceCrossReplica(graph, datas, op, prog, CommGroup(), debug, options);
}
void allReduceToDestinationCrossReplica(Graph &graph, const std::vector<Tensor> &datas,
                                        const std::vector<Tensor> &destinations,
                                        CollectiveOperator op, program::Sequence &prog,
                                        const DebugContext &debug, const OptionFlags &options) {
  allReduceToDestinationCrossReplica(graph, datas, destinations, op, prog, CommGroup(), debug,
                                     options);
}
Tensor reduceScatterCrossReplica(Graph &graph, const Tensor &data, CollectiveOperator op,
                                 program::Sequence &prog, const DebugContext &debug,
                                 const OptionFlags &options) {
  return reduceScatterCrossReplica(graph, data, op, prog, CommGroup(), debug, options);
}
Tensor allGatherCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                             const DebugContext &debug, const OptionFlags &options) {
  return allGatherCrossReplica(graph, data, prog, CommGroup(), debug, options);
}
Tensor allToAllCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                            const DebugContext &debug, const OptionFlags &options) {
  return allToAllCrossReplica(graph, data, prog, CommGroup(), debug, options);
}
Tensor broadcastCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                             unsigned rootReplica, const DebugContext &debug,
                             const OptionFlags &options) {
  return broadcastCrossReplica(graph, data, prog, CommGroup(), rootReplica, debug, options);
}

} // namespace aspen::collectives
