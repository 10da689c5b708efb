// Cross-replica collectives (GCL's, gcl/Collectives.hpp): program steps of a replicated graph
// (Graph(target, replication_factor(r))) that combine the replicas' copies of a tensor. Each is
// one library-call step (a Kernel step the engine runs between the executor's steps): at it,
// the replicas of a run meet, and every replica of a group gets the same bytes, reduced in
// replica order (so equal to a run of any other engine with the same r).
//
// Replica groups (CommGroup, GCL's): every call takes one, in GCL's position (after the program,
// before the debug context); without one, all r replicas are one group. Of r replicas and a
// group size k (which must divide r; graph-time error naming the rule otherwise):
//   ALL          one group of all r replicas (GCL ignores the size, and so does Aspen);
//   CONSECUTIVE  r / k groups of k neighbours: {0..k-1}, {k..2k-1}, ...;
//   ORTHOGONAL   r / k groups of k replicas m = r / k apart: {0, m, 2m, ...}, {1, m+1, ...},
//                ..., {m-1, ..., r-1}.
// That is GCL's meaning as PopART's CommGroupType documents it (popart/commgroup.hpp); PopLibs
// uses ORTHOGONAL for replicas one IPU-Link domain apart. A collective then acts within each
// group as it would over all replicas of a graph of k: reductions combine the group's members
// in increasing replica order (MEAN divides by k), reduce-scatter cuts into k pieces and
// all-gather and all-to-all have a leading dimension of k, indexed by a member's position in
// its group (replica g*k + p of a CONSECUTIVE group, g + p*m of an ORTHOGONAL one, is at p).
// As in GCL, a bare {} after the program is ambiguous between a group and a debug context:
// write CommGroup() or a name.
//
// Operators (CollectiveOperator, GCL's): ADD, MUL, MIN, MAX; MEAN (the sum divided by the
// group's size, in float: FLOAT and HALF only); SQUARE_ADD (the sum of squares); LOGICAL_AND
// and LOGICAL_OR (BOOL only); LOCAL (each replica keeps its own data: nothing is exchanged).
// Types of the reductions: FLOAT and HALF (combined in float, HALF rounded once at the end),
// and every integer type: INT, UNSIGNED_INT, SHORT, UNSIGNED_SHORT, CHAR, SIGNED_CHAR,
// UNSIGNED_CHAR, LONGLONG, UNSIGNED_LONGLONG (ADD, MUL and SQUARE_ADD wrap modulo 2^bits),
// with every operator but MEAN and the logical ones; BOOL takes the logical operators and
// LOCAL. The calls that move data unchanged (all-gather, broadcast, all-to-all,
// crossReplicaCopy) take every type but QUARTER, whose values mean nothing without the
// metadata a collective does not carry (refused by name, as QUARTER_METADATA is). Other pairs
// raise type_error; data and results of different types or sizes, results that overlap
// themselves, shape_error or type_error, each naming the call, the tensors and the rule.
//
// Runs: an engine's replicas run at once in one process; started by mpiexec, each rank's engine
// runs its share of the replicas and the collectives meet the other ranks' over MPI (engine
// option aspen.collectives.transport; docs/architecture.md "Replicated graphs"). On the CPU the
// contributions are combined in replica order either way, so the results are the same bytes.
// A replica or rank whose run ends, or fails, without reaching the collective the others wait
// at fails them with an error naming it; replicas at different collectives fail naming both;
// every wait also has a deadline (engine option aspen.collectives.timeout, seconds, default
// 600). Groups do not change who meets: every replica meets at every collective step, so a
// collective inside an If on the replication index must be reached by all replicas alike.
//
// On a GPU, NCCL runs the ungrouped all-reduce, reduce-scatter, all-gather and broadcast on the
// executor's stream when it can (engine option aspen.collectives.onDevice; the others go through
// the host); its summation order is its own, so GPU results may differ from the CPU's in their
// last bits.
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>

#include <vector>

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

enum class CommGroupType { ALL, CONSECUTIVE, ORTHOGONAL };
// "ALL", "CONSECUTIVE", "ORTHOGONAL"
ASPEN_API const char *toString(CommGroupType type);

// The replicas a collective combines (see the top of this file). The default is ALL.
struct CommGroup {
  CommGroup() = default;
  CommGroup(CommGroupType groupType, unsigned groupSize)
      : type(groupType), replicaGroupSize(groupSize) {}
  CommGroupType type = CommGroupType::ALL;
  unsigned replicaGroupSize = 0;
};

// --- All-reduce ---------------------------------------------------------------------------------
// A new tensor (a clone of data) holding the all-reduce of data.
ASPEN_API Tensor allReduceCrossReplica(Graph &graph, const Tensor &data, CollectiveOperator op,
                                       program::Sequence &prog, const CommGroup &group,
                                       const DebugContext &debug = {},
                                       const OptionFlags &options = {});
ASPEN_API Tensor allReduceCrossReplica(Graph &graph, const Tensor &data, CollectiveOperator op,
                                       program::Sequence &prog, const DebugContext &debug = {},
                                       const OptionFlags &options = {});
// data replaced by its all-reduce.
ASPEN_API void allReduceInPlaceCrossReplica(Graph &graph, Tensor &data, CollectiveOperator op,
                                            program::Sequence &prog, const CommGroup &group,
                                            const DebugContext &debug = {},
                                            const OptionFlags &options = {});
ASPEN_API void allReduceInPlaceCrossReplica(Graph &graph, Tensor &data, CollectiveOperator op,
                                            program::Sequence &prog,
                                            const DebugContext &debug = {},
                                            const OptionFlags &options = {});
// destination (data's type and element count) set to data's all-reduce.
ASPEN_API void allReduceToDestinationCrossReplica(Graph &graph, const Tensor &data,
                                                  Tensor &destination, CollectiveOperator op,
                                                  program::Sequence &prog,
                                                  const CommGroup &group,
                                                  const DebugContext &debug = {},
                                                  const OptionFlags &options = {});
ASPEN_API void allReduceToDestinationCrossReplica(Graph &graph, const Tensor &data,
                                                  Tensor &destination, CollectiveOperator op,
                                                  program::Sequence &prog,
                                                  const DebugContext &debug = {},
                                                  const OptionFlags &options = {});

// Multi-tensor all-reduce (GCL's std::vector overloads: PopART and TF-IPU reduce mixed-type
// gradients with one call): the same as a call a tensor, fused into one step per element type
// (the tensors of that type, flattened and concatenated in list order; the steps in the order
// each type first appears in the list), so each type meets the other replicas once. Results
// are in list order. An empty list adds nothing. The destinations (and in place, the data)
// must not overlap one another.
ASPEN_API std::vector<Tensor> allReduceCrossReplica(Graph &graph, const std::vector<Tensor> &datas,
                                                    CollectiveOperator op,
                                                    program::Sequence &prog,
                                                    const CommGroup &group,
                                                    const DebugContext &debug = {},
                                                    const OptionFlags &options = {});
ASPEN_API std::vector<Tensor> allReduceCrossReplica(Graph &graph, const std::vector<Tensor> &datas,
                                                    CollectiveOperator op,
                                                    program::Sequence &prog,
                                                    const DebugContext &debug = {},
                                                    const OptionFlags &options = {});
ASPEN_API void allReduceInPlaceCrossReplica(Graph &graph, std::vector<Tensor> &datas,
                                            CollectiveOperator op, program::Sequence &prog,
                                            const CommGroup &group,
                                            const DebugContext &debug = {},
                                            const OptionFlags &options = {});
ASPEN_API void allReduceInPlaceCrossReplica(Graph &graph, std::vector<Tensor> &datas,
                                            CollectiveOperator op, program::Sequence &prog,
                                            const DebugContext &debug = {},
                                            const OptionFlags &options = {});
// destinations[i] (datas[i]'s type and element count) set to datas[i]'s all-reduce; the lists
// must be as long as each other (shape_error otherwise).
ASPEN_API void allReduceToDestinationCrossReplica(Graph &graph, const std::vector<Tensor> &datas,
                                                  const std::vector<Tensor> &destinations,
                                                  CollectiveOperator op,
                                                  program::Sequence &prog,
                                                  const CommGroup &group,
                                                  const DebugContext &debug = {},
                                                  const OptionFlags &options = {});
ASPEN_API void allReduceToDestinationCrossReplica(Graph &graph, const std::vector<Tensor> &datas,
                                                  const std::vector<Tensor> &destinations,
                                                  CollectiveOperator op,
                                                  program::Sequence &prog,
                                                  const DebugContext &debug = {},
                                                  const OptionFlags &options = {});

// --- Reduce-scatter, all-gather, broadcast, all-to-all ------------------------------------------
// Reduce-scatter: data's n elements (any shape, in element order) reduced over the group, then
// cut into k pieces of ceil(n / k) (the last zero-padded): the result of the replica at
// position p of its group, a new [ceil(n / k)] tensor, is piece p. Operators and types as the
// all-reduce's, LOCAL refused.
ASPEN_API Tensor reduceScatterCrossReplica(Graph &graph, const Tensor &data,
                                           CollectiveOperator op, program::Sequence &prog,
                                           const CommGroup &group,
                                           const DebugContext &debug = {},
                                           const OptionFlags &options = {});
ASPEN_API Tensor reduceScatterCrossReplica(Graph &graph, const Tensor &data,
                                           CollectiveOperator op, program::Sequence &prog,
                                           const DebugContext &debug = {},
                                           const OptionFlags &options = {});
// All-gather: a new [k, data's shape] tensor holding the data of every member of the group,
// the member at position p's at [p] (the same in every member).
ASPEN_API Tensor allGatherCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                                       const CommGroup &group, const DebugContext &debug = {},
                                       const OptionFlags &options = {});
ASPEN_API Tensor allGatherCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                                       const DebugContext &debug = {},
                                       const OptionFlags &options = {});
// All-to-all (GCL's allToAllCrossReplica; PopLibs' allToAllPersonalizedExchange): data's
// leading dimension is the group size k (shape_error naming the rule otherwise); a new tensor
// of data's shape whose slice [j] in the member at position i is member j's data[i].
ASPEN_API Tensor allToAllCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                                      const CommGroup &group, const DebugContext &debug = {},
                                      const OptionFlags &options = {});
ASPEN_API Tensor allToAllCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                                      const DebugContext &debug = {},
                                      const OptionFlags &options = {});
// Broadcast: a new tensor (a clone of data) holding, in every member of a group, the data of
// the group's member at position rootReplica (index_error for a root past the group; with the
// default group, the replica rootReplica). An Aspen spelling: GCL's own name for it was not
// found in the sources read.
ASPEN_API Tensor broadcastCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                                       const CommGroup &group, unsigned rootReplica = 0,
                                       const DebugContext &debug = {},
                                       const OptionFlags &options = {});
ASPEN_API Tensor broadcastCrossReplica(Graph &graph, const Tensor &data, program::Sequence &prog,
                                       unsigned rootReplica = 0, const DebugContext &debug = {},
                                       const OptionFlags &options = {});

} // namespace collectives

namespace program {

// The steps the functions above add: result = the all-reduce of data over each group (data and
// result may be one tensor).
class ASPEN_API CrossReplicaAllReduce : public Program {
public:
  CrossReplicaAllReduce(const Tensor &data, const Tensor &result,
                        collectives::CollectiveOperator op, const DebugContext &debug = {});
  CrossReplicaAllReduce(const Tensor &data, const Tensor &result,
                        collectives::CollectiveOperator op, const collectives::CommGroup &group,
                        const DebugContext &debug = {});
};
// The steps of the other calls (result sized as the call above says; shape_error otherwise).
class ASPEN_API CrossReplicaReduceScatter : public Program {
public:
  CrossReplicaReduceScatter(const Tensor &data, const Tensor &result,
                            collectives::CollectiveOperator op, const DebugContext &debug = {});
  CrossReplicaReduceScatter(const Tensor &data, const Tensor &result,
                            collectives::CollectiveOperator op,
                            const collectives::CommGroup &group, const DebugContext &debug = {});
};
class ASPEN_API CrossReplicaAllGather : public Program {
public:
  CrossReplicaAllGather(const Tensor &data, const Tensor &result, const DebugContext &debug = {});
  CrossReplicaAllGather(const Tensor &data, const Tensor &result,
                        const collectives::CommGroup &group, const DebugContext &debug = {});
};
class ASPEN_API CrossReplicaAllToAll : public Program {
public:
  CrossReplicaAllToAll(const Tensor &data, const Tensor &result, const DebugContext &debug = {});
  CrossReplicaAllToAll(const Tensor &data, const Tensor &result,
                       const collectives::CommGroup &group, const DebugContext &debug = {});
};
class ASPEN_API CrossReplicaBroadcast : public Program {
public:
  CrossReplicaBroadcast(const Tensor &data, const Tensor &result, unsigned rootReplica,
                        const DebugContext &debug = {});
  CrossReplicaBroadcast(const Tensor &data, const Tensor &result, unsigned rootReplica,
                        const collectives::CommGroup &group, const DebugContext &debug = {});
};

} // namespace program

} // namespace aspen
