// The CPU executor's entry in the executor registry: it runs the CPU and model devices.
// Options: aspen.cpu.threads (default: environment ASPEN_CPU_THREADS, else every core) and
// aspen.cpu.workerOrder (forward | reverse).
#include "CpuExecutor.hpp"
#include "support/OptionParsing.hpp"
#include "executors/ExecutorRegistry.hpp"

#include <aspen/Error.hpp>

#include <cstdlib>
#include <thread>

namespace aspen::detail {

namespace {

unsigned defaultThreads() {
  if (const char *text = std::getenv("ASPEN_CPU_THREADS"); text && *text) {
    char *end = nullptr;
    const unsigned long n = std::strtoul(text, &end, 10);
    if (*end != '\0' || n == 0 || n > 1024)
      throw invalid_option("environment variable ASPEN_CPU_THREADS='" + std::string(text) +
                           "' is not a thread count in [1, 1024]");
    return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

ExecutorBackend cpuExecutorBackend() {
  ExecutorBackend b;
  b.name = "cpu";
  b.optionPrefix = "aspen.cpu.";
  b.devices = {DeviceKind::Cpu, DeviceKind::Model};
  b.built = true;
  b.declareOptions = [](OptionSpec &spec) {
    auto options = std::make_shared<CpuExecutorOptions>();
    options->threads = defaultThreads();
    spec.unsignedInteger("aspen.cpu.threads", options->threads, 1, 1024)
        .enumeration("aspen.cpu.workerOrder", options->reverseWorkers,
                     {{"forward", false}, {"reverse", true}});
    return std::shared_ptr<void>(options);
  };
  b.make = [](const Device &, const void *options) {
    return makeCpuExecutor(*static_cast<const CpuExecutorOptions *>(options));
  };
  return b;
}

} // namespace aspen::detail
