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
#include "rnn_common/LayerDriver.hpp"
#include "rnn_layer/RnnLayerReference.hpp"

#include <aspen/linalg/Codelets.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Recurrent.hpp>
#include <aspen/ops/Codelets.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace aspen;
using namespace rnnlayer;
namespace rnn = aspen::nn::rnn;

namespace {

const char *const kTool = "rnn_layer";

struct Config : CommonConfig {
  Type partialsType = FLOAT;
  bool applyFeedforwardWeights = true;
};

const std::vector<Flag<Config>> &flags() {
  static const std::vector<Flag<Config>> table = [] {
    // The shared flags this layer has (no gates, shards or sequence-length options).
    const std::vector<std::string> shared = {"help",       "input-size",    "output-size",
                                             "batch-size", "sequence-size", "phase",
                                             "data-type",  "partials-type"};
    std::vector<Flag<Config>> t;
    for (Flag<Config> &f : layerFlags<Config>("rnn")) {
      if (std::find(shared.begin(), shared.end(), f.name) == shared.end())
        continue;
      if (f.name == "phase")
        f.help = "fwd | bwd | wu (rnnBwdSequence with the weight update) | all (as wu)";
      if (f.name == "partials-type") {
        f.defaultValue = "float";
        f.help = "float | half";
        f.set = [](Config &c, const std::string &flag, const std::string &value) {
          c.partialsType = checkPrecision(flag, value) == "half" ? HALF : FLOAT;
        };
      }
      t.push_back(std::move(f));
    }
    const std::vector<Flag<Config>> rnnFlags = {
        {"nonlinearity-type", "tanh",
         "sigmoid | hard_sigmoid | relu | tanh | softmax (gelu, gelu_erf, swish are refused by "
         "the layer)",
         [](Config &c, auto &f, auto &v) { c.activation = parseActivationFlag(f, v); }},
        {"apply-feedforward-weights", "1",
         "0 | 1: rnnFwdSequence weighs the input (1), or forwardWeightInput does first (0)",
         [](Config &c, auto &f, auto &v) { c.applyFeedforwardWeights = parseBool(f, v); }},
    };
    t.insert(t.end(), rnnFlags.begin(), rnnFlags.end());
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

int run(const Config &c) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const bool backward = c.backward(), weightUpdate = c.weightUpdate();
  const bool inferenceOnly = !backward;
  const Type type = c.dataType, partials = c.partialsType;
  const nn::NonLinearityType nl = c.activation->aspen;

  Device device = makeDevice(c);
  fmt::print("rnn_layer: T={} B={} I={} H={} {} (partials {}) phase={} nonlinearity={} "
             "applyFeedforwardWeights={} on {}\n",
             T, B, I, H, c.dataTypeName, partials == HALF ? "half" : "float", c.phase,
             c.activation->name, int(c.applyFeedforwardWeights), device.describe());

  Graph graph(device.getTarget());
  ops::addCodelets(graph);
  linalg::addCodelets(graph);
  nn::addCodelets(graph);
  linalg::PlanningCache cache;

  program::Sequence prog;
  const unsigned t = unsigned(T), b = unsigned(B), i = unsigned(I), h = unsigned(H);
  const Tensor input =
      rnn::createInput(graph, t, b, i, h, type, partials, inferenceOnly, "input", &cache);
  const Tensor state =
      rnn::createFwdState(graph, type, b, h, prog, false, inferenceOnly, "initialOutput", &cache);
  const Tensor initialOutput = rnn::getOutputFromFwdState(state);
  const Tensor inputWeights = rnn::createWeightsInput(graph, t, b, i, h, type, partials,
                                                      inferenceOnly, "inputWeights", &cache);
  const Tensor outputWeights = rnn::createWeightsFeedback(graph, b, h, type, partials,
                                                          inferenceOnly, "outputWeights", &cache);
  const Tensor biases = graph.addVariable(type, {H}, VariableMappingMethod::LINEAR, "biases");

  Tensor weightedIn;
  if (!c.applyFeedforwardWeights)
    weightedIn = rnn::forwardWeightInput(graph, input, inputWeights, prog, partials,
                                         inferenceOnly, "weightInput", &cache);
  const Tensor output = rnn::rnnFwdSequence(
      graph, prog, state, c.applyFeedforwardWeights ? nullptr : &weightedIn, biases,
      inputWeights, outputWeights, input, nl, partials, inferenceOnly, "fwd", &cache);

  // Results, in the order they are reported and saved.
  std::vector<std::pair<std::string, Tensor>> results = {{"output", output}};
  if (backward) {
    const Tensor outputGrad = graph.clone(output, "outputGrad");
    graph.createHostWrite("outputGrad", outputGrad);
    const auto [inputGrad, inputWeightsGrad, outputWeightsGrad, biasesGrad] =
        rnn::rnnBwdSequence(graph, weightUpdate, false, prog, state, output, biases,
                            inputWeights, outputWeights, outputGrad, input, nl, partials, "bwd",
                            &cache);
    results.push_back({"inputGrad", inputGrad});
    if (weightUpdate) {
      results.push_back({"inputWeightsGrad", inputWeightsGrad});
      results.push_back({"outputWeightsGrad", outputWeightsGrad});
      results.push_back({"biasesGrad", biasesGrad});
    }
  }
  const std::pair<const char *, Tensor> inputs[] = {{"input", input},
                                                    {"initialOutput", initialOutput},
                                                    {"inputWeights", inputWeights},
                                                    {"outputWeights", outputWeights},
                                                    {"biases", biases}};
  for (const auto &[name, tensor] : inputs)
    graph.createHostWrite(name, tensor);
  for (const auto &[name, tensor] : results)
    graph.createHostRead(name + "-read", tensor);

  double compileSeconds = 0;
  std::optional<Engine> engine = compileAndLoad(kTool, c, graph, prog, device, compileSeconds);
  if (!engine)
    return 0;

  // Inputs, drawn in a fixed order and rounded to the data type.
  std::mt19937 rng(c.seed);
  const double weightScale = 1.0 / std::sqrt(double(H));
  const Shape seq = {T, B, H};
  std::vector<NamedTensor> saved = {
      {"input", {T, B, I}, "input x_t [T,B,I]", randomValues(rng, {T, B, I}, 1.0, type), {}},
      {"initialOutput",
       {B, H},
       "initial state y_{-1} [B,H]",
       randomValues(rng, {B, H}, 1.0, type),
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
    writeValues(*engine, tensor.name, type, tensor.values);
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
    writeValues(*engine, dy.name, type, dy.values);
    grads = rnnlayerref::backward(model, data, fwd, dy.values);
    saved.push_back(std::move(dy));
  }

  runTimed(kTool, *engine, c, compileSeconds);

  const auto expected = [&](const std::string &name) -> Expected {
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
  const int status = checkResults(kTool, *engine, c, results, expected, saved);
  if (!c.saveTensors.empty()) {
    const std::vector<std::pair<std::string, std::string>> params = {
        {"layer", jsonString("rnn")},
        {"sequenceSize", std::to_string(T)},
        {"batchSize", std::to_string(B)},
        {"inputSize", std::to_string(I)},
        {"outputSize", std::to_string(H)},
        {"activation", jsonString(c.activation->name)},
        {"outputFullSequence", jsonBool(true)},
        {"phase", jsonString(c.phase)},
        {"dataType", jsonString(c.dataTypeName)}};
    saveTensors(kTool, c.saveTensors, params, saved);
  }
  return printVerdict(kTool, c, status, results.size());
}

} // namespace

int main(int argc, char **argv) {
  return driverMain<Config>(kTool, argc, argv, parseArguments, printUsage, run);
}
