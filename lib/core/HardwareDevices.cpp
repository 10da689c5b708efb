#include "HardwareDevices.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <map>

namespace aspen::detail {

namespace {
// Constructed on first use, so registering from another file's static initializer is safe.
std::map<DeviceKind, HardwareDevices> &registered() {
  static std::map<DeviceKind, HardwareDevices> devices;
  return devices;
}
} // namespace

void registerHardwareDevices(DeviceKind kind, HardwareDevices devices) {
  registered()[kind] = std::move(devices);
}

const HardwareDevices &hardwareDevices(DeviceKind kind, std::string_view caller) {
  const auto found = registered().find(kind);
  if (found == registered().end())
    throw internal_error(fmt::format(
        "{}: no executor has registered the hardware devices of kind {}; libaspen's engine "
        "registers them when it loads (engine/RegisterHardwareDevices.cpp, which a program "
        "linking libaspen_internal.a gets through -u aspenHardwareDevicesRegistered)",
        caller, static_cast<int>(kind)));
  return found->second;
}

} // namespace aspen::detail
