// The convolution aspen-plan plans: one convolution layer with poplin's API
// (aspen::linalg::convolution, getGradientParams, calculateWeightDeltas), sized by PopLibs'
// single_conv_layer flags. --pass picks the passes built: NONE (the default) builds all three,
// forward, backward data and weight deltas, as single_conv_layer does; INFERENCE_FWD and
// TRAINING_FWD the forward, TRAINING_BWD the backward data, TRAINING_WU the weight deltas. Each
// pass gets option pass = its own name.
#pragma once

#include "rnn_common/LayerDriver.hpp"

#include <aspen/linalg/ConvUtil.hpp>
#include <aspen/linalg/Convolution.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace convlayer {

using namespace rnnlayer;

// batchSize is CommonConfig's; the rest are the convolution's.
struct Config : CommonConfig {
  std::vector<std::size_t> field = {14, 14}, kernel = {3};
  std::size_t inputChannels = 16, outputChannels = 16, convGroups = 1;
  std::vector<unsigned> stride = {1}, padding = {0}, dilation = {1};
  std::string pass = "NONE";
};

// "{a,b}" or "a": one value per field dimension (a single value for every one).
inline std::vector<std::size_t> parseSizes(const std::string &flag, const std::string &value,
                                           bool positive) {
  std::vector<std::size_t> sizes;
  for (const std::string &item : parseList(flag, value))
    sizes.push_back(positive ? parsePositive(flag, item)
                             : parseNumber<unsigned>(flag, item));
  return sizes;
}

inline std::vector<Flag<Config>> layerFlagTable() {
  using F = Flag<Config>;
  const std::vector<std::string> shared = {"help", "data-type", "partials-type",
                                           "available-memory-proportion"};
  std::vector<F> t;
  for (F &f : layerFlags<Config>("conv"))
    if (std::find(shared.begin(), shared.end(), f.name) != shared.end())
      t.push_back(std::move(f));
  const auto unsignedList = [](std::vector<unsigned> &target, const std::string &f,
                               const std::string &v, bool positive) {
    target.clear();
    for (std::size_t x : parseSizes(f, v, positive))
      target.push_back(unsigned(x));
  };
  const std::vector<F> own = {
      F{"field", "{14,14}", "the input field shape {H,W} (1-D, 2-D, 3-D...)",
        [](Config &c, auto &f, auto &v) { c.field = parseSizes(f, v, false); }},
      F{"kernel-size", "3", "the kernel shape {R,S}, or one size for every dimension",
        [](Config &c, auto &f, auto &v) { c.kernel = parseSizes(f, v, true); }},
      F{"input-channels", "16", "input channels per conv group",
        [](Config &c, auto &f, auto &v) { c.inputChannels = parseNumber<unsigned>(f, v); }},
      F{"output-channels", "16", "output channels per conv group",
        [](Config &c, auto &f, auto &v) { c.outputChannels = parseNumber<unsigned>(f, v); }},
      F{"batch-size", "1", "B",
        [](Config &c, auto &f, auto &v) { c.batchSize = parseNumber<unsigned>(f, v); }},
      F{"conv-groups", "1", "conv groups (depthwise: groups = channels, 1 channel a group)",
        [](Config &c, auto &f, auto &v) { c.convGroups = parsePositive(f, v); }},
      F{"stride", "1", "the output stride {y,x}, or one for every dimension",
        [unsignedList](Config &c, auto &f, auto &v) { unsignedList(c.stride, f, v, true); }},
      F{"padding", "0", "zero padding each side of the input {y,x}, or one for every dimension",
        [unsignedList](Config &c, auto &f, auto &v) { unsignedList(c.padding, f, v, false); }},
      F{"dilation", "1", "the kernel dilation {y,x}, or one for every dimension",
        [unsignedList](Config &c, auto &f, auto &v) { unsignedList(c.dilation, f, v, true); }},
      F{"pass", "NONE",
        "NONE (forward, backward data and weight deltas) | INFERENCE_FWD | TRAINING_FWD | "
        "TRAINING_BWD | TRAINING_WU (option pass; the passes built)",
        [](Config &c, auto &f, auto &v) {
          c.pass = parseChoice(
              f, v, {"NONE", "INFERENCE_FWD", "TRAINING_FWD", "TRAINING_BWD", "TRAINING_WU"});
        }},
      F{"plan-constraints", nullptr,
        "JSON pinning the plan, e.g. {\"method\": \"gemm\"} (option planConstraints)",
        layerOption<Config>("planConstraints", [](auto &, auto &v) { return v; })},
  };
  t.insert(t.end(), own.begin(), own.end());
  return t;
}

// A per-dimension value: one for every dimension, or exactly one per dimension.
template <class T>
std::vector<T> perDimension(const char *flag, const std::vector<T> &values, std::size_t dims) {
  if (values.size() == dims)
    return values;
  if (values.size() == 1)
    return std::vector<T>(dims, values.front());
  throw UsageError(fmt::format("--{}: {} values for a {}-D field (give 1 or {})", flag,
                               values.size(), dims, dims));
}

inline aspen::linalg::ConvParams params(const Config &c) {
  const std::size_t dims = c.field.size();
  const std::vector<unsigned> zeros(dims, 0), ones(dims, 1);
  const std::vector<bool> noFlip(dims, false);
  const std::vector<unsigned> padding = perDimension("padding", c.padding, dims);
  const std::vector<std::size_t> kernel = perDimension("kernel-size", c.kernel, dims);
  return aspen::linalg::ConvParams(
      c.dataType, c.dataType, c.batchSize, c.field, kernel, c.inputChannels, c.outputChannels,
      c.convGroups, {zeros, zeros, ones, padding, padding, noFlip},
      {zeros, zeros, perDimension("dilation", c.dilation, dims), zeros, zeros, noFlip},
      {zeros, zeros, perDimension("stride", c.stride, dims), zeros, zeros});
}

inline bool builds(const Config &c, const char *pass) {
  return c.pass == "NONE" || c.pass == pass ||
         (std::string(pass) == "TRAINING_FWD" && c.pass == "INFERENCE_FWD");
}

// The layer's graph; `planText` receives reportPlanInfo of each pass built and `planJson` each
// pass's name and ConvPlan::toJson().
inline BuiltLayer build(aspen::Graph &graph, const Config &c, aspen::linalg::PlanningCache &cache,
                        std::string &planText,
                        std::vector<std::pair<std::string, std::string>> &planJson) {
  using namespace aspen;
  namespace linalg = aspen::linalg;
  const linalg::ConvParams fwd = params(c);
  fwd.validate();
  const auto options = [&](const char *pass) {
    OptionFlags o = c.layerOptions;
    o.set("pass", c.pass == "NONE" ? "NONE" : pass);
    return o;
  };
  BuiltLayer layer;
  std::ostringstream plans;
  const Tensor weights = linalg::createWeights(graph, fwd, "weights", options("TRAINING_FWD"), &cache);
  layer.inputs.push_back({"weights", weights});
  Tensor activations, zDeltas;
  if (builds(c, "TRAINING_FWD") || builds(c, "TRAINING_WU")) {
    activations = linalg::createInput(graph, fwd, "activations", options("TRAINING_FWD"), &cache);
    layer.inputs.push_back({"activations", activations});
  }
  if (builds(c, "TRAINING_BWD") || builds(c, "TRAINING_WU")) {
    zDeltas = linalg::createConvOutput(graph, fwd, "zDeltas", options("TRAINING_BWD"), &cache);
    layer.inputs.push_back({"zDeltas", zDeltas});
  }
  if (builds(c, "TRAINING_FWD")) {
    const OptionFlags o = options(c.pass == "INFERENCE_FWD" ? "INFERENCE_FWD" : "TRAINING_FWD");
    plans << "forward: ";
    linalg::reportPlanInfo(plans, graph, fwd, o, &cache);
    planJson.push_back({"forward", linalg::getConvPlan(graph, fwd, o, &cache).toJson()});
    layer.results.push_back(
        {"output", linalg::convolution(graph, activations, weights, fwd, false, layer.program,
                                       "fwd", o, &cache)});
    layer.flops += linalg::getFwdFlops(fwd);
  }
  if (builds(c, "TRAINING_BWD")) {
    const linalg::ConvParams bwd = linalg::getGradientParams(fwd);
    plans << "backward data: ";
    linalg::reportPlanInfo(plans, graph, bwd, options("TRAINING_BWD"), &cache);
    planJson.push_back(
        {"backwardData", linalg::getConvPlan(graph, bwd, options("TRAINING_BWD"), &cache).toJson()});
    layer.results.push_back(
        {"inputGrad", linalg::convolution(graph, zDeltas, weights, bwd, true, layer.program,
                                          "bwd", options("TRAINING_BWD"), &cache)});
    layer.flops += linalg::getBwdFlops(fwd);
  }
  if (builds(c, "TRAINING_WU")) {
    plans << "weight update: ";
    linalg::reportPlanInfo(plans, graph, fwd, options("TRAINING_WU"), &cache);
    planJson.push_back(
        {"weightUpdate", linalg::getConvPlan(graph, fwd, options("TRAINING_WU"), &cache).toJson()});
    layer.results.push_back(
        {"weightDeltas", linalg::calculateWeightDeltas(graph, zDeltas, activations, fwd,
                                                       layer.program, "wu",
                                                       options("TRAINING_WU"), &cache)});
    layer.flops += linalg::getWuFlops(fwd);
  }
  planText = plans.str();
  addHostHandles(graph, layer);
  return layer;
}

} // namespace convlayer
