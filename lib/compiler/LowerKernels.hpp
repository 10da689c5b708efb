// Kernel lowering: every LibraryCall program (LibraryCalls.hpp) becomes a CompiledKernel whose
// operands are each one contiguous row-major run, the form native libraries take:
//  - an operand that already is one (a whole variable, a contiguous slice) is used in place;
//  - any other gets a contiguous temporary in the kernel's scratch buffer, gathered before the
//    call (inputs, and an accumulated output) and scattered after (the output);
//  - an input that may share bytes with the output is gathered too, so that the library never
//    reads what it writes.
// Assumes a verified graph.
#pragma once

#include "CompiledGraph.hpp"
#include "core/GraphState.hpp"
#include "core/ProgramNode.hpp"

#include <unordered_map>

namespace aspen::detail {

// For each LibraryCall node, its index in CompiledGraph::kernels.
using KernelIndex = std::unordered_map<const ProgramNode *, std::uint32_t>;

KernelIndex lowerKernels(const GraphState &graph, ArrayRef<program::Program> programs,
                         CompiledGraph &out);

} // namespace aspen::detail
