// Device: something to run an Engine on.
//
//  - the CPU device (Poplar's createCPUDevice: a one-tile target), and
//  - a model device that plans and runs on the CPU executor exactly as a given Target would be
//    partitioned (Poplar's IPUModel / simulator role), e.g. the "h200" or "ipu2" models.
// A GPU device comes with the CUDA backend.
#pragma once

#include <aspen/OptionFlags.hpp>
#include <aspen/Target.hpp>

#include <memory>
#include <vector>

namespace aspen {

enum class DeviceKind { None, Cpu, Model, Gpu };

class Device {
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
  // The device the README's demo runs on: the first GPU when the CUDA backend has one, otherwise
  // the CPU executor modelling an H200.
  static Device createDefaultDevice();
  // The same kind of device with a different number of tiles.
  Device createVirtualDevice(unsigned tilesPerIPU) const;

  const Target &getTarget() const;
  DeviceKind getKind() const;
  unsigned getId() const;
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
class DeviceManager {
public:
  static DeviceManager createDeviceManager();
  // Hardware devices of a type. There are no IPUs, and GPUs come with the CUDA backend, so this is
  // empty today; model devices are made with Device::createModelDevice (or IPUModel in compat).
  std::vector<Device> getDevices(TargetType type, unsigned numIPUs,
                                 const OptionFlags &options = {}) const;
  std::vector<Device> getDevices() const;
  Device getDevice(unsigned deviceId, const OptionFlags &options = {}) const;
};

} // namespace aspen
