// poplin's convolution API as a PopLibs program uses it (poplin/Convolution.hpp, ConvUtil.hpp):
// a 1-D convolution of 5 elements with the kernel {1, 0, -1}, padding 1 and stride 2, forward,
// backward data through getGradientParams with transposed, flipped weights, and
// convolutionWeightUpdate with scale -0.5, on an IPU model (the portable plans); values worked
// out by hand (exact in float):
//   x = {1, 2, 3, 4, 5}, padded {0, 1, 2, 3, 4, 5, 0}; y[o] = sum_k w[k] xp[2o + k] = {-2, -2, 4}
//   dy = {1, 2, 3}: dx[i] = sum over 2o + k - 1 = i of dy[o] w[k] = {0, 1, 0, 1, 0}
//   dW[k] = sum_o dy[o] xp[2o + k] = {16, 22, 10}; w - 0.5 dW = {-7, -11, -6}
// A kernel larger than its padded field raises poplar::shape_error naming it.
#include "ModelGraph.hpp"

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplin/ConvUtil.hpp>
#include <poplin/Convolution.hpp>
#include <poplin/codelets.hpp>
#include <popops/codelets.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

int main() {
  ModelGraph model(4);
  poplar::Graph &graph = model.graph;
  popops::addCodelets(graph);
  poplin::addCodelets(graph);
  const poplin::ConvParams params(poplar::FLOAT, poplar::FLOAT, 1, {5}, {3}, 1, 1, 1,
                                  {{0}, {0}, {1}, {1}, {1}, {false}},
                                  {{0}, {0}, {1}, {0}, {0}, {false}}, {{0}, {0}, {2}, {0}, {0}});
  poplin::PlanningCache cache;
  poplar::program::Sequence prog;
  poplar::Tensor x = poplin::createInput(graph, params, "x", {}, &cache);
  poplar::Tensor w = poplin::createWeights(graph, params, "w", {}, &cache);
  poplar::Tensor dy = poplin::createConvOutput(graph, params, "dy", {}, &cache);
  poplar::Tensor y = poplin::convolution(graph, x, w, params, false, prog, "fwd", {}, &cache);
  poplar::Tensor dx = poplin::convolution(graph, dy, w, poplin::getGradientParams(params), true,
                                          prog, "bwd", {}, &cache);
  poplin::convolutionWeightUpdate(graph, dy, w, x, params, -0.5f, prog, "wu", {}, &cache);
  graph.createHostWrite("x", x);
  graph.createHostWrite("w", w);
  graph.createHostWrite("dy", dy);
  graph.createHostRead("y", y);
  graph.createHostRead("dx", dx);
  graph.createHostRead("w_out", w);

  poplar::Engine engine(graph, prog);
  engine.load(model.device);
  const std::vector<float> xs = {1, 2, 3, 4, 5}, ws = {1, 0, -1}, dys = {1, 2, 3};
  engine.writeTensor("x", xs.data(), xs.data() + xs.size());
  engine.writeTensor("w", ws.data(), ws.data() + ws.size());
  engine.writeTensor("dy", dys.data(), dys.data() + dys.size());
  engine.run(0);
  std::vector<float> ys(3), dxs(5), wout(3);
  engine.readTensor("y", ys.data(), ys.data() + ys.size());
  engine.readTensor("dx", dxs.data(), dxs.data() + dxs.size());
  engine.readTensor("w_out", wout.data(), wout.data() + wout.size());
  bool ok = ys == std::vector<float>{-2, -2, 4} && dxs == std::vector<float>{0, 1, 0, 1, 0} &&
            wout == std::vector<float>{-7, -11, -6};

  std::string message;
  try {
    poplin::ConvParams tooLarge(poplar::FLOAT, 1, {2}, {5}, 1, 1, 1);
    poplin::createInput(graph, tooLarge, "bad");
  } catch (const poplar::shape_error &e) {
    message = e.what();
  }
  ok = ok && message.find("kernel") != std::string::npos;
  std::cout << (ok ? "conv_layer ok" : "conv_layer FAILED: " + message) << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
