// IPUModel's tile and convolution-unit members as PopLibs' tools set them (single_conv_layer:
// numWorkerContexts from --workers-per-tile, dataPathWidth and the conv-unit load widths from
// --input-load-width, fp16InFp32OutConvUnitsPerTile from the pipeline depth), and Target's
// getTargetArchString / getTargetSystemString. Each member starts as the model's own value and
// the device's target reports what was set; a setting of 0, or a data path that is not a
// multiple of 32 bits, raises poplar::invalid_option naming it.
#include "ModelGraph.hpp"

#include <poplar/IPUModel.hpp>
#include <poplar/Target.hpp>
#include <poplar/exceptions.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>

int main() {
  // The models' own numbers (Aspen's Target.hpp): ipu2 6 workers, 624 KiB, a 64-bit path.
  poplar::IPUModel ipu2("ipu2"), ipu1("ipu1");
  bool ok = ipu2.numWorkerContexts == 6 && ipu2.memoryBytesPerTile == 624 * 1024 &&
            ipu2.dataPathWidth == 64 && ipu2.exchangeBytesPerCycle == 4 &&
            ipu2.fp16ConvUnitInputLoadElemsPerCycle == 4 &&
            ipu2.fp32ConvUnitInputLoadElemsPerCycle == 2 &&
            ipu2.fp16InFp16OutConvUnitsPerTile == 16 && ipu2.fp16InFp32OutConvUnitsPerTile == 16 &&
            ipu2.fp32InFp32OutConvUnitsPerTile == 8 && ipu2.fp16ConvUnitMaxPipelineDepth == 16 &&
            ipu2.fp32ConvUnitMaxPipelineDepth == 8;
  ok = ok && ipu1.memoryBytesPerTile == 256 * 1024 && ipu1.fp16InFp16OutConvUnitsPerTile == 8 &&
       ipu1.fp32InFp32OutConvUnitsPerTile == 4;
  const poplar::Target plain = ipu2.createDevice().getTarget();

  // single_conv_layer --input-load-width 16 --workers-per-tile 4, and a larger tile.
  poplar::IPUModel model("ipu2");
  model.tilesPerIPU = 4;
  model.numWorkerContexts = 4;
  model.memoryBytesPerTile = 1 << 20;
  model.exchangeBytesPerCycle = 8;
  const unsigned inputLoadWidth = 16; // bytes
  model.dataPathWidth = inputLoadWidth * 8;
  model.fp32ConvUnitInputLoadElemsPerCycle = inputLoadWidth / 4;
  model.fp16ConvUnitInputLoadElemsPerCycle = inputLoadWidth / 2;
  const unsigned fp32StoredPerCycle = model.dataPathWidth / 8 / 4;
  model.fp16InFp32OutConvUnitsPerTile = std::min(
      model.fp16InFp16OutConvUnitsPerTile, model.fp16ConvUnitMaxPipelineDepth * fp32StoredPerCycle);
  model.fp32ConvUnitMaxPipelineDepth = 4;
  const poplar::Target target = model.createDevice().getTarget();
  ok = ok && target.getNumWorkerContexts() == 4 && target.getBytesPerTile() == (1u << 20) &&
       target.getExchangeBytesPerCycle() == 8 && target.getDataPathWidth() == 128 &&
       target.getVectorWidth(poplar::FLOAT) == 4 && target.getVectorWidth(poplar::HALF) == 8;
  ok = ok && target.getFp32ConvUnitInputLoadElemsPerCycle() == 4 &&
       target.getFp16ConvUnitInputLoadElemsPerCycle() == 8 &&
       target.getFp16InFp32OutConvUnitsPerTile() == 16 &&
       target.getNumConvUnits(poplar::HALF, poplar::HALF) == 16 &&
       target.getConvUnitMaxPipelineDepth(poplar::HALF) == 16 &&
       target.getFp32ConvUnitMaxPipelineDepth() == 4;
  poplar::IPUModel again = model;
  again.tilesPerIPU = plain.getTilesPerIPU();
  ok = ok && again.createDevice().getTarget() != plain; // the tile settings tell targets apart

  // Names: the architecture and the system.
  ok = ok && target.getTargetArchString() == "ipu2" && target.getTargetSystemString() == "ipu2" &&
       poplar::IPUModel("ipu21").createDevice().getTarget().getTargetArchString() == "ipu21";
  const poplar::Target h200 = poplar::Target::createModel("h200");
  ok = ok && h200.getTargetArchString() == "sm_90" && h200.getTargetSystemString() == "h200";

  poplar::IPUModel oddPath = model, noWorkers = model;
  oddPath.dataPathWidth = 48;
  noWorkers.numWorkerContexts = 0;
  const std::string pathMessage = modelRefusal(oddPath), workersMessage = modelRefusal(noWorkers);
  ok = ok && pathMessage.find("dataPathWidth 48") != std::string::npos &&
       workersMessage.find("numWorkerContexts") != std::string::npos;
  std::cout << (ok ? "ipu_model_tile_settings ok"
                   : "ipu_model_tile_settings FAILED: " + pathMessage + " / " + workersMessage)
            << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
