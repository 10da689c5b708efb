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

ASPEN_NN_NORM_STEPS(groupNorm, NormGrouping::Kind::Group, 0)

} // namespace aspen::nn::gn
