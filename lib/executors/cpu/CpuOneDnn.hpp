// The CPU executor's convolution calls through oneDNN (Debian's libdnnl2, opened at run time as
// OpenBLAS is): the library torch's CPU convolutions use, with AVX-512 kernels in blocked
// layouts. Used for FLOAT calls whose tables are an ordinary convolution -- output o reads input
// o * stride + tap * dilation - paddingLower, non-negative padding each side -- which is what
// cuDNN and oneDNN describe; any other call (HALF, input dilation, flips, truncation left in the
// tables) and every call without libdnnl runs CpuConv's im2col + OpenBLAS path.
//
// At load each call gets its primitive (direct algorithm), chosen by oneDNN for its own layouts,
// and the reorders between those and Aspen's plain ones ([B, C, F...] and [G, Co, Ci, K...]);
// a run reorders the operands in, runs the primitive and reorders the result out, then applies
// ConvBackwardFilter's scale and accumulation. oneDNN's own threads (OpenMP in Debian's build)
// run it; results do not depend on the executor's thread count, as OpenBLAS's do not.
//
// Engine option aspen.cpu.convolutions: auto (the default: oneDNN where it applies) | blas
// (always CpuConv's path). Without the oneDNN headers at build time only blas exists.
#pragma once

#include "compiler/CompiledGraph.hpp"

#include <memory>

namespace aspen::detail {

class OneDnnConvolution {
public:
  virtual ~OneDnnConvolution() = default;
  // operands: the kernel's, in KernelKinds.hpp's order (scale may be null).
  virtual void run(void *const *operands) = 0;
};

// The call through oneDNN, or null where it does not apply or libdnnl cannot be opened (said
// once in the log, at debug level).
std::unique_ptr<OneDnnConvolution> makeOneDnnConvolution(const CompiledKernel &kernel);

} // namespace aspen::detail
