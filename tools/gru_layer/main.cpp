// gru_layer: builds one GRU or AUGRU layer with aspen::nn::gru (popnn's gru_layer tool and
// flags), runs it on a device with seeded random data, and checks every result against the
// double-precision host model of GruReference.hpp.
//
// Phases: fwd (gruFwd / auGruFwd with inferenceOnly), bwd (+ gruBwd / auGruBwd), wu (+ the
// backward keeping its intermediates, then the separate gruWU / auGruWU pass), all
// (+ gruBwdWithWU / auGruBwdWithWU). --with-attention builds the AUGRU: its attention [B,T] is
// uniform in [0, 1] and its gradient is checked too. --with-real-time-steps passes the
// --variable-time-steps lengths through the realTimeSteps overloads instead of GruParams.
// Inputs, tolerances and exit statuses: rnn_common/LayerDriver.hpp.
#include "gru_layer/GruLayer.hpp"
#include "gru_layer/GruReference.hpp"


#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

using namespace aspen;
using namespace grulayer;

namespace {

const char *const kTool = "gru_layer";

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
  printHelp(
      "Usage: gru_layer [--flag value | --flag=value]...\n"
      "Builds a GRU (or AUGRU) layer with aspen::nn::gru, runs it and checks it against a\n"
      "double-precision host model. Exit status: 0 pass, 1 mismatch or failure, 2 bad usage.\n",
      flags());
}

Config parseArguments(int argc, char **argv) {
  Config c = parseCommandLine(argc, argv, flags());
  if (c.help)
    return c;
  drawRealTimeSteps(c);
  checkConfig(c);
  return c;
}

// --- The layer -------------------------------------------------------------------------------

// The inputs, drawn in a fixed order, rounded to the data type and written (appended to
// `saved`), and the host model's results.
ExpectedOf model(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const bool backward = c.backward();
  const Type type = c.dataType;
  std::mt19937 rng(c.seed);
  const double weightScale = 1.0 / std::sqrt(double(H));
  const Shape seq = {T, B, H}, state = {B, H};
  const Shape outputShape = c.outputAllSequence ? seq : state;
  const Shape biasesShape = c.resetAfter ? Shape{3, 2, H} : Shape{3, H};
  saved = {
      {"input",
       {T, B, I},
       "input x_t [T,B,I]",
       randomValues(rng, {T, B, I}, c.inputRange, type),
       {}},
      {"initialOutput",
       state,
       "initial output h_{-1} [B,H]",
       randomValues(rng, state, c.inputRange, type),
       {}},
      {"inputWeights",
       {3, I, H},
       "input weights Wi [3,I,H], dim 0 in cellOrder",
       randomValues(rng, {3, I, H}, weightScale, type),
       {}},
      {"outputWeights",
       {3, H, H},
       "recurrent weights Wo [3,H,H], dim 0 in cellOrder",
       randomValues(rng, {3, H, H}, weightScale, type),
       {}},
      {"biases",
       biasesShape,
       c.resetAfter ? "biases [3,2,H] ([g][0] input, [g][1] recurrent), dim 0 in cellOrder"
                    : "biases [3,H], dim 0 in cellOrder",
       randomValues(rng, biasesShape, 1.0, type),
       {}}};
  if (c.withAttention)
    saved.push_back({"attention",
                     {B, T},
                     "AUGRU attention [B,T] in [0,1]: u <- (1 - a) * u",
                     randomValues(rng, {B, T}, 0.5, type, 0.5),
                     {}});
  for (const NamedTensor &t : saved)
    writeValues(engine, t.name, type, t.values);
  gruref::GruModel model;
  model.T = T, model.B = B, model.I = I, model.H = H;
  for (std::size_t s = 0; s < gruref::kNumGates; ++s)
    model.cellOrder[s] = int(c.cellOrder[s]);
  model.act = c.activation->reference;
  model.recAct = c.recurrentActivation->reference;
  model.hardSigmoidGradient = c.hardSigmoidGradient;
  model.resetAfter = c.resetAfter;
  // The model clips at the threshold the layer uses: rounded to the data type.
  model.activationClip = c.activationClip > 0 ? roundTo(type, c.activationClip) : 0.0;
  model.outputFullSequence = c.outputAllSequence;
  model.timeSteps = c.variableTimeSteps;
  // --direction reverse: the model runs each row's steps reversed (rnnref::reverseRowSteps); the
  // sequence results come back to the caller's order below.
  const auto runOrder = [&](const std::vector<double> &v, bool rowMajor = false) {
    return c.reverse ? rnnref::reverseRowSteps(v, c.variableTimeSteps, T, B, rowMajor) : v;
  };
  const gruref::GruData data{runOrder(saved[0].values),
                             saved[1].values,
                             saved[2].values,
                             saved[3].values,
                             saved[4].values,
                             c.withAttention ? runOrder(saved[5].values, true)
                                             : std::vector<double>()};
  writeTimeSteps(engine, c, saved);
  gruref::GruForward fwd = gruref::forward(model, data);
  gruref::GruGrads grads;
  if (backward) {
    NamedTensor dy{"outputGrad",
                   outputShape,
                   "gradient of the output (output's shape)",
                   randomValues(rng, outputShape, 1.0, type),
                   {}};
    writeValues(engine, dy.name, type, dy.values);
    grads = gruref::backward(model, data, fwd,
                             c.outputAllSequence ? runOrder(dy.values) : dy.values);
    saved.push_back(std::move(dy));
    grads.inputGrad = runOrder(grads.inputGrad);
    if (c.withAttention)
      grads.attentionGrad = runOrder(grads.attentionGrad, true);
  }
  if (c.outputAllSequence)
    fwd.output = runOrder(fwd.output);

  return [=](const std::string &name) -> Expected {
    if (name == "output")
      return {outputShape,
              c.outputAllSequence ? "output h_t [T,B,H], zero past a row's length"
                                  : "each row's final output [B,H]",
              &fwd.output};
    if (name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &grads.inputGrad};
    if (name == "initialOutputGrad")
      return {state, "gradient of the initial output [B,H]", &grads.initialOutputGrad};
    if (name == "attentionGrad")
      return {{B, T}, "gradient of the attention [B,T]", &grads.attentionGrad};
    if (name == "inputWeightsGrad")
      return {{3, I, H}, "gradient of inputWeights [3,I,H]", &grads.inputWeightsGrad};
    if (name == "outputWeightsGrad")
      return {{3, H, H}, "gradient of outputWeights [3,H,H]", &grads.outputWeightsGrad};
    return {biasesShape, "gradient of biases (biases' shape)", &grads.biasesGrad};
  };
}

int run(const Config &c) {
  const auto header = [&](const Device &device) {
    std::string order;
    for (const std::string &name : cellOrderNames(c))
      order += (order.empty() ? "" : ",") + name;
    fmt::print("gru_layer: T={} B={} I={} H={} {} phase={} cellOrder={{{}}} activation={} "
               "recurrentActivation={} resetAfter={} {}{} on {}\n",
               c.sequenceSize, c.batchSize, c.inputSize, c.outputSize, c.dataTypeName, c.phase,
               order, c.activation->name, c.recurrentActivation->name, int(c.resetAfter),
               c.withAttention ? "AUGRU" : "GRU", c.withRealTimeSteps ? " realTimeSteps" : "",
               device.describe());
    if (!c.variableTimeSteps.empty()) {
      std::string lengths;
      for (unsigned l : c.variableTimeSteps)
        lengths += (lengths.empty() ? "" : ",") + std::to_string(l);
      fmt::print("gru_layer: sequence lengths {{{}}}\n", lengths);
    }
  };
  return runLayerDriver<Config>(
      kTool, c, header,
      [&](Graph &graph, linalg::PlanningCache &cache) { return build(graph, c, cache); },
      [&](Engine &engine, std::vector<NamedTensor> &saved) { return model(c, engine, saved); },
      [&] {
        auto params = commonManifestParams("gru", c, cellOrderNames(c));
        params.push_back({"resetAfter", jsonBool(c.resetAfter)});
        params.push_back({"phase", jsonString(c.phase)});
        params.push_back({"dataType", jsonString(c.dataTypeName)});
        return params;
      });
}

} // namespace

int main(int argc, char **argv) {
  return driverMain<Config>(kTool, argc, argv, parseArguments, printUsage, run);
}
