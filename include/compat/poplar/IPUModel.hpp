// Poplar's <poplar/IPUModel.hpp>: a model IPU device, run by Aspen's CPU executor with the
// IPU's tile and worker counts, so plans and partitions are exactly those of the IPU.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Device.hpp>
#include <aspen/Target.hpp>

#include <string>

namespace poplar {

class IPUModel {
  std::string version_; // declared first: tilesPerIPU's default comes from it

public:
  enum class RelativeSyncDelayType { NO_DELAY, AUTO };

  explicit IPUModel(const char *ipuVersion = "ipu2")
      : version_(ipuVersion),
        tilesPerIPU(aspen::Target::createModel(ipuVersion).getTilesPerIPU()) {}

  // Settable before createDevice(), as in Poplar.
  unsigned numIPUs = 1;
  unsigned tilesPerIPU;
  bool compileIPUCode = false;
  unsigned minIPUSyncDelay = 0;
  RelativeSyncDelayType relativeSyncDelay = RelativeSyncDelayType::AUTO;

  // Like Poplar's IPU Model, the device runs graphs whose variables exceed a tile's memory
  // (PopLibs' tests rely on it: everything fits on the IPU Model); the engine logs a warning
  // naming the tile. Planners (matMul, the layers) still plan within the tile's bytes.
  aspen::Device createDevice(const aspen::OptionFlags & = {}, bool /*accurateHalf*/ = false,
                             unsigned /*deviceManagerId*/ = 0) const {
    aspen::Target target = aspen::Target::createIPUModelTarget(numIPUs, tilesPerIPU, version_);
    target.setTileMemoryEnforced(false);
    return aspen::Device::createModelDevice(target);
  }
};

} // namespace poplar
