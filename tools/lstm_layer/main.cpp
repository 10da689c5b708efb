// lstm_layer: builds one LSTM layer with aspen::nn::lstm (popnn's lstm_layer tool and flags),
// runs it on a device with seeded random data, and checks every result against the
// double-precision host model of tools/rnnref/Lstm.hpp.
//
// The layer and its phases: LstmLayer.hpp. Inputs, tolerances and exit statuses:
// rnn_common/LayerDriver.hpp.
#include "lstm_layer/LstmLayer.hpp"
#include "rnnref/Lstm.hpp"


#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

using namespace aspen;
using namespace lstmlayer;

namespace {

// --- The layer -------------------------------------------------------------------------------

// The model of a stack in one call (usesStackCall): L layers in D directions composed from
// lstmref layers by rnnref::stackForward / stackBackward, with the dropout mask between them
// in a training run; tensors named as buildStack names them, drawn in its order.
ExpectedOf stackModel(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const std::size_t R = c.hiddenOutputSize(), P = c.projSize;
  const std::size_t L = c.numLayers, D = c.bidirectional ? 2 : 1, n = L * D;
  const Type type = c.dataType;
  InputDrawer draw(engine, saved, c.seed, type);
  const double weightScale = 1.0 / std::sqrt(double(H));
  const Shape state = {B, R}, cellState = {B, H};
  const std::string h = P ? "P" : "H";
  const auto inputSize = [&](std::size_t i) { return i < D ? I : D * R; };
  const rnnref::StackShape shape = stackShapeOf(c, L, R);
  const std::vector<double> input = draw("input", {T, B, I}, "input x_t [T,B,I]", c.inputRange);
  std::vector<lstmref::LstmModel> models(n);
  std::vector<lstmref::LstmData> data(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto name = [&](const char *base) { return stackName(base, i / D, i % D); };
    const std::string in = i < D ? "I" : std::to_string(D) + h;
    lstmref::LstmModel &m = models[i];
    m.T = T, m.B = B, m.I = inputSize(i), m.H = H, m.P = P;
    for (std::size_t s = 0; s < 4; ++s)
      m.cellOrder[s] = int(c.cellOrder[s]);
    m.act = c.activation->reference;
    m.recAct = c.recurrentActivation->reference;
    m.hardSigmoidGradient = c.hardSigmoidGradient;
    m.timeSteps = c.variableTimeSteps;
    m.cellClip = c.cellClip.enabled;
    m.cellClipMin = c.cellClip.min, m.cellClipMax = c.cellClip.max;
    m.activationClip = c.activationClip > 0 ? roundTo(type, c.activationClip) : 0.0;
    data[i].initialOutput =
        draw(name("initialOutput"), state, "initial output h_{-1} [B," + h + "]", c.inputRange);
    data[i].initialCellState = draw(name("initialCellState"), cellState,
                                    "initial cell state c_{-1} [B,H]", c.inputRange);
    data[i].inputWeights = draw(name("inputWeights"), {4, m.I, H},
                                "input weights Wi [4," + in + ",H], dim 0 in cellOrder",
                                weightScale);
    data[i].outputWeights = draw(name("outputWeights"), {4, R, H},
                                 "recurrent weights Wo [4," + h + ",H], dim 0 in cellOrder",
                                 weightScale);
    data[i].biases = draw(name("biases"), {4, H}, "biases [4,H], dim 0 in cellOrder", 1.0);
    if (P)
      data[i].projection =
          draw(name("projection"), {H, P}, "projection Wp [H,P]: h_t = m_t . Wp", weightScale);
  }
  writeTimeSteps(engine, c, saved);
  std::vector<lstmref::LstmForward> fwd(n);
  const auto outputs = rnnref::stackForward(shape, input, [&](std::size_t i, std::size_t,
                                                              const std::vector<double> &x) {
    data[i].input = x;
    fwd[i] = lstmref::forward(models[i], data[i]);
    return fwd[i].output;
  });
  std::vector<lstmref::LstmGrads> grads(n);
  std::vector<double> inputGrad;
  if (c.backward()) {
    const std::vector<double> dy = draw("outputGrad", {T, B, D * R},
                                        "gradient of the output [T,B," + std::to_string(D) + h +
                                            "]",
                                        1.0);
    std::vector<lstmref::LstmStateGrad> last(n);
    for (std::size_t i = 0; i < n && c.lastStepStateGrad; ++i) {
      last[i].output = draw(stackName("lastStepStateGrad.output", i / D, i % D), state,
                            "gradient of the final output [B," + h + "]", 1.0);
      last[i].cellState = draw(stackName("lastStepStateGrad.cellState", i / D, i % D),
                               cellState, "gradient of the final cell state [B,H]", 1.0);
    }
    inputGrad = rnnref::stackBackward(shape, dy, [&](std::size_t i, std::size_t,
                                                     const std::vector<double> &g) {
      grads[i] = lstmref::backward(models[i], data[i], fwd[i], g, last[i]);
      return grads[i].inputGrad;
    });
  }
  return [=](const std::string &result) -> Expected {
    const StackNameParts parts = splitStackName(result);
    const std::size_t i = parts.l * D + parts.d;
    const std::string in = i < D ? "I" : std::to_string(D) + h;
    const std::string &name = parts.name;
    if (name == "output")
      return {{T, B, D * R}, "the stack's output [T,B," + std::to_string(D) + h + "]",
              &outputs.back()};
    if (name == "finalOutput")
      return {state, "each row's final output [B," + h + "]", &fwd[i].finalOutput};
    if (name == "finalCellState")
      return {cellState, "each row's final cell state [B,H]", &fwd[i].finalCellState};
    if (name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &inputGrad};
    if (name == "initialOutputGrad")
      return {state, "gradient of the initial output [B," + h + "]",
              &grads[i].initialOutputGrad};
    if (name == "initialCellStateGrad")
      return {cellState, "gradient of the initial cell state [B,H]",
              &grads[i].initialCellStateGrad};
    if (name == "inputWeightsGrad")
      return {{4, inputSize(i), H}, "gradient of inputWeights [4," + in + ",H]",
              &grads[i].inputWeightsGrad};
    if (name == "outputWeightsGrad")
      return {{4, R, H}, "gradient of outputWeights [4," + h + ",H]",
              &grads[i].outputWeightsGrad};
    if (name == "projectionGrad")
      return {{H, P}, "gradient of the projection [H,P]", &grads[i].projectionGrad};
    return {{4, H}, "gradient of biases [4,H]", &grads[i].biasesGrad};
  };
}


// The inputs, drawn in a fixed order, rounded to the data type and written (appended to
// `saved`), and the host model's results. A stack (--num-layers) draws layer 0's tensors first,
// as a single layer does, then each layer's above; the model composes the layers as the stack
// does, each in the run's direction.
ExpectedOf model(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  if (usesStackCall(c))
    return stackModel(c, engine, saved);
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const std::size_t R = c.hiddenOutputSize(), P = c.projSize, L = c.numLayers;
  const bool backward = c.backward();
  const Type type = c.dataType;
  std::mt19937 rng(c.seed);
  const double weightScale = 1.0 / std::sqrt(double(H));
  const Shape seq = {T, B, R}, state = {B, R}, cellState = {B, H};
  const Shape outputShape = c.outputAllSequence ? seq : state;
  const std::string h = P ? "P" : "H"; // h's width in the descriptions
  const auto inputSize = [I, R](std::size_t l) { return l == 0 ? I : R; };
  const auto draw = [&](const std::string &name, const Shape &shape, const std::string &meaning,
                        double scale) {
    saved.push_back({name, shape, meaning, randomValues(rng, shape, scale, type), {}});
  };
  draw("input", {T, B, I}, "input x_t [T,B,I]", c.inputRange);
  for (std::size_t l = 0; l < L; ++l) {
    const auto name = [&](const char *base) { return layerName(base, l); };
    const std::size_t In = inputSize(l);
    const std::string in = l == 0 ? "I" : h;
    draw(name("initialOutput"), state, "initial output h_{-1} [B," + h + "]", c.inputRange);
    draw(name("initialCellState"), cellState, "initial cell state c_{-1} [B,H]", c.inputRange);
    draw(name("inputWeights"), {4, In, H},
         "input weights Wi [4," + in + ",H], dim 0 in cellOrder", weightScale);
    draw(name("outputWeights"), {4, R, H},
         "recurrent weights Wo [4," + h + ",H], dim 0 in cellOrder", weightScale);
    draw(name("biases"), {4, H}, "biases [4,H], dim 0 in cellOrder", 1.0);
    if (P)
      draw(name("projection"), {H, P}, "projection Wp [H,P]: h_t = m_t . Wp", weightScale);
  }
  for (const NamedTensor &t : saved)
    writeValues(engine, t.name, type, t.values);
  const auto values = [&](const std::string &name) -> const std::vector<double> & {
    return valuesOf(saved, name);
  };
  std::vector<lstmref::LstmModel> models(L);
  for (std::size_t l = 0; l < L; ++l) {
    lstmref::LstmModel &model = models[l];
    model.T = T, model.B = B, model.I = inputSize(l), model.H = H, model.P = P;
    for (std::size_t s = 0; s < 4; ++s)
      model.cellOrder[s] = int(c.cellOrder[s]);
    model.act = c.activation->reference;
    model.recAct = c.recurrentActivation->reference;
    model.hardSigmoidGradient = c.hardSigmoidGradient;
    model.outputFullSequence = c.outputAllSequence || l + 1 < L;
    model.timeSteps = c.variableTimeSteps;
    model.cellClip = c.cellClip.enabled;
    model.cellClipMin = c.cellClip.min, model.cellClipMax = c.cellClip.max;
    // The model clips at the threshold the layer uses: rounded to the data type.
    model.activationClip = c.activationClip > 0 ? roundTo(type, c.activationClip) : 0.0;
  }
  writeTimeSteps(engine, c, saved);
  // --direction reverse: the model runs each row's steps reversed (rnnref::reverseRowSteps); the
  // sequences go between layers, and come back, in the caller's order.
  const auto runOrder = [&](const std::vector<double> &v) {
    return c.reverse ? rnnref::reverseRowSteps(v, c.variableTimeSteps, T, B) : v;
  };
  std::vector<lstmref::LstmData> data(L);
  std::vector<lstmref::LstmForward> fwd(L);
  std::vector<std::vector<double>> outputs(L); // each layer's output in the caller's order
  for (std::size_t l = 0; l < L; ++l) {
    const auto name = [&](const char *base) { return layerName(base, l); };
    data[l] = {runOrder(l == 0 ? values("input") : outputs[l - 1]),
               values(name("initialOutput")),
               values(name("initialCellState")),
               values(name("inputWeights")),
               values(name("outputWeights")),
               values(name("biases"))};
    if (P)
      data[l].projection = values(name("projection"));
    fwd[l] = lstmref::forward(models[l], data[l]);
    outputs[l] = models[l].outputFullSequence ? runOrder(fwd[l].output) : fwd[l].output;
  }
  std::vector<lstmref::LstmGrads> grads(L);
  if (backward) {
    draw("outputGrad", outputShape, "gradient of the output (output's shape)", 1.0);
    writeValues(engine, "outputGrad", type, saved.back().values);
    std::vector<lstmref::LstmStateGrad> lastRef(L);
    for (std::size_t l = 0; l < L && c.lastStepStateGrad; ++l) {
      draw(layerName("lastStepStateGrad.output", l), state,
           "gradient of the final output [B," + h + "]", 1.0);
      lastRef[l].output = saved.back().values;
      draw(layerName("lastStepStateGrad.cellState", l), cellState,
           "gradient of the final cell state [B,H]", 1.0);
      lastRef[l].cellState = saved.back().values;
      writeValues(engine, layerName("lastStepStateGrad.output", l), type, lastRef[l].output);
      writeValues(engine, layerName("lastStepStateGrad.cellState", l), type, lastRef[l].cellState);
    }
    for (std::size_t l = L; l-- > 0;) {
      const std::vector<double> &dy = l + 1 == L ? values("outputGrad") : grads[l + 1].inputGrad;
      grads[l] = lstmref::backward(models[l], data[l], fwd[l],
                                   models[l].outputFullSequence ? runOrder(dy) : dy, lastRef[l]);
      grads[l].inputGrad = runOrder(grads[l].inputGrad);
    }
  }

  return [=](const std::string &result) -> Expected {
    const auto [name, l] = splitLayerName(result); // NAME or NAME.l<l>: layer l's
    const std::string in = l == 0 ? "I" : h;
    if (name == "output")
      return {outputShape,
              c.outputAllSequence ? "output h_t [T,B," + h + "], zero past a row's length"
                                  : "each row's final output [B," + h + "]",
              &outputs[L - 1]};
    if (name == "finalCellState")
      return {cellState, "each row's final cell state [B,H]", &fwd[l].finalCellState};
    if (name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &grads[0].inputGrad};
    if (name == "initialOutputGrad")
      return {state, "gradient of the initial output [B," + h + "]",
              &grads[l].initialOutputGrad};
    if (name == "initialCellStateGrad")
      return {cellState, "gradient of the initial cell state [B,H]",
              &grads[l].initialCellStateGrad};
    if (name == "inputWeightsGrad")
      return {{4, inputSize(l), H}, "gradient of inputWeights [4," + in + ",H]",
              &grads[l].inputWeightsGrad};
    if (name == "outputWeightsGrad")
      return {{4, R, H}, "gradient of outputWeights [4," + h + ",H]",
              &grads[l].outputWeightsGrad};
    if (name == "projectionGrad")
      return {{H, P}, "gradient of the projection [H,P]", &grads[l].projectionGrad};
    return {{4, H}, "gradient of biases [4,H]", &grads[l].biasesGrad};
  };
}

// lstm_layer for layerMain (LayerDriver.hpp).
struct Driver {
  using Config = lstmlayer::Config;
  static constexpr const char *kTool = "lstm_layer";
  static constexpr const char *kUsage =
      "Usage: lstm_layer [--flag value | --flag=value]...\n"
      "Builds an LSTM layer with aspen::nn::lstm, runs it and checks it against a\n"
      "double-precision host model. Exit status: 0 pass, 1 mismatch or failure, 2 bad usage.\n";
  static std::vector<Flag<Config>> flags() { return layerFlagTable(); }
  static void check(Config &c) { checkConfig(c); }
  static void header(const Config &c, const Device &device) {
    std::string order;
    for (const std::string &name : cellOrderNames(c))
      order += (order.empty() ? "" : ",") + name;
    fmt::print("lstm_layer: T={} B={} I={} H={}{}{} {} phase={} cellOrder={{{}}} activation={} "
               "recurrentActivation={} on {}\n",
               c.sequenceSize, c.batchSize, c.inputSize, c.outputSize,
               c.projSize ? fmt::format(" P={}", c.projSize) : "",
               c.numLayers > 1 ? fmt::format(" layers={}", c.numLayers) : "", c.dataTypeName,
               c.phase, order, c.activation->name, c.recurrentActivation->name,
               device.describe());
  }
  static BuiltLayer build(Graph &graph, const Config &c, linalg::PlanningCache &cache) {
    return lstmlayer::build(graph, c, cache);
  }
  static ExpectedOf model(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
    return ::model(c, engine, saved);
  }
  static ManifestParams manifest(const Config &c) {
    auto params = commonManifestParams("lstm", c, cellOrderNames(c));
    params.push_back({"phase", jsonString(c.phase)});
    params.push_back({"dataType", jsonString(c.dataTypeName)});
    return params;
  }
};

} // namespace

int main(int argc, char **argv) {
  return layerMain<Driver>(argc, argv);
}
