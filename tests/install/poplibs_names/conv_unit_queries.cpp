// Target's convolution-unit queries as PopLibs' test helpers and planners call them
// (getWeightsPerConvUnit(bool) and (Type), getConvUnitInputLoadElemsPerCycle, getNumConvUnits
// and the older per-type names), with the numbers Aspen documents: 16 half or 8 float weights
// a unit; a 64-bit path loads 4 half or 2 float a cycle on an IPU, a GPU's 128 bits 8 or 4;
// units = MACs a cycle / loads a cycle (ipu2 64 and 16 MACs, ipu1 32 and 8, H200 2048 and
// 128 an SM). Other types raise poplar::type_error naming the target.
#include <poplar/IPUModel.hpp>
#include <poplar/Target.hpp>
#include <poplar/exceptions.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

namespace {
struct Expected {
  const char *model;
  unsigned loadHalf, loadFloat, unitsHalf, unitsFloat;
};

bool refuses(const poplar::Target &target, poplar::Type activations, poplar::Type partials) {
  try {
    target.getNumConvUnits(activations, partials);
  } catch (const poplar::type_error &e) {
    return std::string(e.what()).find(target.getName()) != std::string::npos;
  }
  return false;
}
} // namespace

int main() {
  bool ok = true;
  for (const Expected &e : {Expected{"ipu2", 4, 2, 16, 8}, Expected{"ipu21", 4, 2, 16, 8},
                            Expected{"ipu1", 4, 2, 8, 4}, Expected{"h200", 8, 4, 256, 32}}) {
    const poplar::Target t = poplar::Target::createModel(e.model);
    ok = ok && t.getWeightsPerConvUnit(false) == 16 && t.getWeightsPerConvUnit(true) == 8 &&
         t.getWeightsPerConvUnit(poplar::HALF) == 16 && t.getWeightsPerConvUnit(poplar::FLOAT) == 8;
    ok = ok && t.getConvUnitInputLoadElemsPerCycle(poplar::HALF) == e.loadHalf &&
         t.getFp16ConvUnitInputLoadElemsPerCycle() == e.loadHalf &&
         t.getFp32ConvUnitInputLoadElemsPerCycle() == e.loadFloat;
    ok = ok && t.getNumConvUnits(poplar::HALF, poplar::HALF) == e.unitsHalf &&
         t.getFp16InFp32OutConvUnitsPerTile() == e.unitsHalf &&
         t.getFp32InFp32OutConvUnitsPerTile() == e.unitsFloat;
    ok = ok && refuses(t, poplar::INT, poplar::FLOAT) && refuses(t, poplar::FLOAT, poplar::HALF);
    if (!ok) {
      std::cout << "conv_unit_queries FAILED on " << e.model << "\n";
      return EXIT_FAILURE;
    }
  }
  // PopLibs' createGenericConvInput: a channel grouping of gcd(weights per unit, channels).
  poplar::IPUModel model;
  poplar::Device device = model.createDevice();
  ok = ok && device.getTarget().getWeightsPerConvUnit(/*floatActivations=*/false) == 16;
  std::cout << (ok ? "conv_unit_queries ok" : "conv_unit_queries FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
