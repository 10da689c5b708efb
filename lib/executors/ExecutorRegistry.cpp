#include "ExecutorRegistry.hpp"

#include <aspen/Error.hpp>

#include <algorithm>

namespace aspen::detail {

const std::vector<ExecutorBackend> &executorBackends() {
  static const std::vector<ExecutorBackend> backends = {cpuExecutorBackend(),
                                                        cudaExecutorBackend()};
  return backends;
}

const ExecutorBackend &executorBackendFor(DeviceKind kind) {
  for (const ExecutorBackend &backend : executorBackends())
    if (std::find(backend.devices.begin(), backend.devices.end(), kind) != backend.devices.end())
      return backend;
  throw internal_error("no executor backend runs device kind " +
                       std::to_string(static_cast<int>(kind)));
}

} // namespace aspen::detail
