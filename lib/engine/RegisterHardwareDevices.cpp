// Gives core's Device the hardware devices of the executor registry (core/HardwareDevices.hpp):
// core sits below the executors and names none of them, so the engine, above both, connects
// them while libaspen loads. Nothing references this file's object, and a linker takes from an
// archive only the objects something references: programs linking libaspen_internal.a get it
// through the linker option -u aspenHardwareDevicesRegistered (lib/CMakeLists.txt).
#include "core/HardwareDevices.hpp"
#include "executors/ExecutorRegistry.hpp"

namespace aspen::detail {

namespace {
bool registerGpus() {
  const ExecutorBackend &backend = executorBackendFor(DeviceKind::Gpu);
  HardwareDevices gpus;
  if (!backend.built) {
    gpus.missing = backend.missing;
  } else {
    gpus.count = backend.deviceCount;
    gpus.open = [&backend](unsigned ordinal, const OptionFlags &options) {
      BackendDevice card = backend.openDevice(ordinal, options);
      return HardwareDevice{std::move(card.name), std::move(card.target)};
    };
  }
  registerHardwareDevices(DeviceKind::Gpu, std::move(gpus));
  return true;
}
} // namespace

} // namespace aspen::detail

extern "C" {
extern const bool aspenHardwareDevicesRegistered;
const bool aspenHardwareDevicesRegistered = aspen::detail::registerGpus();
}
