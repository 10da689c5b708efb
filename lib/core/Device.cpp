// Device: the CPU, model and GPU devices, and the DeviceManager listing the GPUs. The GPUs are
// reached through the hardware-device hook (HardwareDevices.hpp), which the engine fills in.
#include "HardwareDevices.hpp"

#include <aspen/Device.hpp>
#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#ifdef __linux__
#include <sched.h>
#endif

namespace aspen {

struct Device::State {
  DeviceKind kind = DeviceKind::None;
  Target target;
  unsigned id = 0;
  unsigned gpuOrdinal = 0;
  std::string gpuName;
  mutable std::atomic<bool> attached{false};
};

namespace {
unsigned nextDeviceId() {
  static std::atomic<unsigned> next{0};
  return next++;
}
} // namespace

Device::Device() = default;
Device::Device(std::shared_ptr<State> state) : state_(std::move(state)) {}
Device::Device(Device &&) noexcept = default;
Device &Device::operator=(Device &&) noexcept = default;
Device::~Device() = default;

Device Device::createCPUDevice() {
  auto s = std::make_shared<State>();
  s->kind = DeviceKind::Cpu;
  s->target = Target::createCPUTarget();
  s->id = nextDeviceId();
  return Device(std::move(s));
}

Device Device::createModelDevice(const Target &target) {
  auto s = std::make_shared<State>();
  s->kind = DeviceKind::Model;
  s->target = target;
  s->id = nextDeviceId();
  return Device(std::move(s));
}

Device Device::createSimulatorDevice(const Target &target, const OptionFlags &) {
  return createModelDevice(target);
}

Device Device::createDefaultDevice() {
  return gpuCount() > 0 ? createGpuDevice(0) : createModelDevice(Target::createModel("h200"));
}

Device Device::createVirtualDevice(unsigned tilesPerIPU) const {
  if (!state_)
    throw error("createVirtualDevice: this Device is empty (default-constructed or moved from)");
  const Target &t = state_->target;
  if (tilesPerIPU == 0 || tilesPerIPU > t.getTilesPerIPU())
    throw invalid_option(fmt::format(
        "createVirtualDevice({}) on {}: the tile count must be between 1 and {}", tilesPerIPU,
        t.getName(), t.getTilesPerIPU()));
  Target virtualTarget =
      t.getTargetType() == TargetType::CPU ? t : Target::createModel(t.getName(), tilesPerIPU);
  if (t.getName() == "generic")
    virtualTarget = Target::createGeneric(tilesPerIPU, t.getNumWorkerContexts(), t.getBytesPerTile());
  return state_->kind == DeviceKind::Cpu ? createCPUDevice() : createModelDevice(virtualTarget);
}

const Target &Device::getTarget() const {
  if (!state_)
    throw error("getTarget: this Device is empty (default-constructed or moved from)");
  return state_->target;
}

DeviceKind Device::getKind() const { return state_ ? state_->kind : DeviceKind::None; }
unsigned Device::getId() const { return state_ ? state_->id : 0; }

bool Device::attach() const {
  if (!state_)
    return false;
  state_->attached = true;
  return true;
}

void Device::detach() const {
  if (state_)
    state_->attached = false;
}

bool Device::isAttached() const { return state_ && state_->attached; }

std::string Device::describe() const {
  switch (getKind()) {
  case DeviceKind::None:
    return "no device";
  case DeviceKind::Cpu:
    return "the CPU executor";
  case DeviceKind::Model:
    return fmt::format("the CPU executor modelling {}", state_->target.toString());
  case DeviceKind::Gpu:
    return fmt::format("GPU {} ({}, compute capability {}.{}, {} tiles of {} threads)",
                       state_->gpuOrdinal, state_->gpuName,
                       state_->target.getGpuProperties().computeCapabilityMajor,
                       state_->target.getGpuProperties().computeCapabilityMinor,
                       state_->target.getNumTiles(), state_->target.getNumWorkerContexts());
  }
  return "unknown device";
}

unsigned Device::getGpuOrdinal() const {
  if (getKind() != DeviceKind::Gpu)
    throw error("getGpuOrdinal: " + describe() + " is not a GPU");
  return state_->gpuOrdinal;
}

unsigned Device::gpuCount() {
  const detail::HardwareDevices &gpus =
      detail::hardwareDevices(DeviceKind::Gpu, "Device::gpuCount");
  return gpus.missing.empty() ? gpus.count() : 0;
}

unsigned Device::cpuThreadCount() {
  if (const char *text = std::getenv("ASPEN_CPU_THREADS"); text && *text) {
    char *end = nullptr;
    const unsigned long n = std::strtoul(text, &end, 10);
    if (*end != '\0' || n == 0 || n > 1024 || text[0] == '-' || text[0] == '+' || text[0] == ' ')
      throw invalid_option("environment variable ASPEN_CPU_THREADS='" + std::string(text) +
                           "' is not a thread count in [1, 1024]");
    return static_cast<unsigned>(n);
  }
  unsigned cpus = 0;
#ifdef __linux__
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    cpus = static_cast<unsigned>(CPU_COUNT(&allowed));
#endif
  if (cpus == 0)
    cpus = std::thread::hardware_concurrency();
  return std::clamp(cpus, 1u, 1024u);
}

Device Device::createGpuDevice(unsigned ordinal, const OptionFlags &options) {
  const detail::HardwareDevices &gpus =
      detail::hardwareDevices(DeviceKind::Gpu, "Device::createGpuDevice");
  if (!gpus.missing.empty())
    throw error(fmt::format("Device::createGpuDevice({}): {}", ordinal, gpus.missing));
  detail::HardwareDevice card = gpus.open(ordinal, options);
  auto s = std::make_shared<State>();
  s->kind = DeviceKind::Gpu;
  s->target = std::move(card.target);
  s->id = nextDeviceId();
  s->gpuOrdinal = ordinal;
  s->gpuName = std::move(card.name);
  return Device(std::move(s));
}

DeviceManager DeviceManager::createDeviceManager() { return DeviceManager(); }

std::vector<Device> DeviceManager::getDevices(TargetType type, unsigned,
                                              const OptionFlags &options) const {
  std::vector<Device> devices;
  // IPU: the GPUs stand in for IPU hardware, so a program written for it runs unchanged (one
  // GPU is one device whatever numIPUs asks for; its tiles are the GPU's SMs).
  if (type == TargetType::GPU || type == TargetType::IPU)
    for (unsigned i = 0, n = Device::gpuCount(); i < n; ++i)
      devices.push_back(Device::createGpuDevice(i, options));
  return devices;
}

std::vector<Device> DeviceManager::getDevices() const { return getDevices(TargetType::GPU, 1); }

Device DeviceManager::getDevice(unsigned deviceId, const OptionFlags &options) const {
  if (deviceId >= Device::gpuCount())
    throw error(fmt::format("DeviceManager::getDevice({}): this machine has {} hardware devices "
                            "(GPUs); use Device::createModelDevice for a model",
                            deviceId, Device::gpuCount()));
  return Device::createGpuDevice(deviceId, options);
}

} // namespace aspen
