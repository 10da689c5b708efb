// Misuse of aspen::nn's norms: the user error naming the argument and the rule; afterwards the
// graph still builds and runs a good batch norm.
#include "correctness/test_fill_harness.hpp"

#include <aspen/Engine.hpp>
#include <aspen/nn/BatchNorm.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/GroupNorm.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

using namespace aspen;
using dmtest::requireError;

TEST_CASE("norm builders reject bad activations, statistics, parameters and options",
          "[error][norms]") {
  Graph g(Target::createGeneric(2));
  nn::addCodelets(g);
  auto var = [&](Type t, std::vector<std::size_t> shape, const char *name) {
    Tensor x = g.addVariable(t, shape, name);
    g.setTileMapping(x, 0);
    return x;
  };
  const Tensor acts = var(FLOAT, {2, 6, 3}, "acts");
  program::Sequence prog;
  requireError<shape_error>(
      [&] { nn::bn::batchNormStatistics(g, var(FLOAT, {6}, "flat"), 1e-5f, prog, false); },
      {"normStatistics", "flat", "rank 2 or more"});
  requireError<type_error>(
      [&] { nn::bn::batchNormStatistics(g, var(INT, {2, 6}, "ints"), 1e-5f, prog, false); },
      {"normStatistics", "ints", "float or half"});
  requireError<invalid_option>(
      [&] { nn::gn::groupNormStatistics(g, acts, 1e-5f, prog, 4, false); },
      {"4 groups", "6 channels"});
  requireError<shape_error>(
      [&] { nn::bn::batchNormStatistics(g, var(FLOAT, {0, 6}, "empty"), 1e-5f, prog, false); },
      {"{0,6}", "no element"});
  requireError<invalid_option>(
      [&] {
        nn::bn::batchNormStatistics(g, acts, 1e-5f, prog, false, false, FLOAT, "s",
                                    {{"statisticsType", "double"}});
      },
      {"statisticsType", "double"});
  const std::pair<Tensor, Tensor> stats = nn::bn::batchNormStatistics(g, acts, 1e-5f, prog, false);
  const Tensor mean = stats.first, invStd = stats.second; // lambdas below capture them
  requireError<shape_error>(
      [&] { nn::bn::batchNormWhiten(g, acts, var(FLOAT, {5}, "shortMean"), invStd, prog); },
      {"normWhiten", "mean", "shortMean", "6 elements"});
  requireError<shape_error>(
      [&] {
        nn::bn::batchNormalise(g, acts, var(FLOAT, {3}, "shortGamma"), var(FLOAT, {6}, "b"), mean,
                               invStd, prog);
      },
      {"normalise", "gamma", "shortGamma"});
  requireError<shape_error>(
      [&] {
        nn::bn::batchNormGradients(g, acts, var(FLOAT, {2, 6, 4}, "wideGrads"), mean, invStd,
                                   var(FLOAT, {6}, "gm"), prog);
      },
      {"normGradients", "gradsIn", "wideGrads", "shape of acts"});
  // The gradients from the acts and their statistics check both statistics and gradsIn.
  requireError<shape_error>(
      [&] {
        nn::bn::batchNormParamGradients(g, acts, acts, var(FLOAT, {4}, "shortMean2"), invStd,
                                        prog);
      },
      {"normParamGradients", "mean", "shortMean2", "6 elements"});
  requireError<shape_error>(
      [&] {
        nn::bn::batchNormParamGradients(g, acts, var(FLOAT, {2, 6, 2}, "narrowGrads"), mean,
                                        invStd, prog);
      },
      {"normParamGradients", "gradsIn", "narrowGrads", "shape of acts"});
  requireError<invalid_option>(
      [&] {
        nn::bn::batchNormRunningStatistics(g, mean, invStd, 1e-5f, 6, 1.5f, var(FLOAT, {6}, "rm"),
                                           var(FLOAT, {6}, "rv"), prog);
      },
      {"momentum 1.5"});

  // Still usable: the statistics of a constant-per-channel input are that constant and
  // 1 / sqrt(eps).
  g.createHostWrite("acts", acts);
  g.createHostRead("mean", mean);
  g.createHostRead("invStd", invStd);
  Engine e(g, prog);
  e.load(Device::createModelDevice(g.getTarget()));
  std::vector<float> values(acts.numElements());
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = float((i / 3) % 6);
  e.writeTensor("acts", values.data(), values.data() + values.size());
  e.run(0);
  std::vector<float> m(6), s(6);
  e.readTensor("mean", m.data(), m.data() + 6);
  e.readTensor("invStd", s.data(), s.data() + 6);
  for (std::size_t c = 0; c < 6; ++c) {
    REQUIRE(m[c] == float(c));
    REQUIRE(std::abs(s[c] - 1.0f / std::sqrt(1e-5f)) < 1e-2f);
  }
}
