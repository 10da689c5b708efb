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
#include <aspen/nn/GruStack.hpp>
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
  std::size_t numLayers = 1; // --num-layers: a stack, each layer on the one below
};

// The flags that describe the layer: the common ones and the GRU's own.
inline std::vector<Flag<Config>> layerFlagTable() {
  std::vector<Flag<Config>> t = layerFlags<Config>("gru");
  const std::vector<Flag<Config>> gruFlags = {
        numLayersFlag<Config>("; not with --with-attention or --with-real-time-steps"),
        {"steps-per-wu", nullptr, "0..T, 0 = a WU pass after the loop (option rnnStepsPerWU)",
         layerOption<Config>("rnnStepsPerWU",
                             [](auto &f, auto &v) {
                               return std::to_string(parseNumber<unsigned>(f, v));
                             })},
        activationClipFlag<Config>("GruParams"),
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
  if (c.numLayers > 1 && (c.withAttention || c.withRealTimeSteps))
    throw UsageError("--num-layers above 1 builds a stack of GRUs: not with --with-attention or "
                     "--with-real-time-steps");
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

// Layer l's parameters: layer 0 takes the input, the layers above it the output below (the
// whole sequence), and the last gives the output --output-all-sequence asks for.
inline gru::GruParams layerParams(const Config &c, const aspen::Tensor &timeSteps,
                                  std::size_t l) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, H = c.outputSize;
  const std::size_t I = l == 0 ? c.inputSize : H;
  gru::GruParams params =
      timeSteps.valid() && !c.withRealTimeSteps
          ? gru::GruParams(c.dataType, B, T, timeSteps, {I, H}, c.activation->aspen,
                           c.recurrentActivation->aspen)
          : gru::GruParams(c.dataType, B, T, {I, H}, c.activation->aspen,
                           c.recurrentActivation->aspen);
  params.cellOrder = c.cellOrder;
  params.outputFullSequence = c.outputAllSequence || l + 1 < c.numLayers;
  params.calcInputGradients = !c.ignoreInputGradient || l > 0;
  params.resetAfter = c.resetAfter;
  params.activationClip = {c.activationClip > 0, c.activationClip};
  return params;
}

// Whether the run builds its stack in one call (stackInOneCall; the AUGRU and the
// realTimeSteps overloads keep the layer-by-layer calls: a stack has neither).
inline bool usesStackCall(const Config &c) {
  const bool layerOnly = c.withAttention || c.withRealTimeSteps;
  if (layerOnly && stackOptionsAsked(c))
    throw UsageError("--direction bidirectional, --dropout and --stack-schedule build a stack in "
                     "one call, which has no attention (--with-attention) and takes the lengths "
                     "in its params (not --with-real-time-steps)");
  return !layerOnly && stackInOneCall(c);
}

// The stack in one call: gru::gruStackFwd and, for --phase all, gruStackBwdWithWU. Tensors of
// layer l's direction d are named stackName(base, l, d); the final output of each is a result
// too.
inline BuiltLayer buildStack(aspen::Graph &graph, const Config &c,
                             aspen::linalg::PlanningCache &cache) {
  using namespace aspen;
  const std::size_t L = c.numLayers, D = c.bidirectional ? 2 : 1, H = c.outputSize;
  const OptionFlags options = stackCallOptions(c);
  gru::GruParams params = layerParams(c, addTimeSteps(graph, c), 0);
  params.outputFullSequence = true;
  BuiltLayer layer;
  layer.plan = gru::getPlan(graph, params, c.layerOptions);
  const Tensor in = gru::createInput(graph, params, "input", c.layerOptions, &cache);
  const Tensor init = gru::createStackInitialState(graph, params, "init", options);
  const auto weights = gru::createStackWeights(graph, params, "weights", options, &cache);
  layer.inputs.push_back({"input", in});
  for (std::size_t i = 0; i < L * D; ++i) {
    const auto name = [&](const char *base) { return stackName(base, i / D, i % D); };
    gru::GruParams p = params;
    p.rnn.layerSizes[0] = i < D ? c.inputSize : D * H;
    layer.flops += gru::getBasicGruCellFwdFlops(p) +
                   (c.backward() ? gru::getBasicGruCellBwdFlops(p) +
                                       gru::getBasicGruCellWuFlops(p)
                                 : 0);
    layer.inputs.push_back({name("initialOutput"), init[i]});
    layer.inputs.push_back({name("inputWeights"), weights[i].inputWeights});
    layer.inputs.push_back({name("outputWeights"), weights[i].outputWeights});
    layer.inputs.push_back({name("biases"), weights[i].biases});
  }
  gru::GruStackIntermediates inter;
  const auto [out, final] =
      gru::gruStackFwd(graph, params, init, in, weights, c.backward() ? &inter : nullptr,
                       layer.program, "fwd", options, &cache);
  layer.results = {{"output", out}};
  for (std::size_t i = 0; i < L * D; ++i)
    layer.results.push_back({stackName("finalOutput", i / D, i % D), final[i]});
  if (!c.backward()) {
    addHostHandles(graph, layer);
    return layer;
  }
  const Tensor outputGrad = graph.clone(out, "outputGrad");
  layer.inputs.push_back({"outputGrad", outputGrad});
  Tensor inputGrad;
  std::vector<gru::GruWeights> grads;
  const Tensor initGrad = gru::gruStackBwdWithWU(
      graph, params, layer.program, init, inter, weights, out, outputGrad, nullptr,
      c.ignoreInputGradient ? nullptr : &inputGrad, grads, "bwd", options, &cache);
  if (!c.ignoreInputGradient)
    layer.results.push_back({"inputGrad", inputGrad});
  for (std::size_t i = 0; i < L * D; ++i) {
    const auto name = [&](const char *base) { return stackName(base, i / D, i % D); };
    layer.results.push_back({name("initialOutputGrad"), initGrad[i]});
    layer.results.push_back({name("inputWeightsGrad"), grads[i].inputWeights});
    layer.results.push_back({name("outputWeightsGrad"), grads[i].outputWeights});
    layer.results.push_back({name("biasesGrad"), grads[i].biases});
  }
  addHostHandles(graph, layer);
  return layer;
}

// The layers called one by one (a single layer, or --num-layers for phases bwd and wu): what the
// forward made, for the backward.
struct LayerCalls {
  std::vector<gru::GruParams> params;
  std::vector<GruLayer> layers;
  aspen::Tensor attention;
  std::vector<aspen::Tensor> inputs, outputs, inits, fwdIntermediates;
  std::vector<gru::GruWeights> weights;
};

// The forward of every layer (layer l > 0 on layer l - 1's output), its inputs and output added
// to `layer`. k.params is reserved first: the GruLayers hold references to its entries.
inline void buildForwardCalls(aspen::Graph &graph, const Config &c,
                              aspen::linalg::PlanningCache &cache, LayerCalls &k,
                              BuiltLayer &layer) {
  using namespace aspen;
  const std::size_t L = c.numLayers;
  const OptionFlags &options = c.layerOptions;
  const Tensor timeSteps = addTimeSteps(graph, c);
  k.params.reserve(L);
  for (std::size_t l = 0; l < L; ++l)
    k.params.push_back(layerParams(c, timeSteps, l));
  layer.plan = gru::getPlan(graph, k.params[0], options);
  for (const gru::GruParams &p : k.params)
    layer.flops += gru::getBasicGruCellFwdFlops(p) +
                   (c.backward() ? gru::getBasicGruCellBwdFlops(p) : 0) +
                   (c.weightUpdate() ? gru::getBasicGruCellWuFlops(p) : 0);
  const Tensor input = gru::createInput(graph, k.params[0], "input", options, &cache);
  k.attention =
      c.withAttention ? gru::createAttention(graph, k.params[0], "attention", options) : Tensor();
  k.inputs.resize(L), k.outputs.resize(L), k.inits.resize(L), k.fwdIntermediates.resize(L);
  k.weights.resize(L);
  for (std::size_t l = 0; l < L; ++l) {
    k.layers.push_back(GruLayer{graph, k.params[l], options, &cache,
                                c.withRealTimeSteps ? timeSteps : Tensor(), k.attention});
    k.inputs[l] = l == 0 ? input : k.outputs[l - 1];
    k.inits[l] = gru::createInitialState(graph, k.params[l], layerName("init", l), options, &cache);
    k.weights[l] =
        gru::createWeights(graph, k.params[l], layerName("weights", l), options, &cache);
    k.outputs[l] = k.layers[l].fwd(k.inits[l], k.inputs[l], k.weights[l],
                                   c.backward() ? &k.fwdIntermediates[l] : nullptr,
                                   layer.program);
  }
  // Results, in the order they are reported and saved.
  layer.results = {{"output", k.outputs[L - 1]}};
  layer.inputs = {{"input", input}};
  for (std::size_t l = 0; l < L; ++l) {
    layer.inputs.push_back({layerName("initialOutput", l), k.inits[l]});
    layer.inputs.push_back({layerName("inputWeights", l), k.weights[l].inputWeights});
    layer.inputs.push_back({layerName("outputWeights", l), k.weights[l].outputWeights});
    layer.inputs.push_back({layerName("biases", l), k.weights[l].biases});
  }
  if (c.withAttention)
    layer.inputs.push_back({"attention", k.attention});
}

// The backward from the top layer down (layer l's output gradient is the input gradient of the
// layer above): bwdWithWU for phase all, else bwd (and wu for wu); its input and results added
// to `layer`.
inline void buildBackwardCalls(aspen::Graph &graph, const Config &c, const LayerCalls &k,
                               BuiltLayer &layer) {
  using namespace aspen;
  const std::size_t L = c.numLayers;
  program::Sequence &prog = layer.program;
  const Tensor outputGrad = graph.clone(k.outputs[L - 1], "outputGrad");
  std::vector<Tensor> inputGrads(L), initGrads(L);
  std::vector<gru::GruWeights> weightsGrads(L);
  Tensor attentionGrad;
  for (std::size_t l = L; l-- > 0;) {
    const Tensor &dy = l + 1 == L ? outputGrad : inputGrads[l + 1];
    Tensor *inputGrad = k.params[l].calcInputGradients ? &inputGrads[l] : nullptr;
    if (c.phase == "all") {
      initGrads[l] = k.layers[l].bwdWithWU(prog, k.inits[l], k.fwdIntermediates[l], k.weights[l],
                                           k.inputs[l], k.outputs[l], dy, inputGrad,
                                           weightsGrads[l], attentionGrad);
      continue;
    }
    Tensor bwdIntermediates;
    initGrads[l] = k.layers[l].bwd(prog, k.inits[l], k.fwdIntermediates[l], k.weights[l],
                                   k.inputs[l], k.outputs[l], dy, inputGrad,
                                   c.weightUpdate() ? &bwdIntermediates : nullptr, attentionGrad);
    if (c.weightUpdate())
      weightsGrads[l] = k.layers[l].wu(prog, k.inits[l], k.fwdIntermediates[l], bwdIntermediates,
                                       k.weights[l], k.inputs[l], k.outputs[l]);
  }
  std::vector<std::pair<std::string, Tensor>> &results = layer.results;
  if (!c.ignoreInputGradient)
    results.push_back({"inputGrad", inputGrads[0]});
  for (std::size_t l = 0; l < L; ++l) {
    results.push_back({layerName("initialOutputGrad", l), initGrads[l]});
    if (c.withAttention)
      results.push_back({"attentionGrad", attentionGrad});
    if (!c.weightUpdate())
      continue;
    results.push_back({layerName("inputWeightsGrad", l), weightsGrads[l].inputWeights});
    results.push_back({layerName("outputWeightsGrad", l), weightsGrads[l].outputWeights});
    results.push_back({layerName("biasesGrad", l), weightsGrads[l].biases});
  }
  layer.inputs.push_back({"outputGrad", outputGrad});
}

// The layer's graph for c's phase, with its host handles (inputs: input, initialOutput,
// inputWeights, outputWeights, biases, then attention and outputGrad when used; the timeSteps
// handle is addTimeSteps's). With --num-layers L a stack, layer l > 0 taking layer l - 1's
// output: its tensors are named as layer 0's with ".l<l>" (layerName).
inline BuiltLayer build(aspen::Graph &graph, const Config &c, aspen::linalg::PlanningCache &cache) {
  if (usesStackCall(c))
    return buildStack(graph, c, cache);
  BuiltLayer layer;
  LayerCalls calls;
  buildForwardCalls(graph, c, cache, calls, layer);
  if (c.backward())
    buildBackwardCalls(graph, c, calls, layer);
  addHostHandles(graph, layer);
  return layer;
}

} // namespace grulayer
