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

inline Tensor batchNormWhiten(Graph &graph, const Tensor &acts, const Tensor &mean,
                              const Tensor &invStdDev, program::Sequence &prog,
                              const DebugContext &debug = {}, const OptionFlags &options = {}) {
  return normWhiten(graph, acts, mean, invStdDev, prog, NormGrouping{NormGrouping::Kind::Batch, 1},
                    debug, options);
}

inline std::pair<Tensor, Tensor>
batchNormalise(Graph &graph, const Tensor &acts, const Tensor &gamma, const Tensor &beta,
               const Tensor &mean, const Tensor &invStdDev, program::Sequence &prog,
               const DebugContext &debug = {}, const OptionFlags &options = {}) {
  return normalise(graph, acts, gamma, beta, mean, invStdDev, prog,
                   NormGrouping{NormGrouping::Kind::Batch, 1}, debug, options);
}

inline std::pair<Tensor, Tensor>
batchNormParamGradients(Graph &graph, const Tensor &actsWhitened, const Tensor &gradsIn,
                        program::Sequence &prog, const Type &partialsType = FLOAT,
                        const DebugContext &debug = {}, const OptionFlags &options = {}) {
  (void)partialsType;
  return normParamGradients(graph, actsWhitened, gradsIn, prog,
                            NormGrouping{NormGrouping::Kind::Batch, 1}, debug, options);
}

inline std::pair<Tensor, Tensor>
batchNormParamGradients(Graph &graph, const Tensor &acts, const Tensor &gradsIn, const Tensor &mean,
                        const Tensor &iStdDev, program::Sequence &prog,
                        const Type &partialsType = FLOAT, const DebugContext &debug = {},
                        const OptionFlags &options = {}) {
  (void)partialsType;
  const Tensor whitened = normWhiten(graph, acts, mean, iStdDev, prog,
                                     NormGrouping{NormGrouping::Kind::Batch, 1}, debug, options);
  return normParamGradients(graph, whitened, gradsIn, prog,
                            NormGrouping{NormGrouping::Kind::Batch, 1}, debug, options);
}

inline Tensor batchNormGradients(Graph &graph, const Tensor &actsWhitened, const Tensor &gradsIn,
                                 const Tensor &invStdDev, const Tensor &gamma,
                                 program::Sequence &prog, const Type &partialsType = FLOAT,
                                 const DebugContext &debug = {}, const OptionFlags &options = {}) {
  (void)partialsType;
  return normGradients(graph, actsWhitened, gradsIn, invStdDev, gamma, prog,
                       NormGrouping{NormGrouping::Kind::Batch, 1}, debug, options);
}

inline Tensor batchNormGradients(Graph &graph, const Tensor &acts, const Tensor &gradsIn,
                                 const Tensor &mean, const Tensor &invStdDev, const Tensor &gamma,
                                 program::Sequence &prog, const Type &partialsType = FLOAT,
                                 const DebugContext &debug = {}, const OptionFlags &options = {}) {
  (void)partialsType;
  const Tensor whitened = normWhiten(graph, acts, mean, invStdDev, prog,
                                     NormGrouping{NormGrouping::Kind::Batch, 1}, debug, options);
  return normGradients(graph, whitened, gradsIn, invStdDev, gamma, prog,
                       NormGrouping{NormGrouping::Kind::Batch, 1}, debug, options);
}

inline void batchNormParamUpdate(Graph &graph, const Tensor &gammaDelta, const Tensor &betaDelta,
                                 float scale, Tensor &gamma, Tensor &beta, program::Sequence &prog,
                                 const DebugContext &debug = {}, const OptionFlags & = {}) {
  normParamUpdate(graph, gammaDelta, betaDelta, scale, gamma, beta, prog, debug);
}

inline void batchNormParamUpdate(Graph &graph, const Tensor &gammaDelta, const Tensor &betaDelta,
                                 const Tensor &scale, Tensor &gamma, Tensor &beta,
                                 program::Sequence &prog, const DebugContext &debug = {},
                                 const OptionFlags & = {}) {
  normParamUpdate(graph, gammaDelta, betaDelta, scale, gamma, beta, prog, debug);
}

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
