#include "support/OptionParsing.hpp"

#include <aspen/Error.hpp>
#include <aspen/Target.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace aspen {

namespace {

// Hopper, one tile per SM: a tile is one resident 256-thread block using the opt-in shared
// memory of an SM. Bandwidth per tile and cycle models global memory shared by SMs.
// The numbers are what CUDA reports for the cards (cudaGetDeviceProperties on sm_90): 132 SMs,
// compute capability 9.0, 1024 threads per block, 227 KiB = 232448 bytes of opt-in shared
// memory per block (CUDA C++ Programming Guide, "Technical Specifications per Compute
// Capability", 9.0). H200 SXM: 141 GB HBM3e reported as 143771 MiB (150754820096 bytes) of
// global memory, 4.8 TB/s (NVIDIA H200 product brief; e.g. as quoted at
// https://ai-hpc.github.io/ai-hardware-engineer-roadmap/ "H200 Hardware Architecture": 132 SMs,
// 141 GB, 4.8 TB/s). H100 SXM: 80 GB HBM3 reported as 81559 MiB, 3.35 TB/s.
// Per SM on sm_90: 64 Ki 32-bit registers, 228 KiB of shared memory, 2048 resident threads (the
// same table); L2 50 MiB on the H100 SXM and 60 MiB as the project's H200 reports it
// (docs/research persistent-rnn notes, "seen here"); both support cooperative launches.
Target::GpuSpec hopper(double bandwidth, std::size_t memory, std::size_t l2Bytes) {
  Target::GpuSpec spec{132, 9, 0, 1024, 232448, memory, bandwidth, 1.98e9};
  spec.registersPerMultiprocessor = 65536;
  spec.sharedMemoryPerMultiprocessor = 233472;
  spec.maxThreadsPerMultiprocessor = 2048;
  spec.l2CacheBytes = l2Bytes;
  spec.cooperativeLaunch = true;
  return spec;
}

constexpr unsigned kDefaultThreadsPerBlock = 256;

} // namespace

Target::Target() = default;

Target Target::makeIpu(StringRef name, unsigned tiles, std::size_t bytesPerTile, double clockHz,
                       unsigned atomicStoreGranularity) {
  Target t;
  t.name_ = std::string(name);
  t.type_ = TargetType::IPU_MODEL;
  t.tilesPerIPU_ = tiles;
  t.bytesPerTile_ = bytesPerTile;
  t.workers_ = 6;
  t.exchangeBytesPerCycle_ = 4;
  t.dataPathWidth_ = 64;
  t.atomicStoreGranularity_ = atomicStoreGranularity;
  t.memcpyBytesPerCycle_ = 8;
  t.clockHz_ = clockHz;
  return t;
}

Target Target::makeGpu(StringRef name, const GpuSpec &spec, const OptionFlags &options) {
  unsigned tilesPerSM = 1;
  unsigned threadsPerBlock = std::min(kDefaultThreadsPerBlock, spec.maxThreadsPerBlock);
  detail::OptionSpec optionSpec(fmt::format("GPU target '{}'", name));
  optionSpec.unsignedInteger("tilesPerSM", tilesPerSM, 1, 32)
      .add("threadsPerBlock",
           fmt::format("a multiple of 32 from 32 to {}", spec.maxThreadsPerBlock),
           [&](const std::string &v) {
             const auto [end, status] =
                 std::from_chars(v.data(), v.data() + v.size(), threadsPerBlock);
             return status == std::errc() && end == v.data() + v.size() &&
                    threadsPerBlock >= 32 && threadsPerBlock % 32 == 0 &&
                    threadsPerBlock <= spec.maxThreadsPerBlock;
           });
  optionSpec.parse(options);
  Target t;
  t.name_ = std::string(name);
  t.type_ = TargetType::GPU;
  t.tilesPerIPU_ = spec.multiProcessors * tilesPerSM;
  t.bytesPerTile_ = spec.memory / t.tilesPerIPU_;
  t.workers_ = threadsPerBlock;
  t.dataPathWidth_ = 128; // 16-byte vector loads per thread
  t.clockHz_ = spec.clockHz;
  t.exchangeBytesPerCycle_ = static_cast<unsigned>(
      std::max(1.0, spec.bandwidth / spec.clockHz / t.tilesPerIPU_));
  t.atomicStoreGranularity_ = 4;
  t.memcpyBytesPerCycle_ = 16;
  t.gpu_.multiProcessorCount = spec.multiProcessors;
  t.gpu_.computeCapabilityMajor = spec.ccMajor;
  t.gpu_.computeCapabilityMinor = spec.ccMinor;
  t.gpu_.maxThreadsPerBlock = spec.maxThreadsPerBlock;
  t.gpu_.sharedMemoryPerBlockOptin = spec.sharedMemoryPerBlock;
  t.gpu_.globalMemoryBytes = spec.memory;
  t.gpu_.memoryBandwidthBytesPerSecond = spec.bandwidth;
  t.gpu_.registersPerMultiprocessor = spec.registersPerMultiprocessor;
  t.gpu_.sharedMemoryPerMultiprocessor = spec.sharedMemoryPerMultiprocessor;
  t.gpu_.maxThreadsPerMultiprocessor = spec.maxThreadsPerMultiprocessor;
  t.gpu_.l2CacheBytes = spec.l2CacheBytes;
  t.gpu_.cooperativeLaunch = spec.cooperativeLaunch;
  return t;
}

Target Target::createModel(StringRef name) {
  // AMP rates: GC2 (ipu1) 125 TFLOPS half at 1.6 GHz on 1216 tiles = 32 MACs a tile and cycle;
  // GC200 (ipu2) 250 TFLOPS half, 62.5 float at 1.33 GHz on 1472 tiles = 64 and 16.
  if (name == "ipu1") {
    Target t = makeIpu(name, 1216, 256 * 1024, 1.6e9, 8);
    t.ampMacsHalf_ = 32;
    t.ampMacsFloat_ = 8;
    return t;
  }
  if (name == "ipu2" || name == "ipu21") {
    Target t = makeIpu(name, 1472, 624 * 1024, name == "ipu2" ? 1.33e9 : 1.85e9, 4);
    t.ampMacsHalf_ = 64;
    t.ampMacsFloat_ = 16;
    return t;
  }
  if (name == "h100")
    return makeGpu(name, hopper(3.35e12, 81559ull << 20, 50ull << 20));
  if (name == "h200")
    return makeGpu(name, hopper(4.8e12, 143771ull << 20, 60ull << 20));
  if (name == "cpu")
    return createCPUTarget();
  throw invalid_option(fmt::format(
      "unknown target model '{}': the models are ipu1, ipu2, ipu21, h100, h200 and cpu", name));
}

Target Target::createModel(StringRef name, unsigned numTiles) {
  if (numTiles == 0)
    throw invalid_option(fmt::format("target model '{}': the number of tiles must be at least 1",
                                     name));
  Target t = createModel(name);
  t.tilesPerIPU_ = numTiles;
  return t;
}

Target Target::createGeneric(unsigned numTiles, unsigned numWorkerContexts,
                             std::size_t bytesPerTile) {
  if (numTiles == 0 || numWorkerContexts == 0 || bytesPerTile == 0)
    throw invalid_option(fmt::format(
        "generic target: tiles ({}), workers ({}) and bytes per tile ({}) must all be positive",
        numTiles, numWorkerContexts, bytesPerTile));
  Target t = makeIpu("generic", numTiles, bytesPerTile, 1.0e9, 4);
  t.workers_ = numWorkerContexts;
  return t;
}

Target Target::createCPUTarget() { return Target(); }

Target Target::createIPUTarget(unsigned numIPUs, StringRef systemType, const OptionFlags &) {
  return createIPUTarget(numIPUs, createModel(systemType).tilesPerIPU_, systemType);
}

Target Target::createIPUTarget(unsigned numIPUs, unsigned tilesPerIPU, StringRef systemType,
                               const OptionFlags &) {
  if (systemType != "ipu1" && systemType != "ipu2" && systemType != "ipu21")
    throw invalid_option(fmt::format(
        "createIPUTarget: unknown IPU system type '{}': expected ipu1, ipu2 or ipu21", systemType));
  if (numIPUs == 0 || tilesPerIPU == 0)
    throw invalid_option(fmt::format(
        "createIPUTarget: numIPUs ({}) and tilesPerIPU ({}) must be positive", numIPUs, tilesPerIPU));
  Target t = createModel(systemType);
  t.type_ = TargetType::IPU; // Poplar's IPU target; IPUModel devices report IPU_MODEL
  t.numIPUs_ = numIPUs;
  t.tilesPerIPU_ = tilesPerIPU;
  return t;
}

Target Target::createIPUModelTarget(unsigned numIPUs, unsigned tilesPerIPU, StringRef systemType) {
  Target t = createIPUTarget(numIPUs, tilesPerIPU, systemType);
  t.type_ = TargetType::IPU_MODEL;
  return t;
}

Target Target::createIPUModelTarget(unsigned numIPUs, unsigned tilesPerIPU, StringRef systemType,
                                   const IPUModelSettings &settings) {
  Target t = createIPUModelTarget(numIPUs, tilesPerIPU, systemType);
  const auto positiveFinite = [](double v) { return std::isfinite(v) && v > 0; };
  if (!positiveFinite(settings.tileClockFrequency))
    throw invalid_option(fmt::format("IPUModel ({}): tileClockFrequency {} must be a positive "
                                     "number of Hz",
                                     systemType, settings.tileClockFrequency));
  for (std::size_t i = 0; i < settings.globalExchangeConstraints.size(); ++i) {
    const GlobalExchangeConstraint &c = settings.globalExchangeConstraints[i];
    if (!positiveFinite(c.bandwidth))
      throw invalid_option(fmt::format("IPUModel ({}): globalExchangeConstraints[{}] has "
                                       "bandwidth {}; it must be a positive number of bits per "
                                       "second",
                                       systemType, i, c.bandwidth));
    for (const GlobalExchangeFlow &f : c.flows)
      if (f.src >= numIPUs || f.dst >= numIPUs || f.src == f.dst)
        throw invalid_option(fmt::format("IPUModel ({}): globalExchangeConstraints[{}] has the "
                                         "flow {} -> {}; a flow joins two different IPUs of the "
                                         "model's {}",
                                         systemType, i, f.src, f.dst, numIPUs));
  }
  const auto positive = [&](const char *setting, const auto &value, auto &field) {
    if (!value)
      return;
    if (*value == 0)
      throw invalid_option(fmt::format("IPUModel ({}): {} is 0; it must be at least 1",
                                       systemType, setting));
    field = *value;
  };
  if (settings.dataPathWidth && *settings.dataPathWidth % 32 != 0)
    throw invalid_option(fmt::format("IPUModel ({}): dataPathWidth {} must be a positive "
                                     "multiple of 32 bits",
                                     systemType, *settings.dataPathWidth));
  positive("numWorkerContexts", settings.numWorkerContexts, t.workers_);
  positive("memoryBytesPerTile", settings.memoryBytesPerTile, t.bytesPerTile_);
  positive("dataPathWidth", settings.dataPathWidth, t.dataPathWidth_);
  positive("exchangeBytesPerCycle", settings.exchangeBytesPerCycle, t.exchangeBytesPerCycle_);
  ConvUnitSettings &conv = t.convUnits_;
  positive("fp16ConvUnitInputLoadElemsPerCycle", settings.fp16ConvUnitInputLoadElemsPerCycle,
           conv.loadHalf);
  positive("fp32ConvUnitInputLoadElemsPerCycle", settings.fp32ConvUnitInputLoadElemsPerCycle,
           conv.loadFloat);
  positive("fp16InFp16OutConvUnitsPerTile", settings.fp16InFp16OutConvUnitsPerTile,
           conv.unitsHalfHalf);
  positive("fp16InFp32OutConvUnitsPerTile", settings.fp16InFp32OutConvUnitsPerTile,
           conv.unitsHalfFloat);
  positive("fp32InFp32OutConvUnitsPerTile", settings.fp32InFp32OutConvUnitsPerTile,
           conv.unitsFloatFloat);
  positive("fp16ConvUnitMaxPipelineDepth", settings.fp16ConvUnitMaxPipelineDepth,
           conv.depthHalf);
  positive("fp32ConvUnitMaxPipelineDepth", settings.fp32ConvUnitMaxPipelineDepth,
           conv.depthFloat);
  t.clockHz_ = settings.tileClockFrequency;
  t.globalSyncCycles_ = settings.globalSyncCycles;
  t.minIPUSyncDelay_ = settings.minIPUSyncDelay;
  t.globalExchangeConstraints_ = settings.globalExchangeConstraints;
  return t;
}

std::size_t Target::getTypeSize(Type type) const {
  if (!type.valid())
    throw type_error(fmt::format("target '{}': getTypeSize of an invalid type", name_));
  return type.size();
}

unsigned Target::getVectorWidth(Type type) const {
  const std::size_t bits = getTypeSize(type) * 8;
  return static_cast<unsigned>(std::max<std::size_t>(1, dataPathWidth_ / bits));
}

namespace {
// Per SM and cycle, dense: FP32 lanes, tensor-core FP16 (float accumulation) and TF32 MACs, by
// compute capability (NVIDIA's architecture whitepapers: A100 64 FP32 lanes, 1024 FP16 and 512
// TF32 tensor MACs an SM; GA10x/AD10x 128, 512, 256; H100/H200 128, 2048, 1024; B200 128, 4096,
// 2048). A card older than sm_80 has no TF32: its float rate is the FP32 lanes'.
struct SmRates {
  unsigned fp32, fp16, tf32;
};
SmRates smRates(unsigned major, unsigned minor) {
  if (major >= 10)
    return {128, 4096, 2048};
  if (major == 9)
    return {128, 2048, 1024};
  if (major == 8)
    return minor == 0 ? SmRates{64, 1024, 512} : SmRates{128, 512, 256};
  return {64, 512, 64};
}
} // namespace

unsigned Target::getMatMulMacsPerCycle(Type inputType, bool tensorFloat32) const {
  const bool isHalf = inputType == HALF;
  if (type_ == TargetType::GPU) {
    const SmRates r = smRates(gpu_.computeCapabilityMajor, gpu_.computeCapabilityMinor);
    const unsigned perSM = isHalf ? r.fp16 : tensorFloat32 ? r.tf32 : r.fp32;
    const unsigned tilesPerSM =
        std::max(1u, getNumTiles() / std::max(1u, gpu_.multiProcessorCount));
    return std::max(1u, perSM / tilesPerSM);
  }
  if (ampMacsHalf_ != 0)
    return isHalf ? ampMacsHalf_ : ampMacsFloat_;
  return getVectorWidth(inputType) * workers_;
}

namespace {
// The activations and partials a convolution-unit query accepts (Target.hpp).
void checkConvUnitTypes(const std::string &target, const char *query, Type activations,
                        const Type *partials) {
  if (activations != HALF && activations != FLOAT)
    throw type_error(fmt::format("target '{}': {} of {} activations; convolution units take "
                                 "half or float activations",
                                 target, query, activations.toString()));
  if (partials && *partials != FLOAT && !(*partials == HALF && activations == HALF))
    throw type_error(fmt::format("target '{}': {} of {} activations with {} partials; the "
                                 "partials are float, or half with half activations",
                                 target, query, activations.toString(), partials->toString()));
}
} // namespace

unsigned Target::getWeightsPerConvUnit(const Type &activationsType) const {
  checkConvUnitTypes(name_, "getWeightsPerConvUnit", activationsType, nullptr);
  return activationsType == HALF ? 16 : 8;
}

unsigned Target::getConvUnitInputLoadElemsPerCycle(const Type &activationsType) const {
  checkConvUnitTypes(name_, "getConvUnitInputLoadElemsPerCycle", activationsType, nullptr);
  const unsigned set = activationsType == HALF ? convUnits_.loadHalf : convUnits_.loadFloat;
  return set != 0 ? set : getVectorWidth(activationsType);
}

unsigned Target::getNumConvUnits(const Type &activationsType, const Type &partialsType) const {
  checkConvUnitTypes(name_, "getNumConvUnits", activationsType, &partialsType);
  const unsigned set = activationsType == FLOAT ? convUnits_.unitsFloatFloat
                       : partialsType == HALF   ? convUnits_.unitsHalfHalf
                                                : convUnits_.unitsHalfFloat;
  if (set != 0)
    return set;
  return std::max(1u, getMatMulMacsPerCycle(activationsType) /
                          getConvUnitInputLoadElemsPerCycle(activationsType));
}

unsigned Target::getConvUnitMaxPipelineDepth(const Type &partialsType) const {
  if (partialsType != HALF && partialsType != FLOAT)
    throw type_error(fmt::format("target '{}': getConvUnitMaxPipelineDepth of {} partials; the "
                                 "partials are half or float",
                                 name_, partialsType.toString()));
  const unsigned set = partialsType == HALF ? convUnits_.depthHalf : convUnits_.depthFloat;
  return set != 0 ? set : (partialsType == HALF ? 16u : 8u);
}

std::string Target::getTargetArchString() const {
  if (type_ == TargetType::GPU)
    return fmt::format("sm_{}{}", gpu_.computeCapabilityMajor, gpu_.computeCapabilityMinor);
  return name_;
}

std::string Target::toString() const {
  return fmt::format("{} ({} tiles, {} workers/tile, {} bytes/tile)", name_, getNumTiles(),
                     workers_, bytesPerTile_);
}

bool operator==(const Target &a, const Target &b) {
  return a.name_ == b.name_ && a.type_ == b.type_ && a.numIPUs_ == b.numIPUs_ &&
         a.tilesPerIPU_ == b.tilesPerIPU_ && a.bytesPerTile_ == b.bytesPerTile_ &&
         a.workers_ == b.workers_ && a.dataPathWidth_ == b.dataPathWidth_ &&
         a.exchangeBytesPerCycle_ == b.exchangeBytesPerCycle_ &&
         a.convUnits_.loadHalf == b.convUnits_.loadHalf &&
         a.convUnits_.loadFloat == b.convUnits_.loadFloat &&
         a.convUnits_.unitsHalfHalf == b.convUnits_.unitsHalfHalf &&
         a.convUnits_.unitsHalfFloat == b.convUnits_.unitsHalfFloat &&
         a.convUnits_.unitsFloatFloat == b.convUnits_.unitsFloatFloat &&
         a.convUnits_.depthHalf == b.convUnits_.depthHalf &&
         a.convUnits_.depthFloat == b.convUnits_.depthFloat;
}

} // namespace aspen
