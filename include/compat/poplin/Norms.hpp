// PopLibs' <poplin/Norms.hpp>: the per-channel norm steps popnn's norms are made of, onto
// <aspen/nn/Norms.hpp> (batch grouping: statistics a channel over the batch and field).
// normalise takes whitened activations (gamma * whitened + beta), normGradients multiplies by
// gamma alone, normStatisticsGradients propagates through the statistics.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplin/Namespace.hpp>
#include <aspen/nn/BatchNorm.hpp>
#include <aspen/nn/Norms.hpp>

#include <utility>
#include <vector>

namespace poplin {

using aspen::nn::createNormBeta;
using aspen::nn::createNormGamma;
using aspen::nn::createNormParams;
using aspen::nn::getNormBwdFlops;
using aspen::nn::getNormFwdFlops;
using aspen::nn::getNormWuFlops;

inline std::pair<aspen::Tensor, aspen::Tensor>
normStatistics(aspen::Graph &graph, const aspen::Tensor &acts, float eps,
               aspen::program::Sequence &prog, bool unbiasedVarEstimate, bool stableAlgo = false,
               const aspen::Type &partialsType = aspen::FLOAT,
               const aspen::DebugContext &debug = {}) {
  return aspen::nn::normStatistics(graph, acts, eps, prog, unbiasedVarEstimate, stableAlgo,
                                   partialsType, {}, debug);
}

inline aspen::Tensor normWhiten(aspen::Graph &graph, const aspen::Tensor &acts,
                                const aspen::Tensor &mean, const aspen::Tensor &iStdDev,
                                aspen::program::Sequence &prog,
                                const aspen::DebugContext &debug = {}) {
  return aspen::nn::normWhiten(graph, acts, mean, iStdDev, prog, {}, debug);
}

inline aspen::Tensor normalise(aspen::Graph &graph, const aspen::Tensor &actsWhitened,
                               const aspen::Tensor &gamma, const aspen::Tensor &beta,
                               aspen::program::Sequence &prog,
                               const aspen::DebugContext &debug = {}) {
  return aspen::nn::bn::batchNormalise(graph, actsWhitened, gamma, beta, prog, debug);
}

inline std::pair<aspen::Tensor, aspen::Tensor>
normParamGradients(aspen::Graph &graph, const aspen::Tensor &actsWhitened,
                   const aspen::Tensor &gradients, aspen::program::Sequence &prog,
                   const aspen::Type &partialsType = aspen::FLOAT,
                   const aspen::DebugContext &debug = {}) {
  (void)partialsType;
  return aspen::nn::normParamGradients(graph, actsWhitened, gradients, prog, {}, debug);
}

inline aspen::Tensor normGradients(aspen::Graph &graph, const aspen::Tensor &gradients,
                                   const aspen::Tensor &gamma, aspen::program::Sequence &prog,
                                   const aspen::DebugContext &debug = {}) {
  const aspen::Tensor zeros = graph.addConstant<float>(
      aspen::FLOAT, {gamma.numElements()}, std::vector<float>(gamma.numElements(), 0.0f),
      {debug, "zeros"});
  graph.setTileMapping(zeros, 0);
  return aspen::nn::bn::batchNormalise(graph, gradients, gamma, zeros, prog, debug);
}

inline aspen::Tensor normStatisticsGradients(aspen::Graph &graph,
                                             const aspen::Tensor &actsWhitened,
                                             const aspen::Tensor &gradients,
                                             const aspen::Tensor &invStdDev,
                                             aspen::program::Sequence &prog,
                                             const aspen::Type &partialsType = aspen::FLOAT,
                                             const aspen::DebugContext &debug = {}) {
  (void)partialsType;
  return aspen::nn::normStatisticsGradients(graph, actsWhitened, gradients, invStdDev, prog, {},
                                            debug);
}

} // namespace poplin
