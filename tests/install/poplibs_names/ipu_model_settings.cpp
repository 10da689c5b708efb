// IPUModel's public settings as PopLibs' test helpers (poplibs_test/Util.cpp) set them:
// tileClockFrequency, globalSyncCycles from it, and globalExchangeConstraints of
// GlobalExchangeFlows for a two-IPU model. The device's target reports each of them; the
// clock is the one cycle counts are converted with. A flow outside the model's IPUs or a
// clock that is not positive raises poplar::invalid_option naming the setting.
#include "ModelGraph.hpp"

#include <poplar/GlobalExchangeConstraints.hpp>
#include <poplar/IPUModel.hpp>
#include <poplar/exceptions.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

int main() {
  poplar::IPUModel model("ipu2");
  bool ok = model.IPUVersion == "ipu2" && model.tileClockFrequency == 1.33e9 &&
            model.globalSyncCycles == 0 && model.globalExchangeConstraints.empty();
  model.numIPUs = 2;
  model.tilesPerIPU = 4;
  model.tileClockFrequency = 1.5e9;
  // PopLibs' rule: 15 ns a hop, one hop for two IPUs, there and back: 15e-9 * 1.5e9 * 2 = 45.
  model.globalSyncCycles = 45;
  const double linkBitsPerSecond = 4 * 128.0 * 1024 * 1024 * 1024 * 0.85;
  for (unsigned ipu = 0; ipu < 2; ++ipu) {
    std::vector<poplar::GlobalExchangeFlow> flows{poplar::GlobalExchangeFlow(ipu, 1 - ipu)};
    model.globalExchangeConstraints.push_back(
        poplar::GlobalExchangeConstraint(linkBitsPerSecond, flows));
  }
  poplar::Device device = model.createDevice();
  const poplar::Target &target = device.getTarget();
  ok = ok && target.getTileClockFrequency() == 1.5e9 && target.getGlobalSyncCycles() == 45 &&
       target.getNumIPUs() == 2 && target.getNumTiles() == 8;
  const auto &constraints = target.getGlobalExchangeConstraints();
  ok = ok && constraints.size() == 2 && constraints[1].bandwidth == linkBitsPerSecond &&
       constraints[1].flows == std::vector<poplar::GlobalExchangeFlow>{{1, 0}} &&
       constraints == model.globalExchangeConstraints;

  poplar::IPUModel stray = model;
  stray.globalExchangeConstraints.push_back(
      poplar::GlobalExchangeConstraint(1e9, {poplar::GlobalExchangeFlow(0, 2)}));
  poplar::IPUModel stopped = model;
  stopped.tileClockFrequency = 0;
  const std::string flowMessage = modelRefusal(stray), clockMessage = modelRefusal(stopped);
  ok = ok && flowMessage.find("globalExchangeConstraints[2]") != std::string::npos &&
       flowMessage.find("0 -> 2") != std::string::npos &&
       clockMessage.find("tileClockFrequency") != std::string::npos;
  std::cout << (ok ? "ipu_model_settings ok"
                   : "ipu_model_settings FAILED: " + flowMessage + " / " + clockMessage)
            << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
