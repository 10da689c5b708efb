// Poplar's <poplar/IPUModel.hpp>: a model IPU device, run by Aspen's CPU executor with the
// IPU's tile and worker counts, so plans and partitions are exactly those of the IPU.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Device.hpp>
#include <aspen/GlobalExchangeConstraints.hpp>
#include <aspen/Target.hpp>

#include <string>
#include <vector>

namespace poplar {

class IPUModel {
public:
  enum class RelativeSyncDelayType { NO_DELAY, AUTO };

  explicit IPUModel(const char *ipuVersion = "ipu2") : IPUModel(aspen::Target::createModel(ipuVersion)) {}

  // Public settings, read by createDevice(), as in Poplar. IPUVersion is declared first: the
  // defaults of the others come from it ("ipu1", "ipu2" or "ipu21").
  std::string IPUVersion;
  unsigned numIPUs = 1;
  unsigned tilesPerIPU;
  // Hz (ipu1 1.6e9, ipu2 1.33e9, ipu21 1.85e9): the device target's getTileClockFrequency(),
  // with which cycle counts, profiles and cycle estimates are converted to and from time.
  double tileClockFrequency;
  bool compileIPUCode = false;
  unsigned minIPUSyncDelay = 0;
  // Cycles to synchronise the IPUs, and the links between them (PopLibs' test helpers set both
  // from the number of IPUs). The target reports them (getGlobalSyncCycles,
  // getGlobalExchangeConstraints); Aspen's executors model neither, so they change no result.
  unsigned globalSyncCycles = 0;
  std::vector<aspen::GlobalExchangeConstraint> globalExchangeConstraints;
  RelativeSyncDelayType relativeSyncDelay = RelativeSyncDelayType::AUTO;
  // The tile, as the target reports it (getNumWorkerContexts, getBytesPerTile,
  // getDataPathWidth in bits, getExchangeBytesPerCycle): each changes plans as on the chip.
  unsigned numWorkerContexts;
  unsigned memoryBytesPerTile;
  unsigned dataPathWidth;
  unsigned exchangeBytesPerCycle;
  // The convolution units, reported by the target's queries of the same names (see
  // <aspen/Target.hpp> for the defaults); no Aspen planner reads them yet.
  unsigned fp16ConvUnitInputLoadElemsPerCycle;
  unsigned fp32ConvUnitInputLoadElemsPerCycle;
  unsigned fp16InFp16OutConvUnitsPerTile;
  unsigned fp16InFp32OutConvUnitsPerTile;
  unsigned fp32InFp32OutConvUnitsPerTile;
  unsigned fp16ConvUnitMaxPipelineDepth;
  unsigned fp32ConvUnitMaxPipelineDepth;

  // Like Poplar's IPU Model, the device runs graphs whose variables exceed a tile's memory
  // (PopLibs' tests rely on it: everything fits on the IPU Model); the engine logs a warning
  // naming the tile. Planners (matMul, the layers) still plan within the tile's bytes. A bad
  // setting (clock, constraint) raises invalid_option naming it.
  aspen::Device createDevice(const aspen::OptionFlags & = {}, bool /*accurateHalf*/ = false,
                             unsigned /*deviceManagerId*/ = 0) const {
    aspen::Target::IPUModelSettings settings;
    settings.tileClockFrequency = tileClockFrequency;
    settings.globalSyncCycles = globalSyncCycles;
    settings.minIPUSyncDelay = minIPUSyncDelay;
    settings.globalExchangeConstraints = globalExchangeConstraints;
    settings.numWorkerContexts = numWorkerContexts;
    settings.memoryBytesPerTile = memoryBytesPerTile;
    settings.dataPathWidth = dataPathWidth;
    settings.exchangeBytesPerCycle = exchangeBytesPerCycle;
    settings.fp16ConvUnitInputLoadElemsPerCycle = fp16ConvUnitInputLoadElemsPerCycle;
    settings.fp32ConvUnitInputLoadElemsPerCycle = fp32ConvUnitInputLoadElemsPerCycle;
    settings.fp16InFp16OutConvUnitsPerTile = fp16InFp16OutConvUnitsPerTile;
    settings.fp16InFp32OutConvUnitsPerTile = fp16InFp32OutConvUnitsPerTile;
    settings.fp32InFp32OutConvUnitsPerTile = fp32InFp32OutConvUnitsPerTile;
    settings.fp16ConvUnitMaxPipelineDepth = fp16ConvUnitMaxPipelineDepth;
    settings.fp32ConvUnitMaxPipelineDepth = fp32ConvUnitMaxPipelineDepth;
    aspen::Target target =
        aspen::Target::createIPUModelTarget(numIPUs, tilesPerIPU, IPUVersion, settings);
    target.setTileMemoryEnforced(false);
    return aspen::Device::createModelDevice(target);
  }

private:
  explicit IPUModel(const aspen::Target &model)
      : IPUVersion(model.getName()), tilesPerIPU(model.getTilesPerIPU()),
        tileClockFrequency(model.getTileClockFrequency()),
        numWorkerContexts(model.getNumWorkerContexts()),
        memoryBytesPerTile(static_cast<unsigned>(model.getBytesPerTile())),
        dataPathWidth(model.getDataPathWidth()),
        exchangeBytesPerCycle(model.getExchangeBytesPerCycle()),
        fp16ConvUnitInputLoadElemsPerCycle(model.getFp16ConvUnitInputLoadElemsPerCycle()),
        fp32ConvUnitInputLoadElemsPerCycle(model.getFp32ConvUnitInputLoadElemsPerCycle()),
        fp16InFp16OutConvUnitsPerTile(model.getFp16InFp16OutConvUnitsPerTile()),
        fp16InFp32OutConvUnitsPerTile(model.getFp16InFp32OutConvUnitsPerTile()),
        fp32InFp32OutConvUnitsPerTile(model.getFp32InFp32OutConvUnitsPerTile()),
        fp16ConvUnitMaxPipelineDepth(model.getFp16ConvUnitMaxPipelineDepth()),
        fp32ConvUnitMaxPipelineDepth(model.getFp32ConvUnitMaxPipelineDepth()) {}
};

} // namespace poplar
