// The CUDA executor's own kernels: the copy kernel that runs GpuCopySegments (gathers, scatters,
// copies, host transfers of non-contiguous regions) and the control kernels that set the
// conditions of CUDA graph conditional nodes from predicate scalars on the device.
//
// Kept as a source string compiled by NVRTC when an executor loads (once per process and
// compute capability), so libaspen needs no nvcc-compiled objects. Needs the toolkit's NVRTC,
// not a GPU: the no-GPU tests compile it for sm_90.
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

// Kernel names and signatures (all extern "C"):
//   aspen_copy_segments(const GpuCopySegment *segments, unsigned elementBytes)
//       one block per segment.
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
const char *cudaExecutorKernelSource();
// The name NVRTC gives the source in messages, and its compile options (besides the
// architecture).
inline constexpr const char *kCudaExecutorKernelFile = "aspen_executor_kernels.cu";
std::vector<std::string> cudaExecutorKernelOptions();

// A cubin of cudaExecutorKernelSource() for compute capability major*10+minor; raises
// aspen::internal_error with NVRTC's log when it does not compile.
std::vector<std::uint8_t> compileCudaExecutorKernels(unsigned computeCapability);

} // namespace aspen::detail
