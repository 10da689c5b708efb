// The CUDA executor's own kernels: the copy kernel that runs GpuCopySegments (gathers, scatters,
// copies, host transfers of non-contiguous regions) and the control kernels that set the
// conditions of CUDA graph conditional nodes from predicate scalars on the device.
//
// Two modules, each a source string compiled by NVRTC when an executor first loads (once per
// process and compute capability, and cached on disk under ASPEN_CACHE_DIR/gpu), so libaspen
// needs no nvcc-compiled objects:
//  - Copy: the copy kernel, which every executor needs;
//  - Control: the control kernels, which only CUDA graphs with conditional nodes need. They are
//    a module of their own so that a driver or toolkit that refuses cudaGraphSetConditional costs
//    only graph control flow (the executor then drives control flow from the host), never copies.
// Needs the toolkit's NVRTC, not a GPU: the no-GPU tests compile both for sm_90.
//
// No device link is needed: cudaGraphSetConditional, like printf's vprintf, is a builtin the
// driver resolves when it loads the cubin. ptxas leaves it undefined in a whole-program cubin
// (and nvlink with libcudadevrt.a leaves it undefined too, defining nothing for it), while it
// rejects any other unresolved function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aspen::detail {

enum class ExecutorModule { Copy, Control };

// Kernel names and signatures (all extern "C"):
// Copy:
//   aspen_copy_segments(const GpuCopySegment *segments, unsigned elementBytes)
//       one block per segment.
// Control:
//   aspen_set_condition(cudaGraphConditionalHandle h, const void *scalar, unsigned bytes,
//                       unsigned isFloat, unsigned whenTrue)
//       h = (scalar is non-zero, ignoring a float's sign bit) == whenTrue.
//   aspen_set_switch(cudaGraphConditionalHandle h, const void *scalar, unsigned bytes,
//                    unsigned isSigned, const long long *cases, unsigned numCases)
//       h = 1 + the index of the first case equal to the scalar, or 0 (the default body).
//   aspen_repeat_start(cudaGraphConditionalHandle h, unsigned *counter, unsigned count)
//   aspen_repeat_next(cudaGraphConditionalHandle h, unsigned *counter)
//       a counted loop: h = iterations left != 0.
// The control kernels run on one thread.
const char *cudaExecutorKernelSource(ExecutorModule module);
// The name NVRTC gives the module's source in messages, and its compile options (besides the
// architecture).
const char *cudaExecutorKernelFile(ExecutorModule module);
std::vector<std::string> cudaExecutorKernelOptions(ExecutorModule module);

// A cubin of the module for compute capability major*10+minor, compiled now; raises
// aspen::internal_error with NVRTC's log when it does not compile.
std::vector<std::uint8_t> compileCudaExecutorKernels(ExecutorModule module,
                                                     unsigned computeCapability);

// The same cubin from this process's memory, else from the disk cache (keyed by the source,
// the options without the toolkit's folder, NVRTC's version and the architecture), else
// compiled and cached.
// The name of that cubin's file in the cache's "gpu" folder.
std::string cudaExecutorKernelCacheName(ExecutorModule module, unsigned computeCapability);
const std::vector<std::uint8_t> &cudaExecutorKernelImage(ExecutorModule module,
                                                         unsigned computeCapability);

} // namespace aspen::detail
