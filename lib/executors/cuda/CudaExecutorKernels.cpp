// The CUDA executor's copy and control kernels, and their NVRTC compilation.
#include "CudaExecutorKernels.hpp"

#include "codelets/CodeletCache.hpp"
#include "codelets/ContentHash.hpp"
#include "support/Logging.hpp"
#include "targets/cuda/NvrtcCompiler.hpp"

#include <aspen/Error.hpp>

#include <filesystem>
#include <map>
#include <mutex>
#include <string>

namespace aspen::detail {

extern const char kControlRulesSource[]; // ControlRules.hpp, embedded by the build

namespace fs = std::filesystem;

namespace {

const char *const kCopySource = R"CUDA(
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

)CUDA";

// After the control rules (ControlRules.hpp, embedded as kControlRulesSource).
const char *const kControlKernels = R"CUDA(
#include <cuda_device_runtime_api.h>

__device__ unsigned long long scalarBits(const void *scalar, unsigned bytes) {
  unsigned long long bits = 0;
  for (unsigned b = 0; b < bytes; ++b)
    bits |= (unsigned long long)static_cast<const unsigned char *>(scalar)[b] << (8 * b);
  return bits;
}

extern "C" __global__ void aspen_set_condition(cudaGraphConditionalHandle h, const void *scalar,
                                               unsigned bytes, unsigned isFloat,
                                               unsigned whenTrue) {
  const bool value = aspen::detail::predicateIsTrue(scalarBits(scalar, bytes), bytes, isFloat);
  cudaGraphSetConditional(h, value == (whenTrue != 0) ? 1u : 0u);
}

extern "C" __global__ void aspen_set_switch(cudaGraphConditionalHandle h, const void *scalar,
                                            unsigned bytes, unsigned isSigned,
                                            const long long *cases, unsigned numCases) {
  const long long value =
      aspen::detail::controlValue(scalarBits(scalar, bytes), bytes, isSigned != 0);
  unsigned body = 0;
  for (unsigned i = 0; i < numCases && body == 0; ++i)
    if (cases[i] == value)
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

const char *const kConvKernels = R"CUDA(
#include <cuda_fp16.h>

__device__ float loadFloat(const void *p, unsigned long long i, unsigned isHalf) {
  return isHalf ? __half2float(static_cast<const __half *>(p)[i]) : static_cast<const float *>(p)[i];
}

__device__ void storeFloat(void *p, unsigned long long i, unsigned isHalf, float v) {
  if (isHalf)
    static_cast<__half *>(p)[i] = __float2half_rn(v);
  else
    static_cast<float *>(p)[i] = v;
}

template <typename T>
__device__ void im2col(const T *images, T *col, const long long *offsets, unsigned long long n,
                       unsigned long long F, unsigned long long T_, unsigned long long P) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const unsigned long long p = i % P, row = i / P, t = row % T_, c = row / T_;
    const long long offset = offsets[t * P + p];
    col[i] = offset < 0 ? T(0) : images[c * F + (unsigned long long)offset];
  }
}

extern "C" __global__ void aspen_conv_im2col(const void *images, void *col,
                                             const long long *offsets, unsigned elementBytes,
                                             unsigned long long channels, unsigned long long F,
                                             unsigned long long T, unsigned long long P) {
  const unsigned long long n = channels * T * P;
  if (elementBytes == 2)
    im2col(static_cast<const unsigned short *>(images), static_cast<unsigned short *>(col),
           offsets, n, F, T, P);
  else
    im2col(static_cast<const unsigned *>(images), static_cast<unsigned *>(col), offsets, n, F, T,
           P);
}

extern "C" __global__ void aspen_conv_col2im(const float *col, void *images,
                                             const long long *readers, unsigned isHalf,
                                             unsigned long long channels, unsigned long long F,
                                             unsigned long long T, unsigned long long P) {
  const unsigned long long n = channels * F, stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const unsigned long long f = i % F, c = i / F;
    float sum = 0.0f;
    for (unsigned long long t = 0; t < T; ++t) {
      const long long p = readers[t * F + f];
      if (p >= 0)
        sum += col[(c * T + t) * P + (unsigned long long)p];
    }
    storeFloat(images, i, isHalf, sum);
  }
}

extern "C" __global__ void aspen_conv_update(const void *deltas, unsigned deltasHalf,
                                             void *weights, unsigned isHalf, const float *scale,
                                             unsigned accumulate, unsigned long long n) {
  const float s = scale ? *scale : 1.0f;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float old = accumulate ? loadFloat(weights, i, isHalf) : 0.0f;
    storeFloat(weights, i, isHalf, old + s * loadFloat(deltas, i, deltasHalf));
  }
}
)CUDA";

// The CUDA toolkit's include folder as an option, and the same option as a cache key sees it (a
// folder name is not content: the bundle's cache serves a toolkit installed elsewhere).
const char *const kToolkitIncludeKey = "-I<cuda toolkit include>";

} // namespace

const char *cudaExecutorKernelSource(ExecutorModule module) {
  static const std::string control = std::string(kControlRulesSource) + kControlKernels;
  switch (module) {
  case ExecutorModule::Copy: return kCopySource;
  case ExecutorModule::Control: return control.c_str();
  case ExecutorModule::Conv: return kConvKernels;
  }
  throw internal_error("cudaExecutorKernelSource: unknown module");
}

const char *cudaExecutorKernelFile(ExecutorModule module) {
  switch (module) {
  case ExecutorModule::Copy: return "aspen_copy_kernels.cu";
  case ExecutorModule::Control: return "aspen_control_kernels.cu";
  case ExecutorModule::Conv: return "aspen_conv_kernels.cu";
  }
  throw internal_error("cudaExecutorKernelFile: unknown module");
}

std::vector<std::string> cudaExecutorKernelOptions(ExecutorModule module) {
  if (module == ExecutorModule::Copy)
    return {"-std=c++17"};
  if (module == ExecutorModule::Conv) // cuda_fp16.h
    return {"-I" + cudaToolkitIncludeDir(), "-std=c++17"};
  // 1105: cuda_device_runtime_api.h includes an internal header NVRTC warns about.
  return {"-I" + cudaToolkitIncludeDir(), "-std=c++17", "-diag-suppress=1105"};
}

std::vector<std::uint8_t> compileCudaExecutorKernels(ExecutorModule module,
                                                     unsigned computeCapability) {
  const std::string cubin =
      nvrtcCompileInternal(cudaExecutorKernelFile(module), cudaExecutorKernelSource(module),
                           cudaExecutorKernelOptions(module), computeCapability);
  return {cubin.begin(), cubin.end()};
}

std::string cudaExecutorKernelCacheName(ExecutorModule module, unsigned computeCapability) {
  ContentHash key;
  key.add(cudaExecutorKernelSource(module)).add(nvrtcVersion()).add(std::to_string(computeCapability));
  for (const std::string &option : cudaExecutorKernelOptions(module))
    key.add(option.starts_with("-I") ? kToolkitIncludeKey : option);
  return std::string(cudaExecutorKernelFile(module)) + "." + key.hex() + ".sm_" +
         std::to_string(computeCapability) + ".cubin";
}

const std::vector<std::uint8_t> &cudaExecutorKernelImage(ExecutorModule module,
                                                         unsigned computeCapability) {
  static std::mutex mutex;
  static std::map<std::pair<ExecutorModule, unsigned>, std::vector<std::uint8_t>> images;
  std::lock_guard lock(mutex);
  auto it = images.find({module, computeCapability});
  if (it != images.end())
    return it->second;

  const fs::path path =
      codeletCacheDir() / "gpu" / cudaExecutorKernelCacheName(module, computeCapability);
  std::vector<std::uint8_t> image;
  if (fs::is_regular_file(path)) {
    const std::string bytes = readWholeFile(path);
    image.assign(bytes.begin(), bytes.end());
  } else {
    image = compileCudaExecutorKernels(module, computeCapability);
    // The cache is an optimisation: a folder that cannot be written costs a compile next time.
    try {
      fs::create_directories(path.parent_path());
      writeFileAtomically(path, std::string(image.begin(), image.end()));
    } catch (const std::exception &e) {
      logger().debug("CUDA executor: cannot cache {}: {}", path.string(), e.what());
    }
  }
  return images.emplace(std::pair{module, computeCapability}, std::move(image)).first->second;
}

} // namespace aspen::detail
