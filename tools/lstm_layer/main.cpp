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
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace aspen;
using namespace lstmlayer;

namespace {

// --- The layer -------------------------------------------------------------------------------

// The model of one layer of c (input size I): the run's cell order, activations, lengths and
// clips (the activation clip at the threshold the layer uses: rounded to the data type).
lstmref::LstmModel layerModel(const Config &c, std::size_t I) {
  lstmref::LstmModel m;
  m.T = c.sequenceSize, m.B = c.batchSize, m.I = I, m.H = c.outputSize, m.P = c.projSize;
  for (std::size_t s = 0; s < 4; ++s)
    m.cellOrder[s] = int(c.cellOrder[s]);
  m.act = c.activation->reference;
  m.recAct = c.recurrentActivation->reference;
  m.hardSigmoidGradient = c.hardSigmoidGradient;
  m.timeSteps = c.variableTimeSteps;
  m.cellClip = c.cellClip.enabled;
  m.cellClipMin = c.cellClip.min, m.cellClipMax = c.cellClip.max;
  m.activationClip = c.activationClip > 0 ? roundTo(c.dataType, c.activationClip) : 0.0;
  return m;
}

// Draws one layer's initial state and weights in the drivers' order, named name(base); `in`
// names its input width in the descriptions. The input is not drawn here.
lstmref::LstmData drawLayer(InputDrawer &draw, const Config &c, const lstmref::LstmModel &m,
                            const std::function<std::string(const char *)> &name,
                            const std::string &in) {
  const std::size_t H = c.outputSize, R = c.hiddenOutputSize(), P = c.projSize;
  const std::string h = P ? "P" : "H";
  const double weightScale = 1.0 / std::sqrt(double(H));
  lstmref::LstmData d;
  d.initialOutput = draw(name("initialOutput"), {c.batchSize, R},
                         "initial output h_{-1} [B," + h + "]", c.inputRange);
  d.initialCellState = draw(name("initialCellState"), {c.batchSize, H},
                            "initial cell state c_{-1} [B,H]", c.inputRange);
  d.inputWeights = draw(name("inputWeights"), {4, m.I, H},
                        "input weights Wi [4," + in + ",H], dim 0 in cellOrder", weightScale);
  d.outputWeights = draw(name("outputWeights"), {4, R, H},
                         "recurrent weights Wo [4," + h + ",H], dim 0 in cellOrder",
                         weightScale);
  d.biases = draw(name("biases"), {4, H}, "biases [4,H], dim 0 in cellOrder", 1.0);
  if (P)
    d.projection =
        draw(name("projection"), {H, P}, "projection Wp [H,P]: h_t = m_t . Wp", weightScale);
  return d;
}

// Draws the final state's gradients of entry `name` (--last-step-state-grad).
lstmref::LstmStateGrad drawLastStateGrad(InputDrawer &draw, const Config &c,
                                         const std::function<std::string(const char *)> &name) {
  const std::string h = c.projSize ? "P" : "H";
  lstmref::LstmStateGrad g;
  g.output = draw(name("lastStepStateGrad.output"), {c.batchSize, c.hiddenOutputSize()},
                  "gradient of the final output [B," + h + "]", 1.0);
  g.cellState = draw(name("lastStepStateGrad.cellState"), {c.batchSize, c.outputSize},
                     "gradient of the final cell state [B,H]", 1.0);
  return g;
}

// What a layer's results are by name, but for the output and the input's gradient (the
// layer's and the stack's own): its final cell state, the gradients of its initial state and
// weights. in: its input width's name; I: its input size.
Expected layerExpected(const Config &c, const std::string &name, const std::string &in,
                       std::size_t I, const lstmref::LstmForward &f,
                       const lstmref::LstmGrads &g) {
  const std::size_t B = c.batchSize, H = c.outputSize, R = c.hiddenOutputSize();
  const std::size_t P = c.projSize;
  const std::string h = P ? "P" : "H";
  if (name == "finalOutput")
    return {{B, R}, "each row's final output [B," + h + "]", &f.finalOutput};
  if (name == "finalCellState")
    return {{B, H}, "each row's final cell state [B,H]", &f.finalCellState};
  if (name == "initialOutputGrad")
    return {{B, R}, "gradient of the initial output [B," + h + "]", &g.initialOutputGrad};
  if (name == "initialCellStateGrad")
    return {{B, H}, "gradient of the initial cell state [B,H]", &g.initialCellStateGrad};
  if (name == "inputWeightsGrad")
    return {{4, I, H}, "gradient of inputWeights [4," + in + ",H]", &g.inputWeightsGrad};
  if (name == "outputWeightsGrad")
    return {{4, R, H}, "gradient of outputWeights [4," + h + ",H]", &g.outputWeightsGrad};
  if (name == "projectionGrad")
    return {{H, P}, "gradient of the projection [H,P]", &g.projectionGrad};
  return {{4, H}, "gradient of biases [4,H]", &g.biasesGrad};
}

// The model of a stack in one call (usesStackCall): L layers in D directions composed from
// lstmref layers by rnnref::stackForward / stackBackward, with the dropout mask between them
// in a training run; tensors named as buildStack names them, drawn in its order.
ExpectedOf stackModel(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize;
  const std::size_t R = c.hiddenOutputSize(), L = c.numLayers, D = c.bidirectional ? 2 : 1;
  const std::size_t n = L * D;
  const std::string h = c.projSize ? "P" : "H";
  InputDrawer draw(engine, saved, c.seed, c.dataType);
  const auto inputSize = [&](std::size_t i) { return i < D ? I : D * R; };
  const auto inputName = [&](std::size_t i) { return i < D ? "I" : std::to_string(D) + h; };
  const std::vector<double> input = draw("input", {T, B, I}, "input x_t [T,B,I]", c.inputRange);
  std::vector<lstmref::LstmModel> models;
  std::vector<lstmref::LstmData> data;
  for (std::size_t i = 0; i < n; ++i) {
    models.push_back(layerModel(c, inputSize(i)));
    data.push_back(drawLayer(
        draw, c, models[i], [&](const char *base) { return stackName(base, i / D, i % D); },
        inputName(i)));
  }
  writeTimeSteps(engine, c, saved);
  const rnnref::StackShape shape = stackShapeOf(c, L, R);
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
    for (std::size_t i = 0; i < n && c.lastStepStateGrad; ++i)
      last[i] = drawLastStateGrad(
          draw, c, [&](const char *base) { return stackName(base, i / D, i % D); });
    inputGrad = rnnref::stackBackward(shape, dy, [&](std::size_t i, std::size_t,
                                                     const std::vector<double> &g) {
      grads[i] = lstmref::backward(models[i], data[i], fwd[i], g, last[i]);
      return grads[i].inputGrad;
    });
  }
  return [=](const std::string &result) -> Expected {
    const StackNameParts parts = splitStackName(result);
    const std::size_t i = parts.l * D + parts.d;
    if (parts.name == "output")
      return {{T, B, D * R}, "the stack's output [T,B," + std::to_string(D) + h + "]",
              &outputs.back()};
    if (parts.name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &inputGrad};
    return layerExpected(c, parts.name, inputName(i), inputSize(i), fwd[i], grads[i]);
  };
}

// The layers of c one by one through the model, in the run's direction (--direction reverse:
// each row's steps reversed, rnnref::reverseRowSteps; the sequences go between layers, and
// come back, in the caller's order). Returns each layer's output in the caller's order.
std::vector<std::vector<double>> layersForward(const Config &c,
                                               const std::vector<lstmref::LstmModel> &models,
                                               std::vector<lstmref::LstmData> &data,
                                               const std::vector<double> &input,
                                               std::vector<lstmref::LstmForward> &fwd) {
  std::vector<std::vector<double>> outputs(models.size());
  for (std::size_t l = 0; l < models.size(); ++l) {
    data[l].input = runOrderOf(c, l == 0 ? input : outputs[l - 1]);
    fwd[l] = lstmref::forward(models[l], data[l]);
    outputs[l] = models[l].outputFullSequence ? runOrderOf(c, fwd[l].output) : fwd[l].output;
  }
  return outputs;
}

// The inputs, drawn in a fixed order, rounded to the data type and written (appended to
// `saved`), and the host model's results. A stack (--num-layers) draws layer 0's tensors first,
// as a single layer does, then each layer's above; the model composes the layers as the stack
// does, each in the run's direction.
ExpectedOf model(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  if (usesStackCall(c))
    return stackModel(c, engine, saved);
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize;
  const std::size_t R = c.hiddenOutputSize(), L = c.numLayers;
  const std::string h = c.projSize ? "P" : "H"; // h's width in the descriptions
  const Shape outputShape = c.outputAllSequence ? Shape{T, B, R} : Shape{B, R};
  const auto inputSize = [I, R](std::size_t l) { return l == 0 ? I : R; };
  InputDrawer draw(engine, saved, c.seed, c.dataType);
  const std::vector<double> input = draw("input", {T, B, I}, "input x_t [T,B,I]", c.inputRange);
  std::vector<lstmref::LstmModel> models;
  std::vector<lstmref::LstmData> data;
  for (std::size_t l = 0; l < L; ++l) {
    models.push_back(layerModel(c, inputSize(l)));
    models[l].outputFullSequence = c.outputAllSequence || l + 1 < L;
    data.push_back(drawLayer(
        draw, c, models[l], [&](const char *base) { return layerName(base, l); },
        l == 0 ? "I" : h));
  }
  writeTimeSteps(engine, c, saved);
  std::vector<lstmref::LstmForward> fwd(L);
  const auto outputs = layersForward(c, models, data, input, fwd);
  std::vector<lstmref::LstmGrads> grads(L);
  if (c.backward()) {
    const std::vector<double> dy =
        draw("outputGrad", outputShape, "gradient of the output (output's shape)", 1.0);
    std::vector<lstmref::LstmStateGrad> last(L);
    for (std::size_t l = 0; l < L && c.lastStepStateGrad; ++l)
      last[l] = drawLastStateGrad(draw, c, [&](const char *base) { return layerName(base, l); });
    for (std::size_t l = L; l-- > 0;) {
      const std::vector<double> &g = l + 1 == L ? dy : grads[l + 1].inputGrad;
      grads[l] = lstmref::backward(models[l], data[l], fwd[l],
                                   models[l].outputFullSequence ? runOrderOf(c, g) : g, last[l]);
      grads[l].inputGrad = runOrderOf(c, grads[l].inputGrad);
    }
  }
  return [=](const std::string &result) -> Expected {
    const auto [name, l] = splitLayerName(result); // NAME or NAME.l<l>: layer l's
    if (name == "output")
      return {outputShape,
              c.outputAllSequence ? "output h_t [T,B," + h + "], zero past a row's length"
                                  : "each row's final output [B," + h + "]",
              &outputs[L - 1]};
    if (name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &grads[0].inputGrad};
    return layerExpected(c, name, l == 0 ? "I" : h, inputSize(l), fwd[l], grads[l]);
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
