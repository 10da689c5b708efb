// The GRU (and AUGRU) layer as gru_layer and aspen-plan build it: the flags that describe the
// layer (popnn's gru_layer names) and the graph of its phases.
//
// Phases: fwd (gruFwd / auGruFwd with inferenceOnly), bwd (+ gruBwd / auGruBwd), wu (+ the
// backward keeping its intermediates, then the separate gruWU / auGruWU pass), all
// (+ gruBwdWithWU / auGruBwdWithWU). --with-attention builds the AUGRU; --with-real-time-steps
// passes the --variable-time-steps lengths through the realTimeSteps overloads instead of
// GruParams.
#pragma once

#include "rnn_common/LayerDriver.hpp"

#include <aspen/linalg/MatMulPlan.hpp>
#include <aspen/nn/Gru.hpp>
#include <aspen/nn/RecurrentPlan.hpp>

#include <random>
#include <string>
#include <utility>
#include <vector>

namespace grulayer {

using namespace rnnlayer;
using aspen::Graph, aspen::OptionFlags, aspen::Tensor;
namespace gru = aspen::nn::gru;
namespace linalg = aspen::linalg;
namespace program = aspen::program;

struct Config : CommonConfig {
  std::vector<gru::BasicGruCellUnit> cellOrder;
  bool resetAfter = false, withAttention = false, withRealTimeSteps = false;
  double activationClip = 0; // --activation-clip (0: none)
};

// The flags that describe the layer: the common ones and the GRU's own.
inline std::vector<Flag<Config>> layerFlagTable() {
  std::vector<Flag<Config>> t = layerFlags<Config>("gru");
  const std::vector<Flag<Config>> gruFlags = {
        {"activation-clip", nullptr,
         "t > 0: the gates' pre-activations clipped to [-t, t] (ONNX's clip; "
         "GruParams::activationClip, Aspen's)",
         [](Config &c, auto &f, auto &v) {
           c.activationClip = parseNumber<double>(f, v);
           if (!(c.activationClip > 0))
             throw UsageError(fmt::format("--{}: {} is not above 0", f, v));
         },
         FlagKind::Value, "no clip"},
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
         "0 | 1: pass the lengths as realTimeSteps, not in the params: --variable-time-steps's, "
         "or (as PopLibs) one per row drawn from [1, T] by --seed",
         [](Config &c, auto &f, auto &v) { c.withRealTimeSteps = parseBool(f, v); }},
    };
  t.insert(t.end(), gruFlags.begin(), gruFlags.end());
  return t;
}

// --with-real-time-steps without --variable-time-steps: each row's length drawn from [1, T] by
// --seed, as PopLibs' gru_layer draws its realTimeSteps.
inline void drawRealTimeSteps(Config &c) {
  if (!c.withRealTimeSteps || !c.variableTimeSteps.empty())
    return;
  std::mt19937 rng(c.seed ^ 0x5eed5u);
  std::uniform_int_distribution<unsigned> length(1, unsigned(c.sequenceSize));
  for (std::size_t b = 0; b < c.batchSize; ++b)
    c.variableTimeSteps.push_back(length(rng));
}

// What the flags cannot check one by one; raises UsageError.
inline void checkConfig(const Config &c) {
  if (c.withRealTimeSteps && c.variableTimeSteps.empty())
    throw UsageError("--with-real-time-steps needs the lengths it passes (--variable-time-steps)");
}

inline std::vector<std::string> cellOrderNames(const Config &c) {
  return unitNames(c.cellOrder, [](gru::BasicGruCellUnit u) { return gru::asString(u); });
}

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

// The layer's graph for c's phase, with its host handles (inputs: input, initialOutput,
// inputWeights, outputWeights, biases, then attention and outputGrad when used; the timeSteps
// handle is addTimeSteps's).
inline BuiltLayer build(aspen::Graph &graph, const Config &c, aspen::linalg::PlanningCache &cache) {
  using namespace aspen;
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const bool backward = c.backward(), weightUpdate = c.weightUpdate();
  const Type type = c.dataType;
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
  params.activationClip = {c.activationClip > 0, c.activationClip};

  BuiltLayer layer;
  program::Sequence &prog = layer.program;
  layer.plan = gru::getPlan(graph, params, options);
  layer.flops = gru::getBasicGruCellFwdFlops(params) +
                (backward ? gru::getBasicGruCellBwdFlops(params) : 0) +
                (weightUpdate ? gru::getBasicGruCellWuFlops(params) : 0);
  const Tensor input = gru::createInput(graph, params, "input", options, &cache);
  const Tensor init = gru::createInitialState(graph, params, "init", options, &cache);
  const gru::GruWeights weights = gru::createWeights(graph, params, "weights", options, &cache);
  const Tensor attention =
      c.withAttention ? gru::createAttention(graph, params, "attention", options) : Tensor();
  const GruLayer gruLayer{
      graph, params, options, &cache, c.withRealTimeSteps ? timeSteps : Tensor(), attention};
  Tensor fwdIntermediates;
  const Tensor output =
      gruLayer.fwd(init, input, weights, backward ? &fwdIntermediates : nullptr, prog);

  // Results, in the order they are reported and saved.
  std::vector<std::pair<std::string, Tensor>> &results = layer.results;
  results = {{"output", output}};
  Tensor outputGrad, inputGrad, attentionGrad;
  if (backward) {
    outputGrad = graph.clone(output, "outputGrad");
    Tensor *inputGradPtr = c.ignoreInputGradient ? nullptr : &inputGrad;
    Tensor initGrad;
    gru::GruWeights weightsGrad;
    if (c.phase == "all") {
      initGrad = gruLayer.bwdWithWU(prog, init, fwdIntermediates, weights, input, output, outputGrad,
                                 inputGradPtr, weightsGrad, attentionGrad);
    } else {
      Tensor bwdIntermediates;
      initGrad = gruLayer.bwd(prog, init, fwdIntermediates, weights, input, output, outputGrad,
                           inputGradPtr, weightUpdate ? &bwdIntermediates : nullptr, attentionGrad);
      if (weightUpdate)
        weightsGrad =
            gruLayer.wu(prog, init, fwdIntermediates, bwdIntermediates, weights, input, output);
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
  layer.inputs = {{"input", input},
                  {"initialOutput", init},
                  {"inputWeights", weights.inputWeights},
                  {"outputWeights", weights.outputWeights},
                  {"biases", weights.biases}};
  if (c.withAttention)
    layer.inputs.push_back({"attention", attention});
  if (backward)
    layer.inputs.push_back({"outputGrad", outputGrad});
  addHostHandles(graph, layer);
  return layer;

}

} // namespace grulayer
