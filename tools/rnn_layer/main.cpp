// rnn_layer: builds one vanilla RNN layer with aspen::nn::rnn (popnn's rnn_layer tool and
// flags), runs it on a device with seeded random data, and checks every result against the
// double-precision host model of tools/rnnref/Vanilla.hpp.
//
// Phases: fwd (rnnFwdSequence with inferenceOnly), bwd (+ rnnBwdSequence without the weight
// update), wu and all (rnnBwdSequence with doWU: the same call). --apply-feedforward-weights=1
// lets rnnFwdSequence weigh the input (weightedIn null); 0 weighs it first with
// forwardWeightInput and passes the product. The initial state is random (createFwdState with
// initState false, then written from the host); its gradient is not returned by rnnBwdSequence,
// so it is not checked. A stack in one call (RnnLayer.hpp's usesStackCall: --num-layers,
// --direction, --variable-time-steps, --dropout) is checked against the model composed layer by
// layer (rnnref::stackForward / stackBackward), every layer's final output and initial state's
// gradient included. Inputs, tolerances and exit statuses: rnn_common/LayerDriver.hpp.
#include "rnn_layer/RnnLayer.hpp"
#include "rnnref/Vanilla.hpp"
#include "rnnref/Stack.hpp"

#include <aspen/nn/Recurrent.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace aspen;
using namespace rnnlayer;
using namespace rnnlayer::vanilla;

namespace {

// The model of a stack in one call: L layers in D directions composed from rnnlayerref layers
// by rnnref::stackForward / stackBackward, with the dropout mask between them in a training
// run; tensors named as buildStack names them, drawn in its order.
ExpectedOf stackModel(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const std::size_t L = c.numLayers, D = c.bidirectional ? 2 : 1, n = L * D;
  InputDrawer draw(engine, saved, c.seed, c.dataType);
  const double weightScale = 1.0 / std::sqrt(double(H));
  const Shape state = {B, H};
  const auto inputSize = [&](std::size_t i) { return i < D ? I : D * H; };
  const rnnref::StackShape shape = stackShapeOf(c, L, H);
  const std::vector<double> input = draw("input", {T, B, I}, "input x_t [T,B,I]", c.inputRange);
  std::vector<rnnlayerref::RnnModel> models(n);
  std::vector<rnnlayerref::RnnData> data(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto name = [&](const char *base) { return stackName(base, i / D, i % D); };
    const std::string in = i < D ? "I" : std::to_string(D) + "H";
    rnnlayerref::RnnModel &m = models[i];
    m.T = T, m.B = B, m.I = inputSize(i), m.H = H;
    m.nl = c.activation->reference;
    m.timeSteps = c.variableTimeSteps;
    data[i].initialOutput =
        draw(name("initialOutput"), state, "initial state y_{-1} [B,H]", c.inputRange);
    data[i].inputWeights =
        draw(name("inputWeights"), {m.I, H}, "feed-forward weights Wff [" + in + ",H]",
             weightScale);
    data[i].outputWeights =
        draw(name("outputWeights"), {H, H}, "feedback weights Wfb [H,H]", weightScale);
    data[i].biases = draw(name("biases"), {H}, "biases b [H]", 1.0);
  }
  writeTimeSteps(engine, c, saved);
  std::vector<rnnlayerref::RnnForward> fwd(n);
  const auto outputs = rnnref::stackForward(shape, input, [&](std::size_t i, std::size_t,
                                                              const std::vector<double> &x) {
    data[i].input = x;
    fwd[i] = rnnlayerref::forward(models[i], data[i]);
    return fwd[i].output;
  });
  std::vector<rnnlayerref::RnnGrads> grads(n);
  std::vector<double> inputGrad;
  if (c.backward()) {
    const std::vector<double> dy = draw("outputGrad", {T, B, D * H},
                                        "gradient of the output [T,B," + std::to_string(D) +
                                            "H]",
                                        1.0);
    inputGrad = rnnref::stackBackward(shape, dy, [&](std::size_t i, std::size_t,
                                                     const std::vector<double> &g) {
      grads[i] = rnnlayerref::backward(models[i], data[i], fwd[i], g);
      return grads[i].inputGrad;
    });
  }
  return [=](const std::string &result) -> Expected {
    const StackNameParts parts = splitStackName(result);
    const std::size_t i = parts.l * D + parts.d;
    const std::string in = i < D ? "I" : std::to_string(D) + "H";
    const std::string &name = parts.name;
    if (name == "output")
      return {{T, B, D * H}, "the stack's output [T,B," + std::to_string(D) + "H]",
              &outputs.back()};
    if (name == "finalOutput")
      return {state, "each row's final output [B,H]", &fwd[i].finalOutput};
    if (name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &inputGrad};
    if (name == "initialOutputGrad")
      return {state, "gradient of the initial state [B,H]", &grads[i].initialOutputGrad};
    if (name == "inputWeightsGrad")
      return {{inputSize(i), H}, "gradient of inputWeights [" + in + ",H]",
              &grads[i].inputWeightsGrad};
    if (name == "outputWeightsGrad")
      return {{H, H}, "gradient of outputWeights [H,H]", &grads[i].outputWeightsGrad};
    return {{H}, "gradient of biases [H]", &grads[i].biasesGrad};
  };
}

// The inputs, drawn in a fixed order, rounded to the data type and written (appended to
// `saved`), and the host model's results.
ExpectedOf model(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  if (usesStackCall(c))
    return stackModel(c, engine, saved);
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const bool backward = c.backward();
  const Type type = c.dataType;
  std::mt19937 rng(c.seed);
  const double weightScale = 1.0 / std::sqrt(double(H));
  const Shape seq = {T, B, H};
  saved = {
      {"input",
       {T, B, I},
       "input x_t [T,B,I]",
       randomValues(rng, {T, B, I}, c.inputRange, type),
       {}},
      {"initialOutput",
       {B, H},
       "initial state y_{-1} [B,H]",
       randomValues(rng, {B, H}, c.inputRange, type),
       {}},
      {"inputWeights",
       {I, H},
       "feed-forward weights Wff [I,H]",
       randomValues(rng, {I, H}, weightScale, type),
       {}},
      {"outputWeights",
       {H, H},
       "feedback weights Wfb [H,H]",
       randomValues(rng, {H, H}, weightScale, type),
       {}},
      {"biases", {H}, "biases b [H]", randomValues(rng, {H}, 1.0, type), {}}};
  for (const NamedTensor &tensor : saved)
    writeValues(engine, tensor.name, type, tensor.values);
  rnnlayerref::RnnModel model;
  model.T = T, model.B = B, model.I = I, model.H = H;
  model.nl = c.activation->reference;
  const rnnlayerref::RnnData data{saved[0].values, saved[1].values, saved[2].values,
                                  saved[3].values, saved[4].values};
  const rnnlayerref::RnnForward fwd = rnnlayerref::forward(model, data);
  rnnlayerref::RnnGrads grads;
  if (backward) {
    NamedTensor dy{"outputGrad", seq, "gradient of the output [T,B,H]",
                   randomValues(rng, seq, 1.0, type), {}};
    writeValues(engine, dy.name, type, dy.values);
    grads = rnnlayerref::backward(model, data, fwd, dy.values);
    saved.push_back(std::move(dy));
  }

  return [=](const std::string &name) -> Expected {
    if (name == "output")
      return {seq, "output y_t [T,B,H]", &fwd.output};
    if (name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &grads.inputGrad};
    if (name == "inputWeightsGrad")
      return {{I, H}, "gradient of inputWeights [I,H]", &grads.inputWeightsGrad};
    if (name == "outputWeightsGrad")
      return {{H, H}, "gradient of outputWeights [H,H]", &grads.outputWeightsGrad};
    return {{H}, "gradient of biases [H]", &grads.biasesGrad};
  };
}

// rnn_layer for layerMain (LayerDriver.hpp).
struct Driver {
  using Config = vanilla::Config;
  static constexpr const char *kTool = "rnn_layer";
  static constexpr const char *kUsage =
      "Usage: rnn_layer [--flag value | --flag=value]...\n"
      "Builds a vanilla RNN layer with aspen::nn::rnn, runs it and checks it against a\n"
      "double-precision host model. Exit status: 0 pass, 1 mismatch or failure, 2 bad "
      "usage.\n";
  static std::vector<Flag<Config>> flags() { return layerFlagTable(); }
  static void check(Config &c) { usesStackCall(c); } // UsageError for what the stack cannot run
  static void header(const Config &c, const Device &device) {
    fmt::print("rnn_layer: T={} B={} I={} H={} {} (partials {}) phase={} nonlinearity={} "
               "applyFeedforwardWeights={}{} on {}\n",
               c.sequenceSize, c.batchSize, c.inputSize, c.outputSize, c.dataTypeName,
               c.partialsType == HALF ? "half" : "float", c.phase, c.activation->name,
               int(c.applyFeedforwardWeights),
               usesStackCall(c) ? fmt::format(" layers={} direction={} dropout={} (one call)",
                                              c.numLayers,
                                              c.bidirectional ? "bidirectional"
                                              : c.reverse     ? "reverse"
                                                              : "forward",
                                              c.dropout)
                                : std::string(),
               device.describe());
  }
  static BuiltLayer build(Graph &graph, const Config &c, linalg::PlanningCache &cache) {
    return vanilla::build(graph, c, cache);
  }
  static ExpectedOf model(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
    return ::model(c, engine, saved);
  }
  static ManifestParams manifest(const Config &c) {
    return {{"layer", jsonString("rnn")},
            {"sequenceSize", std::to_string(c.sequenceSize)},
            {"batchSize", std::to_string(c.batchSize)},
            {"inputSize", std::to_string(c.inputSize)},
            {"outputSize", std::to_string(c.outputSize)},
            {"activation", jsonString(c.activation->name)},
            {"outputFullSequence", jsonBool(true)},
            {"phase", jsonString(c.phase)},
            {"dataType", jsonString(c.dataTypeName)}};
  }
};

} // namespace

int main(int argc, char **argv) {
  return layerMain<Driver>(argc, argv);
}
