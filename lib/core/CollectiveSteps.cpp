// The graph-time rules of the collective steps (CollectiveSteps.hpp).
#include "CollectiveSteps.hpp"

#include "ReplicaGroups.hpp"
#include "TensorRegions.hpp"
#include "GraphState.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <limits>
#include <string>
#include <vector>

namespace aspen::detail {

namespace {

using collectives::CollectiveOperator;
using collectives::CommGroupType;

bool reduces(KernelKind kind) {
  return kind == KernelKind::AllReduce || kind == KernelKind::ReduceScatter;
}

// "AllReduce 'grads' (ADD, CONSECUTIVE groups of 2) of x into y": how messages name the step.
std::string describe(const CollectiveStep &s, const DebugContext &debug) {
  std::string how;
  if (reduces(s.kind))
    how = collectives::toString(s.op);
  if (s.group.type != CommGroupType::ALL)
    how += fmt::format("{}{} groups of {}", how.empty() ? "" : ", ",
                       collectives::toString(s.group.type), s.group.replicaGroupSize);
  return fmt::format("{} '{}'{} of {} into {}", kernelKindName(s.kind), debug.getPathName(),
                     how.empty() ? std::string() : " (" + how + ")", s.data.getDebugStr(),
                     s.result.getDebugStr());
}

// The element types the step's kind and operator take (aspen/Collectives.hpp, "Operators").
void checkType(const CollectiveStep &s, const std::string &what) {
  const Type t = s.data.elementType();
  if (s.result.elementType() != t)
    throw type_error(fmt::format("{}: the result is {}, the data {}; they must be one type", what,
                                 s.result.elementType().toString(), t.toString()));
  if (t == QUARTER || t == QUARTER_METADATA)
    throw type_error(fmt::format(
        "{}: {} data cannot take part in a collective (a QUARTER tensor's values mean something "
        "only with its metadata, which a collective does not carry)",
        what, t.toString()));
  if (!reduces(s.kind))
    return;
  const CollectiveOperator op = s.op;
  const bool logical = op == CollectiveOperator::LOGICAL_AND || op == CollectiveOperator::LOGICAL_OR;
  const bool floating = t == FLOAT || t == HALF, integer = t.isIntegral() && t != BOOL;
  const bool ok = op == CollectiveOperator::LOCAL ? s.kind == KernelKind::AllReduce
                  : logical                        ? t == BOOL
                  : op == CollectiveOperator::MEAN ? floating
                                                   : floating || integer;
  if (!ok)
    throw type_error(fmt::format(
        "{}: {} does not take {} data (FLOAT and HALF take every operator but the logical ones, "
        "the integer types all but MEAN and the logical ones, BOOL only LOGICAL_AND, LOGICAL_OR "
        "and LOCAL; LOCAL is an all-reduce's only)",
        what, collectives::toString(op), t.toString()));
}

// The result's size for groups of k, all-to-all's leading dimension and the broadcast's root.
void checkShape(const CollectiveStep &s, unsigned k, const std::string &what) {
  const std::size_t n = s.data.numElements();
  const std::uint64_t want = collectiveResultElements(s.kind, n, k);
  if (s.result.numElements() != want)
    throw shape_error(fmt::format("{}: the result has {} elements {}; with {} elements of data "
                                  "{} and groups of {} replicas it must have {}",
                                  what, s.result.numElements(), s.result.shapeToString(), n,
                                  s.data.shapeToString(), k, want));
  if (s.kind == KernelKind::AllToAll && (s.data.rank() == 0 || s.data.dim(0) != k))
    throw shape_error(fmt::format(
        "{}: the data's shape is {}; an all-to-all's leading dimension must be the group size "
        "{} (slice [j] goes to the group's member j)",
        what, s.data.shapeToString(), k));
  if (s.kind == KernelKind::Broadcast && s.root >= k)
    throw index_error(fmt::format(
        "{}: the root replica {} is not one of a group's {} (the root is a position in each "
        "group)",
        what, s.root, k));
  if (s.result.containsAliases())
    throw shape_error(fmt::format("{}: the result {} has elements that alias one another; each "
                                  "element of a collective's result must be written once",
                                  what, s.result.getVarStr()));
}

// Poplar's rule for CrossReplicaCopy's map: every replica sends to exactly one other and
// receives from exactly one other (a permutation of 0..r-1 without fixed points). Returns, for
// each destination, its source.
std::vector<std::uint32_t> sourcesOf(const std::map<unsigned, unsigned> &map, unsigned r,
                                     const std::string &what) {
  constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> sources(r, none);
  for (const auto &[source, destination] : map) {
    if (source >= r || destination >= r)
      throw index_error(fmt::format("{}: the replica map's entry {} -> {} names a replica past "
                                    "the graph's {}",
                                    what, source, destination, r));
    if (source == destination)
      throw control_program_error(fmt::format(
          "{}: the replica map sends replica {} to itself; a replica may not copy to itself",
          what, source));
    if (sources[destination] != none)
      throw control_program_error(fmt::format(
          "{}: replicas {} and {} both copy to replica {}; each replica must receive from "
          "exactly one other",
          what, sources[destination], source, destination));
    sources[destination] = source;
  }
  if (map.size() != r)
    throw control_program_error(fmt::format(
        "{}: the replica map has {} entries for the graph's {} replicas; each replica must be "
        "a source once and a destination once (a permutation without fixed points)",
        what, map.size(), r));
  return sources;
}

} // namespace

ReplicaGroups replicaGroupsOf(const collectives::CommGroup &group, unsigned r,
                              const std::string &what) {
  if (group.type == CommGroupType::ALL)
    return {r, false};
  if (group.type != CommGroupType::CONSECUTIVE && group.type != CommGroupType::ORTHOGONAL)
    throw invalid_option(fmt::format("{}: CommGroupType {} is not ALL, CONSECUTIVE or ORTHOGONAL",
                                     what, unsigned(group.type)));
  const unsigned k = group.replicaGroupSize;
  if (k == 0 || r % k != 0)
    throw invalid_option(fmt::format(
        "{}: a group size of {} does not divide the graph's {} replicas (a {} group's "
        "replicaGroupSize must be at least 1 and divide the replication factor)",
        what, k, r, collectives::toString(group.type)));
  return {k, group.type == CommGroupType::ORTHOGONAL};
}

void makeCollectiveNode(ProgramNode &node, const CollectiveStep &step,
                        const DebugContext &debug) {
  const std::string what = describe(step, debug);
  const unsigned r = graphOf(step.data)->replicationFactor;
  const ReplicaGroups groups = replicaGroupsOf(step.group, r, what);
  checkType(step, what);
  checkShape(step, groups.size, what);
  if (step.kind == KernelKind::CrossReplicaCopy) {
    if (!step.replicaMap)
      throw internal_error(what + ": a CrossReplicaCopy without a replica map");
    node.collectiveSources = sourcesOf(*step.replicaMap, r, what);
  }
  node.kernel = step.kind;
  node.operands = {step.data, step.result};
  node.collectiveOperator = static_cast<std::uint32_t>(step.op);
  node.collectiveRoot = step.root;
  node.collectiveGroupType = static_cast<std::uint32_t>(step.group.type);
  node.collectiveGroupSize = groups.size;
}

} // namespace aspen::detail
