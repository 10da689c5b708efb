// Kernel lowering: every Launch program (BlockCodelets.hpp) becomes a CompiledKernel of kind
// Block naming its lowered compute set and launch shape. Every LibraryCall program
// (LibraryCalls.hpp) becomes a CompiledKernel whose operands are each one contiguous row-major
// run, the form native libraries take:
//  - an operand that already is one (a whole variable, a contiguous slice) is used in place;
//  - any other gets a contiguous temporary in the kernel's scratch buffer, gathered before the
//    call (inputs, and an accumulated output) and scattered after (the output);
//  - an input that may share bytes with the output is gathered too, so that the library never
//    reads what it writes.
// Assumes a verified graph whose compute sets are lowered.
#pragma once

#include "CompiledGraph.hpp"
#include "core/GraphState.hpp"
#include "core/ProgramNode.hpp"

#include <unordered_map>

namespace aspen::detail {

// For each LibraryCall and Launch node, its index in CompiledGraph::kernels.
using KernelIndex = std::unordered_map<const ProgramNode *, std::uint32_t>;

// `computeSets`: each graph compute set's index in CompiledGraph::computeSets.
KernelIndex lowerKernels(const GraphState &graph, ArrayRef<program::Program> programs,
                         const std::unordered_map<unsigned, std::uint32_t> &computeSets,
                         CompiledGraph &out);

} // namespace aspen::detail
