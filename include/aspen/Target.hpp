// Target: the machine that planners plan for and the executors model.
//
// Named models: "ipu1" (1216 tiles, 256 KiB each), "ipu2" and "ipu21" (1472 tiles, 624 KiB each,
// 6 workers), "h100" and "h200" (one tile per SM: 132 tiles, 256 workers a tile = threads of a
// block; the numbers a real card reports), "cpu" (one tile).
//
// Memory on a GPU target: a tile's bytes are its share of the card's global memory, where the
// CUDA executor keeps every tensor. Shared memory is not tile memory: it is a per-block resource
// that kernels ask for (GpuProperties::sharedMemoryPerBlockOptin says how much a block may).
// createGeneric() makes a target with any number of tiles for small tests. A real GPU's target is
// made by makeGpu from its cudaGetDeviceProperties (Device::createGpuDevice).
#pragma once

#include <aspen/Export.hpp>
#include <aspen/GlobalExchangeConstraints.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Type.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace aspen {

enum class TargetType { IPU, IPU_MODEL, CPU, GPU };

// What a GPU target was read from (or, for a model, what the card reports).
struct GpuProperties {
  unsigned multiProcessorCount = 0;
  unsigned computeCapabilityMajor = 0;
  unsigned computeCapabilityMinor = 0;
  unsigned maxThreadsPerBlock = 0;
  std::size_t sharedMemoryPerBlockOptin = 0;
  std::size_t globalMemoryBytes = 0;
  double memoryBandwidthBytesPerSecond = 0;
  // What bounds a co-resident launch (every block resident at once) and a kernel that keeps
  // data on chip; 0 (false) where the target does not say.
  unsigned registersPerMultiprocessor = 0;     // 32-bit registers
  std::size_t sharedMemoryPerMultiprocessor = 0;
  unsigned maxThreadsPerMultiprocessor = 0;
  std::size_t l2CacheBytes = 0;
  bool cooperativeLaunch = false; // grids launched with every block resident (grid barriers)
};

class ASPEN_API Target {
public:
  Target(); // the "cpu" target: one tile

  static Target createModel(StringRef name);
  // A named model with its tile count replaced (tests and virtual devices).
  static Target createModel(StringRef name, unsigned numTiles);
  static Target createGeneric(unsigned numTiles, unsigned numWorkerContexts = 6,
                              std::size_t bytesPerTile = 624 * 1024);
  static Target createCPUTarget();
  static Target createIPUTarget(unsigned numIPUs, StringRef systemType,
                                const OptionFlags &options = {});
  static Target createIPUTarget(unsigned numIPUs, unsigned tilesPerIPU, StringRef systemType,
                                const OptionFlags &options = {});
  // The same numbers with target type IPU_MODEL, as an IPUModel device reports them.
  static Target createIPUModelTarget(unsigned numIPUs, unsigned tilesPerIPU, StringRef systemType);
  // What an IPUModel sets beyond its tile counts (Poplar's public members of the same names).
  // An unset optional keeps the model's own value; a set one replaces it, and the target's
  // getter of the same name reports it: numWorkerContexts, memoryBytesPerTile (getBytesPerTile),
  // dataPathWidth (bits; it sets getVectorWidth, and so the planners' grain), and
  // exchangeBytesPerCycle change plans as they would on the chip; the convolution-unit numbers
  // are only reported (no Aspen planner reads them yet).
  struct IPUModelSettings {
    double tileClockFrequency = 0; // Hz; the target's getTileClockFrequency()
    unsigned globalSyncCycles = 0;
    unsigned minIPUSyncDelay = 0;
    std::vector<GlobalExchangeConstraint> globalExchangeConstraints;
    std::optional<unsigned> numWorkerContexts;
    std::optional<std::size_t> memoryBytesPerTile;
    std::optional<unsigned> dataPathWidth;
    std::optional<unsigned> exchangeBytesPerCycle;
    std::optional<unsigned> fp16ConvUnitInputLoadElemsPerCycle;
    std::optional<unsigned> fp32ConvUnitInputLoadElemsPerCycle;
    std::optional<unsigned> fp16InFp16OutConvUnitsPerTile;
    std::optional<unsigned> fp16InFp32OutConvUnitsPerTile;
    std::optional<unsigned> fp32InFp32OutConvUnitsPerTile;
    std::optional<unsigned> fp16ConvUnitMaxPipelineDepth;
    std::optional<unsigned> fp32ConvUnitMaxPipelineDepth;
  };
  // An IPUModel device's target with those settings. Raises invalid_option naming the setting
  // for a clock that is not a positive finite number, a constraint whose bandwidth is not, a
  // flow whose IPUs are not two different ones of the model's numIPUs, a data path width that
  // is not a positive multiple of 32 bits, or any other set number that is 0.
  static Target createIPUModelTarget(unsigned numIPUs, unsigned tilesPerIPU, StringRef systemType,
                                     const IPUModelSettings &settings);

  const std::string &getName() const { return name_; }
  TargetType getTargetType() const { return type_; }
  // Poplar's names for the chip and the system it is in. The architecture: "ipu1", "ipu2" or
  // "ipu21" for an IPU or IPU model, "sm_<major><minor>" for a GPU from its compute capability
  // ("sm_90" for H100 and H200), "cpu" for the CPU target and "generic" for createGeneric. The
  // system: the name the target was made with (the model's, such as "ipu2" or "h200", or the
  // card's), which for an IPU is also its architecture.
  std::string getTargetArchString() const;
  std::string getTargetSystemString() const { return name_; }
  unsigned getNumTiles() const { return tilesPerIPU_ * numIPUs_; }
  unsigned getTilesPerIPU() const { return tilesPerIPU_; }
  unsigned getNumIPUs() const { return numIPUs_; }
  std::size_t getBytesPerTile() const { return bytesPerTile_; }
  unsigned getNumWorkerContexts() const { return workers_; }
  std::size_t getTypeSize(Type type) const;
  // Elements of `type` processed by one vector instruction on a tile.
  unsigned getVectorWidth(Type type) const;
  unsigned getExchangeBytesPerCycle() const { return exchangeBytesPerCycle_; }
  // Width in bits of a tile's load/store data path.
  unsigned getDataPathWidth() const { return dataPathWidth_; }
  unsigned getRptCountMax() const { return rptCountMax_; }
  unsigned getAtomicStoreGranularity() const { return atomicStoreGranularity_; }
  unsigned getTilesPerSharedExchangeBus() const { return 2; }
  unsigned getMemcpyBytesPerCycle() const { return memcpyBytesPerCycle_; }
  // Multiply-accumulates one tile completes per cycle in a matrix product with `inputType`
  // inputs on the unit built for it, at the card's or chip's published dense peak: on a GPU the
  // FP32 lanes of an SM for float (the tensor cores' TF32 rate with `tensorFloat32`) and the
  // tensor cores' FP16 rate with float accumulation for half, by compute capability; on an IPU
  // the AMP units (ipu2: 64 half or 16 float a cycle; ipu1: 32 or 8); elsewhere the vector width
  // times the workers.
  unsigned getMatMulMacsPerCycle(Type inputType, bool tensorFloat32 = false) const;
  double getTileClockFrequency() const { return clockHz_; }
  // Synchronisation and IPU-to-IPU links as an IPUModel describes them (0, 0 and none unless
  // its settings say otherwise). Aspen's executors do not model either: they are reported, and
  // change neither plans nor execution.
  unsigned getGlobalSyncCycles() const { return globalSyncCycles_; }
  unsigned getMinIPUSyncDelay() const { return minIPUSyncDelay_; }
  const std::vector<GlobalExchangeConstraint> &getGlobalExchangeConstraints() const {
    return globalExchangeConstraints_;
  }

  // Convolution-unit queries, as PopLibs' planners and test helpers read them. Aspen has no
  // convolution units of its own: the numbers describe the matrix-product unit its matMul plans
  // assume, for activations (inputs) of HALF or FLOAT and partials (accumulators) of FLOAT, or
  // HALF with HALF activations. Any other type raises type_error naming the target.
  //   weights per unit: input channels one unit consumes per output, 16 for HALF and 8 for
  //     FLOAT on every target (an IPU's AMP unit; on a GPU the K of one tensor-core MMA,
  //     m16n8k16 for half and m16n8k8 for TF32);
  //   input load elements per cycle: getDataPathWidth() / element bits (an IPU's 64-bit path:
  //     4 half or 2 float; a GPU's 128-bit load: 8 or 4);
  //   number of units: getMatMulMacsPerCycle(activations) / input load elements per cycle
  //     (ipu2 and ipu21: 16 half, 8 float; ipu1: 8 and 4), whatever the partials type;
  //   maximum pipeline depth, by partials type: the weights per unit of the activations the
  //     partials go with, 16 for HALF partials and 8 for FLOAT.
  // An IPUModel's settings of the same names replace any of these (IPUModelSettings).
  unsigned getWeightsPerConvUnit(const Type &activationsType) const;
  // PopLibs' older spelling: true for FLOAT activations, false for HALF.
  unsigned getWeightsPerConvUnit(bool floatActivations) const {
    return getWeightsPerConvUnit(floatActivations ? FLOAT : HALF);
  }
  unsigned getConvUnitInputLoadElemsPerCycle(const Type &activationsType) const;
  unsigned getNumConvUnits(const Type &activationsType, const Type &partialsType) const;
  unsigned getFp16ConvUnitInputLoadElemsPerCycle() const {
    return getConvUnitInputLoadElemsPerCycle(HALF);
  }
  unsigned getFp32ConvUnitInputLoadElemsPerCycle() const {
    return getConvUnitInputLoadElemsPerCycle(FLOAT);
  }
  unsigned getFp16InFp16OutConvUnitsPerTile() const { return getNumConvUnits(HALF, HALF); }
  unsigned getFp16InFp32OutConvUnitsPerTile() const { return getNumConvUnits(HALF, FLOAT); }
  unsigned getFp32InFp32OutConvUnitsPerTile() const { return getNumConvUnits(FLOAT, FLOAT); }
  unsigned getConvUnitMaxPipelineDepth(const Type &partialsType) const;
  unsigned getFp16ConvUnitMaxPipelineDepth() const { return getConvUnitMaxPipelineDepth(HALF); }
  unsigned getFp32ConvUnitMaxPipelineDepth() const { return getConvUnitMaxPipelineDepth(FLOAT); }
  std::size_t getMemoryBytes() const { return getBytesPerTile() * getNumTiles(); }
  // Whether an engine compiled for this target refuses a graph whose variables need more than
  // getBytesPerTile() on some tile (graph_memory_allocation_error; engine option
  // debug.allowOutOfMemory makes it a warning). True for every target Aspen makes; Poplar's
  // IPUModel (compat) turns it off, as Poplar's IPU Model runs such graphs. Planners still plan
  // within getBytesPerTile() either way.
  bool isTileMemoryEnforced() const { return tileMemoryEnforced_; }
  void setTileMemoryEnforced(bool enforced) { tileMemoryEnforced_ = enforced; }
  bool isGpu() const { return type_ == TargetType::GPU; }
  const GpuProperties &getGpuProperties() const { return gpu_; }
  std::string toString() const;

  friend ASPEN_API bool operator==(const Target &a, const Target &b);
  friend bool operator!=(const Target &a, const Target &b) { return !(a == b); }

  // The numbers a GPU target is made from: what cudaGetDeviceProperties reports for a card.
  struct GpuSpec {
    unsigned multiProcessors;
    unsigned ccMajor, ccMinor;
    unsigned maxThreadsPerBlock;
    std::size_t sharedMemoryPerBlock; // opt-in shared memory a block may use
    std::size_t memory;
    double bandwidth; // bytes per second
    double clockHz;
    // Per multiprocessor (0: not known), and whether cooperative launches are supported.
    unsigned registersPerMultiprocessor = 0;
    std::size_t sharedMemoryPerMultiprocessor = 0;
    unsigned maxThreadsPerMultiprocessor = 0;
    std::size_t l2CacheBytes = 0;
    bool cooperativeLaunch = false;
  };
  // A GPU target: tiles = multiProcessors x option "tilesPerSM" (default 1, at most 32),
  // workers = option "threadsPerBlock" (default 256, a multiple of 32 up to the card's
  // maxThreadsPerBlock), bytes per tile = the card's global memory divided among the tiles.
  // Raises invalid_option for a bad option value.
  static Target makeGpu(StringRef name, const GpuSpec &spec, const OptionFlags &options = {});

private:
  static Target makeIpu(StringRef name, unsigned tiles, std::size_t bytesPerTile, double clockHz,
                        unsigned atomicStoreGranularity);

  std::string name_ = "cpu";
  TargetType type_ = TargetType::CPU;
  unsigned numIPUs_ = 1;
  unsigned tilesPerIPU_ = 1;
  std::size_t bytesPerTile_ = std::size_t(1) << 40; // host memory: not a planning constraint
  unsigned workers_ = 1;
  unsigned exchangeBytesPerCycle_ = 4;
  unsigned dataPathWidth_ = 64;
  unsigned rptCountMax_ = 4095;
  unsigned atomicStoreGranularity_ = 4;
  unsigned memcpyBytesPerCycle_ = 8;
  double clockHz_ = 1.0e9;
  unsigned globalSyncCycles_ = 0;
  unsigned minIPUSyncDelay_ = 0;
  std::vector<GlobalExchangeConstraint> globalExchangeConstraints_;
  unsigned ampMacsHalf_ = 0, ampMacsFloat_ = 0; // IPU AMP rates; 0: not an IPU
  // An IPUModel's convolution-unit settings; 0: derived as the queries above describe.
  struct ConvUnitSettings {
    unsigned loadHalf = 0, loadFloat = 0;
    unsigned unitsHalfHalf = 0, unitsHalfFloat = 0, unitsFloatFloat = 0;
    unsigned depthHalf = 0, depthFloat = 0;
  };
  ConvUnitSettings convUnits_;
  GpuProperties gpu_;
  bool tileMemoryEnforced_ = true;
};

} // namespace aspen
