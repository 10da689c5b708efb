// The CPU executor's entry in the executor registry: it runs the CPU and model devices.
// Options: aspen.cpu.threads (default: Device::cpuThreadCount(), from ASPEN_CPU_THREADS or the
// CPUs the process may run on), aspen.cpu.workerOrder (forward | reverse) and
// aspen.cpu.convolutions (auto: oneDNN where it applies | blas: im2col + BLAS; CpuOneDnn.hpp)
// and aspen.cpu.inlineElements (compute sets this small run on the calling thread; 0: none).
#include "CpuExecutor.hpp"
#include "support/OptionParsing.hpp"
#include "executors/ExecutorRegistry.hpp"

#include <aspen/Device.hpp>

namespace aspen::detail {

RegisteredExecutor cpuRegisteredExecutor() {
  RegisteredExecutor b;
  b.name = "cpu";
  b.optionPrefix = "aspen.cpu.";
  b.devices = {DeviceKind::Cpu, DeviceKind::Model};
  b.built = true;
  b.declareOptions = [](OptionSpec &spec) {
    auto options = std::make_shared<CpuExecutorOptions>();
    options->threads = Device::cpuThreadCount();
    spec.unsignedInteger("aspen.cpu.threads", options->threads, 1, 1024)
        .enumeration("aspen.cpu.workerOrder", options->reverseWorkers,
                     {{"forward", false}, {"reverse", true}})
        .enumeration("aspen.cpu.convolutions", options->oneDnnConvolutions,
                     {{"auto", true}, {"blas", false}})
        .unsignedInteger("aspen.cpu.inlineElements", options->inlineElements);
    return std::shared_ptr<void>(options);
  };
  b.make = [](const Device &, const void *options) {
    return makeCpuExecutor(*static_cast<const CpuExecutorOptions *>(options));
  };
  return b;
}

} // namespace aspen::detail
