// A logistic-regression training step written only with aspen::ops and aspen::nn (no matMul):
//   z = X·w + b (element-wise product, then a reduction over features), p = sigmoid(z),
//   loss = -mean(y log p + (1-y) log(1-p)), gradients from dz = p - y, and a gradient-descent
//   update of w and b with scaledSubtractFrom.
// It trains on seeded synthetic data, runs the same steps in a double-precision host model, and
// exits with 1 when they disagree.
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/ops/ScaledAdd.hpp>
#include <aspen/util/TileMapping.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace aspen;
using namespace aspen::ops::expr;

namespace {

constexpr std::size_t kBatch = 256, kFeatures = 8;
constexpr unsigned kStepsPerRun = 25, kRuns = 4;
constexpr float kLearningRate = 0.5f;

struct Data {
  std::vector<float> x, y; // [kBatch, kFeatures], [kBatch]
};

Data makeData() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> trueWeights(kFeatures);
  for (float &w : trueWeights)
    w = 2 * uniform(rng);
  Data d{std::vector<float>(kBatch * kFeatures), std::vector<float>(kBatch)};
  for (std::size_t i = 0; i < kBatch; ++i) {
    float z = 0.3f + 0.3f * uniform(rng);
    for (std::size_t f = 0; f < kFeatures; ++f) {
      d.x[i * kFeatures + f] = uniform(rng);
      z += d.x[i * kFeatures + f] * trueWeights[f];
    }
    d.y[i] = z > 0 ? 1.0f : 0.0f;
  }
  return d;
}

// The same training in double precision on the host: the reference.
struct HostModel {
  std::vector<double> w = std::vector<double>(kFeatures, 0.0);
  double b = 0;
  double step(const Data &d) {
    std::vector<double> gw(kFeatures, 0.0);
    double gb = 0, loss = 0;
    for (std::size_t i = 0; i < kBatch; ++i) {
      double z = b;
      for (std::size_t f = 0; f < kFeatures; ++f)
        z += d.x[i * kFeatures + f] * w[f];
      const double p = 1 / (1 + std::exp(-z)), y = d.y[i];
      loss -= y * std::log(p) + (1 - y) * std::log(1 - p);
      for (std::size_t f = 0; f < kFeatures; ++f)
        gw[f] += (p - y) * d.x[i * kFeatures + f];
      gb += p - y;
    }
    for (std::size_t f = 0; f < kFeatures; ++f)
      w[f] -= kLearningRate / kBatch * gw[f];
    b -= kLearningRate / kBatch * gb;
    return loss / kBatch; // the loss before this step's update
  }
};

} // namespace

int main() {
  Device device = Device::createDefaultDevice();
  Graph graph(device.getTarget());
  nn::addCodelets(graph);

  Tensor x = graph.addVariable(FLOAT, {kBatch, kFeatures}, "x");
  Tensor y = graph.addVariable(FLOAT, {kBatch}, "y");
  Tensor w = graph.addVariable(FLOAT, {kFeatures}, "w");
  Tensor b = graph.addVariable(FLOAT, {}, "b");
  util::mapTensorLinearly(graph, x);
  util::mapTensorLinearly(graph, y);
  graph.setTileMapping(w, 0);
  graph.setTileMapping(b, 0);

  program::Sequence step;
  // Forward: z = X·w + b, p = sigmoid(z).
  Tensor products = ops::map(graph, _1 * _2, {x, w}, step, "x*w");
  Tensor z = ops::reduce(graph, products, {1}, {ops::Operation::ADD}, step, "sum over features");
  Tensor p = nn::nonLinearity(graph, nn::NonLinearityType::SIGMOID, ops::map(graph, _1 + _2, {z, b}, step),
                              step, "p");
  // Loss (before the update): -mean of the log-likelihood, as a fused expression then a sum.
  Tensor logLikelihood = ops::map(graph, _2 * Log(_1) + (Const(1.0f) - _2) * Log(Const(1.0f) - _1),
                                  {p, y}, step, "log likelihood");
  Tensor minusMean = graph.addConstant(FLOAT, {}, -1.0f / kBatch, "-1/B");
  graph.setTileMapping(minusMean, 0);
  Tensor loss = ops::reduce(graph, logLikelihood, {0}, {ops::Operation::ADD, false, minusMean}, step, "loss");
  // Backward: dz = p - y; dw = Σ_i dz_i x_i; db = Σ_i dz_i.
  Tensor dz = ops::map(graph, _1 - _2, {p, y}, step, "dz");
  Tensor dw = ops::reduce(graph, ops::map(graph, _1 * _2, {x, dz.expand({1})}, step), {0},
                          {ops::Operation::ADD}, step, "dw");
  Tensor db = ops::reduce(graph, dz, {0}, {ops::Operation::ADD}, step, "db");
  // Update.
  ops::scaledSubtractFrom(graph, w, dw, kLearningRate / kBatch, step, "update w");
  ops::scaledSubtractFrom(graph, b, db, kLearningRate / kBatch, step, "update b");

  graph.createHostWrite("x", x);
  graph.createHostWrite("y", y);
  graph.createHostRead("w", w);
  graph.createHostRead("b", b);
  graph.createHostRead("loss", loss);
  // Each run trains kStepsPerRun steps; `loss` holds the last step's loss before its update.
  Engine engine(graph, program::Repeat(kStepsPerRun, step));
  engine.load(device);

  const Data data = makeData();
  engine.writeTensor("x", data.x.data(), data.x.data() + data.x.size());
  engine.writeTensor("y", data.y.data(), data.y.data() + data.y.size());
  // w and b start at zero: device memory reads as zero before its first write.

  HostModel host;
  double worst = 0;
  std::printf("Training logistic regression (%zu samples, %zu features) on %s\n", kBatch, kFeatures,
              device.describe().c_str());
  for (unsigned run = 0; run < kRuns; ++run) {
    double hostLoss = 0;
    for (unsigned s = 0; s < kStepsPerRun; ++s)
      hostLoss = host.step(data);
    engine.run(0);
    float deviceLoss = 0, deviceB = 0;
    std::vector<float> deviceW(kFeatures);
    engine.readTensor("loss", &deviceLoss, &deviceLoss + 1);
    engine.readTensor("w", deviceW.data(), deviceW.data() + kFeatures);
    engine.readTensor("b", &deviceB, &deviceB + 1);
    worst = std::max(worst, std::fabs(deviceLoss - hostLoss));
    worst = std::max(worst, std::fabs(deviceB - host.b));
    for (std::size_t f = 0; f < kFeatures; ++f)
      worst = std::max(worst, std::fabs(deviceW[f] - host.w[f]));
    std::printf("after %3u steps: loss %.6f (host model %.6f)\n", (run + 1) * kStepsPerRun, deviceLoss,
                hostLoss);
  }
  const bool agrees = worst < 1e-4;
  std::printf("largest difference from the double-precision host model: %.2e (%s)\n", worst,
              agrees ? "agrees" : "DISAGREES");
  return agrees ? 0 : 1;
}
