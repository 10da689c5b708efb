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

  explicit IPUModel(const char *ipuVersion = "ipu2")
      : IPUVersion(ipuVersion),
        tilesPerIPU(aspen::Target::createModel(IPUVersion).getTilesPerIPU()),
        tileClockFrequency(aspen::Target::createModel(IPUVersion).getTileClockFrequency()) {}

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
    aspen::Target target =
        aspen::Target::createIPUModelTarget(numIPUs, tilesPerIPU, IPUVersion, settings);
    target.setTileMemoryEnforced(false);
    return aspen::Device::createModelDevice(target);
  }
};

} // namespace poplar
