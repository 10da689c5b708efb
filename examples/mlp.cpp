// A multilayer perceptron trained with plain gradient descent, written with aspen::linalg (matMul),
// aspen::ops (add, reduce, scaledAddTo) and aspen::nn (nonLinearity, calcLoss):
//   h = tanh(X·W1 + b1), p = softmax(h·W2 + b2), loss = mean cross-entropy of p and the labels;
//   backward: dlogits = p - onehot (calcLoss's deltas), dW2 = hᵀ·dlogits, dh = dlogits·W2ᵀ,
//   dz = tanh'(h)·dh, dW1 = Xᵀ·dz (matMul of transposed views), bias gradients by reductions.
// The data is synthetic: points in 2-D labelled by which of three rings they fall in (not linearly
// separable, so the hidden layer matters). It prints the loss every few steps and checks that it
// falls below half its initial value.
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Loss.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/ops/ScaledAdd.hpp>
#include <aspen/util/TileMapping.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace aspen;

namespace {

constexpr std::size_t kBatch = 256, kInputs = 2, kHidden = 32, kClasses = 3;
constexpr unsigned kStepsPerRun = 50, kRuns = 8;
constexpr float kLearningRate = 0.5f;

struct Data {
  std::vector<float> x;        // [kBatch, kInputs]
  std::vector<unsigned> label; // [kBatch]
};

Data makeData() {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.5f, 1.5f);
  Data d;
  for (std::size_t i = 0; i < kBatch; ++i) {
    const float a = uniform(rng), b = uniform(rng);
    const float r = std::sqrt(a * a + b * b);
    d.x.insert(d.x.end(), {a, b});
    d.label.push_back(r < 0.6f ? 0u : r < 1.2f ? 1u : 2u);
  }
  return d;
}

std::vector<float> randomWeights(std::size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> w(n);
  for (float &x : w)
    x = normal(rng);
  return w;
}

} // namespace

int main() {
  Device device = Device::createDefaultDevice();
  Graph graph(device.getTarget());
  ops::addCodelets(graph);
  linalg::addCodelets(graph);
  nn::addCodelets(graph);

  Tensor x = graph.addVariable(FLOAT, {kBatch, kInputs}, "x");
  Tensor labels = graph.addVariable(UNSIGNED_INT, {kBatch}, "labels");
  Tensor w1 = graph.addVariable(FLOAT, {kInputs, kHidden}, "w1");
  Tensor b1 = graph.addVariable(FLOAT, {kHidden}, "b1");
  Tensor w2 = graph.addVariable(FLOAT, {kHidden, kClasses}, "w2");
  Tensor b2 = graph.addVariable(FLOAT, {kClasses}, "b2");
  Tensor loss = graph.addVariable(FLOAT, {kBatch}, "loss");
  Tensor deltas = graph.addVariable(FLOAT, {kBatch, kClasses}, "deltas");
  for (const Tensor &t : {x, labels, w1, b1, w2, b2, loss, deltas})
    util::mapTensorLinearly(graph, t);

  program::Sequence step;
  // Forward.
  Tensor h = nn::nonLinearity(graph, nn::NonLinearityType::TANH,
                              ops::add(graph, linalg::matMul(graph, x, w1, step, "x.w1"), b1, step),
                              step, "h");
  Tensor logits = ops::add(graph, linalg::matMul(graph, h, w2, step, "h.w2"), b2, step, "logits");
  Tensor p = nn::nonLinearity(graph, nn::NonLinearityType::SOFTMAX, logits, step, "p");
  step.add(nn::calcLoss(graph, p, labels, loss, deltas, nn::CROSS_ENTROPY_LOSS, "loss"));
  Tensor invBatch = graph.addConstant(FLOAT, {}, 1.0f / kBatch, "1/B");
  graph.setTileMapping(invBatch, 0);
  Tensor meanLoss =
      ops::reduce(graph, loss, {0}, {ops::Operation::ADD, false, invBatch}, step, "mean loss");
  // Backward: deltas = dloss/dlogits per sample (softmax + cross-entropy).
  Tensor dw2 = linalg::matMul(graph, h.transpose(), deltas, step, "dw2");
  Tensor db2 = ops::reduce(graph, deltas, {0}, {ops::Operation::ADD}, step, "db2");
  Tensor dh = linalg::matMul(graph, deltas, w2.transpose(), step, "dh");
  Tensor dz = nn::nonLinearityInputGradient(graph, nn::NonLinearityType::TANH, h, dh, step, "dz");
  Tensor dw1 = linalg::matMul(graph, x.transpose(), dz, step, "dw1");
  Tensor db1 = ops::reduce(graph, dz, {0}, {ops::Operation::ADD}, step, "db1");
  // Update (the gradients are sums over the batch).
  const float scale = -kLearningRate / kBatch;
  ops::scaledAddTo(graph, w1, dw1, scale, step, "update w1");
  ops::scaledAddTo(graph, b1, db1, scale, step, "update b1");
  ops::scaledAddTo(graph, w2, dw2, scale, step, "update w2");
  ops::scaledAddTo(graph, b2, db2, scale, step, "update b2");

  for (const auto &[name, t] : {std::pair{"x", x}, {"labels", labels}, {"w1", w1}, {"w2", w2}})
    graph.createHostWrite(name, t);
  graph.createHostRead("meanLoss", meanLoss);
  // Program 0 is one step (its loss is the initial loss), program 1 kStepsPerRun more.
  Engine engine(graph, {step, program::Repeat(kStepsPerRun, step)});
  engine.load(device);

  const Data data = makeData();
  const std::vector<float> initW1 = randomWeights(kInputs * kHidden, 1.0f, 1);
  const std::vector<float> initW2 = randomWeights(kHidden * kClasses, 0.3f, 2);
  engine.writeTensor("x", data.x.data(), data.x.data() + data.x.size());
  engine.writeTensor("labels", data.label.data(), data.label.data() + data.label.size());
  engine.writeTensor("w1", initW1.data(), initW1.data() + initW1.size());
  engine.writeTensor("w2", initW2.data(), initW2.data() + initW2.size());
  // b1 and b2 start at zero: device memory reads as zero before its first write.

  std::printf("Training a %zu-%zu-%zu perceptron on %zu points on %s\n", kInputs, kHidden, kClasses,
              kBatch, device.describe().c_str());
  float first = 0, last = 0;
  engine.run(0);
  engine.readTensor("meanLoss", &first, &first + 1);
  std::printf("initial loss %.4f\n", first);
  for (unsigned run = 0; run < kRuns; ++run) {
    engine.run(1);
    engine.readTensor("meanLoss", &last, &last + 1); // the loss before the run's last update
    std::printf("after %3u steps: loss %.4f\n", 1 + (run + 1) * kStepsPerRun, last);
  }
  const bool falls = std::isfinite(last) && last < 0.5f * first;
  std::printf("loss %s: %.4f -> %.4f (%s)\n", falls ? "fell" : "did not fall enough", first, last,
              falls ? "loss falls" : "FAILED");
  return falls ? 0 : 1;
}
