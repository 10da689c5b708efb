// The CUDA executor's copy and control kernels, and their NVRTC compilation.
#include "CudaExecutorKernels.hpp"

#include "NvrtcCompiler.hpp"

#include <string>

namespace aspen::detail {

const char *cudaExecutorKernelSource() {
  return R"CUDA(
#include <cuda_device_runtime_api.h>

struct GpuCopySegment {
  unsigned long long dst, src;
  long long dstStride, srcStride;
  unsigned long long count;
};

template <typename T>
__device__ void copyElements(const GpuCopySegment &s) {
  for (unsigned long long i = threadIdx.x; i < s.count; i += blockDim.x)
    *reinterpret_cast<T *>(s.dst + i * s.dstStride) =
        *reinterpret_cast<const T *>(s.src + i * s.srcStride);
}

extern "C" __global__ void aspen_copy_segments(const GpuCopySegment *segments,
                                               unsigned elementBytes) {
  const GpuCopySegment s = segments[blockIdx.x];
  // Whole-element loads only when every address is aligned to the element size.
  const unsigned long long misaligned =
      (s.dst | s.src | (unsigned long long)s.dstStride | (unsigned long long)s.srcStride) &
      (elementBytes - 1);
  if (misaligned == 0 && elementBytes == 1) return copyElements<unsigned char>(s);
  if (misaligned == 0 && elementBytes == 2) return copyElements<unsigned short>(s);
  if (misaligned == 0 && elementBytes == 4) return copyElements<unsigned int>(s);
  if (misaligned == 0 && elementBytes == 8) return copyElements<unsigned long long>(s);
  for (unsigned long long i = threadIdx.x; i < s.count; i += blockDim.x)
    for (unsigned b = 0; b < elementBytes; ++b)
      reinterpret_cast<unsigned char *>(s.dst + i * s.dstStride)[b] =
          reinterpret_cast<const unsigned char *>(s.src + i * s.srcStride)[b];
}

__device__ unsigned long long scalarBits(const void *scalar, unsigned bytes) {
  unsigned long long bits = 0;
  for (unsigned b = 0; b < bytes; ++b)
    bits |= (unsigned long long)static_cast<const unsigned char *>(scalar)[b] << (8 * b);
  return bits;
}

extern "C" __global__ void aspen_set_condition(cudaGraphConditionalHandle h, const void *scalar,
                                               unsigned bytes, unsigned isFloat,
                                               unsigned whenTrue) {
  unsigned long long bits = scalarBits(scalar, bytes);
  if (isFloat)
    bits &= ~(1ull << (8 * bytes - 1));
  cudaGraphSetConditional(h, (bits != 0) == (whenTrue != 0) ? 1u : 0u);
}

extern "C" __global__ void aspen_set_switch(cudaGraphConditionalHandle h, const void *scalar,
                                            unsigned bytes, unsigned isSigned,
                                            const long long *cases, unsigned numCases) {
  unsigned long long bits = scalarBits(scalar, bytes);
  if (isSigned && bytes < 8 && ((bits >> (8 * bytes - 1)) & 1))
    bits |= ~0ull << (8 * bytes);
  unsigned body = 0;
  for (unsigned i = 0; i < numCases && body == 0; ++i)
    if (cases[i] == (long long)bits)
      body = i + 1;
  cudaGraphSetConditional(h, body);
}

extern "C" __global__ void aspen_repeat_start(cudaGraphConditionalHandle h, unsigned *counter,
                                              unsigned count) {
  *counter = count;
  cudaGraphSetConditional(h, count != 0 ? 1u : 0u);
}

extern "C" __global__ void aspen_repeat_next(cudaGraphConditionalHandle h, unsigned *counter) {
  const unsigned left = --*counter;
  cudaGraphSetConditional(h, left != 0 ? 1u : 0u);
}
)CUDA";
}

std::vector<std::string> cudaExecutorKernelOptions() {
  // 1105: cuda_device_runtime_api.h includes an internal header NVRTC warns about.
  return {std::string("-I") + ASPEN_CUDA_INCLUDE_DIR, "-std=c++17", "-diag-suppress=1105"};
}

std::vector<std::uint8_t> compileCudaExecutorKernels(unsigned computeCapability) {
  const std::string cubin = nvrtcCompileInternal(
      kCudaExecutorKernelFile, cudaExecutorKernelSource(), cudaExecutorKernelOptions(),
      computeCapability);
  return {cubin.begin(), cubin.end()};
}

} // namespace aspen::detail
