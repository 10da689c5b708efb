// Cross-replica collectives (GCL's, gcl/Collectives.hpp): program steps of a replicated graph
// (Graph(target, replication_factor(r))) that combine the replicas' copies of a tensor. Each is
// one library-call step (a Kernel step the engine runs between the executor's steps): at it,
// the replicas of a run meet, and every replica's result is the same bytes, reduced in replica
// order 0, 1, ..., r-1 (so equal to a run of any other engine with the same r).
//
// Operators (CollectiveOperator, GCL's): ADD, MUL, MIN, MAX; MEAN (the sum divided by r, in
// float: FLOAT and HALF only); SQUARE_ADD (the sum of squares); LOGICAL_AND and LOGICAL_OR
// (BOOL only); LOCAL (each replica keeps its own data: nothing is exchanged). Types: FLOAT and
// HALF (combined in float, HALF rounded once at the end), INT and UNSIGNED_INT (ADD, MUL and
// SQUARE_ADD wrap modulo 2^32), BOOL (the logical operators). Other pairs raise type_error;
// data and destination of different types or sizes shape_error or type_error, each naming the
// call and the tensors.
//
// Runs: an engine's replicas run at once in one process; started by mpiexec, each rank's engine
// runs its share of the replicas and the collectives meet the other ranks' over MPI (engine
// option aspen.collectives.transport; docs/architecture.md "Replicated graphs"). On the CPU the
// contributions are combined in replica order either way, so the results are the same bytes. A replica or
// rank whose run ends, or fails, without reaching the collective the others wait at fails them
// with an error naming it; replicas at different collectives fail naming both; every wait also
// has a deadline (engine option aspen.collectives.timeout, seconds, default 600).
//
// On a GPU, NCCL runs the collectives on the executor's stream when it can (engine option
// aspen.collectives.onDevice); its summation order is its own, so GPU results may differ from the
// CPU's in their last bits.
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>

namespace aspen {

namespace collectives {

enum class CollectiveOperator {
  ADD,
  MEAN,
  MUL,
  MIN,
  MAX,
  LOGICAL_AND,
  LOGICAL_OR,
  SQUARE_ADD,
  LOCAL,
};

// "ADD", "MEAN", ...
ASPEN_API const char *toString(CollectiveOperator op);

// A new tensor (a clone of data) holding the all-reduce of data.
ASPEN_API Tensor allReduceCrossReplica(Graph &graph, const Tensor &data, CollectiveOperator op,
                                       program::Sequence &prog, const DebugContext &debug = {},
                                       const OptionFlags &options = {});
// data replaced by its all-reduce.
ASPEN_API void allReduceInPlaceCrossReplica(Graph &graph, Tensor &data, CollectiveOperator op,
                                            program::Sequence &prog,
                                            const DebugContext &debug = {},
                                            const OptionFlags &options = {});
// destination (data's type and element count) set to data's all-reduce.
ASPEN_API void allReduceToDestinationCrossReplica(Graph &graph, const Tensor &data,
                                                  Tensor &destination, CollectiveOperator op,
                                                  program::Sequence &prog,
                                                  const DebugContext &debug = {},
                                                  const OptionFlags &options = {});

// Reduce-scatter: data's n elements (any shape, in element order) reduced over the replicas,
// then cut into r pieces of ceil(n / r) (the last zero-padded): replica i's result, a new
// [ceil(n / r)] tensor, is piece i. Operators and types as the all-reduce's, LOCAL refused.
ASPEN_API Tensor reduceScatterCrossReplica(Graph &graph, const Tensor &data,
                                           CollectiveOperator op, program::Sequence &prog,
                                           const DebugContext &debug = {},
                                           const OptionFlags &options = {});
// All-gather: a new [r, data's shape] tensor holding every replica's data, replica i's at [i]
// (the same in every replica). Any of the five types.
ASPEN_API Tensor allGatherCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                                       const DebugContext &debug = {},
                                       const OptionFlags &options = {});
// Broadcast: a new tensor (a clone of data) holding replica rootReplica's data in every replica
// (index_error for a root past the replicas). An Aspen spelling: GCL's own name for it was not
// found in the sources read.
ASPEN_API Tensor broadcastCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                                       unsigned rootReplica = 0, const DebugContext &debug = {},
                                       const OptionFlags &options = {});

} // namespace collectives

namespace program {

// The step the functions above add: result = the all-reduce of data over the replicas (data and
// result may be one tensor).
class ASPEN_API CrossReplicaAllReduce : public Program {
public:
  CrossReplicaAllReduce(const Tensor &data, const Tensor &result,
                        collectives::CollectiveOperator op, const DebugContext &debug = {});
};
// The steps of the other calls (result sized as the call above says; shape_error otherwise).
class ASPEN_API CrossReplicaReduceScatter : public Program {
public:
  CrossReplicaReduceScatter(const Tensor &data, const Tensor &result,
                            collectives::CollectiveOperator op, const DebugContext &debug = {});
};
class ASPEN_API CrossReplicaAllGather : public Program {
public:
  CrossReplicaAllGather(const Tensor &data, const Tensor &result, const DebugContext &debug = {});
};
class ASPEN_API CrossReplicaBroadcast : public Program {
public:
  CrossReplicaBroadcast(const Tensor &data, const Tensor &result, unsigned rootReplica,
                        const DebugContext &debug = {});
};

} // namespace program

} // namespace aspen
