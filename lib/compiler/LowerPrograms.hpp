// Program lowering: the one walk of the program tree after verification. The programs become a
// tree of steps (CompiledGraph::steps); a node shared by several programs, or a function called
// from several places, becomes one step. Each leaf gets its payload as data:
//  - Copy: its CopyPlan (CompiledGraph::copies); streams: their StreamCopy; PrintTensor: its
//    PrintInfo; control flow: the predicate's ScalarRef;
//  - Execute: the index its compute set will have in CompiledGraph::computeSets (numbered in
//    order of first use; LoweringState::computeSetIds says which graph compute set it is, for
//    compute-set lowering);
//  - Kernel and Launch: a Kernel step and its CompiledKernel, whose kind-specific fields
//    (a Gemm's shape) are filled here and whose operands' byte runs wait in LoweringState for
//    kernel lowering;
//  - WriteUndef: a Nop whose Undefine access liveness reads (LoweringState::stepAccesses).
// Also records host handles and streams. Every later pass works on the steps (StepWalk.hpp)
// and this state, never on program nodes.
// Assumes a verified graph. `walks` counts walks of the program tree (the compile dump shows it).
#pragma once

#include "CompiledGraph.hpp"
#include "Lowering.hpp"
#include "core/GraphState.hpp"

#include <cstdint>

namespace aspen::detail {

void lowerPrograms(const GraphState &graph, ArrayRef<program::Program> programs,
                   CompiledGraph &out, LoweringState &state, std::uint32_t &walks);

} // namespace aspen::detail
