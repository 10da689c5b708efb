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
#include "gru_layer/GruReference.hpp"
#include "rnn_common/LayerDriver.hpp"

#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMulPlan.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Gru.hpp>
#include <aspen/ops/Codelets.hpp>

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

using namespace aspen;
using namespace rnnlayer;
namespace gru = aspen::nn::gru;

namespace {

const char *const kTool = "gru_layer";

struct Config : CommonConfig {
  std::vector<gru::BasicGruCellUnit> cellOrder;
  bool resetAfter = false, withAttention = false, withRealTimeSteps = false;
};

const std::vector<Flag<Config>> &flags() {
  static const std::vector<Flag<Config>> table = [] {
    std::vector<Flag<Config>> t = layerFlags<Config>("gru");
    const std::vector<Flag<Config>> gruFlags = {
        {"cell-order", "{reset,update,cell}", "the gate of each weight slot, all three once",
         [](Config &c, auto &f, auto &v) {
           c.cellOrder = parseCellOrder(f, v, gru::parseBasicGruCellUnit,
                                        gru::getDefaultBasicGruCellOrder(), "reset, update, cell");
         },
         FlagKind::List},
        {"reset-after", "0",
         "0 | 1: apply the reset gate after the recurrent product (biases [3,2,H])",
         [](Config &c, auto &f, auto &v) { c.resetAfter = parseBool(f, v); }},
        {"with-attention", "0", "0 | 1: an AUGRU, u <- (1 - attention) * u (auGru* functions)",
         [](Config &c, auto &f, auto &v) { c.withAttention = parseBool(f, v); }},
        {"with-real-time-steps", "0",
         "0 | 1: pass the --variable-time-steps lengths as realTimeSteps, not in the params",
         [](Config &c, auto &f, auto &v) { c.withRealTimeSteps = parseBool(f, v); }},
    };
    t.insert(t.end(), gruFlags.begin(), gruFlags.end());
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
  if (c.withRealTimeSteps && c.variableTimeSteps.empty())
    throw UsageError("--with-real-time-steps needs --variable-time-steps (the lengths it passes)");
  return c;
}

std::vector<std::string> cellOrderNames(const Config &c) {
  std::vector<std::string> names;
  for (gru::BasicGruCellUnit u : c.cellOrder)
    names.push_back(gru::asString(u));
  return names;
}

// --- The layer -------------------------------------------------------------------------------

// The layer's functions for this run: GRU or AUGRU (attention valid), the lengths in the params
// or passed as realTimeSteps (valid).
struct GruLayer {
  Graph &graph;
  const gru::GruParams &params;
  const OptionFlags &options;
  linalg::PlanningCache *cache;
  Tensor realTimeSteps;
  Tensor attention;

  bool augru() const { return attention.valid(); }
  bool real() const { return realTimeSteps.valid(); }

  Tensor fwd(const Tensor &init, const Tensor &input, const gru::GruWeights &weights,
             Tensor *intermediates, program::Sequence &prog) const {
    if (augru())
      return real() ? gru::auGruFwd(graph, params, init, input, realTimeSteps, weights,
                                    intermediates, attention, prog, "fwd", options, cache)
                    : gru::auGruFwd(graph, params, init, input, weights, intermediates, attention,
                                    prog, "fwd", options, cache);
    return real() ? gru::gruFwd(graph, params, init, input, realTimeSteps, weights, intermediates,
                                prog, "fwd", options, cache)
                  : gru::gruFwd(graph, params, init, input, weights, intermediates, prog, "fwd",
                                options, cache);
  }

  // The gradient of the initial state; attentionGrad is set for an AUGRU.
  Tensor bwd(program::Sequence &prog, const Tensor &init, const Tensor &fwdIntermediates,
             const gru::GruWeights &weights, const Tensor &input, const Tensor &output,
             const Tensor &outputGrad, Tensor *inputGrad, Tensor *bwdIntermediates,
             Tensor &attentionGrad) const {
    if (augru())
      return real() ? gru::auGruBwd(graph, params, prog, init, fwdIntermediates, weights, input,
                                    realTimeSteps, output, outputGrad, inputGrad, bwdIntermediates,
                                    attention, &attentionGrad, "bwd", options, cache)
                    : gru::auGruBwd(graph, params, prog, init, fwdIntermediates, weights, input,
                                    output, outputGrad, inputGrad, bwdIntermediates, attention,
                                    &attentionGrad, "bwd", options, cache);
    return real() ? gru::gruBwd(graph, params, prog, init, fwdIntermediates, weights, input,
                                realTimeSteps, output, outputGrad, inputGrad, bwdIntermediates,
                                "bwd", options, cache)
                  : gru::gruBwd(graph, params, prog, init, fwdIntermediates, weights, input, output,
                                outputGrad, inputGrad, bwdIntermediates, "bwd", options, cache);
  }

  gru::GruWeights wu(program::Sequence &prog, const Tensor &init, const Tensor &fwdIntermediates,
                     const Tensor &bwdIntermediates, const gru::GruWeights &weights,
                     const Tensor &input, const Tensor &output) const {
    return augru() ? gru::auGruWU(graph, params, prog, init, fwdIntermediates, bwdIntermediates,
                                  weights, input, output, "wu", options, cache)
                   : gru::gruWU(graph, params, prog, init, fwdIntermediates, bwdIntermediates,
                                weights, input, output, "wu", options, cache);
  }

  Tensor bwdWithWU(program::Sequence &prog, const Tensor &init, const Tensor &fwdIntermediates,
                   const gru::GruWeights &weights, const Tensor &input, const Tensor &output,
                   const Tensor &outputGrad, Tensor *inputGrad, gru::GruWeights &weightsGrad,
                   Tensor &attentionGrad) const {
    if (augru())
      return real()
                 ? gru::auGruBwdWithWU(graph, params, prog, init, fwdIntermediates, weights, input,
                                       realTimeSteps, output, outputGrad, inputGrad, weightsGrad,
                                       attention, &attentionGrad, "bwd", options, cache)
                 : gru::auGruBwdWithWU(graph, params, prog, init, fwdIntermediates, weights, input,
                                       output, outputGrad, inputGrad, weightsGrad, attention,
                                       &attentionGrad, "bwd", options, cache);
    return real() ? gru::gruBwdWithWU(graph, params, prog, init, fwdIntermediates, weights, input,
                                      realTimeSteps, output, outputGrad, inputGrad, weightsGrad,
                                      "bwd", options, cache)
                  : gru::gruBwdWithWU(graph, params, prog, init, fwdIntermediates, weights, input,
                                      output, outputGrad, inputGrad, weightsGrad, "bwd", options,
                                      cache);
  }
};

int run(const Config &c) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const bool backward = c.backward(), weightUpdate = c.weightUpdate();
  const Type type = c.dataType;
  std::string order;
  for (const std::string &name : cellOrderNames(c))
    order += (order.empty() ? "" : ",") + name;

  Device device = makeDevice(c);
  fmt::print("gru_layer: T={} B={} I={} H={} {} phase={} cellOrder={{{}}} activation={} "
             "recurrentActivation={} resetAfter={} {}{} on {}\n",
             T, B, I, H, c.dataTypeName, c.phase, order, c.activation->name,
             c.recurrentActivation->name, int(c.resetAfter), c.withAttention ? "AUGRU" : "GRU",
             c.withRealTimeSteps ? " realTimeSteps" : "", device.describe());

  Graph graph(device.getTarget());
  ops::addCodelets(graph);
  linalg::addCodelets(graph);
  nn::addCodelets(graph);
  linalg::PlanningCache cache;
  const OptionFlags &options = c.layerOptions;

  const Tensor timeSteps = addTimeSteps(graph, c);
  gru::GruParams params =
      timeSteps.valid() && !c.withRealTimeSteps
          ? gru::GruParams(type, B, T, timeSteps, {I, H}, c.activation->aspen,
                           c.recurrentActivation->aspen)
          : gru::GruParams(type, B, T, {I, H}, c.activation->aspen, c.recurrentActivation->aspen);
  params.cellOrder = c.cellOrder;
  params.outputFullSequence = c.outputAllSequence;
  params.calcInputGradients = !c.ignoreInputGradient;
  params.resetAfter = c.resetAfter;

  program::Sequence prog;
  const Tensor input = gru::createInput(graph, params, "input", options, &cache);
  const Tensor init = gru::createInitialState(graph, params, "init", options, &cache);
  const gru::GruWeights weights = gru::createWeights(graph, params, "weights", options, &cache);
  const Tensor attention =
      c.withAttention ? gru::createAttention(graph, params, "attention", options) : Tensor();
  const GruLayer layer{
      graph, params, options, &cache, c.withRealTimeSteps ? timeSteps : Tensor(), attention};
  Tensor fwdIntermediates;
  const Tensor output =
      layer.fwd(init, input, weights, backward ? &fwdIntermediates : nullptr, prog);

  // Results, in the order they are reported and saved.
  std::vector<std::pair<std::string, Tensor>> results = {{"output", output}};
  Tensor outputGrad, inputGrad, attentionGrad;
  if (backward) {
    outputGrad = graph.clone(output, "outputGrad");
    graph.createHostWrite("outputGrad", outputGrad);
    Tensor *inputGradPtr = c.ignoreInputGradient ? nullptr : &inputGrad;
    Tensor initGrad;
    gru::GruWeights weightsGrad;
    if (c.phase == "all") {
      initGrad = layer.bwdWithWU(prog, init, fwdIntermediates, weights, input, output, outputGrad,
                                 inputGradPtr, weightsGrad, attentionGrad);
    } else {
      Tensor bwdIntermediates;
      initGrad = layer.bwd(prog, init, fwdIntermediates, weights, input, output, outputGrad,
                           inputGradPtr, weightUpdate ? &bwdIntermediates : nullptr, attentionGrad);
      if (weightUpdate)
        weightsGrad =
            layer.wu(prog, init, fwdIntermediates, bwdIntermediates, weights, input, output);
    }
    if (!c.ignoreInputGradient)
      results.push_back({"inputGrad", inputGrad});
    results.push_back({"initialOutputGrad", initGrad});
    if (c.withAttention)
      results.push_back({"attentionGrad", attentionGrad});
    if (weightUpdate) {
      results.push_back({"inputWeightsGrad", weightsGrad.inputWeights});
      results.push_back({"outputWeightsGrad", weightsGrad.outputWeights});
      results.push_back({"biasesGrad", weightsGrad.biases});
    }
  }
  std::vector<std::pair<const char *, Tensor>> inputs = {{"input", input},
                                                         {"initialOutput", init},
                                                         {"inputWeights", weights.inputWeights},
                                                         {"outputWeights", weights.outputWeights},
                                                         {"biases", weights.biases}};
  if (c.withAttention)
    inputs.push_back({"attention", attention});
  for (const auto &[name, t] : inputs)
    graph.createHostWrite(name, t);
  for (const auto &[name, t] : results)
    graph.createHostRead(name + "-read", t);

  double compileSeconds = 0;
  std::optional<Engine> engine = compileAndLoad(kTool, c, graph, prog, device, compileSeconds);
  if (!engine)
    return 0;

  // Inputs, drawn in a fixed order and rounded to the data type.
  std::mt19937 rng(c.seed);
  const double weightScale = 1.0 / std::sqrt(double(H));
  const Shape seq = {T, B, H}, state = {B, H};
  const Shape outputShape = c.outputAllSequence ? seq : state;
  const Shape biasesShape = c.resetAfter ? Shape{3, 2, H} : Shape{3, H};
  std::vector<NamedTensor> saved = {
      {"input", {T, B, I}, "input x_t [T,B,I]", randomValues(rng, {T, B, I}, 1.0, type), {}},
      {"initialOutput",
       state,
       "initial output h_{-1} [B,H]",
       randomValues(rng, state, 1.0, type),
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
    writeValues(*engine, t.name, type, t.values);
  gruref::GruModel model;
  model.T = T, model.B = B, model.I = I, model.H = H;
  for (std::size_t s = 0; s < gruref::kNumGates; ++s)
    model.cellOrder[s] = int(c.cellOrder[s]);
  model.act = c.activation->reference;
  model.recAct = c.recurrentActivation->reference;
  model.resetAfter = c.resetAfter;
  model.outputFullSequence = c.outputAllSequence;
  model.timeSteps = c.variableTimeSteps;
  const gruref::GruData data{
      saved[0].values, saved[1].values, saved[2].values,
      saved[3].values, saved[4].values, c.withAttention ? saved[5].values : std::vector<double>()};
  writeTimeSteps(*engine, c, saved);
  const gruref::GruForward fwd = gruref::forward(model, data);
  gruref::GruGrads grads;
  if (backward) {
    NamedTensor dy{"outputGrad",
                   outputShape,
                   "gradient of the output (output's shape)",
                   randomValues(rng, outputShape, 1.0, type),
                   {}};
    writeValues(*engine, dy.name, type, dy.values);
    grads = gruref::backward(model, data, fwd, dy.values);
    saved.push_back(std::move(dy));
  }

  runTimed(kTool, *engine, c, compileSeconds);

  const auto expected = [&](const std::string &name) -> Expected {
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
  const int status = checkResults(kTool, *engine, c, results, expected, saved);
  if (!c.saveTensors.empty()) {
    auto params = commonManifestParams("gru", c, cellOrderNames(c));
    params.push_back({"resetAfter", jsonBool(c.resetAfter)});
    params.push_back({"phase", jsonString(c.phase)});
    params.push_back({"dataType", jsonString(c.dataTypeName)});
    saveTensors(kTool, c.saveTensors, params, saved);
  }
  return printVerdict(kTool, c, status, results.size());
}

} // namespace

int main(int argc, char **argv) {
  return driverMain<Config>(kTool, argc, argv, parseArguments, printUsage, run);
}
