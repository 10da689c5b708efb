#include "ExecutorRegistry.hpp"

#include <aspen/Error.hpp>

#include <algorithm>

namespace aspen::detail {

const std::vector<RegisteredExecutor> &registeredExecutors() {
  static const std::vector<RegisteredExecutor> executors = {cpuRegisteredExecutor(),
                                                        cudaRegisteredExecutor()};
  return executors;
}

const RegisteredExecutor &registeredExecutorFor(DeviceKind kind) {
  for (const RegisteredExecutor &executor : registeredExecutors())
    if (std::find(executor.devices.begin(), executor.devices.end(), kind) != executor.devices.end())
      return executor;
  throw internal_error("no executor runs device kind " +
                       std::to_string(static_cast<int>(kind)));
}

} // namespace aspen::detail
