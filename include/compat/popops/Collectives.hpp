// PopLibs' older <popops/Collectives.hpp> (before GCL took the collectives over), mapped onto
// <aspen/Collectives.hpp>: popops::CollectiveOperator (Aspen's, which also has MEAN), its
// stream operators, operationToCollectiveOperator, and the replicated calls PopLibs deprecated
// in favour of GCL's, deprecated here too:
//   replicatedAllReduce            gcl::allReduceCrossReplica (also the form with a parent
//                                  graph, which Aspen's one-graph replication does not need)
//   replicatedAllReduceWithOutput  gcl::allReduceToDestinationCrossReplica
//   replicatedAllReduceInPlace     gcl::allReduceInPlaceCrossReplica
//   replicatedReduceScatter        gcl::reduceScatterCrossReplica (ceil(n / r) a replica,
//                                  zero-padded: this header's contract, which Aspen kept)
//   replicatedAllGather            gcl::allGatherCrossReplica
//   allToAllPersonalizedExchange   gcl::allToAllCrossReplica
// each with a popops::CollectiveOperator or a popops::Operation (LOG_ADD has no collective:
// poputil::poplibs_error). Not here: the non-replicated reduceScatter, allGather and allReduce
// over popops::Chunks, which reduce across the IPUs of one replica (no Aspen counterpart).
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <popops/Operation.hpp>
#include <poputil/exceptions.hpp>
#include <aspen/Collectives.hpp>

#include <istream>
#include <ostream>
#include <string>

namespace aspen::collectives {

// Written and read as the enumerator's name ("ADD", "SQUARE_ADD"), as PopLibs does.
inline std::ostream &operator<<(std::ostream &os, const CollectiveOperator &op) {
  return os << toString(op);
}

inline std::istream &operator>>(std::istream &in, CollectiveOperator &op) {
  std::string word;
  in >> word;
  for (unsigned i = 0; i <= unsigned(CollectiveOperator::LOCAL); ++i)
    if (word == toString(CollectiveOperator(i))) {
      op = CollectiveOperator(i);
      return in;
    }
  throw poputil::poplibs_error("Unrecognised collective operator '" + word +
                               "': popops::CollectiveOperator is one of ADD, MEAN, MUL, MIN, MAX, "
                               "LOGICAL_AND, LOGICAL_OR, SQUARE_ADD, LOCAL");
}

} // namespace aspen::collectives

namespace popops {

using CollectiveOperator = aspen::collectives::CollectiveOperator;

// The collective operator of the same name.
inline CollectiveOperator operationToCollectiveOperator(const Operation &op) {
  const std::string name = aspen::ops::toString(op);
  for (unsigned i = 0; i <= unsigned(CollectiveOperator::LOCAL); ++i)
    if (name == aspen::collectives::toString(CollectiveOperator(i)))
      return CollectiveOperator(i);
  throw poputil::poplibs_error("popops::operationToCollectiveOperator: Operation " + name +
                               " has no collective operator");
}

[[deprecated("use gcl::allReduceCrossReplica")]] inline poplar::Tensor
replicatedAllReduce(poplar::Graph &graph, const poplar::Tensor &data, CollectiveOperator op,
                    poplar::program::Sequence &prog, const poplar::DebugContext &debugContext = {},
                    const poplar::OptionFlags &options = {}) {
  return aspen::collectives::allReduceCrossReplica(graph, data, op, prog, debugContext, options);
}
[[deprecated("use gcl::allReduceCrossReplica")]] inline poplar::Tensor
replicatedAllReduce(poplar::Graph &graph, const poplar::Tensor &data, Operation op,
                    poplar::program::Sequence &prog, const poplar::DebugContext &debugContext = {},
                    const poplar::OptionFlags &options = {}) {
  return aspen::collectives::allReduceCrossReplica(
      graph, data, operationToCollectiveOperator(op), prog, debugContext, options);
}
// PopLibs' form for a graph made by parentGraph.createReplicatedGraph: Aspen replicates the
// whole graph (Graph::createReplicatedGraph), so `graph` alone holds everything needed.
[[deprecated("use gcl::allReduceCrossReplica")]] inline poplar::Tensor
replicatedAllReduce(poplar::Graph &graph, poplar::Graph & /*parentGraph*/,
                    const poplar::Tensor &data, CollectiveOperator op,
                    poplar::program::Sequence &prog, const poplar::DebugContext &debugContext = {},
                    const poplar::OptionFlags &options = {}) {
  return aspen::collectives::allReduceCrossReplica(graph, data, op, prog, debugContext, options);
}

[[deprecated("use gcl::allReduceToDestinationCrossReplica")]] inline void
replicatedAllReduceWithOutput(poplar::Graph &graph, const poplar::Tensor &data,
                              poplar::Tensor &output, CollectiveOperator op,
                              poplar::program::Sequence &prog,
                              const poplar::DebugContext &debugContext = {},
                              const poplar::OptionFlags &options = {}) {
  aspen::collectives::allReduceToDestinationCrossReplica(graph, data, output, op, prog,
                                                         debugContext, options);
}
[[deprecated("use gcl::allReduceToDestinationCrossReplica")]] inline void
replicatedAllReduceWithOutput(poplar::Graph &graph, const poplar::Tensor &data,
                              poplar::Tensor &output, Operation op,
                              poplar::program::Sequence &prog,
                              const poplar::DebugContext &debugContext = {},
                              const poplar::OptionFlags &options = {}) {
  aspen::collectives::allReduceToDestinationCrossReplica(
      graph, data, output, operationToCollectiveOperator(op), prog, debugContext, options);
}

[[deprecated("use gcl::allReduceInPlaceCrossReplica")]] inline void
replicatedAllReduceInPlace(poplar::Graph &graph, poplar::Tensor &data, CollectiveOperator op,
                           poplar::program::Sequence &prog,
                           const poplar::DebugContext &debugContext = {},
                           const poplar::OptionFlags &options = {}) {
  aspen::collectives::allReduceInPlaceCrossReplica(graph, data, op, prog, debugContext, options);
}
[[deprecated("use gcl::allReduceInPlaceCrossReplica")]] inline void
replicatedAllReduceInPlace(poplar::Graph &graph, poplar::Tensor &data, Operation op,
                           poplar::program::Sequence &prog,
                           const poplar::DebugContext &debugContext = {},
                           const poplar::OptionFlags &options = {}) {
  aspen::collectives::allReduceInPlaceCrossReplica(
      graph, data, operationToCollectiveOperator(op), prog, debugContext, options);
}

[[deprecated("use gcl::reduceScatterCrossReplica")]] inline poplar::Tensor
replicatedReduceScatter(poplar::Graph &graph, const poplar::Tensor &toReduce,
                        CollectiveOperator op, poplar::program::Sequence &prog,
                        const poplar::DebugContext &debugContext = {},
                        const poplar::OptionFlags &options = {}) {
  return aspen::collectives::reduceScatterCrossReplica(graph, toReduce, op, prog, debugContext,
                                                       options);
}
[[deprecated("use gcl::reduceScatterCrossReplica")]] inline poplar::Tensor
replicatedReduceScatter(poplar::Graph &graph, const poplar::Tensor &toReduce, Operation op,
                        poplar::program::Sequence &prog,
                        const poplar::DebugContext &debugContext = {},
                        const poplar::OptionFlags &options = {}) {
  return aspen::collectives::reduceScatterCrossReplica(
      graph, toReduce, operationToCollectiveOperator(op), prog, debugContext, options);
}

[[deprecated("use gcl::allGatherCrossReplica")]] inline poplar::Tensor
replicatedAllGather(poplar::Graph &graph, const poplar::Tensor &toGather,
                    poplar::program::Sequence &prog, const poplar::DebugContext &debugContext = {},
                    const poplar::OptionFlags &options = {}) {
  return aspen::collectives::allGatherCrossReplica(graph, toGather, prog, debugContext, options);
}

[[deprecated("use gcl::allToAllCrossReplica")]] inline poplar::Tensor
allToAllPersonalizedExchange(poplar::Graph &graph, const poplar::Tensor &input,
                             poplar::program::Sequence &sequence,
                             const poplar::DebugContext &debugContext = {},
                             const poplar::OptionFlags &options = {}) {
  return aspen::collectives::allToAllCrossReplica(graph, input, sequence, debugContext, options);
}

} // namespace popops
