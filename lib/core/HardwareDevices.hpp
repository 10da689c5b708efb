// The hook through which Device reaches the hardware devices (GPUs), which only the executors
// can find: core sits below the executors and names none of them. The engine registers each
// hardware kind's devices while libaspen loads (engine/RegisterHardwareDevices.cpp); Device's
// functions that count or open hardware devices ask here.
#pragma once

#include <aspen/Device.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Target.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace aspen::detail {

// A hardware device as its driver reports it.
struct HardwareDevice {
  std::string name;
  Target target;
};

// The devices of one hardware kind.
struct HardwareDevices {
  // Empty when this build can open them; otherwise why it cannot and how to get them.
  std::string missing;
  // When not missing: how many this process sees, and device `ordinal` (raising aspen::error
  // subclasses naming Device::createGpuDevice(ordinal) when it cannot be opened).
  std::function<unsigned()> count;
  std::function<HardwareDevice(unsigned ordinal, const OptionFlags &options)> open;
};

// Registers the devices of `kind`, replacing any registered before. Called while the library
// loads, before any Device function can run; only read afterwards.
void registerHardwareDevices(DeviceKind kind, HardwareDevices devices);

// The devices registered for `kind`. Raises internal_error naming `caller` when none are: the
// engine, which registers them, is missing from the program.
const HardwareDevices &hardwareDevices(DeviceKind kind, std::string_view caller);

} // namespace aspen::detail
