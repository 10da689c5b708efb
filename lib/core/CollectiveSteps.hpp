// A collective step's node (aspen/Collectives.hpp, program::CrossReplicaCopy): the call's
// tensors, operator, replica groups, broadcast root and copy map checked against the data's
// graph's replication factor r, then written into the Kernel node lowering reads
// (LowerKernels.cpp). Every rule a collective has at graph time is here, so each message names
// the step, its tensors and the rule.
#pragma once

#include "ProgramNode.hpp"
#include "ReplicaGroups.hpp"

#include <aspen/Collectives.hpp>

#include <map>
#include <string>

namespace aspen::detail {

struct CollectiveStep {
  KernelKind kind = KernelKind::AllReduce;
  Tensor data, result;
  collectives::CollectiveOperator op = collectives::CollectiveOperator::ADD; // the reductions
  collectives::CommGroup group;
  unsigned root = 0;                                         // Broadcast: a position in a group
  const std::map<unsigned, unsigned> *replicaMap = nullptr; // CrossReplicaCopy: source -> dest
};

// The groups of `group` over r replicas (ALL ignores the size, as GCL documents); raises
// invalid_option, naming `what` and the rule, for a size that does not divide r.
ReplicaGroups replicaGroupsOf(const collectives::CommGroup &group, unsigned r,
                              const std::string &what);

// Raises the user error of the first rule `step` breaks; else makes `node` its Kernel node.
// step.data and step.result are valid tensors (the caller checks).
void makeCollectiveNode(ProgramNode &node, const CollectiveStep &step, const DebugContext &debug);

} // namespace aspen::detail
