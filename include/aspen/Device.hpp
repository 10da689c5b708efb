// Device: something to run an Engine on.
//
//  - the CPU device (Poplar's createCPUDevice: a one-tile target), and
//  - a model device that plans and runs on the CPU executor exactly as a given Target would be
//    partitioned (Poplar's IPUModel / simulator role), e.g. the "h200" or "ipu2" models.
//  - a CUDA GPU (createGpuDevice), when Aspen is built with the CUDA executor.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Target.hpp>

#include <memory>
#include <vector>

namespace aspen {

enum class DeviceKind { None, Cpu, Model, Gpu };

class ASPEN_API Device {
public:
  Device(); // no device: attach() fails and Engine::load() raises an error
  Device(Device &&) noexcept;
  Device &operator=(Device &&) noexcept;
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
  ~Device();

  static Device createCPUDevice();
  static Device createModelDevice(const Target &target);
  static Device createSimulatorDevice(const Target &target, const OptionFlags &options = {});
  // The GPU with CUDA ordinal `ordinal`. Its Target is read from cudaGetDeviceProperties:
  // tiles = SMs x option "tilesPerSM" (default 1), workers = option "threadsPerBlock" (default
  // 256, at most the card's limit), bytes per tile = the shared memory a block may opt in to.
  // A GPU device runs any compiled graph: each tile of the graph's target is a thread block and
  // each worker a thread. Raises aspen::error when this build has no CUDA executor, when there is
  // no GPU with that ordinal (naming how many there are), or for a bad option.
  static Device createGpuDevice(unsigned ordinal = 0, const OptionFlags &options = {});
  // How many CUDA GPUs this process can use (0 without the CUDA executor, a driver or a GPU).
  static unsigned gpuCount();
  // How many threads the CPU executor runs tiles on when the engine option aspen.cpu.threads is
  // not given: the environment variable ASPEN_CPU_THREADS (1 to 1024; another value raises
  // aspen::invalid_option naming it), else the CPUs this thread may run on (its affinity mask,
  // so taskset and a container's CPU set count), at most 1024.
  static unsigned cpuThreadCount();
  // The device the README's demo runs on: the first GPU when the CUDA executor has one, otherwise
  // the CPU executor modelling an H200.
  static Device createDefaultDevice();
  // The same kind of device with a different number of tiles.
  Device createVirtualDevice(unsigned tilesPerIPU) const;

  const Target &getTarget() const;
  DeviceKind getKind() const;
  unsigned getId() const;
  // The CUDA ordinal of a GPU device; raises aspen::error for other devices.
  unsigned getGpuOrdinal() const;
  bool attach() const;
  void detach() const;
  bool isAttached() const;
  std::string describe() const;

private:
  struct State;
  explicit Device(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// Poplar's DeviceManager: the devices of this machine.
class ASPEN_API DeviceManager {
public:
  static DeviceManager createDeviceManager();
  // Hardware devices of a type: the GPUs for TargetType::GPU and for TargetType::IPU (the GPUs
  // stand in for IPU hardware, so a program written for it runs unchanged; one GPU is one device
  // whatever numIPUs asks for), nothing for the other types (model devices come from
  // Device::createModelDevice, or IPUModel in compat). Empty on a machine without a GPU.
  std::vector<Device> getDevices(TargetType type, unsigned numIPUs,
                                 const OptionFlags &options = {}) const;
  std::vector<Device> getDevices() const; // every hardware device: the GPUs
  Device getDevice(unsigned deviceId, const OptionFlags &options = {}) const;
};

} // namespace aspen
