// The CUDA executor's copy and control kernels, and their NVRTC compilation.
#include "CudaExecutorKernels.hpp"

#include <aspen/Error.hpp>

#include <nvrtc.h>

#include <memory>
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

namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};

std::string programLog(nvrtcProgram program) {
  std::size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0)
    return {};
  std::string log(size, '\0');
  nvrtcGetProgramLog(program, log.data());
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  return log;
}

void check(nvrtcResult result, const char *call, nvrtcProgram program = nullptr) {
  if (result != NVRTC_SUCCESS)
    throw internal_error(std::string("CUDA executor kernels: ") + call + " failed: " +
                         nvrtcGetErrorString(result) +
                         (program ? "\n" + programLog(program) : std::string()));
}

} // namespace

std::vector<std::uint8_t> compileCudaExecutorKernels(unsigned computeCapability) {
  nvrtcProgram raw = nullptr;
  check(nvrtcCreateProgram(&raw, cudaExecutorKernelSource(), "aspen_executor_kernels.cu", 0,
                           nullptr, nullptr),
        "nvrtcCreateProgram");
  std::unique_ptr<_nvrtcProgram, ProgramDeleter> program(raw);
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(computeCapability);
  const std::string include = std::string("-I") + ASPEN_CUDA_INCLUDE_DIR;
  // 1105: cuda_device_runtime_api.h includes an internal header NVRTC warns about.
  const char *options[] = {arch.c_str(), include.c_str(), "-std=c++17", "-diag-suppress=1105"};
  check(nvrtcCompileProgram(raw, 4, options), "nvrtcCompileProgram", raw);
  std::size_t size = 0;
  check(nvrtcGetCUBINSize(raw, &size), "nvrtcGetCUBINSize");
  std::vector<std::uint8_t> cubin(size);
  check(nvrtcGetCUBIN(raw, reinterpret_cast<char *>(cubin.data())), "nvrtcGetCUBIN");
  return cubin;
}

} // namespace aspen::detail
