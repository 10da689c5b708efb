// rnn_layer: builds one vanilla RNN layer with aspen::nn::rnn (popnn's rnn_layer tool and
// flags), runs it on a device with seeded random data, and checks every result against the
// double-precision host model of RnnLayerReference.hpp.
//
// Phases: fwd (rnnFwdSequence with inferenceOnly), bwd (+ rnnBwdSequence without the weight
// update), wu and all (rnnBwdSequence with doWU: the same call). --apply-feedforward-weights=1
// lets rnnFwdSequence weigh the input (weightedIn null); 0 weighs it first with
// forwardWeightInput and passes the product. The initial state is random (createFwdState with
// initState false, then written from the host); its gradient is not returned by rnnBwdSequence,
// so it is not checked. Inputs, tolerances and exit statuses: rnn_common/LayerDriver.hpp.
#include "rnn_layer/RnnLayer.hpp"
#include "rnn_layer/RnnLayerReference.hpp"

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

const char *const kTool = "rnn_layer";

const std::vector<Flag<Config>> &flags() {
  static const std::vector<Flag<Config>> table = [] {
    std::vector<Flag<Config>> t = layerFlagTable();
    const std::vector<Flag<Config>> run = runFlags<Config>();
    t.insert(t.end(), run.begin(), run.end());
    return t;
  }();
  return table;
}

void printUsage() {
  printHelp("Usage: rnn_layer [--flag value | --flag=value]...\n"
            "Builds a vanilla RNN layer with aspen::nn::rnn, runs it and checks it against a\n"
            "double-precision host model. Exit status: 0 pass, 1 mismatch or failure, 2 bad "
            "usage.\n",
            flags());
}

Config parseArguments(int argc, char **argv) { return parseCommandLine(argc, argv, flags()); }

// The inputs, drawn in a fixed order, rounded to the data type and written (appended to
// `saved`), and the host model's results.
ExpectedOf model(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
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

int run(const Config &c) {
  const auto header = [&](const Device &device) {
    fmt::print("rnn_layer: T={} B={} I={} H={} {} (partials {}) phase={} nonlinearity={} "
               "applyFeedforwardWeights={} on {}\n",
               c.sequenceSize, c.batchSize, c.inputSize, c.outputSize, c.dataTypeName,
               c.partialsType == HALF ? "half" : "float", c.phase, c.activation->name,
               int(c.applyFeedforwardWeights), device.describe());
  };
  return runLayerDriver<Config>(
      kTool, c, header,
      [&](Graph &graph, linalg::PlanningCache &cache) { return build(graph, c, cache); },
      [&](Engine &engine, std::vector<NamedTensor> &saved) { return model(c, engine, saved); },
      [&]() -> ManifestParams {
        return {{"layer", jsonString("rnn")},
                {"sequenceSize", std::to_string(c.sequenceSize)},
                {"batchSize", std::to_string(c.batchSize)},
                {"inputSize", std::to_string(c.inputSize)},
                {"outputSize", std::to_string(c.outputSize)},
                {"activation", jsonString(c.activation->name)},
                {"outputFullSequence", jsonBool(true)},
                {"phase", jsonString(c.phase)},
                {"dataType", jsonString(c.dataTypeName)}};
      });
}

} // namespace

int main(int argc, char **argv) {
  return driverMain<Config>(kTool, argc, argv, parseArguments, printUsage, run);
}
