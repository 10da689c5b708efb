// Batch normalisation (popnn's BatchNorm.hpp, namespace bn): statistics a channel over the batch
// and the field (Norms.hpp has the contract of every step). Also an inference form of
// batchNormalise from combined parameters, and batchNormRunningStatistics, the frameworks'
// running estimates (popnn has none).
#pragma once

#include <aspen/nn/Norms.hpp>

#include <utility>

namespace aspen::nn::bn {

inline std::pair<Tensor, Tensor>
batchNormStatistics(Graph &graph, const Tensor &acts, float eps, program::Sequence &prog,
                    bool unbiasedVarEstimate, bool stableAlgo = false,
                    const Type &partialsType = FLOAT, const DebugContext &debug = {},
                    const OptionFlags &options = {}) {
  return normStatistics(graph, acts, eps, prog, unbiasedVarEstimate, stableAlgo, partialsType,
                        NormGrouping{NormGrouping::Kind::Batch, 1}, debug, options);
}

ASPEN_NN_NORM_STEPS(batchNorm, NormGrouping::Kind::Batch, 1)

// Inference: out = acts * combinedMultiplicand + addend, both [C] (gamma * invStdDev and
// beta - gamma * mean * invStdDev), in float, rounded to acts' type.
ASPEN_API Tensor batchNormalise(Graph &graph, const Tensor &acts,
                                const Tensor &combinedMultiplicand, const Tensor &addend,
                                program::Sequence &prog, const DebugContext &debug = {},
                                const OptionFlags &options = {});

// The frameworks' running statistics (PyTorch's BatchNorm, cuDNN's exponential average; an Aspen
// extension): from this batch's mean and invStdDev (statistics of batchNormStatistics with
// unbiasedVarEstimate false, eps as given there) over n = B x F... elements each,
//   runningMean = (1 - momentum) runningMean + momentum mean
//   runningVar  = (1 - momentum) runningVar  + momentum var * n / (n - 1),
// var = 1 / invStdDev^2 - eps the biased variance that normalised the batch (n = 1: var).
// runningMean and runningVar [C], FLOAT or HALF, are updated in place.
ASPEN_API void batchNormRunningStatistics(Graph &graph, const Tensor &mean, const Tensor &invStdDev,
                                          float eps, std::size_t n, float momentum,
                                          const Tensor &runningMean, const Tensor &runningVar,
                                          program::Sequence &prog, const DebugContext &debug = {});

} // namespace aspen::nn::bn
