// Program lowering: the programs become a tree of steps (CompiledGraph::steps) whose leaves
// refer to lowered compute sets, kernels, copies and prints; a node shared by several programs, or a
// function called from several places, becomes one step. Also records host handles and streams.
// Assumes a verified graph whose copies, compute sets and kernels are lowered.
#pragma once

#include "CompiledGraph.hpp"
#include "LowerCopies.hpp"
#include "LowerKernels.hpp"
#include "core/GraphState.hpp"

#include <unordered_map>

namespace aspen::detail {

void lowerPrograms(const GraphState &graph, ArrayRef<program::Program> programs,
                   const CopyIndex &copies,
                   const std::unordered_map<unsigned, std::uint32_t> &computeSets,
                   const KernelIndex &kernels, CompiledGraph &out);

} // namespace aspen::detail
