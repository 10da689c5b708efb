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

  aspen::Device createDevice(const aspen::OptionFlags & = {}, bool /*accurateHalf*/ = false,
                             unsigned /*deviceManagerId*/ = 0) const {
    return aspen::Device::createModelDevice(
        aspen::Target::createIPUModelTarget(numIPUs, tilesPerIPU, version_));
  }
};

} // namespace poplar
