// The LSTM layer as lstm_layer and aspen-plan build it: the flags that describe the layer
// (popnn's lstm_layer names) and the graph of its phases.
//
// Phases: fwd (lstmFwd with inferenceOnly), bwd (+ lstmBwd), wu (+ lstmBwd keeping the backward
// intermediates, then the separate lstmWU pass), all (+ lstmBwdWithWU: weight update interleaved
// with the backward loop).
#pragma once

#include "rnn_common/LayerDriver.hpp"

#include <aspen/linalg/MatMulPlan.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/nn/LstmStack.hpp>
#include <aspen/nn/RecurrentPlan.hpp>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace lstmlayer {

using namespace rnnlayer;
namespace lstm = aspen::nn::lstm;

struct Config : CommonConfig {
  std::vector<lstm::BasicLstmCellUnit> cellOrder;
  bool lastStepStateGrad = false, preWeightInput = false, ignoreFinalCellState = false;
  lstm::LstmParams::CellClip cellClip; // --cell-clip, --cell-clip-nan
  std::size_t projSize = 0;            // --proj-size
  double activationClip = 0;           // --activation-clip (0: none)
  std::size_t numLayers = 1;           // --num-layers: a stack, each layer on the one below
  // The width of h: the projection's size, or H.
  std::size_t hiddenOutputSize() const { return projSize ? projSize : outputSize; }
};

// --ignore-final-cell-state and --ignore-final-state (PopLibs' older name).
inline void setIgnoreFinalCellState(Config &c, const std::string &flag, const std::string &value) {
  c.ignoreFinalCellState = parseBool(flag, value);
}

// The flags that describe the layer: the common ones and the LSTM's own.
inline std::vector<Flag<Config>> layerFlagTable() {
  std::vector<Flag<Config>> t = layerFlags<Config>("lstm");
  const std::vector<Flag<Config>> lstmFlags = {
      {"accumulators-type", nullptr, "float | half (option weightAccumulatorsType)",
       layerOption<Config>("weightAccumulatorsType", checkPrecision)},
      {"cell-order", "{forget,input,cell,output}", "the gate of each weight slot, all four once",
       [](Config &c, auto &f, auto &v) {
         c.cellOrder =
             parseCellOrder(f, v, lstm::parseBasicLstmCellUnit,
                            lstm::getDefaultBasicLstmCellOrder(), "forget, input, cell, output");
       },
       FlagKind::List},
      {"recomputation-mode", nullptr, "none | cellAndTanh | full (option recomputationMode)",
       layerOption<Config>("recomputationMode",
                           [](auto &f, auto &v) {
                             return parseChoice(f, v, {"none", "cellAndTanh", "full"});
                           })},
      {"steps-per-wu", nullptr, "0..T, 0 = a WU pass after the loop (option rnnStepsPerWU)",
       layerOption<Config>(
           "rnnStepsPerWU",
           [](auto &f, auto &v) { return std::to_string(parseNumber<unsigned>(f, v)); })},
      {"disable-wu-partial-interleaving", nullptr, "0 | 1 (option disableWUPartialInterleaving)",
       layerOption<Config>("disableWUPartialInterleaving", checkBool)},
      {"pre-weight-input", "0", "0 | 1: x.Wi for all steps before the loop (option preCalcWeights)",
       [](Config &c, auto &f, auto &v) {
         c.preWeightInput = parseBool(f, v);
         c.layerOptions.set("preCalcWeights", c.preWeightInput ? "true" : "false");
       }},
      {"cell-clip", nullptr,
       "{min,max}: the cell state clipped to [min, max] after each step (LstmParams::cellClip; "
       "Aspen's)",
       [](Config &c, auto &f, auto &v) {
         const std::vector<std::string> bounds = parseList(f, v);
         if (bounds.size() != 2)
           throw UsageError(fmt::format("--{}: '{}' is not two bounds {{min,max}}", f, v));
         c.cellClip.enabled = true;
         c.cellClip.min = parseNumber<double>(f, bounds[0]);
         c.cellClip.max = parseNumber<double>(f, bounds[1]);
       },
       FlagKind::List, "no clip"},
      activationClipFlag<Config>("LstmParams"),
      {"cell-clip-nan", nullptr, "propagate | min: what the cell clip makes of a NaN",
       [](Config &c, auto &f, auto &v) {
         c.cellClip.propagateNan = parseChoice(f, v, {"propagate", "min"}) == "propagate";
       },
       FlagKind::Value, "propagate"},
      {"proj-size", "0",
       "P < H: h_t = m_t . Wp projected to P (LstmParams::projSize, PyTorch's proj_size; "
       "Aspen's); 0 = none",
       [](Config &c, auto &f, auto &v) { c.projSize = parseNumber<std::size_t>(f, v); }},
      numLayersFlag<Config>(""),
      {"last-step-state-grad", "0", "0 | 1: also feed gradients of the final h and c",
       [](Config &c, auto &f, auto &v) { c.lastStepStateGrad = parseBool(f, v); }},
      {"ignore-final-cell-state", "0",
       "0 | 1: build with the lstmFwd that returns no final cell state (not checked)",
       setIgnoreFinalCellState},
      {"ignore-final-state", nullptr, "as --ignore-final-cell-state (PopLibs' older name)",
       setIgnoreFinalCellState, FlagKind::Value, "0"},
      // PopLibs' weightUpdateMemoryProportion: Aspen's interleaved weight update is planned
      // within availableMemoryProportion and has no budget of its own.
      {"wu-memory-proportion", nullptr, "[0, 1]: PopLibs' WU budget; no effect in Aspen",
       [](Config &c, auto &f, auto &v) {
         const double p = parseNumber<double>(f, v);
         if (!(p >= 0 && p <= 1))
           throw UsageError(fmt::format("--{}: {} is not in [0, 1]", f, v));
         c.notes.push_back(fmt::format(
             "--{} {} has no effect: Aspen plans the interleaved weight update within "
             "--available-memory-proportion (--steps-per-wu forces its cadence)",
             f, v));
       },
       FlagKind::Value, "none"},
  };
  t.insert(t.end(), lstmFlags.begin(), lstmFlags.end());
  return t;
}

// What the flags cannot check one by one; raises UsageError.
inline void checkConfig(const Config &c) {
  if (c.lastStepStateGrad && c.phase == "fwd")
    throw UsageError("--last-step-state-grad needs a backward phase (bwd, wu or all)");
}

inline std::vector<std::string> cellOrderNames(const Config &c) {
  return unitNames(c.cellOrder, [](lstm::BasicLstmCellUnit u) { return lstm::asString(u); });
}

// Layer l's parameters: layer 0 takes the input, the layers above it the output below (the
// whole sequence, P or H wide), and the last gives the output --output-all-sequence asks for.
inline lstm::LstmParams layerParams(const Config &c, const aspen::Tensor &timeSteps,
                                    std::size_t l) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, H = c.outputSize;
  const std::size_t I = l == 0 ? c.inputSize : c.hiddenOutputSize();
  lstm::LstmParams params =
      timeSteps.valid()
          ? lstm::LstmParams(c.dataType, B, T, timeSteps, {I, H}, c.activation->aspen,
                             c.recurrentActivation->aspen)
          : lstm::LstmParams(c.dataType, B, T, {I, H}, c.activation->aspen,
                             c.recurrentActivation->aspen);
  params.cellOrder = c.cellOrder;
  params.outputFullSequence = c.outputAllSequence || l + 1 < c.numLayers;
  params.calcInputGradients = !c.ignoreInputGradient || l > 0;
  params.cellClip = c.cellClip;
  params.projSize = c.projSize;
  params.activationClip = {c.activationClip > 0, c.activationClip};
  return params;
}

// Whether the run builds its stack in one call (stackInOneCall; --ignore-final-cell-state alone
// keeps the layer-by-layer calls, whose lstmFwd can drop the final cell state).
inline bool usesStackCall(const Config &c) {
  return stackInOneCall(c) && (!c.ignoreFinalCellState || stackOptionsAsked(c));
}

// The stack in one call (stackInOneCall): lstm::lstmStackFwd and, for --phase all,
// lstmStackBwdWithWU. Tensors of layer l's direction d are named stackName(base, l, d); the
// final output and cell state of each are results too.
inline BuiltLayer buildStack(aspen::Graph &graph, const Config &c,
                             aspen::linalg::PlanningCache &cache) {
  using namespace aspen;
  const std::size_t L = c.numLayers, D = c.bidirectional ? 2 : 1;
  const OptionFlags options = stackCallOptions(c);
  lstm::LstmParams params = layerParams(c, addTimeSteps(graph, c), 0);
  params.outputFullSequence = true;
  BuiltLayer layer;
  layer.plan = lstm::getPlan(graph, params, c.layerOptions);
  const Tensor in = lstm::createInput(graph, params, "input", c.layerOptions, &cache);
  const lstm::LstmState init = lstm::createStackInitialState(graph, params, "init", options);
  const auto weights = lstm::createStackWeights(graph, params, "weights", options, &cache);
  layer.inputs.push_back({"input", in});
  for (std::size_t i = 0; i < L * D; ++i) {
    const auto name = [&](const char *base) { return stackName(base, i / D, i % D); };
    lstm::LstmParams p = params;
    p.rnn.layerSizes[0] = i < D ? c.inputSize : D * c.hiddenOutputSize();
    layer.flops += lstm::getBasicLstmCellFwdFlops(p) +
                   (c.backward() ? lstm::getBasicLstmCellBwdFlops(p) +
                                       lstm::getBasicLstmCellWuFlops(p)
                                 : 0);
    layer.inputs.push_back({name("initialOutput"), init.output[i]});
    layer.inputs.push_back({name("initialCellState"), init.cellState[i]});
    layer.inputs.push_back({name("inputWeights"), weights[i].inputWeights});
    layer.inputs.push_back({name("outputWeights"), weights[i].outputWeights});
    layer.inputs.push_back({name("biases"), weights[i].biases});
    if (c.projSize)
      layer.inputs.push_back({name("projection"), weights[i].projection});
  }
  lstm::LstmStackIntermediates inter;
  const auto [out, final] =
      lstm::lstmStackFwd(graph, params, init, in, weights, c.backward() ? &inter : nullptr,
                         layer.program, "fwd", options, &cache);
  layer.results = {{"output", out}};
  for (std::size_t i = 0; i < L * D; ++i) {
    layer.results.push_back({stackName("finalOutput", i / D, i % D), final.output[i]});
    layer.results.push_back({stackName("finalCellState", i / D, i % D), final.cellState[i]});
  }
  if (!c.backward()) {
    addHostHandles(graph, layer);
    return layer;
  }
  const Tensor outputGrad = graph.clone(out, "outputGrad");
  layer.inputs.push_back({"outputGrad", outputGrad});
  lstm::LstmState lastGrad;
  if (c.lastStepStateGrad) {
    lastGrad = {graph.clone(final.output, "lastStepStateGrad.output"),
                graph.clone(final.cellState, "lastStepStateGrad.cellState")};
    for (std::size_t i = 0; i < L * D; ++i) {
      layer.inputs.push_back(
          {stackName("lastStepStateGrad.output", i / D, i % D), lastGrad.output[i]});
      layer.inputs.push_back(
          {stackName("lastStepStateGrad.cellState", i / D, i % D), lastGrad.cellState[i]});
    }
  }
  Tensor inputGrad;
  std::vector<lstm::LstmWeights> grads;
  const lstm::LstmState initGrad = lstm::lstmStackBwdWithWU(
      graph, params, layer.program, init, inter, weights, out, outputGrad,
      c.lastStepStateGrad ? &lastGrad : nullptr, c.ignoreInputGradient ? nullptr : &inputGrad,
      grads, "bwd", options, &cache);
  if (!c.ignoreInputGradient)
    layer.results.push_back({"inputGrad", inputGrad});
  for (std::size_t i = 0; i < L * D; ++i) {
    const auto name = [&](const char *base) { return stackName(base, i / D, i % D); };
    layer.results.push_back({name("initialOutputGrad"), initGrad.output[i]});
    layer.results.push_back({name("initialCellStateGrad"), initGrad.cellState[i]});
    layer.results.push_back({name("inputWeightsGrad"), grads[i].inputWeights});
    layer.results.push_back({name("outputWeightsGrad"), grads[i].outputWeights});
    layer.results.push_back({name("biasesGrad"), grads[i].biases});
    if (c.projSize)
      layer.results.push_back({name("projectionGrad"), grads[i].projection});
  }
  addHostHandles(graph, layer);
  return layer;
}

// The layers called one by one (a single layer, or --num-layers for phases bwd and wu): what the
// forward made, for the backward.
struct LayerCalls {
  std::vector<lstm::LstmParams> params;
  std::vector<aspen::Tensor> inputs, outputs, finalCellStates, fwdIntermediates;
  std::vector<lstm::LstmState> inits;
  std::vector<lstm::LstmWeights> weights;
};

// The forward of every layer (layer l > 0 on layer l - 1's output), its inputs and results
// added to `layer`.
inline LayerCalls buildForwardCalls(aspen::Graph &graph, const Config &c,
                                    aspen::linalg::PlanningCache &cache, BuiltLayer &layer) {
  using namespace aspen;
  const std::size_t L = c.numLayers;
  const OptionFlags &options = c.layerOptions;
  const Tensor timeSteps = addTimeSteps(graph, c);
  LayerCalls k;
  for (std::size_t l = 0; l < L; ++l)
    k.params.push_back(layerParams(c, timeSteps, l));
  layer.plan = lstm::getPlan(graph, k.params[0], options);
  for (const lstm::LstmParams &p : k.params)
    layer.flops += lstm::getBasicLstmCellFwdFlops(p) +
                   (c.backward() ? lstm::getBasicLstmCellBwdFlops(p) : 0) +
                   (c.weightUpdate() ? lstm::getBasicLstmCellWuFlops(p) : 0);
  k.inputs.resize(L), k.outputs.resize(L), k.finalCellStates.resize(L);
  k.fwdIntermediates.resize(L), k.inits.resize(L), k.weights.resize(L);
  for (std::size_t l = 0; l < L; ++l) {
    const auto name = [&](const char *base) { return layerName(base, l); };
    const lstm::LstmParams &p = k.params[l];
    k.inputs[l] = l == 0 ? lstm::createInput(graph, p, "input", options, &cache)
                         : k.outputs[l - 1];
    k.inits[l] = lstm::createInitialState(graph, p, name("init"), options, &cache);
    k.weights[l] = lstm::createWeights(graph, p, name("weights"), options, &cache);
    if (l == 0)
      layer.inputs.push_back({"input", k.inputs[0]});
    layer.inputs.push_back({name("initialOutput"), k.inits[l].output});
    layer.inputs.push_back({name("initialCellState"), k.inits[l].cellState});
    layer.inputs.push_back({name("inputWeights"), k.weights[l].inputWeights});
    layer.inputs.push_back({name("outputWeights"), k.weights[l].outputWeights});
    layer.inputs.push_back({name("biases"), k.weights[l].biases});
    if (c.projSize)
      layer.inputs.push_back({name("projection"), k.weights[l].projection});
    Tensor *const intermediates = c.backward() ? &k.fwdIntermediates[l] : nullptr;
    if (c.ignoreFinalCellState)
      k.outputs[l] = lstm::lstmFwd(graph, p, layer.program, k.inits[l], k.weights[l],
                                   k.inputs[l], intermediates, name("fwd"), options, &cache);
    else
      std::tie(k.outputs[l], k.finalCellStates[l]) =
          lstm::lstmFwd(graph, p, k.inits[l], k.inputs[l], k.weights[l], intermediates,
                        layer.program, name("fwd"), options, &cache);
  }
  // Results, in the order they are reported and saved.
  layer.results = {{"output", k.outputs[L - 1]}};
  for (std::size_t l = 0; l < L && !c.ignoreFinalCellState; ++l)
    layer.results.push_back({layerName("finalCellState", l), k.finalCellStates[l]});
  return k;
}

// The backward from the top layer down (layer l's output gradient is the input gradient of the
// layer above): lstmBwdWithWU for phase all, else lstmBwd (and lstmWU for wu); its inputs and
// results added to `layer`.
inline void buildBackwardCalls(aspen::Graph &graph, const Config &c,
                               aspen::linalg::PlanningCache &cache, const LayerCalls &k,
                               BuiltLayer &layer) {
  using namespace aspen;
  const std::size_t L = c.numLayers;
  const OptionFlags &options = c.layerOptions;
  program::Sequence &prog = layer.program;
  const Tensor outputGrad = graph.clone(k.outputs[L - 1], "outputGrad");
  layer.inputs.push_back({"outputGrad", outputGrad});
  std::vector<lstm::LstmState> lastGrads(L);
  for (std::size_t l = 0; l < L && c.lastStepStateGrad; ++l) {
    lastGrads[l] = lstm::createInitialState(graph, k.params[l], layerName("lastStepStateGrad", l),
                                            options, &cache);
    layer.inputs.push_back({layerName("lastStepStateGrad.output", l), lastGrads[l].output});
    layer.inputs.push_back({layerName("lastStepStateGrad.cellState", l), lastGrads[l].cellState});
  }
  std::vector<Tensor> inputGrads(L);
  std::vector<lstm::LstmState> initGrads(L);
  std::vector<lstm::LstmWeights> weightsGrads(L);
  for (std::size_t l = L; l-- > 0;) {
    const auto name = [&](const char *base) { return layerName(base, l); };
    const Tensor &dy = l + 1 == L ? outputGrad : inputGrads[l + 1];
    const lstm::LstmState *lastGrad = c.lastStepStateGrad ? &lastGrads[l] : nullptr;
    Tensor *inputGrad = k.params[l].calcInputGradients ? &inputGrads[l] : nullptr;
    if (c.phase == "all") {
      initGrads[l] = lstm::lstmBwdWithWU(graph, k.params[l], prog, k.inits[l],
                                         k.fwdIntermediates[l], k.weights[l], k.inputs[l],
                                         k.outputs[l], dy, lastGrad, inputGrad, weightsGrads[l],
                                         name("bwd"), options, &cache);
      continue;
    }
    Tensor bwdIntermediates;
    initGrads[l] = lstm::lstmBwd(graph, k.params[l], prog, k.inits[l], k.fwdIntermediates[l],
                                 k.weights[l], k.inputs[l], k.outputs[l], dy, lastGrad, inputGrad,
                                 c.weightUpdate() ? &bwdIntermediates : nullptr, name("bwd"),
                                 options, &cache);
    if (c.weightUpdate())
      weightsGrads[l] = lstm::lstmWU(graph, k.params[l], prog, k.inits[l], k.fwdIntermediates[l],
                                     bwdIntermediates, k.weights[l], k.inputs[l], k.outputs[l],
                                     name("wu"), options, &cache);
  }
  if (!c.ignoreInputGradient)
    layer.results.push_back({"inputGrad", inputGrads[0]});
  for (std::size_t l = 0; l < L; ++l) {
    const auto name = [&](const char *base) { return layerName(base, l); };
    layer.results.push_back({name("initialOutputGrad"), initGrads[l].output});
    layer.results.push_back({name("initialCellStateGrad"), initGrads[l].cellState});
    if (!c.weightUpdate())
      continue;
    layer.results.push_back({name("inputWeightsGrad"), weightsGrads[l].inputWeights});
    layer.results.push_back({name("outputWeightsGrad"), weightsGrads[l].outputWeights});
    layer.results.push_back({name("biasesGrad"), weightsGrads[l].biases});
    if (c.projSize)
      layer.results.push_back({name("projectionGrad"), weightsGrads[l].projection});
  }
}

// The layer's graph for c's phase, with its host handles (inputs: input, initialOutput,
// initialCellState, inputWeights, outputWeights, biases (projection), then outputGrad and
// lastStepStateGrad.{output,cellState} when used; the timeSteps handle is addTimeSteps's). With
// --num-layers L a stack, layer l > 0 taking layer l - 1's output: its tensors are named as
// layer 0's with ".l<l>" (layerName), the output and the input gradient are the stack's.
inline BuiltLayer build(aspen::Graph &graph, const Config &c, aspen::linalg::PlanningCache &cache) {
  if (usesStackCall(c)) {
    if (c.ignoreFinalCellState)
      throw UsageError("--ignore-final-cell-state: a stack in one call always keeps its final "
                       "states");
    return buildStack(graph, c, cache);
  }
  BuiltLayer layer;
  const LayerCalls calls = buildForwardCalls(graph, c, cache, layer);
  if (c.backward())
    buildBackwardCalls(graph, c, cache, calls, layer);
  addHostHandles(graph, layer);
  return layer;
}

} // namespace lstmlayer
