// PopLibs' large non-linearity case, as a program would write it: a million floats and their
// copy on an IPU Model of two tiles (4 MB a tile, far past a tile's 624 KB), ReLU in place.
// Poplar's IPU Model runs it (PopLibs' test expects everything to fit there), so Aspen's compat
// IPUModel does too. Every input is -1, so every output is 0, worked out by hand.
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <popnn/NonLinearity.hpp>
#include <popnn/codelets.hpp>
#include <popops/codelets.hpp>
#include <poputil/TileMapping.hpp>

#include <algorithm>
#include <cstdio>

using namespace poplar;
using namespace poplar::program;

int main() {
  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 2;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  popnn::addCodelets(graph);
  popops::addCodelets(graph);
  const std::size_t n = 1000000;
  Tensor pre = graph.addVariable(FLOAT, {n});
  poputil::mapTensorLinearly(graph, pre);
  Tensor post = graph.clone(pre, "post");
  Sequence prog;
  prog.add(Copy(pre, post));
  popnn::nonLinearityInPlace(graph, popnn::NonLinearityType::RELU, post, prog, "Relu");
  graph.createHostWrite("pre", pre);
  graph.createHostRead("post", post);
  std::vector<float> hPre(n, -1.0f), hPost(n, 10.0f);
  Engine eng(graph, prog);
  eng.load(device);
  eng.writeTensor("pre", hPre.data(), hPre.data() + n);
  eng.run();
  eng.readTensor("post", hPost.data(), hPost.data() + n);
  const auto [lo, hi] = std::minmax_element(hPost.begin(), hPost.end());
  std::printf("tile bytes: %zu\n", static_cast<std::size_t>(device.getTarget().getBytesPerTile()));
  std::printf("with %zu elements, min %g max %g\n", n, *lo, *hi);
  return 0;
}
