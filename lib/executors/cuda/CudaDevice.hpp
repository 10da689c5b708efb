// The CUDA GPUs this process can see, asked of the CUDA runtime without assuming there is one:
// on a machine without a driver or a GPU every query answers "none" with CUDA's reason, never
// crashes. Built only with the CUDA executor (ASPEN_HAVE_CUDA).
#pragma once

#include <aspen/OptionFlags.hpp>
#include <aspen/Target.hpp>

#include <cstdint>
#include <string>
#include <utility>

namespace aspen::detail {

// How many GPUs cudaGetDeviceCount reports; 0, with CUDA's reason in `whyNone`, when it fails
// (no driver, no device, a driver too old for the runtime).
unsigned cudaGpuCount(std::string *whyNone = nullptr);

struct GpuCard {
  std::string name; // as the driver reports it, e.g. "NVIDIA H200"
  Target target;    // Target::makeGpu of its properties and the device options
};

// The card with CUDA ordinal `ordinal`. Raises aspen::error naming the ordinal and how many GPUs
// there are (with CUDA's reason when there are none), and invalid_option for bad options.
GpuCard readGpuCard(unsigned ordinal, const OptionFlags &options);

// The CUDA driver's version as cudaDriverGetVersion reports it (12040 for 12.4), 0 without one.
int cudaDriverVersion();

// Device memory from cudaMalloc (never managed memory), freed when the owner goes.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes); // zeroed before the constructor returns
  DeviceBuffer(DeviceBuffer &&other) noexcept { swap(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    DeviceBuffer(std::move(other)).swap(*this);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  std::uint8_t *get() const { return data_; }
  std::uint64_t address() const { return reinterpret_cast<std::uintptr_t>(data_); }
  std::size_t bytes() const { return bytes_; }
  // Forgets the memory without freeing it: for an executor whose kernel may still be running
  // (cudaFree would wait for it), see CudaExecutor's time limit.
  void leak() { data_ = nullptr, bytes_ = 0; }

private:
  void swap(DeviceBuffer &other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
  }
  std::uint8_t *data_ = nullptr;
  std::size_t bytes_ = 0;
};

} // namespace aspen::detail
