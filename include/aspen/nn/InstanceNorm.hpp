// Instance normalisation (popnn's InstanceNorm.hpp, namespace in): statistics a batch element and
// channel over the field (group norm with a group a channel; Norms.hpp has the contract).
#pragma once

#include <aspen/nn/Norms.hpp>

#include <utility>

namespace aspen::nn::in {

inline std::pair<Tensor, Tensor>
instanceNormStatistics(Graph &graph, const Tensor &acts, float eps, program::Sequence &prog,
                       bool unbiasedVarEstimate, bool stableAlgo = false,
                       const Type &partialsType = FLOAT, const DebugContext &debug = {},
                       const OptionFlags &options = {}) {
  return normStatistics(graph, acts, eps, prog, unbiasedVarEstimate, stableAlgo, partialsType,
                        NormGrouping{NormGrouping::Kind::Group, 0}, debug, options);
}

ASPEN_NN_NORM_STEPS(instanceNorm, NormGrouping::Kind::Group, 0)

} // namespace aspen::nn::in
