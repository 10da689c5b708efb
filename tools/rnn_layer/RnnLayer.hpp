// The vanilla RNN layer as rnn_layer and aspen-plan build it: the flags that describe the layer
// (popnn's rnn_layer names) and the graph of its phases.
//
// Phases: fwd (rnnFwdSequence with inferenceOnly), bwd (+ rnnBwdSequence without the weight
// update), wu and all (rnnBwdSequence with doWU: the same call). --apply-feedforward-weights=1
// lets rnnFwdSequence weigh the input (weightedIn null); 0 weighs it first with
// forwardWeightInput and passes the product.
//
// A stack in one call (rnn::rnnStackFwd / rnnStackBwdWithWU, aspen/nn/RecurrentStack.hpp):
// --num-layers above 1, --direction reverse or bidirectional, --variable-time-steps, --dropout
// or --stack-schedule, which popnn's functions do not have; phases fwd and all.
#pragma once

#include "rnn_common/LayerDriver.hpp"

#include <aspen/linalg/MatMulPlan.hpp>
#include <aspen/nn/Recurrent.hpp>
#include <aspen/nn/RecurrentStack.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace rnnlayer::vanilla {

using aspen::Graph, aspen::OptionFlags, aspen::Tensor, aspen::Type;
namespace rnn = aspen::nn::rnn;
namespace program = aspen::program;

struct Config : CommonConfig {
  Type partialsType = aspen::FLOAT;
  bool applyFeedforwardWeights = true;
  std::size_t numLayers = 1; // --num-layers: a stack in one call
};

// The flags that describe the layer: the common ones this layer has and its own.
inline std::vector<Flag<Config>> layerFlagTable() {
  // The shared flags this layer has (no gates or shards); the direction, lengths and stack
  // flags build a stack in one call.
  const std::vector<std::string> shared = {
      "help",          "input-size",  "output-size", "batch-size",         "sequence-size",
      "phase",         "data-type",   "partials-type", "direction",        "dropout",
      "dropout-seed",  "stack-schedule", "variable-time-steps"};
  std::vector<Flag<Config>> t;
  for (Flag<Config> &f : layerFlags<Config>("rnn")) {
    if (std::find(shared.begin(), shared.end(), f.name) == shared.end())
      continue;
    if (f.name == "phase")
      f.help = "fwd | bwd | wu (rnnBwdSequence with the weight update) | all (as wu)";
    if (f.name == "partials-type") {
      f.defaultValue = "float";
      f.help = "float | half";
      f.set = [](Config &c, const std::string &flag, const std::string &value) {
        c.partialsType = checkPrecision(flag, value) == "half" ? aspen::HALF : aspen::FLOAT;
      };
    }
    t.push_back(std::move(f));
  }
  const std::vector<Flag<Config>> rnnFlags = {
      {"nonlinearity-type", "tanh",
       "sigmoid | hard_sigmoid | relu | tanh | softmax (gelu, gelu_erf, swish are refused by "
       "the layer)",
       [](Config &c, auto &f, auto &v) { c.activation = parseActivationFlag(f, v); }},
      // PopLibs' switch (given alone, 1). PopLibs' default differs: without it, its forward
      // phase takes the weighted input from the host; Aspen's 0 weighs it with
      // forwardWeightInput (docs/drivers.md).
      {"apply-feedforward-weights", "1",
       "0 | 1: rnnFwdSequence weighs the input (1), or forwardWeightInput does first (0)",
       [](Config &c, auto &f, auto &v) { c.applyFeedforwardWeights = parseBool(f, v); },
       FlagKind::Switch},
      numLayersFlag<Config>("; a stack in one call, as --direction, --variable-time-steps and "
                            "--dropout build"),
  };
  t.insert(t.end(), rnnFlags.begin(), rnnFlags.end());
  return t;
}

// Whether the run builds a stack in one call: what popnn's functions cannot do (more than one
// layer, a direction, lengths, dropout, a schedule). UsageError where the stack cannot honour the
// run (its backward always updates the weights; it weighs its input itself).
inline bool usesStackCall(const Config &c) {
  const bool needed = c.numLayers > 1 || stackOptionsAsked(c) || c.reverse ||
                      !c.variableTimeSteps.empty();
  if (!needed)
    return false;
  if (c.phase != "fwd" && c.phase != "all")
    throw UsageError("--num-layers, --direction, --variable-time-steps, --dropout and "
                     "--stack-schedule build the vanilla RNN's stack in one call, whose phases "
                     "are fwd and all (its backward updates the weights)");
  if (!c.applyFeedforwardWeights)
    throw UsageError("--apply-feedforward-weights=0 passes a weighted input to rnnFwdSequence; "
                     "the stack in one call weighs its input itself");
  return true;
}

// The stack in one call: rnn::rnnStackFwd and, for --phase all, rnnStackBwdWithWU. Tensors of
// layer l's direction d are named stackName(base, l, d); the final output of each is a result
// too.
inline BuiltLayer buildStack(aspen::Graph &graph, const Config &c,
                             aspen::linalg::PlanningCache &cache) {
  using namespace aspen;
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const std::size_t L = c.numLayers, D = c.bidirectional ? 2 : 1;
  OptionFlags options = stackCallOptions(c);
  options.set("partialsType", c.partialsType == HALF ? "half" : "float");
  options.set("inferenceOnly", c.backward() ? "false" : "true");
  const Tensor timeSteps = addTimeSteps(graph, c);
  const rnn::RnnParams base = timeSteps.valid()
                                  ? rnn::RnnParams(c.dataType, B, T, timeSteps, {I, H})
                                  : rnn::RnnParams(c.dataType, B, T, {I, H});
  const rnn::RecurrentParams params(base, c.activation->aspen);
  BuiltLayer layer;
  const Tensor in = rnn::createInputTensor(graph, base, 1, "input");
  const Tensor init = rnn::createStackInitialState(graph, params, "init", options);
  const auto weights = rnn::createStackWeights(graph, params, "weights", options, &cache);
  layer.inputs.push_back({"input", in});
  for (std::size_t i = 0; i < L * D; ++i) {
    const auto name = [&](const char *b) { return stackName(b, i / D, i % D); };
    const unsigned t = unsigned(T), b = unsigned(B), h = unsigned(H);
    const unsigned x = unsigned(i < D ? I : D * H);
    layer.flops += rnn::getFwdFlops(t, b, x, h) +
                   (c.backward() ? rnn::getBwdFlops(t, b, x, h) + rnn::getWuFlops(t, b, x, h)
                                 : 0);
    layer.inputs.push_back({name("initialOutput"), init[i]});
    layer.inputs.push_back({name("inputWeights"), weights[i].inputWeights});
    layer.inputs.push_back({name("outputWeights"), weights[i].feedbackWeights});
    layer.inputs.push_back({name("biases"), weights[i].biases});
  }
  rnn::RecurrentStackIntermediates inter;
  const auto [out, final] =
      rnn::rnnStackFwd(graph, params, init, in, weights, c.backward() ? &inter : nullptr,
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
  std::vector<rnn::RecurrentWeights> grads;
  const Tensor initGrad =
      rnn::rnnStackBwdWithWU(graph, params, layer.program, init, inter, weights, out, outputGrad,
                             nullptr, &inputGrad, grads, "bwd", options, &cache);
  layer.results.push_back({"inputGrad", inputGrad});
  for (std::size_t i = 0; i < L * D; ++i) {
    const auto name = [&](const char *b) { return stackName(b, i / D, i % D); };
    layer.results.push_back({name("initialOutputGrad"), initGrad[i]});
    layer.results.push_back({name("inputWeightsGrad"), grads[i].inputWeights});
    layer.results.push_back({name("outputWeightsGrad"), grads[i].feedbackWeights});
    layer.results.push_back({name("biasesGrad"), grads[i].biases});
  }
  addHostHandles(graph, layer);
  return layer;
}

// The layer's graph for c's phase, with its host handles (inputs: input, initialOutput,
// inputWeights, outputWeights, biases, then outputGrad when used).
inline BuiltLayer build(aspen::Graph &graph, const Config &c, aspen::linalg::PlanningCache &cache) {
  using namespace aspen;
  if (usesStackCall(c))
    return buildStack(graph, c, cache);
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const bool backward = c.backward(), weightUpdate = c.weightUpdate();
  const bool inferenceOnly = !backward;
  const Type type = c.dataType, partials = c.partialsType;
  const nn::NonLinearityType nl = c.activation->aspen;

  BuiltLayer layer;
  program::Sequence &prog = layer.program;
  const unsigned t = unsigned(T), b = unsigned(B), i = unsigned(I), h = unsigned(H);
  layer.flops = rnn::getFwdFlops(t, b, i, h) + (backward ? rnn::getBwdFlops(t, b, i, h) : 0) +
                (weightUpdate ? rnn::getWuFlops(t, b, i, h) : 0);
  const Tensor input =
      rnn::createInput(graph, t, b, i, h, type, partials, inferenceOnly, "input", &cache);
  const Tensor state =
      rnn::createFwdState(graph, type, b, h, prog, false, inferenceOnly, "initialOutput", &cache);
  const Tensor initialOutput = rnn::getOutputFromFwdState(state);
  const Tensor inputWeights = rnn::createWeightsInput(graph, t, b, i, h, type, partials,
                                                      inferenceOnly, "inputWeights", &cache);
  const Tensor outputWeights = rnn::createWeightsFeedback(graph, b, h, type, partials,
                                                          inferenceOnly, "outputWeights", &cache);
  const Tensor biases = graph.addVariable(type, {H}, VariableMappingMethod::LINEAR, "biases");

  Tensor weightedIn;
  if (!c.applyFeedforwardWeights)
    weightedIn = rnn::forwardWeightInput(graph, input, inputWeights, prog, partials,
                                         inferenceOnly, "weightInput", &cache);
  const Tensor output = rnn::rnnFwdSequence(
      graph, prog, state, c.applyFeedforwardWeights ? nullptr : &weightedIn, biases,
      inputWeights, outputWeights, input, nl, partials, inferenceOnly, "fwd", &cache);

  // Results, in the order they are reported and saved.
  std::vector<std::pair<std::string, Tensor>> &results = layer.results;
  results = {{"output", output}};
  if (backward) {
    const Tensor outputGrad = graph.clone(output, "outputGrad");
    layer.inputs.push_back({"outputGrad", outputGrad});
    const auto [inputGrad, inputWeightsGrad, outputWeightsGrad, biasesGrad] =
        rnn::rnnBwdSequence(graph, weightUpdate, false, prog, state, output, biases,
                            inputWeights, outputWeights, outputGrad, input, nl, partials, "bwd",
                            &cache);
    results.push_back({"inputGrad", inputGrad});
    if (weightUpdate) {
      results.push_back({"inputWeightsGrad", inputWeightsGrad});
      results.push_back({"outputWeightsGrad", outputWeightsGrad});
      results.push_back({"biasesGrad", biasesGrad});
    }
  }
  layer.inputs.insert(layer.inputs.begin(), {{"input", input},
                                             {"initialOutput", initialOutput},
                                             {"inputWeights", inputWeights},
                                             {"outputWeights", outputWeights},
                                             {"biases", biases}});
  addHostHandles(graph, layer);
  return layer;
}

} // namespace rnnlayer::vanilla
