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
  const RegisteredExecutor &executor = registeredExecutorFor(DeviceKind::Gpu);
  HardwareDevices gpus;
  if (!executor.built) {
    gpus.missing = executor.missing;
  } else {
    gpus.count = executor.deviceCount;
    gpus.open = executor.openDevice;
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
