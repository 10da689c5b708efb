// Group normalisation (popnn's GroupNorm.hpp, namespace gn): statistics a batch element and group
// of channels (Norms.hpp has the contract; option groupNormStridedChannelGrouping picks the
// grouping). The whiten, normalise and gradient steps read the group count from the statistics'
// size (B * numGroups).
#pragma once

#include <aspen/nn/Norms.hpp>

#include <utility>

namespace aspen::nn::gn {

inline std::pair<Tensor, Tensor>
groupNormStatistics(Graph &graph, const Tensor &acts, float eps, program::Sequence &prog,
                    unsigned numGroups, bool unbiasedVarEstimate, bool stableAlgo = false,
                    const Type &partialsType = FLOAT, const DebugContext &debug = {},
                    const OptionFlags &options = {}) {
  return normStatistics(graph, acts, eps, prog, unbiasedVarEstimate, stableAlgo, partialsType,
                        NormGrouping{NormGrouping::Kind::Group, numGroups}, debug, options);
}

inline Tensor groupNormWhiten(Graph &graph, const Tensor &acts, const Tensor &mean,
                              const Tensor &invStdDev, program::Sequence &prog,
                              const DebugContext &debug = {}, const OptionFlags &options = {}) {
  return normWhiten(graph, acts, mean, invStdDev, prog, NormGrouping{NormGrouping::Kind::Group, 0},
                    debug, options);
}

inline std::pair<Tensor, Tensor>
groupNormalise(Graph &graph, const Tensor &acts, const Tensor &gamma, const Tensor &beta,
               const Tensor &mean, const Tensor &invStdDev, program::Sequence &prog,
               const DebugContext &debug = {}, const OptionFlags &options = {}) {
  return normalise(graph, acts, gamma, beta, mean, invStdDev, prog,
                   NormGrouping{NormGrouping::Kind::Group, 0}, debug, options);
}

inline std::pair<Tensor, Tensor>
groupNormParamGradients(Graph &graph, const Tensor &actsWhitened, const Tensor &gradsIn,
                        program::Sequence &prog, const Type &partialsType = FLOAT,
                        const DebugContext &debug = {}, const OptionFlags &options = {}) {
  (void)partialsType;
  return normParamGradients(graph, actsWhitened, gradsIn, prog,
                            NormGrouping{NormGrouping::Kind::Group, 0}, debug, options);
}

inline std::pair<Tensor, Tensor>
groupNormParamGradients(Graph &graph, const Tensor &acts, const Tensor &gradsIn, const Tensor &mean,
                        const Tensor &iStdDev, program::Sequence &prog,
                        const Type &partialsType = FLOAT, const DebugContext &debug = {},
                        const OptionFlags &options = {}) {
  (void)partialsType;
  const Tensor whitened = normWhiten(graph, acts, mean, iStdDev, prog,
                                     NormGrouping{NormGrouping::Kind::Group, 0}, debug, options);
  return normParamGradients(graph, whitened, gradsIn, prog,
                            NormGrouping{NormGrouping::Kind::Group, 0}, debug, options);
}

inline Tensor groupNormGradients(Graph &graph, const Tensor &actsWhitened, const Tensor &gradsIn,
                                 const Tensor &invStdDev, const Tensor &gamma,
                                 program::Sequence &prog, const Type &partialsType = FLOAT,
                                 const DebugContext &debug = {}, const OptionFlags &options = {}) {
  (void)partialsType;
  return normGradients(graph, actsWhitened, gradsIn, invStdDev, gamma, prog,
                       NormGrouping{NormGrouping::Kind::Group, 0}, debug, options);
}

inline Tensor groupNormGradients(Graph &graph, const Tensor &acts, const Tensor &gradsIn,
                                 const Tensor &mean, const Tensor &invStdDev, const Tensor &gamma,
                                 program::Sequence &prog, const Type &partialsType = FLOAT,
                                 const DebugContext &debug = {}, const OptionFlags &options = {}) {
  (void)partialsType;
  const Tensor whitened = normWhiten(graph, acts, mean, invStdDev, prog,
                                     NormGrouping{NormGrouping::Kind::Group, 0}, debug, options);
  return normGradients(graph, whitened, gradsIn, invStdDev, gamma, prog,
                       NormGrouping{NormGrouping::Kind::Group, 0}, debug, options);
}

inline void groupNormParamUpdate(Graph &graph, const Tensor &gammaDelta, const Tensor &betaDelta,
                                 float scale, Tensor &gamma, Tensor &beta, program::Sequence &prog,
                                 const DebugContext &debug = {}, const OptionFlags & = {}) {
  normParamUpdate(graph, gammaDelta, betaDelta, scale, gamma, beta, prog, debug);
}

inline void groupNormParamUpdate(Graph &graph, const Tensor &gammaDelta, const Tensor &betaDelta,
                                 const Tensor &scale, Tensor &gamma, Tensor &beta,
                                 program::Sequence &prog, const DebugContext &debug = {},
                                 const OptionFlags & = {}) {
  normParamUpdate(graph, gammaDelta, betaDelta, scale, gamma, beta, prog, debug);
}

} // namespace aspen::nn::gn
