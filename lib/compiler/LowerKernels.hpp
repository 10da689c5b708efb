// Kernel lowering, a pass on the kernels program lowering made. Every kernel
// (Kernels.hpp) gets operands that are each one contiguous row-major run, the form native
// libraries take, following its kind's operand table (KernelKinds.hpp):
//  - an operand that already is one (a whole variable, a contiguous slice) is used in place,
//    and recorded as the kernel's access (read and/or written, by its role);
//  - any other gets a contiguous temporary in the kernel's scratch buffer, gathered before the
//    call when read (Read, and Accumulated when the call accumulates) and scattered after when
//    written (Written, Accumulated): the kernel's rearrangement, made Copy steps by copy
//    lowering;
//  - a read operand that may share bytes with a written one is gathered too, so that the
//    library never reads what it writes;
//  - a Scratch operand gets a temporary and no copies.
// A Block kernel (program::Launch) has no operands of its own: its compute set is lowered by
// compute-set lowering.
// Assumes a verified graph.
#pragma once

#include "CompiledGraph.hpp"
#include "Lowering.hpp"
#include "core/ProgramNode.hpp"

namespace aspen::detail {

// What program lowering records of a Kernel node: its kind, name and what the executors
// need of its shapes (a Gemm's G, M, K, N, types and flags). The one place that knows each
// kernel's shapes.
CompiledKernel describeKernelCall(const ProgramNode &node);

void lowerKernels(CompiledGraph &out, LoweringState &state);

} // namespace aspen::detail
