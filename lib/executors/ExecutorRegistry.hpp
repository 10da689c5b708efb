// The executors Aspen knows, by name: the devices each runs, its engine options (keys under its
// prefix, "aspen.<name>."), whether this build has it, and how to make one. The engine (and,
// through the hook in core/HardwareDevices.hpp, Device) asks the registry instead of naming
// executors, so adding an executor touches its own folder (lib/executors/<name>, its code
// generation under lib/targets/<name>) and the list in ExecutorRegistry.cpp. An executor this
// build lacks stays registered: its options are still checked (a program is portable between
// builds), and asking for its devices raises one clear error.
#pragma once

#include "core/HardwareDevices.hpp"
#include "executors/Executor.hpp"

#include <aspen/Device.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Target.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace aspen::detail {

class OptionSpec;

struct RegisteredExecutor {
  std::string name;                // "cpu", "cuda"
  std::string optionPrefix;        // "aspen.cpu."
  std::vector<DeviceKind> devices; // the device kinds it runs
  bool built = false;              // whether this build has it
  std::string missing;             // when not built: how to get it, for messages
  // Adds the executor's options (their keys start with optionPrefix) to the engine's `spec`,
  // reading into the object returned, which holds the defaults until the spec is parsed.
  std::function<std::shared_ptr<void>(OptionSpec &spec)> declareOptions;
  // Makes an executor for `device` with the options declareOptions read (built executors only).
  std::function<std::unique_ptr<Executor>(const Device &device, const void *options)> make;
  // Hardware executors (built only): how many devices this process sees, and device `ordinal`.
  std::function<unsigned()> deviceCount;
  std::function<HardwareDevice(unsigned ordinal, const OptionFlags &options)> openDevice;
};

// Every executor, built or not, in a fixed order.
const std::vector<RegisteredExecutor> &registeredExecutors();

// The executor that runs devices of `kind`; raises internal_error when none does.
const RegisteredExecutor &registeredExecutorFor(DeviceKind kind);

// The executors' entries, each defined in its own folder.
RegisteredExecutor cpuRegisteredExecutor();
RegisteredExecutor cudaRegisteredExecutor();

} // namespace aspen::detail
