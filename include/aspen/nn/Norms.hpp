// Normalisation over channels (poplin's Norms.hpp and popnn's Norms.hpp), the core the batch,
// group, layer and instance norms (BatchNorm.hpp, GroupNorm.hpp, LayerNorm.hpp, InstanceNorm.hpp)
// are made of.
//
// Activations are acts [B, C, F...] (rank >= 2; B the batch, C the channels, F... a field,
// possibly none), FLOAT or HALF. A norm computes statistics over groups of elements:
//   batch norm            one group a channel: B x F... elements; statistics [C]
//   group norm (G groups) one group a batch element and group of C/G channels: statistics
//                         [B * G], b-major. Channels are grouped contiguously (channel c in group
//                         c / (C/G)) or, with option groupNormStridedChannelGrouping, strided
//                         (group c % G)
//   layer norm            group norm with G = 1;  instance norm  group norm with G = C
// and each has the same steps:
//   statistics: mean and invStdDev = 1 / sqrt(var + eps), var the variance (biased; times
//     n/(n-1) with unbiasedVarEstimate). stableAlgo computes the mean first and then the mean of
//     (x - mean)^2 (two passes, exact for data with a large mean); without it var = E[x^2] -
//     mean^2 (one pass, clamped at 0). Sums are float (partialsType HALF is accepted and
//     changes nothing). The statistics have acts' type (PopLibs), or float with option
//     statisticsType "float" (an Aspen extension: float statistics for half data).
//   whiten: whitened = (acts - mean) * invStdDev.
//   normalise: out = gamma * whitened + beta, gamma and beta [C] of acts' type; returns
//     {out, whitened}.
//   paramGradients: gammaDelta = sum over B, F... of gradsIn * whitened, betaDelta = sum of
//     gradsIn, each [C] of acts' type (from the whitened activations, or from acts, mean and
//     invStdDev).
//   gradients: the input gradient through the whole layer, statistics included:
//     d = gradsIn * gamma; gradsOut = invStdDev * (d - mean_group(d) - whitened *
//     mean_group(d * whitened)), the means over each statistics group (the biased-variance form,
//     as PopLibs, whatever unbiasedVarEstimate was).
//   paramUpdate: gamma += scale * gammaDelta, beta += scale * betaDelta (scale a float or a
//     one-element FLOAT tensor).
// Every step works in float and rounds once to acts' type.
//
// createNormGamma / createNormBeta(graph, acts[, type]) -> [C] mapped linearly, type acts' by
// default; createNormParams -> {gamma, beta}.
// getNormFwdFlops(statisticsSize, numActsElements, computeStats = true), getNormBwdFlops,
// getNormWuFlops(paramsSize, numActsElements): operation counts (sums, squares, the
// statistics' few per element of the statistics, whitening and the affine step).
//
// Options of every norm function: "statisticsType" ("input", default | "float") and
// "groupNormStridedChannelGrouping" (true | false, default false: group norm only).
// Errors: shape_error (rank < 2, statistics, gamma or gradients of another shape, no element
// to take statistics over), type_error (types other than FLOAT/HALF, mismatched types),
// invalid_option (bad options, a group count that does not divide C).
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace aspen::nn {

ASPEN_API std::uint64_t getNormFwdFlops(std::size_t statisticsSize, std::size_t numActsElements,
                                        bool computeStats = true);
ASPEN_API std::uint64_t getNormBwdFlops(std::size_t statisticsSize, std::size_t numActsElements);
ASPEN_API std::uint64_t getNormWuFlops(std::size_t paramsSize, std::size_t numActsElements);

ASPEN_API Tensor createNormGamma(Graph &graph, const Tensor &acts, const Type &type,
                                 const DebugContext &debug = {});
ASPEN_API Tensor createNormGamma(Graph &graph, const Tensor &acts, const DebugContext &debug = {});
ASPEN_API Tensor createNormBeta(Graph &graph, const Tensor &acts, const Type &type,
                                const DebugContext &debug = {});
ASPEN_API Tensor createNormBeta(Graph &graph, const Tensor &acts, const DebugContext &debug = {});
ASPEN_API std::pair<Tensor, Tensor> createNormParams(Graph &graph, const Tensor &acts,
                                                     const DebugContext &debug = {});

// How a norm groups its statistics (the kinds above).
struct NormGrouping {
  enum class Kind { Batch, Group } kind = Kind::Batch;
  unsigned numGroups = 1; // Group only
};

// The steps, for any grouping: what BatchNorm.hpp, GroupNorm.hpp and the others call.
ASPEN_API std::pair<Tensor, Tensor>
normStatistics(Graph &graph, const Tensor &acts, float eps, program::Sequence &prog,
               bool unbiasedVarEstimate, bool stableAlgo, const Type &partialsType,
               const NormGrouping &grouping, const DebugContext &debug = {},
               const OptionFlags &options = {});
ASPEN_API Tensor normWhiten(Graph &graph, const Tensor &acts, const Tensor &mean,
                            const Tensor &invStdDev, program::Sequence &prog,
                            const NormGrouping &grouping, const DebugContext &debug = {},
                            const OptionFlags &options = {});
ASPEN_API std::pair<Tensor, Tensor>
normalise(Graph &graph, const Tensor &acts, const Tensor &gamma, const Tensor &beta,
          const Tensor &mean, const Tensor &invStdDev, program::Sequence &prog,
          const NormGrouping &grouping, const DebugContext &debug = {},
          const OptionFlags &options = {});
ASPEN_API std::pair<Tensor, Tensor> normParamGradients(Graph &graph, const Tensor &actsWhitened,
                                                       const Tensor &gradsIn,
                                                       program::Sequence &prog,
                                                       const NormGrouping &grouping,
                                                       const DebugContext &debug = {},
                                                       const OptionFlags &options = {});
// The same from the acts and their statistics, in one pass over acts and gradsIn with no whitened
// copy (popnn's second form of the ParamGradients steps).
ASPEN_API std::pair<Tensor, Tensor>
normParamGradients(Graph &graph, const Tensor &acts, const Tensor &gradsIn, const Tensor &mean,
                   const Tensor &invStdDev, program::Sequence &prog, const NormGrouping &grouping,
                   const DebugContext &debug = {}, const OptionFlags &options = {});
ASPEN_API Tensor normGradients(Graph &graph, const Tensor &actsWhitened, const Tensor &gradsIn,
                               const Tensor &invStdDev, const Tensor &gamma,
                               program::Sequence &prog, const NormGrouping &grouping,
                               const DebugContext &debug = {}, const OptionFlags &options = {});
// normGradients with gamma = 1: the gradient through the statistics alone (poplin's
// normStatisticsGradients, whose input is already multiplied by gamma).
ASPEN_API Tensor normStatisticsGradients(Graph &graph, const Tensor &actsWhitened,
                                         const Tensor &gradients, const Tensor &invStdDev,
                                         program::Sequence &prog, const NormGrouping &grouping,
                                         const DebugContext &debug = {},
                                         const OptionFlags &options = {});
ASPEN_API void normParamUpdate(Graph &graph, const Tensor &gammaDelta, const Tensor &betaDelta,
                               const Tensor &scale, const Tensor &gamma, const Tensor &beta,
                               program::Sequence &prog, const DebugContext &debug = {});
ASPEN_API void normParamUpdate(Graph &graph, const Tensor &gammaDelta, const Tensor &betaDelta,
                               float scale, const Tensor &gamma, const Tensor &beta,
                               program::Sequence &prog, const DebugContext &debug = {});

} // namespace aspen::nn

// The steps every popnn norm names after itself (bn::batchNormWhiten, gn::groupNormalise, ...):
// prefix##Whiten, prefix##alise, prefix##ParamGradients (both forms), prefix##Gradients (both
// forms) and prefix##ParamUpdate (float and Tensor scale), each forwarding to the step above
// with the norm's grouping (a Group grouping of 0 groups reads the count from the statistics).
// partialsType is accepted and, as the sums are always float, without effect.
#define ASPEN_NN_NORM_STEPS(prefix, kind, groups)                                                 \
  inline Tensor prefix##Whiten(Graph &graph, const Tensor &acts, const Tensor &mean,               \
                               const Tensor &invStdDev, program::Sequence &prog,                   \
                               const DebugContext &debug = {}, const OptionFlags &options = {}) {  \
    return normWhiten(graph, acts, mean, invStdDev, prog, NormGrouping{kind, groups}, debug,       \
                      options);                                                                    \
  }                                                                                                \
  inline std::pair<Tensor, Tensor> prefix##alise(                                                 \
      Graph &graph, const Tensor &acts, const Tensor &gamma, const Tensor &beta,                   \
      const Tensor &mean, const Tensor &invStdDev, program::Sequence &prog,                        \
      const DebugContext &debug = {}, const OptionFlags &options = {}) {                           \
    return normalise(graph, acts, gamma, beta, mean, invStdDev, prog,                              \
                     NormGrouping{kind, groups}, debug, options);                                  \
  }                                                                                                \
  inline std::pair<Tensor, Tensor> prefix##ParamGradients(                                         \
      Graph &graph, const Tensor &actsWhitened, const Tensor &gradsIn, program::Sequence &prog,    \
      const Type & = FLOAT, const DebugContext &debug = {}, const OptionFlags &options = {}) {     \
    return normParamGradients(graph, actsWhitened, gradsIn, prog, NormGrouping{kind, groups},      \
                              debug, options);                                                     \
  }                                                                                                \
  inline std::pair<Tensor, Tensor> prefix##ParamGradients(                                         \
      Graph &graph, const Tensor &acts, const Tensor &gradsIn, const Tensor &mean,                 \
      const Tensor &iStdDev, program::Sequence &prog, const Type & = FLOAT,                        \
      const DebugContext &debug = {}, const OptionFlags &options = {}) {                           \
    return normParamGradients(graph, acts, gradsIn, mean, iStdDev, prog,                           \
                              NormGrouping{kind, groups}, debug, options);                         \
  }                                                                                                \
  inline Tensor prefix##Gradients(Graph &graph, const Tensor &actsWhitened, const Tensor &gradsIn, \
                                  const Tensor &invStdDev, const Tensor &gamma,                    \
                                  program::Sequence &prog, const Type & = FLOAT,                   \
                                  const DebugContext &debug = {},                                  \
                                  const OptionFlags &options = {}) {                               \
    return normGradients(graph, actsWhitened, gradsIn, invStdDev, gamma, prog,                     \
                         NormGrouping{kind, groups}, debug, options);                              \
  }                                                                                                \
  inline Tensor prefix##Gradients(Graph &graph, const Tensor &acts, const Tensor &gradsIn,         \
                                  const Tensor &mean, const Tensor &invStdDev,                     \
                                  const Tensor &gamma, program::Sequence &prog,                    \
                                  const Type & = FLOAT, const DebugContext &debug = {},            \
                                  const OptionFlags &options = {}) {                               \
    const Tensor whitened = normWhiten(graph, acts, mean, invStdDev, prog,                         \
                                       NormGrouping{kind, groups}, debug, options);                \
    return normGradients(graph, whitened, gradsIn, invStdDev, gamma, prog,                         \
                         NormGrouping{kind, groups}, debug, options);                              \
  }                                                                                                \
  inline void prefix##ParamUpdate(Graph &graph, const Tensor &gammaDelta,                          \
                                  const Tensor &betaDelta, float scale, Tensor &gamma,             \
                                  Tensor &beta, program::Sequence &prog,                           \
                                  const DebugContext &debug = {}, const OptionFlags & = {}) {      \
    normParamUpdate(graph, gammaDelta, betaDelta, scale, gamma, beta, prog, debug);                \
  }                                                                                                \
  inline void prefix##ParamUpdate(Graph &graph, const Tensor &gammaDelta,                          \
                                  const Tensor &betaDelta, const Tensor &scale, Tensor &gamma,     \
                                  Tensor &beta, program::Sequence &prog,                           \
                                  const DebugContext &debug = {}, const OptionFlags & = {}) {      \
    normParamUpdate(graph, gammaDelta, betaDelta, scale, gamma, beta, prog, debug);                \
  }
