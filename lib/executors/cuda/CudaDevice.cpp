// Querying CUDA GPUs (see CudaDevice.hpp).
#include "CudaDevice.hpp"

#include "CudaCheck.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

namespace aspen::detail {

unsigned cudaGpuCount(std::string *whyNone) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError(); // not sticky: clear it so that later calls do not report it
    if (whyNone)
      *whyNone = fmt::format("cudaGetDeviceCount: {} ({})", cudaGetErrorString(status),
                             cudaGetErrorName(status));
    return 0;
  }
  if (count == 0 && whyNone)
    *whyNone = "cudaGetDeviceCount reports no GPU";
  return static_cast<unsigned>(count);
}

int cudaDriverVersion() {
  int version = 0;
  if (cudaDriverGetVersion(&version) != cudaSuccess)
    return 0;
  return version;
}

GpuCard readGpuCard(unsigned ordinal, const OptionFlags &options) {
  std::string whyNone;
  const unsigned count = cudaGpuCount(&whyNone);
  if (ordinal >= count)
    throw error(fmt::format("Device::createGpuDevice({}): there is no CUDA GPU with ordinal {}; "
                            "this machine has {} GPU{}{}",
                            ordinal, ordinal, count, count == 1 ? "" : "s",
                            count == 0 ? " (" + whyNone + ")" : std::string()));
  cudaDeviceProp props{};
  ASPEN_CUDA_CHECK(cudaGetDeviceProperties(&props, int(ordinal)));
  int clockKHz = 0, memoryClockKHz = 0, busWidthBits = 0;
  ASPEN_CUDA_CHECK(cudaDeviceGetAttribute(&clockKHz, cudaDevAttrClockRate, int(ordinal)));
  ASPEN_CUDA_CHECK(
      cudaDeviceGetAttribute(&memoryClockKHz, cudaDevAttrMemoryClockRate, int(ordinal)));
  ASPEN_CUDA_CHECK(
      cudaDeviceGetAttribute(&busWidthBits, cudaDevAttrGlobalMemoryBusWidth, int(ordinal)));
  Target::GpuSpec spec{};
  spec.multiProcessors = unsigned(props.multiProcessorCount);
  spec.ccMajor = unsigned(props.major);
  spec.ccMinor = unsigned(props.minor);
  spec.maxThreadsPerBlock = unsigned(props.maxThreadsPerBlock);
  spec.sharedMemoryPerBlock = props.sharedMemPerBlockOptin;
  spec.memory = props.totalGlobalMem;
  // Double data rate: two transfers a memory clock over the whole bus.
  spec.bandwidth = 2.0 * memoryClockKHz * 1e3 * busWidthBits / 8.0;
  spec.clockHz = clockKHz * 1e3;
  spec.registersPerMultiprocessor = unsigned(props.regsPerMultiprocessor);
  spec.sharedMemoryPerMultiprocessor = props.sharedMemPerMultiprocessor;
  spec.maxThreadsPerMultiprocessor = unsigned(props.maxThreadsPerMultiProcessor);
  spec.l2CacheBytes = std::size_t(props.l2CacheSize);
  spec.cooperativeLaunch = props.cooperativeLaunch != 0;
  return {props.name, Target::makeGpu(props.name, spec, options)};
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0)
    return;
  void *data = nullptr;
  const cudaError_t status = cudaMalloc(&data, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    std::size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    throw graph_memory_allocation_error(fmt::format(
        "cannot allocate {} bytes of GPU memory: {} of {} bytes are free", bytes, free, total));
  }
  ASPEN_CUDA_CHECK(status);
  data_ = static_cast<std::uint8_t *>(data);
  // cudaMemset of device memory returns before it is done, on the default stream, which does not
  // order the executor's non-blocking streams: wait, so that no later write is zeroed.
  ASPEN_CUDA_CHECK(cudaMemset(data_, 0, bytes));
  ASPEN_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

// Freeing cannot report an error from a destructor; a failure here means the context is
// already broken, which the next checked call reports.
DeviceBuffer::~DeviceBuffer() {
  if (data_)
    cudaFree(data_);
}

} // namespace aspen::detail
