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
      {"activation-clip", nullptr,
       "t > 0: every activation's input clipped to [-t, t] (ONNX's clip; "
       "LstmParams::activationClip, Aspen's)",
       [](Config &c, auto &f, auto &v) {
         c.activationClip = parseNumber<double>(f, v);
         if (!(c.activationClip > 0))
           throw UsageError(fmt::format("--{}: {} is not above 0", f, v));
       },
       FlagKind::Value, "no clip"},
      {"cell-clip-nan", nullptr, "propagate | min: what the cell clip makes of a NaN",
       [](Config &c, auto &f, auto &v) {
         c.cellClip.propagateNan = parseChoice(f, v, {"propagate", "min"}) == "propagate";
       },
       FlagKind::Value, "propagate"},
      {"proj-size", "0",
       "P < H: h_t = m_t . Wp projected to P (LstmParams::projSize, PyTorch's proj_size; "
       "Aspen's); 0 = none",
       [](Config &c, auto &f, auto &v) { c.projSize = parseNumber<std::size_t>(f, v); }},
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

// The layer's graph for c's phase, with its host handles (inputs: input, initialOutput,
// initialCellState, inputWeights, outputWeights, biases, then outputGrad and
// lastStepStateGrad.{output,cellState} when used; the timeSteps handle is addTimeSteps's).
inline BuiltLayer build(aspen::Graph &graph, const Config &c, aspen::linalg::PlanningCache &cache) {
  using namespace aspen;
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const bool backward = c.backward(), weightUpdate = c.weightUpdate();
  const OptionFlags &options = c.layerOptions;

  const Tensor timeSteps = addTimeSteps(graph, c);
  lstm::LstmParams params =
      timeSteps.valid()
          ? lstm::LstmParams(c.dataType, B, T, timeSteps, {I, H}, c.activation->aspen,
                             c.recurrentActivation->aspen)
          : lstm::LstmParams(c.dataType, B, T, {I, H}, c.activation->aspen,
                             c.recurrentActivation->aspen);
  params.cellOrder = c.cellOrder;
  params.outputFullSequence = c.outputAllSequence;
  params.calcInputGradients = !c.ignoreInputGradient;
  params.cellClip = c.cellClip;
  params.projSize = c.projSize;
  params.activationClip = {c.activationClip > 0, c.activationClip};

  BuiltLayer layer;
  program::Sequence &prog = layer.program;
  layer.plan = lstm::getPlan(graph, params, options);
  layer.flops = lstm::getBasicLstmCellFwdFlops(params) +
                (backward ? lstm::getBasicLstmCellBwdFlops(params) : 0) +
                (weightUpdate ? lstm::getBasicLstmCellWuFlops(params) : 0);
  const Tensor input = lstm::createInput(graph, params, "input", options, &cache);
  const lstm::LstmState init = lstm::createInitialState(graph, params, "init", options, &cache);
  const lstm::LstmWeights weights = lstm::createWeights(graph, params, "weights", options, &cache);
  layer.inputs = {{"input", input},
                  {"initialOutput", init.output},
                  {"initialCellState", init.cellState},
                  {"inputWeights", weights.inputWeights},
                  {"outputWeights", weights.outputWeights},
                  {"biases", weights.biases}};
  if (c.projSize)
    layer.inputs.push_back({"projection", weights.projection});
  Tensor fwdIntermediates;
  Tensor *const intermediates = backward ? &fwdIntermediates : nullptr;
  Tensor output, finalCellState;
  if (c.ignoreFinalCellState)
    output = lstm::lstmFwd(graph, params, prog, init, weights, input, intermediates, "fwd",
                           options, &cache);
  else
    std::tie(output, finalCellState) = lstm::lstmFwd(graph, params, init, input, weights,
                                                     intermediates, prog, "fwd", options, &cache);

  // Results, in the order they are reported and saved.
  layer.results = {{"output", output}};
  if (!c.ignoreFinalCellState)
    layer.results.push_back({"finalCellState", finalCellState});
  if (!backward) {
    addHostHandles(graph, layer);
    return layer;
  }
  const Tensor outputGrad = graph.clone(output, "outputGrad");
  layer.inputs.push_back({"outputGrad", outputGrad});
  lstm::LstmState lastGrad;
  if (c.lastStepStateGrad) {
    lastGrad = lstm::createInitialState(graph, params, "lastStepStateGrad", options, &cache);
    layer.inputs.push_back({"lastStepStateGrad.output", lastGrad.output});
    layer.inputs.push_back({"lastStepStateGrad.cellState", lastGrad.cellState});
  }
  const lstm::LstmState *lastGradPtr = c.lastStepStateGrad ? &lastGrad : nullptr;
  Tensor inputGrad;
  Tensor *inputGradPtr = c.ignoreInputGradient ? nullptr : &inputGrad;
  lstm::LstmState initGrad;
  lstm::LstmWeights weightsGrad;
  if (c.phase == "all") {
    initGrad = lstm::lstmBwdWithWU(graph, params, prog, init, fwdIntermediates, weights, input,
                                   output, outputGrad, lastGradPtr, inputGradPtr, weightsGrad,
                                   "bwd", options, &cache);
  } else {
    Tensor bwdIntermediates;
    initGrad = lstm::lstmBwd(graph, params, prog, init, fwdIntermediates, weights, input, output,
                             outputGrad, lastGradPtr, inputGradPtr,
                             weightUpdate ? &bwdIntermediates : nullptr, "bwd", options, &cache);
    if (weightUpdate)
      weightsGrad = lstm::lstmWU(graph, params, prog, init, fwdIntermediates, bwdIntermediates,
                                 weights, input, output, "wu", options, &cache);
  }
  if (!c.ignoreInputGradient)
    layer.results.push_back({"inputGrad", inputGrad});
  layer.results.push_back({"initialOutputGrad", initGrad.output});
  layer.results.push_back({"initialCellStateGrad", initGrad.cellState});
  if (weightUpdate) {
    layer.results.push_back({"inputWeightsGrad", weightsGrad.inputWeights});
    layer.results.push_back({"outputWeightsGrad", weightsGrad.outputWeights});
    layer.results.push_back({"biasesGrad", weightsGrad.biases});
    if (c.projSize)
      layer.results.push_back({"projectionGrad", weightsGrad.projection});
  }
  addHostHandles(graph, layer);
  return layer;
}

} // namespace lstmlayer
