// popnn's pooling and batch norm as a PopLibs program uses them (popnn/Pooling.hpp,
// popnn/BatchNorm.hpp), on an IPU model, values worked out by hand (exact in float):
//   x [1, 1, 2, 4] = {1 2 3 4 / 8 7 6 5}: 2x2 max pooling, stride 2 -> {8, 6}; its gradient
//   with pooledGradient {1, 2} -> 1 at the 8, 2 at the 6, 0 elsewhere;
//   batch norm of one channel {1, 3, 5, 7}: mean 4, biased variance 5; with eps 0 and
//   gamma 2, beta 1 the output is 2 (x - 4) / sqrt(5) + 1.
// A kernel larger than the field raises poplar::invalid_option naming the dimension.
#include "ModelGraph.hpp"

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <popnn/BatchNorm.hpp>
#include <popnn/Pooling.hpp>
#include <popnn/codelets.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

int main() {
  ModelGraph model(2);
  poplar::Graph &graph = model.graph;
  popnn::addCodelets(graph);
  poplar::program::Sequence prog;
  const popnn::pooling::PoolParams pool(popnn::PoolingType::MAX, {2, 4}, {2, 2}, {2, 2}, {0, 0},
                                        {0, 0}, 1, 1, poplar::FLOAT);
  poplar::Tensor x = graph.addVariable(poplar::FLOAT, {1, 1, 2, 4}, "x");
  graph.setTileMapping(x, 0);
  poplar::Tensor pooled = popnn::pooling::pool(graph, pool, x, prog, "pool");
  poplar::Tensor dy = graph.addVariable(poplar::FLOAT, {1, 1, 1, 2}, "dy");
  graph.setTileMapping(dy, 1);
  poplar::Tensor dx =
      popnn::pooling::poolInputGradient(graph, pool, x, pooled, dy, false, prog, "poolGrad");

  poplar::Tensor acts = graph.addVariable(poplar::FLOAT, {4, 1}, "acts");
  graph.setTileMapping(acts, 1);
  poplar::Tensor gamma = graph.addConstant<float>(poplar::FLOAT, {1}, {2.0f}, "gamma");
  poplar::Tensor beta = graph.addConstant<float>(poplar::FLOAT, {1}, {1.0f}, "beta");
  graph.setTileMapping(gamma, 0);
  graph.setTileMapping(beta, 0);
  const auto stats = popnn::bn::batchNormStatistics(graph, acts, 0.0f, prog, false);
  const auto normalised =
      popnn::bn::batchNormalise(graph, acts, gamma, beta, stats.first, stats.second, prog);
  graph.createHostWrite("x", x);
  graph.createHostWrite("dy", dy);
  graph.createHostWrite("acts", acts);
  graph.createHostRead("pooled", pooled);
  graph.createHostRead("dx", dx);
  graph.createHostRead("bn", normalised.first);

  poplar::Engine engine(graph, prog);
  engine.load(model.device);
  const std::vector<float> xs = {1, 2, 3, 4, 8, 7, 6, 5}, dys = {1, 2}, as = {1, 3, 5, 7};
  engine.writeTensor("x", xs.data(), xs.data() + xs.size());
  engine.writeTensor("dy", dys.data(), dys.data() + dys.size());
  engine.writeTensor("acts", as.data(), as.data() + as.size());
  engine.run(0);
  std::vector<float> ps(2), dxs(8), bn(4);
  engine.readTensor("pooled", ps.data(), ps.data() + ps.size());
  engine.readTensor("dx", dxs.data(), dxs.data() + dxs.size());
  engine.readTensor("bn", bn.data(), bn.data() + bn.size());
  bool ok = ps == std::vector<float>{8, 6} &&
            dxs == std::vector<float>{0, 0, 0, 0, 1, 0, 2, 0};
  for (std::size_t i = 0; i < 4; ++i)
    ok = ok && std::abs(bn[i] - (2.0 * (as[i] - 4.0) / std::sqrt(5.0) + 1.0)) < 1e-5;

  std::string message;
  try {
    const popnn::pooling::PoolParams tooLarge(popnn::PoolingType::AVG, {2, 4}, {3, 2}, {1, 1},
                                              {0, 0}, {0, 0}, 1, 1, poplar::FLOAT);
    popnn::pooling::pool(graph, tooLarge, x, prog, "bad");
  } catch (const poplar::invalid_option &e) {
    message = e.what();
  }
  ok = ok && message.find("dimension 0") != std::string::npos;
  std::cout << (ok ? "pool_norm_layer ok" : "pool_norm_layer FAILED: " + message) << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
