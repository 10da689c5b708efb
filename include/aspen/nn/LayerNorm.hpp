// Layer normalisation (popnn's LayerNorm.hpp, namespace ln): statistics a batch element over all
// its channels and field (group norm with one group; Norms.hpp has the contract).
#pragma once

#include <aspen/nn/Norms.hpp>

#include <utility>

namespace aspen::nn::ln {

inline std::pair<Tensor, Tensor>
layerNormStatistics(Graph &graph, const Tensor &acts, float eps, program::Sequence &prog,
                    bool unbiasedVarEstimate, bool stableAlgo = false,
                    const Type &partialsType = FLOAT, const DebugContext &debug = {},
                    const OptionFlags &options = {}) {
  return normStatistics(graph, acts, eps, prog, unbiasedVarEstimate, stableAlgo, partialsType,
                        NormGrouping{NormGrouping::Kind::Group, 1}, debug, options);
}

ASPEN_NN_NORM_STEPS(layerNorm, NormGrouping::Kind::Group, 1)

} // namespace aspen::nn::ln
