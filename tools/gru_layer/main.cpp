// gru_layer: builds one GRU or AUGRU layer with aspen::nn::gru (popnn's gru_layer tool and
// flags), runs it on a device with seeded random data, and checks every result against the
// double-precision host model of tools/rnnref/Gru.hpp.
//
// Phases: fwd (gruFwd / auGruFwd with inferenceOnly), bwd (+ gruBwd / auGruBwd), wu (+ the
// backward keeping its intermediates, then the separate gruWU / auGruWU pass), all
// (+ gruBwdWithWU / auGruBwdWithWU). --with-attention builds the AUGRU: its attention [B,T] is
// uniform in [0, 1] and its gradient is checked too. --with-real-time-steps passes the
// --variable-time-steps lengths through the realTimeSteps overloads instead of GruParams.
// Inputs, tolerances and exit statuses: rnn_common/LayerDriver.hpp.
#include "gru_layer/GruLayer.hpp"
#include "rnnref/Gru.hpp"


#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace aspen;
using namespace grulayer;

namespace {

// --- The layer -------------------------------------------------------------------------------

// The model of one layer of c (input size I): the run's cell order, activations, form, lengths
// and activation clip (at the threshold the layer uses: rounded to the data type).
gruref::GruModel layerModel(const Config &c, std::size_t I) {
  gruref::GruModel m;
  m.T = c.sequenceSize, m.B = c.batchSize, m.I = I, m.H = c.outputSize;
  for (std::size_t s = 0; s < gruref::kNumGates; ++s)
    m.cellOrder[s] = int(c.cellOrder[s]);
  m.act = c.activation->reference;
  m.recAct = c.recurrentActivation->reference;
  m.hardSigmoidGradient = c.hardSigmoidGradient;
  m.resetAfter = c.resetAfter;
  m.activationClip = c.activationClip > 0 ? roundTo(c.dataType, c.activationClip) : 0.0;
  m.timeSteps = c.variableTimeSteps;
  return m;
}

Shape biasesShape(const Config &c) {
  return c.resetAfter ? Shape{3, 2, c.outputSize} : Shape{3, c.outputSize};
}

// Draws one layer's initial state and weights in the drivers' order, named name(base); `in`
// names its input width in the descriptions. The input is not drawn here.
gruref::GruData drawLayer(InputDrawer &draw, const Config &c, std::size_t I,
                          const std::function<std::string(const char *)> &name,
                          const std::string &in) {
  const std::size_t H = c.outputSize;
  const double weightScale = 1.0 / std::sqrt(double(H));
  gruref::GruData d;
  d.initialOutput = draw(name("initialOutput"), {c.batchSize, H}, "initial output h_{-1} [B,H]",
                         c.inputRange);
  d.inputWeights = draw(name("inputWeights"), {3, I, H},
                        "input weights Wi [3," + in + ",H], dim 0 in cellOrder", weightScale);
  d.outputWeights = draw(name("outputWeights"), {3, H, H},
                         "recurrent weights Wo [3,H,H], dim 0 in cellOrder", weightScale);
  d.biases = draw(name("biases"), biasesShape(c),
                  c.resetAfter
                      ? "biases [3,2,H] ([g][0] input, [g][1] recurrent), dim 0 in cellOrder"
                      : "biases [3,H], dim 0 in cellOrder",
                  1.0);
  return d;
}

// What a layer's results are by name, but for the output and the input's gradient: its final
// output, the gradients of its initial state, attention and weights. in: its input width's
// name; I: its input size.
Expected layerExpected(const Config &c, const std::string &name, const std::string &in,
                       std::size_t I, const gruref::GruForward &f, const gruref::GruGrads &g) {
  const std::size_t B = c.batchSize, H = c.outputSize;
  if (name == "finalOutput")
    return {{B, H}, "each row's final output [B,H]", &f.finalOutput};
  if (name == "initialOutputGrad")
    return {{B, H}, "gradient of the initial output [B,H]", &g.initialOutputGrad};
  if (name == "attentionGrad")
    return {{B, c.sequenceSize}, "gradient of the attention [B,T]", &g.attentionGrad};
  if (name == "inputWeightsGrad")
    return {{3, I, H}, "gradient of inputWeights [3," + in + ",H]", &g.inputWeightsGrad};
  if (name == "outputWeightsGrad")
    return {{3, H, H}, "gradient of outputWeights [3,H,H]", &g.outputWeightsGrad};
  return {biasesShape(c), "gradient of biases (biases' shape)", &g.biasesGrad};
}

// The model of a stack in one call (usesStackCall): L layers in D directions composed from
// gruref layers by rnnref::stackForward / stackBackward, with the dropout mask between them in
// a training run; tensors named as buildStack names them, drawn in its order.
ExpectedOf stackModel(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const std::size_t L = c.numLayers, D = c.bidirectional ? 2 : 1, n = L * D;
  InputDrawer draw(engine, saved, c.seed, c.dataType);
  const auto inputSize = [&](std::size_t i) { return i < D ? I : D * H; };
  const auto inputName = [&](std::size_t i) { return i < D ? "I" : std::to_string(D) + "H"; };
  const std::vector<double> input = draw("input", {T, B, I}, "input x_t [T,B,I]", c.inputRange);
  std::vector<gruref::GruModel> models;
  std::vector<gruref::GruData> data;
  for (std::size_t i = 0; i < n; ++i) {
    models.push_back(layerModel(c, inputSize(i)));
    data.push_back(drawLayer(
        draw, c, inputSize(i), [&](const char *base) { return stackName(base, i / D, i % D); },
        inputName(i)));
  }
  writeTimeSteps(engine, c, saved);
  const rnnref::StackShape shape = stackShapeOf(c, L, H);
  std::vector<gruref::GruForward> fwd(n);
  const auto outputs = rnnref::stackForward(shape, input, [&](std::size_t i, std::size_t,
                                                              const std::vector<double> &x) {
    data[i].input = x;
    fwd[i] = gruref::forward(models[i], data[i]);
    return fwd[i].output;
  });
  std::vector<gruref::GruGrads> grads(n);
  std::vector<double> inputGrad;
  if (c.backward()) {
    const std::vector<double> dy = draw("outputGrad", {T, B, D * H},
                                        "gradient of the output [T,B," + std::to_string(D) +
                                            "H]",
                                        1.0);
    inputGrad = rnnref::stackBackward(shape, dy, [&](std::size_t i, std::size_t,
                                                     const std::vector<double> &g) {
      grads[i] = gruref::backward(models[i], data[i], fwd[i], g);
      return grads[i].inputGrad;
    });
  }
  return [=](const std::string &result) -> Expected {
    const StackNameParts parts = splitStackName(result);
    const std::size_t i = parts.l * D + parts.d;
    if (parts.name == "output")
      return {{T, B, D * H}, "the stack's output [T,B," + std::to_string(D) + "H]",
              &outputs.back()};
    if (parts.name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &inputGrad};
    return layerExpected(c, parts.name, inputName(i), inputSize(i), fwd[i], grads[i]);
  };
}

// The inputs, drawn in a fixed order, rounded to the data type and written (appended to
// `saved`), and the host model's results. A stack (--num-layers) draws layer 0's tensors first,
// as a single layer does (its attention after them), then each layer's above; the model composes
// the layers as the stack does, each in the run's direction (--direction reverse: each row's
// steps reversed, the attention's too; sequences go between layers in the caller's order).
ExpectedOf model(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  if (usesStackCall(c))
    return stackModel(c, engine, saved);
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const std::size_t L = c.numLayers;
  const Shape outputShape = c.outputAllSequence ? Shape{T, B, H} : Shape{B, H};
  const auto inputSize = [I, H](std::size_t l) { return l == 0 ? I : H; };
  const auto rows = [&](const std::vector<double> &v) { // [B, T] in the run's order
    return c.reverse ? rnnref::reverseRowSteps(v, c.variableTimeSteps, T, B, true) : v;
  };
  InputDrawer draw(engine, saved, c.seed, c.dataType);
  const std::vector<double> input = draw("input", {T, B, I}, "input x_t [T,B,I]", c.inputRange);
  std::vector<gruref::GruModel> models;
  std::vector<gruref::GruData> data;
  std::vector<double> attention;
  for (std::size_t l = 0; l < L; ++l) {
    models.push_back(layerModel(c, inputSize(l)));
    models[l].outputFullSequence = c.outputAllSequence || l + 1 < L;
    data.push_back(drawLayer(
        draw, c, inputSize(l), [&](const char *base) { return layerName(base, l); },
        l == 0 ? "I" : "H"));
    if (l == 0 && c.withAttention)
      attention = draw("attention", {B, T}, "AUGRU attention [B,T] in [0,1]: u <- (1 - a) * u",
                       0.5, 0.5);
  }
  writeTimeSteps(engine, c, saved);
  std::vector<gruref::GruForward> fwd(L);
  std::vector<std::vector<double>> outputs(L); // each layer's output in the caller's order
  for (std::size_t l = 0; l < L; ++l) {
    data[l].input = runOrderOf(c, l == 0 ? input : outputs[l - 1]);
    data[l].attention = rows(attention);
    fwd[l] = gruref::forward(models[l], data[l]);
    outputs[l] = models[l].outputFullSequence ? runOrderOf(c, fwd[l].output) : fwd[l].output;
  }
  std::vector<gruref::GruGrads> grads(L);
  if (c.backward()) {
    const std::vector<double> dy =
        draw("outputGrad", outputShape, "gradient of the output (output's shape)", 1.0);
    for (std::size_t l = L; l-- > 0;) {
      const std::vector<double> &g = l + 1 == L ? dy : grads[l + 1].inputGrad;
      grads[l] = gruref::backward(models[l], data[l], fwd[l],
                                  models[l].outputFullSequence ? runOrderOf(c, g) : g);
      grads[l].inputGrad = runOrderOf(c, grads[l].inputGrad);
      grads[l].attentionGrad = rows(grads[l].attentionGrad);
    }
  }
  return [=](const std::string &result) -> Expected {
    const auto [name, l] = splitLayerName(result); // NAME or NAME.l<l>: layer l's
    if (name == "output")
      return {outputShape,
              c.outputAllSequence ? "output h_t [T,B,H], zero past a row's length"
                                  : "each row's final output [B,H]",
              &outputs[L - 1]};
    if (name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &grads[0].inputGrad};
    return layerExpected(c, name, l == 0 ? "I" : "H", inputSize(l), fwd[l], grads[l]);
  };
}

// gru_layer for layerMain (LayerDriver.hpp).
struct Driver {
  using Config = grulayer::Config;
  static constexpr const char *kTool = "gru_layer";
  static constexpr const char *kUsage =
      "Usage: gru_layer [--flag value | --flag=value]...\n"
      "Builds a GRU (or AUGRU) layer with aspen::nn::gru, runs it and checks it against a\n"
      "double-precision host model. Exit status: 0 pass, 1 mismatch or failure, 2 bad usage.\n";
  static std::vector<Flag<Config>> flags() { return layerFlagTable(); }
  static void check(Config &c) {
    drawRealTimeSteps(c);
    checkConfig(c);
  }
  static void header(const Config &c, const Device &device) {
    std::string order;
    for (const std::string &name : cellOrderNames(c))
      order += (order.empty() ? "" : ",") + name;
    fmt::print("gru_layer: T={} B={} I={} H={} {} phase={} cellOrder={{{}}} activation={} "
               "recurrentActivation={} resetAfter={} {}{} on {}\n",
               c.sequenceSize, c.batchSize, c.inputSize, c.outputSize, c.dataTypeName, c.phase,
               order, c.activation->name, c.recurrentActivation->name, int(c.resetAfter),
               c.withAttention ? "AUGRU" : "GRU", c.withRealTimeSteps ? " realTimeSteps" : "",
               device.describe());
    if (c.numLayers > 1)
      fmt::print("gru_layer: a stack of {} layers\n", c.numLayers);
    if (!c.variableTimeSteps.empty()) {
      std::string lengths;
      for (unsigned l : c.variableTimeSteps)
        lengths += (lengths.empty() ? "" : ",") + std::to_string(l);
      fmt::print("gru_layer: sequence lengths {{{}}}\n", lengths);
    }
  }
  static BuiltLayer build(Graph &graph, const Config &c, linalg::PlanningCache &cache) {
    return grulayer::build(graph, c, cache);
  }
  static ExpectedOf model(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
    return ::model(c, engine, saved);
  }
  static ManifestParams manifest(const Config &c) {
    auto params = commonManifestParams("gru", c, cellOrderNames(c));
    params.push_back({"resetAfter", jsonBool(c.resetAfter)});
    params.push_back({"phase", jsonString(c.phase)});
    params.push_back({"dataType", jsonString(c.dataTypeName)});
    return params;
  }
};

} // namespace

int main(int argc, char **argv) {
  return layerMain<Driver>(argc, argv);
}
