// Program lowering: the programs become a tree of steps (CompiledGraph::steps) whose leaves
// refer to lowered compute sets, kernels, copies and prints; a node shared by several programs,
// or a function called from several places, becomes one step. Also records host handles and
// streams. This is the one lowering of control flow: the passes after it (liveness, memory
// layout, and any future pass) work on the steps (StepWalk.hpp).
// Assumes a verified graph whose copies, compute sets and kernels are lowered.
#pragma once

#include "CompiledGraph.hpp"
#include "LowerCopies.hpp"
#include "LowerKernels.hpp"
#include "core/GraphState.hpp"

#include <unordered_map>
#include <vector>

namespace aspen::detail {

// The program node each step was lowered from (nullptr for the Nop of an empty program), by
// step index: what a later pass needs of the graph (a step's tensors and their access) and is
// not kept in the CompiledGraph. Valid while the programs live.
using StepOrigins = std::vector<const ProgramNode *>;

StepOrigins lowerPrograms(const GraphState &graph, ArrayRef<program::Program> programs,
                          const CopyIndex &copies,
                          const std::unordered_map<unsigned, std::uint32_t> &computeSets,
                          const KernelIndex &kernels, CompiledGraph &out);

} // namespace aspen::detail
