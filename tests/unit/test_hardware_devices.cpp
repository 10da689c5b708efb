// Device reaches the GPUs through core's hardware-device hook, which the engine fills in from
// the executor registry while the library loads. This program links the archives, where nothing
// references the object that registers them but the linker option lib/CMakeLists.txt gives.
#include "core/HardwareDevices.hpp"
#include "executors/ExecutorRegistry.hpp"

#include <aspen/Device.hpp>
#include <aspen/Error.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
using namespace aspen::detail;

TEST_CASE("the engine registers the executors' GPUs with core before main", "[unit][gpu_device]") {
  const RegisteredExecutor &executor = registeredExecutorFor(DeviceKind::Gpu);
  const HardwareDevices &gpus = hardwareDevices(DeviceKind::Gpu, "the test");
  CHECK(gpus.missing == executor.missing);
  CHECK((gpus.count != nullptr) == executor.built);
  CHECK((gpus.open != nullptr) == executor.built);
  CHECK(Device::gpuCount() == (executor.built ? executor.deviceCount() : 0));
}

TEST_CASE("asking the hook for a kind nobody registered is an internal error naming the caller",
          "[unit][gpu_device]") {
  CHECK_THROWS_AS(hardwareDevices(DeviceKind::Model, "Device::somewhere"), internal_error);
  CHECK_THROWS_WITH(hardwareDevices(DeviceKind::Model, "Device::somewhere"),
                    Catch::Contains("Device::somewhere") && Catch::Contains("registered"));
}
