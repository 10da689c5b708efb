// A program using Poplar's QUARTER support the way PopLibs' quarter tests do (a metadata tensor
// from MetadataCreation.hpp, popops::cast with it, Engine::writeTensor/readTensor with a
// QuarterMetadata, convertFromDeviceType through gccs::ArrayRef) and timing itself with
// cycleCount, built against include/compat as C++17 with no source change.
// ported_quarter.expected holds the values worked out by hand:
//   F143 with scale -2 stores 4v: 1 -> 4 = 2^2 (exponent field 10: 0x50); 0.3 -> 1.2, whose
//   mantissa 1.6/8 rounds to 2/8 (0x42, so 1.25 / 4 = 0.3125); -0.0625 -> -2^-2 (0xb0);
//   60 -> 240, the largest (0x7f); 100 -> 400, past 248: NaN (0x80); 1e-4 -> 4e-4, under half
//   the smallest subnormal 2^-10: 0.
//   F152 with scale 3 reads 0x40 as 1 * 8, 0x41 as 1.25 * 8, 0x01 as 2^-17 * 8 = 2^-14 and 0xff
//   as -57344 * 8, beyond half's range: -inf.
#include <poplar/CycleCount.hpp>
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplar/MetadataCreation.hpp>
#include <poplar/Quarter.hpp>
#include <poplar/TypeConversion.hpp>
#include <popops/Cast.hpp>
#include <popops/codelets.hpp>
#include <poputil/TileMapping.hpp>

#include <cstdio>

using namespace poplar;
using namespace poplar::program;

int main() {
  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 4;
  Device device = ipuModel.createDevice();
  Target target = device.getTarget();
  Graph graph(target);
  popops::addCodelets(graph);

  Tensor in = graph.addVariable(FLOAT, {6}, "in");
  poputil::mapTensorLinearly(graph, in);
  graph.createHostWrite("in", in);
  Sequence prog;
  Tensor metadata = createVariableMetadataTensor(graph, QuarterMetadata::Format::F143, -2);
  Tensor q = popops::cast(graph, in, QUARTER, metadata, prog);
  graph.createHostRead("q", q);

  Tensor q2 = graph.addVariable(QUARTER, {4}, "q2");
  poputil::mapTensorLinearly(graph, q2);
  graph.createHostWrite("q2", q2);
  Tensor h = popops::cast(graph, q2, HALF, prog);
  graph.createHostRead("h", h);
  Tensor cycles = cycleCount(graph, prog, 0, SyncType::INTERNAL, "cycles");
  graph.createHostRead("cycles", cycles);

  const std::vector<float> hIn{1.0f, 0.3f, -0.0625f, 60.0f, 100.0f, 1e-4f};
  const std::vector<unsigned char> codes2{0x40, 0x41, 0x01, 0xff};
  std::vector<unsigned char> codes(6);
  std::vector<char> rawHalf(target.getTypeSize(HALF) * 4);
  std::vector<unsigned> count(2);
  QuarterMetadata resultMetadata;
  Engine eng(graph, prog);
  eng.load(device);
  eng.writeTensor("in", hIn.data(), hIn.data() + hIn.size());
  eng.writeTensor("q2", QuarterMetadata(QuarterMetadata::Format::F152, 3), codes2.data(),
                  codes2.data() + codes2.size());
  eng.run();
  eng.readTensor("q", resultMetadata, codes.data(), codes.data() + codes.size());
  eng.readTensor("h", rawHalf.data(), rawHalf.data() + rawHalf.size());
  eng.readTensor("cycles", count.data(), count.data() + 2);

  std::printf("metadata: %s\ncodes:", resultMetadata.toString().c_str());
  for (unsigned char c : codes)
    std::printf(" 0x%02x", unsigned(c));
  std::vector<float> values(6), halves(4);
  convertFromDeviceType(QUARTER, resultMetadata, codes.data(), gccs::ArrayRef(values));
  std::printf("\nvalues:");
  for (float v : values)
    std::printf(" %g", v);
  convertFromDeviceType(HALF, rawHalf.data(), gccs::ArrayRef(halves));
  std::printf("\nhalf:");
  for (float v : halves)
    std::printf(" %g", v);
  std::printf("\ncycles counted: %s\n", (count[0] | count[1]) != 0 ? "yes" : "no");
  return 0;
}
