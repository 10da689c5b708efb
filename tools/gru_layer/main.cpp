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
#include <string>
#include <utility>
#include <vector>

using namespace aspen;
using namespace grulayer;

namespace {

// --- The layer -------------------------------------------------------------------------------

// The inputs, drawn in a fixed order, rounded to the data type and written (appended to
// `saved`), and the host model's results. A stack (--num-layers) draws layer 0's tensors first,
// as a single layer does (its attention after them), then each layer's above; the model composes
// the layers as the stack does, each in the run's direction.
// The model of a stack in one call (usesStackCall): L layers in D directions composed from
// gruref layers by rnnref::stackForward / stackBackward, with the dropout mask between them in
// a training run; tensors named as buildStack names them, drawn in its order.
ExpectedOf stackModel(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const std::size_t L = c.numLayers, D = c.bidirectional ? 2 : 1, n = L * D;
  const Type type = c.dataType;
  InputDrawer draw(engine, saved, c.seed, type);
  const double weightScale = 1.0 / std::sqrt(double(H));
  const Shape state = {B, H};
  const Shape biasesShape = c.resetAfter ? Shape{3, 2, H} : Shape{3, H};
  const auto inputSize = [&](std::size_t i) { return i < D ? I : D * H; };
  const rnnref::StackShape shape = stackShapeOf(c, L, H);
  const std::vector<double> input = draw("input", {T, B, I}, "input x_t [T,B,I]", c.inputRange);
  std::vector<gruref::GruModel> models(n);
  std::vector<gruref::GruData> data(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto name = [&](const char *base) { return stackName(base, i / D, i % D); };
    const std::string in = i < D ? "I" : std::to_string(D) + "H";
    gruref::GruModel &m = models[i];
    m.T = T, m.B = B, m.I = inputSize(i), m.H = H;
    for (std::size_t s = 0; s < gruref::kNumGates; ++s)
      m.cellOrder[s] = int(c.cellOrder[s]);
    m.act = c.activation->reference;
    m.recAct = c.recurrentActivation->reference;
    m.hardSigmoidGradient = c.hardSigmoidGradient;
    m.resetAfter = c.resetAfter;
    m.activationClip = c.activationClip > 0 ? roundTo(type, c.activationClip) : 0.0;
    m.timeSteps = c.variableTimeSteps;
    data[i].initialOutput =
        draw(name("initialOutput"), state, "initial output h_{-1} [B,H]", c.inputRange);
    data[i].inputWeights = draw(name("inputWeights"), {3, m.I, H},
                                "input weights Wi [3," + in + ",H], dim 0 in cellOrder",
                                weightScale);
    data[i].outputWeights = draw(name("outputWeights"), {3, H, H},
                                 "recurrent weights Wo [3,H,H], dim 0 in cellOrder", weightScale);
    data[i].biases = draw(name("biases"), biasesShape,
                          c.resetAfter ? "biases [3,2,H] ([g][0] input, [g][1] recurrent)"
                                       : "biases [3,H], dim 0 in cellOrder",
                          1.0);
  }
  writeTimeSteps(engine, c, saved);
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
      return {state, "gradient of the initial output [B,H]", &grads[i].initialOutputGrad};
    if (name == "inputWeightsGrad")
      return {{3, inputSize(i), H}, "gradient of inputWeights [3," + in + ",H]",
              &grads[i].inputWeightsGrad};
    if (name == "outputWeightsGrad")
      return {{3, H, H}, "gradient of outputWeights [3,H,H]", &grads[i].outputWeightsGrad};
    return {biasesShape, "gradient of biases (biases' shape)", &grads[i].biasesGrad};
  };
}

ExpectedOf model(const Config &c, Engine &engine, std::vector<NamedTensor> &saved) {
  if (usesStackCall(c))
    return stackModel(c, engine, saved);
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const std::size_t L = c.numLayers;
  const bool backward = c.backward();
  const Type type = c.dataType;
  std::mt19937 rng(c.seed);
  const double weightScale = 1.0 / std::sqrt(double(H));
  const Shape seq = {T, B, H}, state = {B, H};
  const Shape outputShape = c.outputAllSequence ? seq : state;
  const Shape biasesShape = c.resetAfter ? Shape{3, 2, H} : Shape{3, H};
  const auto inputSize = [I, H](std::size_t l) { return l == 0 ? I : H; };
  const auto draw = [&](const std::string &name, const Shape &shape, const std::string &meaning,
                        double scale, double offset = 0.0) {
    saved.push_back({name, shape, meaning, randomValues(rng, shape, scale, type, offset), {}});
  };
  const auto drawLayer = [&](std::size_t l) {
    const std::string in = l == 0 ? "I" : "H";
    draw(layerName("initialOutput", l), state, "initial output h_{-1} [B,H]", c.inputRange);
    draw(layerName("inputWeights", l), {3, inputSize(l), H},
         "input weights Wi [3," + in + ",H], dim 0 in cellOrder", weightScale);
    draw(layerName("outputWeights", l), {3, H, H},
         "recurrent weights Wo [3,H,H], dim 0 in cellOrder", weightScale);
    draw(layerName("biases", l), biasesShape,
         c.resetAfter ? "biases [3,2,H] ([g][0] input, [g][1] recurrent), dim 0 in cellOrder"
                      : "biases [3,H], dim 0 in cellOrder",
         1.0);
  };
  draw("input", {T, B, I}, "input x_t [T,B,I]", c.inputRange);
  drawLayer(0);
  if (c.withAttention)
    draw("attention", {B, T}, "AUGRU attention [B,T] in [0,1]: u <- (1 - a) * u", 0.5, 0.5);
  for (std::size_t l = 1; l < L; ++l)
    drawLayer(l);
  for (const NamedTensor &t : saved)
    writeValues(engine, t.name, type, t.values);
  const auto values = [&](const std::string &name) -> const std::vector<double> & {
    return valuesOf(saved, name);
  };
  std::vector<gruref::GruModel> models(L);
  for (std::size_t l = 0; l < L; ++l) {
    gruref::GruModel &model = models[l];
    model.T = T, model.B = B, model.I = inputSize(l), model.H = H;
    for (std::size_t s = 0; s < gruref::kNumGates; ++s)
      model.cellOrder[s] = int(c.cellOrder[s]);
    model.act = c.activation->reference;
    model.recAct = c.recurrentActivation->reference;
    model.hardSigmoidGradient = c.hardSigmoidGradient;
    model.resetAfter = c.resetAfter;
    // The model clips at the threshold the layer uses: rounded to the data type.
    model.activationClip = c.activationClip > 0 ? roundTo(type, c.activationClip) : 0.0;
    model.outputFullSequence = c.outputAllSequence || l + 1 < L;
    model.timeSteps = c.variableTimeSteps;
  }
  // --direction reverse: the model runs each row's steps reversed (rnnref::reverseRowSteps); the
  // sequences go between layers, and come back, in the caller's order.
  const auto runOrder = [&](const std::vector<double> &v, bool rowMajor = false) {
    return c.reverse ? rnnref::reverseRowSteps(v, c.variableTimeSteps, T, B, rowMajor) : v;
  };
  writeTimeSteps(engine, c, saved);
  std::vector<gruref::GruData> data(L);
  std::vector<gruref::GruForward> fwd(L);
  std::vector<std::vector<double>> outputs(L); // each layer's output in the caller's order
  for (std::size_t l = 0; l < L; ++l) {
    data[l] = {runOrder(l == 0 ? values("input") : outputs[l - 1]),
               values(layerName("initialOutput", l)),
               values(layerName("inputWeights", l)),
               values(layerName("outputWeights", l)),
               values(layerName("biases", l)),
               c.withAttention ? runOrder(values("attention"), true) : std::vector<double>()};
    fwd[l] = gruref::forward(models[l], data[l]);
    outputs[l] = models[l].outputFullSequence ? runOrder(fwd[l].output) : fwd[l].output;
  }
  std::vector<gruref::GruGrads> grads(L);
  if (backward) {
    draw("outputGrad", outputShape, "gradient of the output (output's shape)", 1.0);
    writeValues(engine, "outputGrad", type, saved.back().values);
    for (std::size_t l = L; l-- > 0;) {
      const std::vector<double> &dy = l + 1 == L ? values("outputGrad") : grads[l + 1].inputGrad;
      grads[l] = gruref::backward(models[l], data[l], fwd[l],
                                  models[l].outputFullSequence ? runOrder(dy) : dy);
      grads[l].inputGrad = runOrder(grads[l].inputGrad);
      if (c.withAttention)
        grads[l].attentionGrad = runOrder(grads[l].attentionGrad, true);
    }
  }

  return [=](const std::string &result) -> Expected {
    const auto [name, l] = splitLayerName(result); // NAME or NAME.l<l>: layer l's
    const std::string in = l == 0 ? "I" : "H";
    if (name == "output")
      return {outputShape,
              c.outputAllSequence ? "output h_t [T,B,H], zero past a row's length"
                                  : "each row's final output [B,H]",
              &outputs[L - 1]};
    if (name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &grads[0].inputGrad};
    if (name == "initialOutputGrad")
      return {state, "gradient of the initial output [B,H]", &grads[l].initialOutputGrad};
    if (name == "attentionGrad")
      return {{B, T}, "gradient of the attention [B,T]", &grads[l].attentionGrad};
    if (name == "inputWeightsGrad")
      return {{3, inputSize(l), H}, "gradient of inputWeights [3," + in + ",H]",
              &grads[l].inputWeightsGrad};
    if (name == "outputWeightsGrad")
      return {{3, H, H}, "gradient of outputWeights [3,H,H]", &grads[l].outputWeightsGrad};
    return {biasesShape, "gradient of biases (biases' shape)", &grads[l].biasesGrad};
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
