#include "BackendMemory.hpp"

#include "BackendError.hpp"

#include <cstring>
#include <string>

#if ASPEN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace aspen::backend {

namespace {

void hostCopyRows(void *dst, std::size_t dstPitch, const void *src, std::size_t srcPitch,
                  std::size_t rowBytes, std::size_t rows) {
  auto *to = static_cast<std::uint8_t *>(dst);
  const auto *from = static_cast<const std::uint8_t *>(src);
  for (std::size_t r = 0; r < rows; ++r)
    std::memcpy(to + r * dstPitch, from + r * srcPitch, rowBytes);
}

} // namespace

#if ASPEN_HAVE_CUDA

namespace {

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw CudaFailure(std::string("the layer backend: ") + what + ": " +
                      cudaGetErrorString(status));
}

} // namespace

Memory Memory::device(int ordinal, void *stream) {
  Memory m;
  m.device_ = true;
  m.ordinal_ = ordinal;
  m.stream_ = stream;
  return m;
}

void Memory::copy(void *dst, const void *src, std::size_t bytes) const {
  if (!device_) {
    std::memcpy(dst, src, bytes);
    return;
  }
  check(cudaSetDevice(ordinal_), "cudaSetDevice");
  const auto stream = static_cast<cudaStream_t>(stream_);
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void Memory::copyRows(void *dst, std::size_t dstPitch, const void *src, std::size_t srcPitch,
                      std::size_t rowBytes, std::size_t rows) const {
  if (!device_) {
    hostCopyRows(dst, dstPitch, src, srcPitch, rowBytes, rows);
    return;
  }
  check(cudaSetDevice(ordinal_), "cudaSetDevice");
  const auto stream = static_cast<cudaStream_t>(stream_);
  check(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, rowBytes, rows, cudaMemcpyDefault,
                          stream),
        "cudaMemcpy2DAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void Memory::zero(void *dst, std::size_t bytes) const {
  if (!device_) {
    std::memset(dst, 0, bytes);
    return;
  }
  check(cudaSetDevice(ordinal_), "cudaSetDevice");
  const auto stream = static_cast<cudaStream_t>(stream_);
  check(cudaMemsetAsync(dst, 0, bytes, stream), "cudaMemsetAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void Memory::waitForCaller() const {
  if (!device_)
    return;
  check(cudaSetDevice(ordinal_), "cudaSetDevice");
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)),
        "cudaStreamSynchronize (the caller's stream)");
}

bool isDeviceMemory(const void *p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError(); // not a pointer CUDA knows: host memory
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

CurrentDeviceGuard::CurrentDeviceGuard(bool active) {
  if (active && cudaGetDevice(&device_) != cudaSuccess) {
    (void)cudaGetLastError();
    device_ = -1;
  }
}
CurrentDeviceGuard::~CurrentDeviceGuard() {
  if (device_ >= 0)
    (void)cudaSetDevice(device_);
}

#else

CurrentDeviceGuard::CurrentDeviceGuard(bool) {}
CurrentDeviceGuard::~CurrentDeviceGuard() = default;

Memory Memory::device(int, void *) {
  throw Unsupported("the layer backend: this build of Aspen has no CUDA support (the CUDA "
                    "toolkit was not found when it was built): GPU devices are not available");
}
void Memory::copy(void *dst, const void *src, std::size_t bytes) const {
  std::memcpy(dst, src, bytes);
}
void Memory::copyRows(void *dst, std::size_t dstPitch, const void *src, std::size_t srcPitch,
                      std::size_t rowBytes, std::size_t rows) const {
  hostCopyRows(dst, dstPitch, src, srcPitch, rowBytes, rows);
}
void Memory::zero(void *dst, std::size_t bytes) const { std::memset(dst, 0, bytes); }
void Memory::waitForCaller() const {}
bool isDeviceMemory(const void *) { return false; }

#endif

const std::uint8_t *Memory::onHost(const void *p, std::size_t bytes,
                                   std::vector<std::uint8_t> &scratch) const {
  if (!device_)
    return static_cast<const std::uint8_t *>(p);
  scratch.resize(bytes);
  copy(scratch.data(), p, bytes);
  return scratch.data();
}

} // namespace aspen::backend
