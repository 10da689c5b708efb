// Normalisation (Norms.hpp): every norm as views of acts [B, C, F...] in four dimensions, so one
// set of reductions and fused maps serves batch, group, layer and instance norms:
//   batch                  [B, C, 1, F]     statistics over dims {0, 2, 3}: [C]
//   group, contiguous      [B, G, C/G, F]   statistics over {2, 3}: [B, G]
//   group, strided         [B, C/G, G, F]   statistics over {1, 3}: [B, G]
// gamma and beta broadcast as [1, C, 1, 1], [1, G, C/G, 1] and [1, C/G, G, 1]; a channel's sums
// (the parameter gradients) reduce dims {0, 3} (and 2 for batch norm, where it is 1).
#include "NnWork.hpp"
#include "support/OptionParsing.hpp"

#include <aspen/Error.hpp>
#include <aspen/nn/BatchNorm.hpp>
#include <aspen/nn/Norms.hpp>
#include <aspen/ops/Cast.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/ops/ScaledAdd.hpp>
#include <aspen/util/Broadcast.hpp>
#include <aspen/util/TileMapping.hpp>

#include <fmt/format.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace aspen::nn {

namespace {

using program::Sequence;
namespace ex = ops::expr;

struct NormOptions {
  bool floatStatistics = false;
  bool strided = false;
};

NormOptions parseOptions(const OptionFlags &options) {
  NormOptions o;
  aspen::detail::OptionSpec("norm")
      .enumeration("statisticsType", o.floatStatistics, {{"input", false}, {"float", true}})
      .boolean("groupNormStridedChannelGrouping", o.strided)
      .parse(options);
  return o;
}

void requireActs(const Tensor &acts, const std::string &what) {
  work::requireFloatingPoint(acts, what);
  if (acts.rank() < 2)
    throw shape_error(what + ": acts " + work::describe(acts) +
                      " must have rank 2 or more ([B, C, field...])");
}

// acts' layout for a grouping: the 4-D view and the shapes around it.
struct Layout {
  std::size_t B = 0, C = 0, F = 1, G = 1;
  bool batch = true, strided = false;
  std::vector<std::size_t> view() const {
    if (batch)
      return {B, C, 1, F};
    return strided ? std::vector<std::size_t>{B, C / G, G, F}
                   : std::vector<std::size_t>{B, G, C / G, F};
  }
  std::vector<std::size_t> statDims() const {
    if (batch)
      return {0, 2, 3};
    return strided ? std::vector<std::size_t>{1, 3} : std::vector<std::size_t>{2, 3};
  }
  std::vector<std::size_t> statShape() const { // broadcast against view()
    if (batch)
      return {1, C, 1, 1};
    return strided ? std::vector<std::size_t>{B, 1, G, 1} : std::vector<std::size_t>{B, G, 1, 1};
  }
  std::vector<std::size_t> channelShape() const {
    const std::vector<std::size_t> v = view();
    return {1, v[1], v[2], 1};
  }
  std::size_t statistics() const { return batch ? C : B * G; }
  std::size_t perStatistic() const { return batch ? B * F : (C / G) * F; }
};

// The layout of acts; `statistics`, when given, says the group count of a Group grouping whose
// numGroups is 0 (else 0 means a group a channel: instance norm).
Layout layoutOf(const Tensor &acts, const NormGrouping &grouping, const NormOptions &o,
                const Tensor *statistics, const std::string &what) {
  requireActs(acts, what);
  Layout l;
  l.B = acts.dim(0), l.C = acts.dim(1), l.F = acts.numElements() / std::max<std::size_t>(l.B * l.C, 1);
  if (l.B * l.C == 0)
    l.F = 1;
  for (std::size_t d = 2; d < acts.rank(); ++d)
    if (acts.dim(d) == 0)
      l.F = 0;
  l.batch = grouping.kind == NormGrouping::Kind::Batch;
  l.strided = o.strided && !l.batch;
  if (!l.batch) {
    l.G = grouping.numGroups;
    if (l.G == 0 && statistics && l.B > 0)
      l.G = unsigned(statistics->numElements() / l.B);
    if (l.G == 0)
      l.G = unsigned(l.C);
    if (l.G == 0 || l.C % l.G != 0)
      throw invalid_option(fmt::format("{}: {} groups do not divide the {} channels of acts {}",
                                       what, l.G, l.C, work::describe(acts)));
  }
  return l;
}

void requireVector(const Tensor &t, std::size_t n, const char *role, const std::string &what) {
  work::requireFloatingPoint(t, what);
  if (t.numElements() != n)
    throw shape_error(fmt::format("{}: {} {} must have {} elements", what, role,
                                  work::describe(t), n));
}

void requireSameShape(const Tensor &t, const Tensor &acts, const char *role,
                      const std::string &what) {
  work::requireFloatingPoint(t, what);
  if (t.shape() != acts.shape())
    throw shape_error(fmt::format("{}: {} {} must have the shape of acts {}", what, role,
                                  work::describe(t), work::describe(acts)));
}

Tensor scalar(Graph &graph, float value, const DebugContext &debug) {
  Tensor t = graph.addConstant<float>(FLOAT, {}, {value}, debug);
  graph.setTileMapping(t, 0);
  return t;
}

ex::Any f(unsigned placeholder) { return ex::Cast(ex::PlaceHolder(placeholder), FLOAT); }

// n float zeros: one constant element broadcast (work::rowMoments' shift when there is none).
Tensor zeros(Graph &graph, std::size_t n, const DebugContext &debug) {
  return scalar(graph, 0.0f, {debug, "zero"}).flatten().broadcast(unsigned(n), 0);
}

// E[x] and E[x^2] over the statistic dimensions of v (l.view(), scaled by inverseN) from one pass
// over x: each row of F elements' sums (work::rowMoments), then the rows' sums.
std::pair<Tensor, Tensor> rawMoments(Graph &graph, const Tensor &v, const Layout &l,
                                const Tensor &inverseN, Sequence &prog,
                                const DebugContext &debug) {
  const std::size_t rows = v.numElements() / l.F;
  const Tensor rowsView = v.reshape({rows, l.F});
  const Tensor moments =
      work::rowMoments(graph, rowsView, rowsView, zeros(graph, rows, debug), prog, debug);
  std::vector<std::size_t> shape = v.shape(), dims;
  shape.back() = 2;
  for (std::size_t d : l.statDims())
    if (d + 1 != shape.size())
      dims.push_back(d);
  const Tensor sums =
      ops::reduce(graph, moments.reshape(shape), FLOAT, dims,
                  ops::ReduceParams(ops::Operation::ADD, false, inverseN), prog, {debug, "means"});
  const unsigned last = unsigned(sums.rank() - 1);
  return {sums.slice(0, 1, last).squeeze({last}), sums.slice(1, 2, last).squeeze({last})};
}

} // namespace

std::uint64_t getNormFwdFlops(std::size_t statisticsSize, std::size_t numActsElements,
                              bool computeStats) {
  const std::uint64_t n = numActsElements, s = statisticsSize;
  // The affine step (a multiply and an add an element); with statistics also the sum and the
  // sum of squares, the mean, variance and eps (a few a statistic) and whitening (two).
  return 2 * n + (computeStats ? 2 * n + 5 * s + 2 * n : 0);
}

std::uint64_t getNormBwdFlops(std::size_t statisticsSize, std::size_t numActsElements) {
  const std::uint64_t n = numActsElements, s = statisticsSize;
  // gradsIn * gamma; two products and two sums a element for the group means, their scaling,
  // and the combination (three) times invStdDev.
  return n + 7 * n + 2 * s;
}

std::uint64_t getNormWuFlops(std::size_t paramsSize, std::size_t numActsElements) {
  const std::uint64_t n = numActsElements, p = paramsSize;
  // gradsIn * whitened and its sum, the sum of gradsIn; scale and add for gamma and beta.
  return 3 * n + 4 * p;
}

Tensor createNormGamma(Graph &graph, const Tensor &acts, const Type &type,
                       const DebugContext &debug) {
  requireActs(acts, "createNormGamma");
  Tensor t = graph.addVariable(type, {acts.dim(1)}, {debug, "gamma"});
  util::mapTensorLinearly(graph, t);
  return t;
}
Tensor createNormGamma(Graph &graph, const Tensor &acts, const DebugContext &debug) {
  return createNormGamma(graph, acts, acts.elementType(), debug);
}
Tensor createNormBeta(Graph &graph, const Tensor &acts, const Type &type,
                      const DebugContext &debug) {
  requireActs(acts, "createNormBeta");
  Tensor t = graph.addVariable(type, {acts.dim(1)}, {debug, "beta"});
  util::mapTensorLinearly(graph, t);
  return t;
}
Tensor createNormBeta(Graph &graph, const Tensor &acts, const DebugContext &debug) {
  return createNormBeta(graph, acts, acts.elementType(), debug);
}
std::pair<Tensor, Tensor> createNormParams(Graph &graph, const Tensor &acts,
                                           const DebugContext &debug) {
  return {createNormGamma(graph, acts, debug), createNormBeta(graph, acts, debug)};
}

std::pair<Tensor, Tensor> normStatistics(Graph &graph, const Tensor &acts, float eps,
                                         Sequence &prog, bool unbiasedVarEstimate,
                                         bool stableAlgo, const Type &partialsType,
                                         const NormGrouping &grouping, const DebugContext &debug,
                                         const OptionFlags &options) {
  const std::string what = "normStatistics";
  const NormOptions o = parseOptions(options);
  if (partialsType != FLOAT && partialsType != HALF)
    throw type_error(what + ": partialsType must be float or half, not " +
                     partialsType.toString());
  const Layout l = layoutOf(acts, grouping, o, nullptr, what);
  const std::size_t n = l.perStatistic();
  if (n == 0 || l.statistics() == 0)
    throw shape_error(fmt::format("{}: acts {} leave no element to take statistics over", what,
                                  work::describe(acts)));
  const Tensor v = acts.reshape(l.view());
  const Tensor inverseN = scalar(graph, float(1.0 / double(n)), {debug, "1/n"});
  // E[x] in float; with E[x^2] from the same pass over x for the one-pass variance.
  Tensor mean, meanSquare;
  if (stableAlgo) {
    mean = ops::reduce(graph, v, FLOAT, l.statDims(),
                       ops::ReduceParams(ops::Operation::ADD, false, inverseN), prog,
                       {debug, "mean"});
  } else {
    std::tie(mean, meanSquare) = rawMoments(graph, v, l, inverseN, prog, debug);
  }
  const Tensor meanB = mean.reshape(l.statShape());
  const double scaleVar = unbiasedVarEstimate && n > 1 ? double(n) / double(n - 1) : 1.0;
  Tensor invStdDev;
  if (stableAlgo) {
    // E[(x - E[x])^2]: the centred values first (float), then their mean square.
    const Tensor centred = ops::map(graph, f(1) - ex::_2, {v, meanB}, prog, {debug, "centred"});
    const Tensor variance = ops::reduce(
        graph, centred, FLOAT, l.statDims(),
        ops::ReduceParams(ops::Operation::SQUARE_ADD, false, inverseN), prog, {debug, "variance"});
    invStdDev = ops::map(graph,
                         ex::Rsqrt(ex::_1 * ex::Const(float(scaleVar)) + ex::Const(eps)),
                         {variance}, prog, {debug, "invStdDev"});
  } else {
    invStdDev = ops::map(graph,
                         ex::Rsqrt(ex::Max(ex::_2 - ex::_1 * ex::_1, ex::Const(0.0f)) *
                                       ex::Const(float(scaleVar)) +
                                   ex::Const(eps)),
                         {mean, meanSquare}, prog, {debug, "invStdDev"});
  }
  const Type statType = o.floatStatistics ? FLOAT : acts.elementType();
  const auto finish = [&](const Tensor &t, const char *name) {
    const Tensor flat = t.flatten();
    return statType == FLOAT ? flat : ops::cast(graph, flat, statType, prog, {debug, name});
  };
  return {finish(mean, "mean"), finish(invStdDev, "invStdDev")};
}

Tensor normWhiten(Graph &graph, const Tensor &acts, const Tensor &mean, const Tensor &invStdDev,
                  Sequence &prog, const NormGrouping &grouping, const DebugContext &debug,
                  const OptionFlags &options) {
  const std::string what = "normWhiten";
  const NormOptions o = parseOptions(options);
  const Layout l = layoutOf(acts, grouping, o, &mean, what);
  requireVector(mean, l.statistics(), "mean", what);
  requireVector(invStdDev, l.statistics(), "invStdDev", what);
  const Tensor whitened = ops::map(
      graph, ex::Cast((f(1) - f(2)) * f(3), acts.elementType()),
      {acts.reshape(l.view()), mean.reshape(l.statShape()), invStdDev.reshape(l.statShape())},
      prog, {debug, "whiten"});
  return whitened.reshape(acts.shape());
}

std::pair<Tensor, Tensor> normalise(Graph &graph, const Tensor &acts, const Tensor &gamma,
                                    const Tensor &beta, const Tensor &mean,
                                    const Tensor &invStdDev, Sequence &prog,
                                    const NormGrouping &grouping, const DebugContext &debug,
                                    const OptionFlags &options) {
  const std::string what = "normalise";
  const NormOptions o = parseOptions(options);
  const Layout l = layoutOf(acts, grouping, o, &mean, what);
  requireVector(gamma, l.C, "gamma", what);
  requireVector(beta, l.C, "beta", what);
  const Tensor whitened = normWhiten(graph, acts, mean, invStdDev, prog, grouping, debug, options);
  const Tensor out = ops::map(
      graph, ex::Cast(f(1) * f(2) + f(3), acts.elementType()),
      {whitened.reshape(l.view()), gamma.reshape(l.channelShape()),
       beta.reshape(l.channelShape())},
      prog, {debug, "normalise"});
  return {out.reshape(acts.shape()), whitened};
}

namespace {

// A channel's parameter gradients from each row's moments (acts and gradsIn as [B*C, F]; shift
// and scale one value a row): gammaDelta = the sum over the batch of scale * sum(dy * (x -
// shift)), betaDelta = that of sum(dy), in the acts' type. One pass over x and dy
// (work::rowMoments): no product is written first.
std::pair<Tensor, Tensor> paramGradientsOfRows(Graph &graph, const Tensor &acts,
                                               const Tensor &gradsIn, const Tensor &shift,
                                               const Tensor *scale, Sequence &prog,
                                               const DebugContext &debug) {
  const std::size_t B = acts.dim(0), C = acts.dim(1),
                    F = B * C ? acts.numElements() / (B * C) : 0;
  const Type type = acts.elementType();
  const Tensor moments = work::rowMoments(graph, gradsIn.reshape({B * C, F}),
                                          acts.reshape({B * C, F}), shift, prog, debug)
                             .reshape({B, C, 2});
  Tensor weighted = moments.slice(1, 2, 2).reshape({B, C});
  if (scale)
    weighted = ops::map(graph, ex::_1 * ex::_2, {weighted, scale->reshape({B, C})}, prog,
                        {debug, "scaled"});
  const Tensor gammaDelta = ops::reduce(graph, weighted, type, {0},
                                        ops::ReduceParams(ops::Operation::ADD), prog,
                                        {debug, "gammaDelta"});
  const Tensor betaDelta = ops::reduce(graph, moments.slice(0, 1, 2).reshape({B, C}), type, {0},
                                       ops::ReduceParams(ops::Operation::ADD), prog,
                                       {debug, "betaDelta"});
  return {gammaDelta, betaDelta};
}

// A statistic's value for each (batch, channel) row of the layout: [B * C].
Tensor perRow(const Tensor &statistic, const Layout &l) {
  Tensor t = statistic.reshape(l.statShape());
  const std::vector<std::size_t> view = l.view();
  util::broadcastToMatch(t, {view[0], view[1], view[2], 1});
  return t.flatten();
}

} // namespace

std::pair<Tensor, Tensor> normParamGradients(Graph &graph, const Tensor &actsWhitened,
                                             const Tensor &gradsIn, Sequence &prog,
                                             const NormGrouping &, const DebugContext &debug,
                                             const OptionFlags &options) {
  const std::string what = "normParamGradients";
  parseOptions(options);
  requireActs(actsWhitened, what);
  requireSameShape(gradsIn, actsWhitened, "gradsIn", what);
  // A channel's sums are the same whatever the statistics' grouping: [B, C, F] over {0, 2}.
  const std::size_t rows = actsWhitened.dim(0) * actsWhitened.dim(1);
  return paramGradientsOfRows(graph, actsWhitened, gradsIn, zeros(graph, rows, debug), nullptr,
                              prog, debug);
}

std::pair<Tensor, Tensor> normParamGradients(Graph &graph, const Tensor &acts,
                                             const Tensor &gradsIn, const Tensor &mean,
                                             const Tensor &invStdDev, Sequence &prog,
                                             const NormGrouping &grouping,
                                             const DebugContext &debug,
                                             const OptionFlags &options) {
  const std::string what = "normParamGradients";
  const NormOptions o = parseOptions(options);
  const Layout l = layoutOf(acts, grouping, o, &invStdDev, what);
  requireSameShape(gradsIn, acts, "gradsIn", what);
  requireVector(mean, l.statistics(), "mean", what);
  requireVector(invStdDev, l.statistics(), "invStdDev", what);
  // The whitened acts' sums without whitening: sum(dy * (x - mean)) * invStdDev a row, with the
  // statistics in float.
  const auto inFloat = [&](const Tensor &t, const char *name) {
    return t.elementType() == FLOAT ? t : ops::cast(graph, t, FLOAT, prog, {debug, name});
  };
  const Tensor scale = perRow(inFloat(invStdDev, "invStdDev"), l);
  return paramGradientsOfRows(graph, acts, gradsIn, perRow(inFloat(mean, "mean"), l), &scale,
                              prog, debug);
}

namespace {

// The input gradient through the statistics of d = gradsIn * gamma (gamma: null for 1).
Tensor gradientsThroughStatistics(Graph &graph, const Tensor &actsWhitened, const Tensor &gradsIn,
                                  const Tensor &invStdDev, const Tensor *gamma, Sequence &prog,
                                  const NormGrouping &grouping, const DebugContext &debug,
                                  const OptionFlags &options, const std::string &what) {
  const NormOptions o = parseOptions(options);
  const Layout l = layoutOf(actsWhitened, grouping, o, &invStdDev, what);
  requireSameShape(gradsIn, actsWhitened, "gradsIn", what);
  requireVector(invStdDev, l.statistics(), "invStdDev", what);
  if (gamma)
    requireVector(*gamma, l.C, "gamma", what);
  const std::size_t n = l.perStatistic();
  const Tensor x = actsWhitened.reshape(l.view()), dy = gradsIn.reshape(l.view());
  // d = gradsIn * gamma (float), and the group means of d and d * whitened.
  const Tensor d = gamma ? ops::map(graph, f(1) * f(2), {dy, gamma->reshape(l.channelShape())},
                                    prog, {debug, "gradsInGamma"})
                         : ops::cast(graph, dy, FLOAT, prog, {debug, "gradsIn"});
  const Tensor dx = ops::map(graph, ex::_1 * f(2), {d, x}, prog, {debug, "gradsInGammaWhitened"});
  const Tensor inverseN = scalar(graph, n ? float(1.0 / double(n)) : 0.0f, {debug, "1/n"});
  const std::vector<Tensor> means = ops::reduceMany(
      graph,
      {ops::SingleReduceOp(d, l.statDims(), ops::ReduceParams(ops::Operation::ADD, false, inverseN),
                           FLOAT, "meanD"),
       ops::SingleReduceOp(dx, l.statDims(), ops::ReduceParams(ops::Operation::ADD, false, inverseN),
                           FLOAT, "meanDWhitened")},
      prog, {debug, "groupMeans"});
  const Tensor out = ops::map(
      graph, ex::Cast(f(5) * (ex::_1 - ex::_2 - f(3) * ex::_4), actsWhitened.elementType()),
      {d, means[0].reshape(l.statShape()), x, means[1].reshape(l.statShape()),
       invStdDev.reshape(l.statShape())},
      prog, {debug, "gradsOut"});
  return out.reshape(actsWhitened.shape());
}

} // namespace

Tensor normGradients(Graph &graph, const Tensor &actsWhitened, const Tensor &gradsIn,
                     const Tensor &invStdDev, const Tensor &gamma, Sequence &prog,
                     const NormGrouping &grouping, const DebugContext &debug,
                     const OptionFlags &options) {
  return gradientsThroughStatistics(graph, actsWhitened, gradsIn, invStdDev, &gamma, prog,
                                    grouping, debug, options, "normGradients");
}

Tensor normStatisticsGradients(Graph &graph, const Tensor &actsWhitened, const Tensor &gradients,
                               const Tensor &invStdDev, Sequence &prog,
                               const NormGrouping &grouping, const DebugContext &debug,
                               const OptionFlags &options) {
  return gradientsThroughStatistics(graph, actsWhitened, gradients, invStdDev, nullptr, prog,
                                    grouping, debug, options, "normStatisticsGradients");
}

void normParamUpdate(Graph &graph, const Tensor &gammaDelta, const Tensor &betaDelta,
                     const Tensor &scale, const Tensor &gamma, const Tensor &beta,
                     Sequence &prog, const DebugContext &debug) {
  ops::scaledAddTo(graph, gamma, gammaDelta, scale, prog, {debug, "gammaUpdate"});
  ops::scaledAddTo(graph, beta, betaDelta, scale, prog, {debug, "betaUpdate"});
}

void normParamUpdate(Graph &graph, const Tensor &gammaDelta, const Tensor &betaDelta, float scale,
                     const Tensor &gamma, const Tensor &beta, Sequence &prog,
                     const DebugContext &debug) {
  ops::scaledAddTo(graph, gamma, gammaDelta, scale, prog, {debug, "gammaUpdate"});
  ops::scaledAddTo(graph, beta, betaDelta, scale, prog, {debug, "betaUpdate"});
}

namespace bn {

Tensor batchNormalise(Graph &graph, const Tensor &acts, const Tensor &combinedMultiplicand,
                      const Tensor &addend, Sequence &prog, const DebugContext &debug,
                      const OptionFlags &options) {
  const std::string what = "batchNormalise";
  const NormOptions o = parseOptions(options);
  const Layout l = layoutOf(acts, NormGrouping{}, o, nullptr, what);
  requireVector(combinedMultiplicand, l.C, "combinedMultiplicand", what);
  requireVector(addend, l.C, "addend", what);
  return ops::map(graph, ex::Cast(f(1) * f(2) + f(3), acts.elementType()),
                  {acts.reshape(l.view()), combinedMultiplicand.reshape(l.channelShape()),
                   addend.reshape(l.channelShape())},
                  prog, {debug, "batchNormInference"})
      .reshape(acts.shape());
}

void batchNormRunningStatistics(Graph &graph, const Tensor &mean, const Tensor &invStdDev,
                                float eps, std::size_t n, float momentum,
                                const Tensor &runningMean, const Tensor &runningVar,
                                Sequence &prog, const DebugContext &debug) {
  const std::string what = "batchNormRunningStatistics";
  const std::size_t C = mean.numElements();
  requireVector(mean, C, "mean", what);
  requireVector(invStdDev, C, "invStdDev", what);
  requireVector(runningMean, C, "runningMean", what);
  requireVector(runningVar, C, "runningVar", what);
  if (!(momentum >= 0.0f && momentum <= 1.0f))
    throw invalid_option(fmt::format("{}: momentum {} must be in [0, 1]", what, momentum));
  const float unbias = n > 1 ? float(double(n) / double(n - 1)) : 1.0f;
  const float keep = 1.0f - momentum;
  ops::mapInPlace(graph,
                  ex::Cast(f(1) * ex::Const(keep) + f(2) * ex::Const(momentum),
                           runningMean.elementType()),
                  {runningMean, mean}, prog, {debug, "runningMean"});
  ops::mapInPlace(graph,
                  ex::Cast(f(1) * ex::Const(keep) +
                               (ex::Inv(f(2) * f(2)) - ex::Const(eps)) *
                                   ex::Const(momentum * unbias),
                           runningVar.elementType()),
                  {runningVar, invStdDev}, prog, {debug, "runningVar"});
}

} // namespace bn

} // namespace aspen::nn
