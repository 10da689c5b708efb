// A program written against PopLibs' LSTM API (popnn::lstm, popnn::rnn params, a
// poplin::matmul::PlanningCache), built against include/compat with no source change. One step
// of a 1-unit LSTM with weights chosen so that every value has a closed form:
//   f = i = o = sigmoid(0) = 1/2, g = tanh(ln(3)/2) = 1/2, c = f c0 + i g = 1/2 (c0 = 1/2),
//   h = tanh(1/2) / 2; backward from dy = 1 with Wo = 1 (h0 = 0, so Wo does not change h).
// ported_lstm.expected holds those values worked out by hand (5 decimals).
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplin/codelets.hpp>
#include <popnn/Lstm.hpp>
#include <popnn/codelets.hpp>
#include <popops/codelets.hpp>
#include <poputil/TileMapping.hpp>

using namespace poplar;
using namespace poplar::program;

int main() {
  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 4;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  popops::addCodelets(graph);
  poplin::addCodelets(graph);
  popnn::addCodelets(graph);

  poplin::matmul::PlanningCache cache;
  popnn::lstm::LstmParams params(FLOAT, 1, 1, {1, 1});
  Tensor input = popnn::lstm::createInput(graph, params, "input", {}, &cache);
  popnn::lstm::LstmState init = popnn::lstm::createInitialState(graph, params, "init", {}, &cache);
  popnn::lstm::LstmWeights weights = popnn::lstm::createWeights(graph, params, "weights", {}, &cache);
  Sequence prog;
  Tensor intermediates;
  Tensor output, lastCellState;
  std::tie(output, lastCellState) = popnn::lstm::lstmFwd(graph, params, init, input, weights,
                                                         &intermediates, prog, "fwd", {}, &cache);
  Tensor outputGrad = graph.clone(output, "outputGrad");
  Tensor inputGrad;
  popnn::lstm::LstmWeights weightsGrad;
  popnn::lstm::LstmState initGrad = popnn::lstm::lstmBwdWithWU(
      graph, params, prog, init, intermediates, weights, input, output, outputGrad, nullptr,
      &inputGrad, weightsGrad, "bwd", {}, &cache);

  const std::pair<const char *, Tensor> writes[] = {
      {"x", input}, {"h0", init.output}, {"c0", init.cellState}, {"wi", weights.inputWeights},
      {"wo", weights.outputWeights}, {"b", weights.biases}, {"dy", outputGrad}};
  for (const auto &w : writes)
    graph.createHostWrite(w.first, w.second);
  const std::pair<const char *, Tensor> reads[] = {
      {"h", output}, {"c", lastCellState}, {"dx", inputGrad}, {"dh0", initGrad.output},
      {"dc0", initGrad.cellState}, {"dWi", weightsGrad.inputWeights},
      {"dWo", weightsGrad.outputWeights}, {"db", weightsGrad.biases}};
  for (const auto &r : reads)
    graph.createHostRead(r.first, r.second);

  Engine engine(graph, prog);
  engine.load(device);
  const float x = 1, h0 = 0, c0 = 0.5f, dy = 1;
  const float wi[4] = {0, 0, float(0.5 * std::log(3.0)), 0}, wo[4] = {1, 1, 1, 1}, b[4] = {};
  engine.writeTensor("x", &x, &x + 1);
  engine.writeTensor("h0", &h0, &h0 + 1);
  engine.writeTensor("c0", &c0, &c0 + 1);
  engine.writeTensor("wi", wi, wi + 4);
  engine.writeTensor("wo", wo, wo + 4);
  engine.writeTensor("b", b, b + 4);
  engine.writeTensor("dy", &dy, &dy + 1);
  engine.run(0);
  for (const auto &r : reads) {
    std::vector<float> v(r.second.numElements());
    engine.readTensor(r.first, v.data(), v.data() + v.size());
    std::printf("%s:", r.first);
    for (float e : v)
      std::printf(" %.5f", e);
    std::printf("\n");
  }
  std::printf("forward FLOPs: %llu\n",
              static_cast<unsigned long long>(popnn::lstm::getBasicLstmCellFwdFlops(params)));
  return 0;
}
