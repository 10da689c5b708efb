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

enum class ExecutorModule { Copy, Control, Conv };

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
// Conv (the convolution calls' im2col + cuBLASLt path, CudaConv.hpp; grid-stride loops):
//   aspen_conv_im2col(const void *images, void *col, const long long *offsets,
//                     unsigned elementBytes, unsigned long long channels, unsigned long long F,
//                     unsigned long long T, unsigned long long P)
//       col[(c * T + t) * P + p] = images[c * F + offsets[t * P + p]], or 0 where the offset is
//       -1, for the `channels` image channels in a row (images x groups x Ci); 2- or 4-byte
//       elements copied as they are.
//   aspen_conv_col2im(const float *col, void *images, const long long *readers,
//                     unsigned isHalf, unsigned long long channels, unsigned long long F,
//                     unsigned long long T, unsigned long long P)
//       images[c * F + f] = the sum over t of col[(c * T + t) * P + readers[t * F + f]] (terms
//       whose reader is -1 left out), in t order: a gather, so no two threads add to one
//       element and the result does not depend on scheduling.
//   aspen_conv_update(const void *deltas, unsigned deltasHalf, void *weights, unsigned isHalf,
//                     const float *scale, unsigned accumulate, unsigned long long n)
//       weights = (accumulate ? weights : 0) + (scale ? *scale : 1) * deltas, in float.
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
