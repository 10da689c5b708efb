// lstm_layer: builds one LSTM layer with aspen::nn::lstm (popnn's lstm_layer tool and flags),
// runs it on a device with seeded random data, and checks every result against the
// double-precision host model of LstmReference.hpp.
//
// The layer and its phases: LstmLayer.hpp. Inputs, tolerances and exit statuses:
// rnn_common/LayerDriver.hpp.
#include "lstm_layer/LstmLayer.hpp"
#include "lstm_layer/LstmReference.hpp"


#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

using namespace aspen;
using namespace lstmlayer;

namespace {

const char *const kTool = "lstm_layer";

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
      "Usage: lstm_layer [--flag value | --flag=value]...\n"
      "Builds an LSTM layer with aspen::nn::lstm, runs it and checks it against a\n"
      "double-precision host model. Exit status: 0 pass, 1 mismatch or failure, 2 bad usage.\n",
      flags());
}

Config parseArguments(int argc, char **argv) {
  Config c = parseCommandLine(argc, argv, flags());
  if (c.help)
    return c;
  checkConfig(c);
  return c;
}

// --- The layer -------------------------------------------------------------------------------

// The inputs, drawn in a fixed order, rounded to the data type and written (appended to
// `saved`), and the host model's results.
ExpectedOf model(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const std::size_t R = c.hiddenOutputSize(), P = c.projSize;
  const bool backward = c.backward();
  const Type type = c.dataType;
  std::mt19937 rng(c.seed);
  const double weightScale = 1.0 / std::sqrt(double(H));
  const Shape seq = {T, B, R}, state = {B, R}, cellState = {B, H};
  const Shape outputShape = c.outputAllSequence ? seq : state;
  const std::string h = P ? "P" : "H"; // h's width in the descriptions
  saved = {
      {"input",
       {T, B, I},
       "input x_t [T,B,I]",
       randomValues(rng, {T, B, I}, c.inputRange, type),
       {}},
      {"initialOutput",
       state,
       "initial output h_{-1} [B," + h + "]",
       randomValues(rng, state, c.inputRange, type),
       {}},
      {"initialCellState",
       cellState,
       "initial cell state c_{-1} [B,H]",
       randomValues(rng, cellState, c.inputRange, type),
       {}},
      {"inputWeights",
       {4, I, H},
       "input weights Wi [4,I,H], dim 0 in cellOrder",
       randomValues(rng, {4, I, H}, weightScale, type),
       {}},
      {"outputWeights",
       {4, R, H},
       "recurrent weights Wo [4," + h + ",H], dim 0 in cellOrder",
       randomValues(rng, {4, R, H}, weightScale, type),
       {}},
      {"biases",
       {4, H},
       "biases [4,H], dim 0 in cellOrder",
       randomValues(rng, {4, H}, 1.0, type),
       {}}};
  if (P)
    saved.push_back({"projection",
                     {H, P},
                     "projection Wp [H,P]: h_t = m_t . Wp",
                     randomValues(rng, {H, P}, weightScale, type),
                     {}});
  for (const NamedTensor &t : saved)
    writeValues(engine, t.name, type, t.values);
  lstmref::LstmModel model;
  model.T = T, model.B = B, model.I = I, model.H = H, model.P = P;
  for (std::size_t s = 0; s < 4; ++s)
    model.cellOrder[s] = int(c.cellOrder[s]);
  model.act = c.activation->reference;
  model.recAct = c.recurrentActivation->reference;
  model.hardSigmoidGradient = c.hardSigmoidGradient;
  model.outputFullSequence = c.outputAllSequence;
  model.timeSteps = c.variableTimeSteps;
  model.cellClip = c.cellClip.enabled;
  model.cellClipMin = c.cellClip.min, model.cellClipMax = c.cellClip.max;
  // The model clips at the threshold the layer uses: rounded to the data type.
  model.activationClip = c.activationClip > 0 ? roundTo(type, c.activationClip) : 0.0;
  writeTimeSteps(engine, c, saved);
  // --direction reverse: the model runs each row's steps reversed (rnnref::reverseRowSteps); the
  // sequence results come back to the caller's order below.
  const auto runOrder = [&](const std::vector<double> &v) {
    return c.reverse ? rnnref::reverseRowSteps(v, c.variableTimeSteps, T, B) : v;
  };
  lstmref::LstmData data{runOrder(saved[0].values), saved[1].values, saved[2].values,
                         saved[3].values,           saved[4].values, saved[5].values};
  if (P)
    data.projection = saved[6].values;
  lstmref::LstmForward fwd = lstmref::forward(model, data);
  lstmref::LstmGrads grads;
  if (backward) {
    NamedTensor dy{"outputGrad",
                   outputShape,
                   "gradient of the output (output's shape)",
                   randomValues(rng, outputShape, 1.0, type),
                   {}};
    writeValues(engine, dy.name, type, dy.values);
    lstmref::LstmStateGrad lastRef;
    if (c.lastStepStateGrad) {
      lastRef = {randomValues(rng, state, 1.0, type), randomValues(rng, cellState, 1.0, type)};
      writeValues(engine, "lastStepStateGrad.output", type, lastRef.output);
      writeValues(engine, "lastStepStateGrad.cellState", type, lastRef.cellState);
    }
    grads = lstmref::backward(model, data, fwd,
                              c.outputAllSequence ? runOrder(dy.values) : dy.values, lastRef);
    grads.inputGrad = runOrder(grads.inputGrad);
    saved.push_back(std::move(dy));
    if (c.lastStepStateGrad) {
      saved.push_back({"lastStepStateGrad.output",
                       state,
                       "gradient of the final output [B," + h + "]",
                       lastRef.output,
                       {}});
      saved.push_back({"lastStepStateGrad.cellState",
                       cellState,
                       "gradient of the final cell state [B,H]",
                       lastRef.cellState,
                       {}});
    }
  }

  if (c.outputAllSequence)
    fwd.output = runOrder(fwd.output);

  return [=](const std::string &name) -> Expected {
    if (name == "output")
      return {outputShape,
              c.outputAllSequence ? "output h_t [T,B," + h + "], zero past a row's length"
                                  : "each row's final output [B," + h + "]",
              &fwd.output};
    if (name == "finalCellState")
      return {cellState, "each row's final cell state [B,H]", &fwd.finalCellState};
    if (name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &grads.inputGrad};
    if (name == "initialOutputGrad")
      return {state, "gradient of the initial output [B," + h + "]", &grads.initialOutputGrad};
    if (name == "initialCellStateGrad")
      return {cellState, "gradient of the initial cell state [B,H]",
              &grads.initialCellStateGrad};
    if (name == "inputWeightsGrad")
      return {{4, I, H}, "gradient of inputWeights [4,I,H]", &grads.inputWeightsGrad};
    if (name == "outputWeightsGrad")
      return {{4, R, H}, "gradient of outputWeights [4," + h + ",H]", &grads.outputWeightsGrad};
    if (name == "projectionGrad")
      return {{H, P}, "gradient of the projection [H,P]", &grads.projectionGrad};
    return {{4, H}, "gradient of biases [4,H]", &grads.biasesGrad};
  };
}

int run(const Config &c) {
  const auto header = [&](const Device &device) {
    std::string order;
    for (const std::string &name : cellOrderNames(c))
      order += (order.empty() ? "" : ",") + name;
    fmt::print("lstm_layer: T={} B={} I={} H={}{} {} phase={} cellOrder={{{}}} activation={} "
               "recurrentActivation={} on {}\n",
               c.sequenceSize, c.batchSize, c.inputSize, c.outputSize,
               c.projSize ? fmt::format(" P={}", c.projSize) : "", c.dataTypeName, c.phase, order,
               c.activation->name, c.recurrentActivation->name, device.describe());
  };
  return runLayerDriver<Config>(
      kTool, c, header,
      [&](Graph &graph, linalg::PlanningCache &cache) { return build(graph, c, cache); },
      [&](Engine &engine, std::vector<NamedTensor> &saved) { return model(c, engine, saved); },
      [&] {
        auto params = commonManifestParams("lstm", c, cellOrderNames(c));
        params.push_back({"phase", jsonString(c.phase)});
        params.push_back({"dataType", jsonString(c.dataTypeName)});
        return params;
      });
}

} // namespace

int main(int argc, char **argv) {
  return driverMain<Config>(kTool, argc, argv, parseArguments, printUsage, run);
}
