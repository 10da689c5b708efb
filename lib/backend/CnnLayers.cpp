#include "CnnLayers.hpp"

#include <aspen/Error.hpp>
#include <aspen/linalg/ConvUtil.hpp>
#include <aspen/linalg/Convolution.hpp>
#include <aspen/nn/BatchNorm.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/nn/Pooling.hpp>
#include <aspen/ops/Cast.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/util/TileMapping.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace aspen::backend {

namespace {

using program::Sequence;
namespace ex = ops::expr;

// Images a slice: all of `n`, or as many as `limit` bytes hold at `perImage` each after `fixed`.
std::size_t sliceImages(std::size_t n, std::size_t limit, std::size_t fixed,
                        std::size_t perImage) {
  if (limit == 0 || n == 0)
    return std::max<std::size_t>(n, 1);
  const std::size_t room = limit > fixed ? limit - fixed : 0;
  return std::clamp<std::size_t>(room / std::max<std::size_t>(perImage, 1), 1, n);
}

linalg::ConvParams convParams(const ConvConfig &c, std::size_t images) {
  const std::vector<unsigned> zeros(2, 0), ones(2, 1);
  const std::vector<bool> noFlip(2, false);
  const std::vector<unsigned> pad = {unsigned(c.padH), unsigned(c.padW)},
                              dilation = {unsigned(c.dilationH), unsigned(c.dilationW)},
                              stride = {unsigned(c.strideH), unsigned(c.strideW)};
  return linalg::ConvParams(c.type, c.type, images, {c.H, c.W}, {c.R, c.S}, c.C / c.groups,
                            c.K / c.groups, c.groups, {zeros, zeros, ones, pad, pad, noFlip},
                            {zeros, zeros, dilation, zeros, zeros, noFlip},
                            {zeros, zeros, stride, zeros, zeros});
}

// PyTorch's output size of pooling a dimension, and the padding past the input and the lower
// padding that ceil mode adds at the upper end.
std::size_t poolOutput(std::size_t in, std::size_t k, std::size_t pad, std::size_t stride,
                       bool ceil) {
  const std::size_t span = in + 2 * pad - k;
  std::size_t out = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil && (out - 1) * stride >= in + pad)
    --out; // the last window would start in the upper padding
  return out;
}

nn::pooling::PoolParams poolParams(const PoolConfig &c, std::size_t images) {
  const std::size_t p = c.P(), q = c.Q();
  const int extraH = int((p - 1) * c.strideH + c.kH) - int(c.H + 2 * c.padH),
            extraW = int((q - 1) * c.strideW + c.kW) - int(c.W + 2 * c.padW);
  return nn::pooling::PoolParams(
      c.max ? nn::PoolingType::MAX : nn::PoolingType::AVG, {c.H, c.W}, {c.kH, c.kW},
      {unsigned(c.strideH), unsigned(c.strideW)}, {int(c.padH), int(c.padW)},
      {int(c.padH) + std::max(extraH, 0), int(c.padW) + std::max(extraW, 0)}, c.C, images,
      c.type);
}

// AVG counting padding in ceil mode: each output's 1 / (its window's positions inside the
// padded input, PyTorch's divisor), as [1, 1, P, Q] for a SUM pooling's result; empty when the
// pooling's own options give the semantics.
std::vector<float> ceilModeAverageScales(const PoolConfig &c) {
  if (c.max || !c.includePadding || !c.ceilMode)
    return {};
  const std::size_t p = c.P(), q = c.Q();
  std::vector<float> scales(p * q);
  for (std::size_t i = 0; i < p; ++i)
    for (std::size_t j = 0; j < q; ++j) {
      const std::size_t rows = std::min(i * c.strideH + c.kH, c.H + 2 * c.padH) - i * c.strideH,
                        cols = std::min(j * c.strideW + c.kW, c.W + 2 * c.padW) - j * c.strideW;
      scales[i * q + j] = float(1.0 / double(rows * cols));
    }
  return scales;
}

OptionFlags poolOptions(const PoolConfig &c) {
  return {{"avgIncludePadding", c.includePadding ? "true" : "false"},
          {"maxPoolGradient", c.gradAll ? "all" : "first"}};
}

Tensor scalesTensor(Graph &graph, const PoolConfig &c, const std::vector<float> &scales) {
  Tensor t = graph.addConstant<float>(FLOAT, {1, 1, c.P(), c.Q()}, scales, "avgScales");
  graph.setTileMapping(t, 0);
  return t;
}

Tensor mappedVariable(Graph &graph, Type type, std::vector<std::size_t> shape, const char *name) {
  Tensor t = graph.addVariable(type, shape, name);
  util::mapTensorLinearly(graph, t);
  return t;
}

// A batch norm's inputs in training and inference, with their host handles: x [N, C, HW],
// gamma and beta [C] and the running statistics [2, C] (mean, variance), all but x float.
struct BatchNormInputs {
  BatchNormInputs(Graph &graph, const BatchNormConfig &c)
      : x(mappedVariable(graph, c.type, {c.N, c.C, c.HW}, "x")),
        gamma(mappedVariable(graph, FLOAT, {c.C}, "gamma")),
        beta(mappedVariable(graph, FLOAT, {c.C}, "beta")),
        running(mappedVariable(graph, FLOAT, {2, c.C}, "running")) {
    for (const auto &[name, t] : {std::pair<const char *, Tensor>{"x", x},
                                  {"gamma", gamma},
                                  {"beta", beta},
                                  {"running-in", running}})
      graph.createHostWrite(name, t);
  }
  Tensor x, gamma, beta, running;
};

} // namespace

std::size_t ConvConfig::P() const {
  return (H + 2 * padH - dilationH * (R - 1) - 1) / strideH + 1;
}
std::size_t ConvConfig::Q() const {
  return (W + 2 * padW - dilationW * (S - 1) - 1) / strideW + 1;
}
std::size_t ConvConfig::imagesPerSlice() const {
  // An image's activations and their gradients, and its lowered input (im2col) at most.
  const std::size_t es = type.size();
  const std::size_t perImage = (2 * xElements() + 2 * yElements() + (C / groups) * R * S * P() *
                                                                        Q() * groups) *
                               es;
  return sliceImages(N, memoryLimit, 2 * wElements() * es + K * es, perImage);
}
std::string ConvConfig::key(const char *pass, std::size_t images) const {
  return fmt::format("conv2d|{}|{}|N{}|C{}|H{}|W{}|K{}|R{}|S{}|p{},{}|s{},{}|d{},{}|g{}|{}", pass,
                     type.toString(), images, C, H, W, K, R, S, padH, padW, strideH, strideW,
                     dilationH, dilationW, groups, optionsText);
}

std::size_t PoolConfig::P() const { return poolOutput(H, kH, padH, strideH, ceilMode); }
std::size_t PoolConfig::Q() const { return poolOutput(W, kW, padW, strideW, ceilMode); }
std::size_t PoolConfig::imagesPerSlice() const {
  const std::size_t perImage = 2 * C * (H * W + P() * Q()) * type.size();
  return sliceImages(N, memoryLimit, 0, perImage);
}
std::string PoolConfig::key(const char *pass, std::size_t images) const {
  return fmt::format("pool2d|{}|{}|{}|N{}|C{}|H{}|W{}|k{},{}|p{},{}|s{},{}|ceil{}|inc{}|all{}",
                     pass, max ? "max" : "avg", type.toString(), images, C, H, W, kH, kW, padH,
                     padW, strideH, strideW, ceilMode, includePadding, gradAll);
}

std::string BatchNormConfig::key(const char *pass) const {
  return fmt::format("batchnorm|{}|{}|N{}|C{}|HW{}|eps{}|m{}", pass, type.toString(), N, C, HW,
                     eps, momentum);
}

std::shared_ptr<SimpleLayer> buildConvForward(const Device &device, const ConvConfig &c,
                                              std::size_t images, bool bias) {
  Graph graph = makeGraph(device);
  linalg::PlanningCache cache;
  const linalg::ConvParams p = convParams(c, images);
  Sequence prog;
  OptionFlags options = c.options;
  options.set("pass", "TRAINING_FWD");
  const Tensor x = linalg::createInput(graph, p, "x", options, &cache);
  const Tensor w = linalg::createWeights(graph, p, "w", options, &cache);
  const Tensor y = linalg::convolution(graph, x, w, p, false, prog, "fwd", options, &cache);
  graph.createHostWrite("x", x);
  graph.createHostWrite("w", w);
  if (bias) {
    const Tensor b = linalg::createBiases(graph, y, p, "b", options, &cache);
    linalg::addBias(graph, y, b, prog, "bias");
    graph.createHostWrite("b", b);
  }
  graph.createHostRead("y", y);
  return std::make_shared<SimpleLayer>(compileAndLoad(graph, {prog}, device));
}

std::shared_ptr<SimpleLayer> buildConvBackwardData(const Device &device, const ConvConfig &c,
                                                   std::size_t images) {
  Graph graph = makeGraph(device);
  linalg::PlanningCache cache;
  const linalg::ConvParams p = convParams(c, images);
  Sequence prog;
  OptionFlags options = c.options;
  options.set("pass", "TRAINING_BWD");
  const Tensor w = linalg::createWeights(graph, p, "w", options, &cache);
  const Tensor dy = linalg::createConvOutput(graph, p, "dy", options, &cache);
  const Tensor dx = linalg::convolution(graph, dy, w, linalg::getGradientParams(p), true, prog,
                                        "bwd", options, &cache);
  graph.createHostWrite("w", w);
  graph.createHostWrite("dy", dy);
  graph.createHostRead("dx", dx);
  return std::make_shared<SimpleLayer>(compileAndLoad(graph, {prog}, device));
}

std::shared_ptr<SimpleLayer> buildConvBackwardFilter(const Device &device, const ConvConfig &c,
                                                     std::size_t images, bool bias) {
  Graph graph = makeGraph(device);
  linalg::PlanningCache cache;
  const linalg::ConvParams p = convParams(c, images);
  Sequence prog;
  OptionFlags options = c.options;
  options.set("pass", "TRAINING_WU");
  const Tensor x = linalg::createInput(graph, p, "x", options, &cache);
  const Tensor dy = linalg::createConvOutput(graph, p, "dy", options, &cache);
  const Tensor dw = linalg::calculateWeightDeltas(graph, dy, x, p, prog, "wu", options, &cache);
  graph.createHostWrite("x", x);
  graph.createHostWrite("dy", dy);
  graph.createHostRead("dw", dw);
  if (bias) {
    const Tensor db = ops::reduce(graph, dy, c.type, {0, 2, 3},
                                  ops::ReduceParams(ops::Operation::ADD), prog, "db");
    graph.createHostRead("db", db);
  }
  return std::make_shared<SimpleLayer>(compileAndLoad(graph, {prog}, device));
}

std::shared_ptr<SimpleLayer> buildPoolForward(const Device &device, const PoolConfig &c,
                                              std::size_t images) {
  Graph graph = makeGraph(device);
  const nn::pooling::PoolParams p = poolParams(c, images);
  const std::vector<float> scales = ceilModeAverageScales(c);
  nn::pooling::PoolParams pooled = p;
  if (!scales.empty())
    pooled.poolingType = nn::PoolingType::SUM;
  Sequence prog;
  const Tensor x = mappedVariable(graph, c.type, {images, c.C, c.H, c.W}, "x");
  const Tensor y = nn::pooling::pool(graph, pooled, x, prog, "pool", poolOptions(c));
  if (!scales.empty())
    ops::mapInPlace(graph, ex::Cast(ex::Cast(ex::_1, FLOAT) * ex::_2, c.type),
                    {y, scalesTensor(graph, c, scales)}, prog, "average");
  graph.createHostWrite("x", x);
  graph.createHostRead("y", y);
  return std::make_shared<SimpleLayer>(compileAndLoad(graph, {prog}, device));
}

std::shared_ptr<SimpleLayer> buildPoolBackward(const Device &device, const PoolConfig &c,
                                               std::size_t images, bool recompute) {
  Graph graph = makeGraph(device);
  const nn::pooling::PoolParams p = poolParams(c, images);
  const std::vector<std::size_t> outShape = {images, c.C, c.P(), c.Q()};
  Sequence prog;
  Tensor dy = mappedVariable(graph, c.type, outShape, "dy");
  graph.createHostWrite("dy", dy);
  Tensor dx;
  if (c.max) {
    const Tensor x = mappedVariable(graph, c.type, {images, c.C, c.H, c.W}, "x");
    graph.createHostWrite("x", x);
    Tensor y;
    if (recompute) {
      y = nn::pooling::pool(graph, p, x, prog, "recompute", poolOptions(c));
    } else {
      y = mappedVariable(graph, c.type, outShape, "y");
      graph.createHostWrite("y-in", y);
    }
    dx = nn::pooling::poolInputGradient(graph, p, x, y, dy, false, prog, "bwd", poolOptions(c));
  } else {
    const std::vector<float> scales = ceilModeAverageScales(c);
    nn::pooling::PoolParams summed = p;
    if (!scales.empty()) {
      summed.poolingType = nn::PoolingType::SUM;
      dy = ops::map(graph, ex::Cast(ex::Cast(ex::_1, FLOAT) * ex::_2, c.type),
                    {dy, scalesTensor(graph, c, scales)}, prog, "average");
    }
    dx = nn::pooling::poolInputGradient(graph, summed, 1, dy, prog, "bwd", poolOptions(c));
  }
  graph.createHostRead("dx", dx);
  return std::make_shared<SimpleLayer>(compileAndLoad(graph, {prog}, device));
}

std::shared_ptr<SimpleLayer> buildBatchNormTraining(const Device &device,
                                                    const BatchNormConfig &c) {
  Graph graph = makeGraph(device);
  Sequence prog;
  const BatchNormInputs in(graph, c);
  const Tensor &x = in.x, &gamma = in.gamma, &beta = in.beta, &running = in.running;
  const auto [mean, invStd] = nn::bn::batchNormStatistics(
      graph, x, c.eps, prog, false, true, FLOAT, "stats", {{"statisticsType", "float"}});
  // y = x * (gamma invStd) + (beta - gamma invStd mean): one pass over x, as inference.
  const Tensor multiplicand =
      ops::map(graph, ex::_1 * ex::_2, {gamma, invStd}, prog, "multiplicand");
  const Tensor addend =
      ops::map(graph, ex::_1 - ex::_2 * ex::_3, {beta, multiplicand, mean}, prog, "addend");
  const Tensor y = nn::bn::batchNormalise(graph, x, multiplicand, addend, prog, "norm");
  nn::bn::batchNormRunningStatistics(graph, mean, invStd, c.eps, c.N * c.HW, c.momentum,
                                     running[0], running[1], prog, "running");
  const Tensor saved = concat(mean.expand({0}), invStd.expand({0}));
  graph.createHostRead("y", y);
  graph.createHostRead("running", running);
  graph.createHostRead("saved", saved);
  return std::make_shared<SimpleLayer>(compileAndLoad(graph, {prog}, device));
}

std::shared_ptr<SimpleLayer> buildBatchNormInference(const Device &device,
                                                     const BatchNormConfig &c) {
  Graph graph = makeGraph(device);
  Sequence prog;
  const Tensor x = mappedVariable(graph, c.type, {c.N, c.C, c.HW}, "x");
  const Tensor scaleShift = mappedVariable(graph, FLOAT, {2, c.C}, "scale-shift");
  const Tensor y = nn::bn::batchNormalise(graph, x, scaleShift[0], scaleShift[1], prog, "infer");
  graph.createHostWrite("x", x);
  graph.createHostWrite("scale-shift", scaleShift);
  graph.createHostRead("y", y);
  return std::make_shared<SimpleLayer>(compileAndLoad(graph, {prog}, device));
}

// Batch norm's gradients in three passes over the activations: with xh = (x - mean) invStd,
// dgamma = sum(dy xh) and dbeta = sum(dy) a channel (one product pass and one reduction pass),
// then dx = gamma invStd (dy - dbeta / n - xh dgamma / n): the general norm gradient, whose
// group means of gamma dy and gamma dy xh are, for a channel's group, gamma dbeta / n and
// gamma dgamma / n.
std::shared_ptr<SimpleLayer> buildBatchNormBackward(const Device &device,
                                                    const BatchNormConfig &c) {
  Graph graph = makeGraph(device);
  Sequence prog;
  const Tensor x = mappedVariable(graph, c.type, {c.N, c.C, c.HW}, "x");
  const Tensor dy = mappedVariable(graph, c.type, {c.N, c.C, c.HW}, "dy");
  const Tensor gamma = mappedVariable(graph, FLOAT, {c.C}, "gamma");
  const Tensor saved = mappedVariable(graph, FLOAT, {2, c.C}, "saved");
  const auto channel = [](const Tensor &t) { return t.reshape({1, t.dim(0), 1}); };
  const Tensor mean = channel(saved[0]), invStd = channel(saved[1]);
  const auto xh = (ex::Cast(ex::_1, FLOAT) - ex::_2) * ex::_3;
  std::vector<Tensor> sums(2); // dgamma, dbeta
  if (c.type == FLOAT) {
    // One pass over x and dy (popnn's gradients from the acts and their statistics).
    std::tie(sums[0], sums[1]) =
        nn::bn::batchNormParamGradients(graph, x, dy, saved[0], saved[1], prog, FLOAT, "params");
  } else { // half data: float sums (the steps' sums are in the acts' type)
    const Tensor product = ops::map(graph, ex::Cast(ex::_4, FLOAT) * xh, {x, mean, invStd, dy},
                                    prog, "gradsInWhitened");
    sums = ops::reduceMany(
        graph,
        {ops::SingleReduceOp(product, {0, 2}, ops::ReduceParams(ops::Operation::ADD), FLOAT,
                             "dgamma"),
         ops::SingleReduceOp(dy, {0, 2}, ops::ReduceParams(ops::Operation::ADD), FLOAT, "dbeta")},
        prog, "paramGradients");
  }
  const float inverseN = float(1.0 / double(c.N * c.HW));
  const Tensor dx = ops::map(
      graph,
      ex::Cast(ex::_5 * ex::_3 *
                   (ex::Cast(ex::_4, FLOAT) - ex::_7 * ex::Const(inverseN) -
                    xh * ex::_6 * ex::Const(inverseN)),
               c.type),
      {x, mean, invStd, dy, channel(gamma), channel(sums[0]), channel(sums[1])}, prog, "dx");
  for (const auto &[name, t] : {std::pair<const char *, Tensor>{"x", x},
                                {"dy", dy},
                                {"gamma", gamma},
                                {"saved-in", saved}})
    graph.createHostWrite(name, t);
  graph.createHostRead("dx", dx);
  graph.createHostRead("dparams", concat(sums[0].expand({0}), sums[1].expand({0})));
  return std::make_shared<SimpleLayer>(compileAndLoad(graph, {prog}, device));
}

std::shared_ptr<SimpleLayer> buildNonLinearityBackward(const Device &device,
                                                       nn::NonLinearityType kind, Type type,
                                                       std::size_t rows, std::size_t cols) {
  Graph graph = makeGraph(device);
  Sequence prog;
  const Tensor act = mappedVariable(graph, type, {rows, cols}, "act");
  const Tensor dy = mappedVariable(graph, type, {rows, cols}, "dy");
  const Tensor dx = nn::nonLinearityInputGradient(graph, kind, act, dy, prog, "grad");
  graph.createHostWrite("act", act);
  graph.createHostWrite("dy", dy);
  graph.createHostRead("dx", dx);
  return std::make_shared<SimpleLayer>(compileAndLoad(graph, {prog}, device));
}

} // namespace aspen::backend
