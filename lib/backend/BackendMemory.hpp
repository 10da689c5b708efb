// Where a backend's callers keep their buffers: host memory (the CPU executor, model targets) or
// device memory (a GPU device, with the caller's CUDA stream). The layers' few host-side steps
// (PyTorch's layouts, each row's final state, a final-state gradient folded into dy) go through
// these copies, so that they work on either; everything else the engine reads and writes in
// place (Engine::writeTensor and readTensor take device memory on a GPU device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace aspen::backend {

class Memory {
public:
  Memory() = default; // host buffers
  // Device buffers of CUDA device `ordinal`, ordered with `stream` (a cudaStream_t; NULL: the
  // legacy default stream). Raises Unsupported in a build without CUDA.
  static Memory device(int ordinal, void *stream);

  bool onDevice() const { return device_; }
  // dst <- src, bytes long, each on the host or the device; complete on return.
  void copy(void *dst, const void *src, std::size_t bytes) const;
  // rows rows of rowBytes each, row r from src + r * srcPitch to dst + r * dstPitch (a 2-D copy:
  // one call on the device); complete on return.
  void copyRows(void *dst, std::size_t dstPitch, const void *src, std::size_t srcPitch,
                std::size_t rowBytes, std::size_t rows) const;
  // dst <- zeros.
  void zero(void *dst, std::size_t bytes) const;
  // The bytes at p readable on the host: p itself for host buffers, else a copy in `scratch`.
  const std::uint8_t *onHost(const void *p, std::size_t bytes,
                             std::vector<std::uint8_t> &scratch) const;
  // Waits until the work queued on the caller's stream so far is done (the call's inputs are
  // written); nothing for host buffers.
  void waitForCaller() const;

private:
  bool device_ = false;
  int ordinal_ = 0;
  void *stream_ = nullptr;
};

// Whether p is device memory (cudaMalloc'd or managed); false in a build without CUDA.
bool isDeviceMemory(const void *p);

// Restores the calling thread's current CUDA device when it goes out of scope (a GPU call
// selects its own device; the framework's thread keeps its own). Does nothing when `active` is
// false or in a build without CUDA.
class CurrentDeviceGuard {
public:
  explicit CurrentDeviceGuard(bool active);
  ~CurrentDeviceGuard();
  CurrentDeviceGuard(const CurrentDeviceGuard &) = delete;
  CurrentDeviceGuard &operator=(const CurrentDeviceGuard &) = delete;

private:
  int device_ = -1;
};

} // namespace aspen::backend
