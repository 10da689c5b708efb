// Batch, group (contiguous and strided), layer and instance norms against a double-precision
// model: statistics (plain and stable, biased and unbiased), whitening, the affine step, the
// parameter gradients and update, and the input gradient, checked against central finite
// differences of the model's forward pass (not against the gradient formula). Also the stable
// algorithm on data with a large mean, float statistics for half data, batch norm inference and
// the frameworks' running statistics.
#include "TestDevice.hpp"
#include "correctness/test_reduce_harness.hpp" // encode / decode / rounded

#include <aspen/Engine.hpp>
#include <aspen/nn/BatchNorm.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/GroupNorm.hpp>
#include <aspen/nn/InstanceNorm.hpp>
#include <aspen/nn/LayerNorm.hpp>
#include <aspen/util/TileMapping.hpp>
#include <poplin/Norms.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace aspen;

namespace {

// Which statistics group element (b, c, f) of [B, C, F] belongs to.
struct Grouping {
  const char *name;
  bool batch;
  std::size_t groups; // group kinds: G (C for instance norm)
  bool strided;
  std::size_t group(std::size_t B, std::size_t C, std::size_t b, std::size_t c) const {
    (void)B;
    if (batch)
      return c;
    const std::size_t perGroup = C / groups;
    return b * groups + (strided ? c % groups : c / perGroup);
  }
  std::size_t count(std::size_t B, std::size_t C) const { return batch ? C : B * groups; }
};

struct Model {
  std::vector<double> mean, invStd, whitened, out;
};

Model model(const Grouping &g, std::size_t B, std::size_t C, std::size_t F,
            const std::vector<double> &x, const std::vector<double> &gamma,
            const std::vector<double> &beta, double eps, bool unbiased) {
  const std::size_t S = g.count(B, C);
  std::vector<double> sum(S, 0), sq(S, 0), n(S, 0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t f = 0; f < F; ++f) {
        const std::size_t s = g.group(B, C, b, c);
        sum[s] += x[(b * C + c) * F + f];
        n[s] += 1;
      }
  Model m;
  m.mean.resize(S), m.invStd.resize(S);
  for (std::size_t s = 0; s < S; ++s)
    m.mean[s] = sum[s] / n[s];
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t f = 0; f < F; ++f) {
        const std::size_t s = g.group(B, C, b, c);
        const double d = x[(b * C + c) * F + f] - m.mean[s];
        sq[s] += d * d;
      }
  for (std::size_t s = 0; s < S; ++s)
    m.invStd[s] = 1.0 / std::sqrt(sq[s] / (unbiased && n[s] > 1 ? n[s] - 1 : n[s]) + eps);
  m.whitened.resize(x.size()), m.out.resize(x.size());
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t f = 0; f < F; ++f) {
        const std::size_t i = (b * C + c) * F + f, s = g.group(B, C, b, c);
        m.whitened[i] = (x[i] - m.mean[s]) * m.invStd[s];
        m.out[i] = gamma[c] * m.whitened[i] + beta[c];
      }
  return m;
}

struct Results {
  std::map<std::string, std::vector<double>> values;
};

constexpr float kEps = 1e-3f, kScale = -0.5f;

// Statistics, normalise, both gradients and the update, in one engine.
Results runAspen(const Grouping &g, Type type, const std::vector<std::size_t> &shape,
                 const std::vector<double> &x, const std::vector<double> &gamma,
                 const std::vector<double> &beta, const std::vector<double> &dy, bool unbiased,
                 bool stable, const OptionFlags &options = {}) {
  Graph graph(Target::createGeneric(3, 2));
  nn::addCodelets(graph);
  const Tensor acts = graph.addVariable(type, shape, "acts");
  util::mapTensorLinearly(graph, acts);
  const Tensor grads = graph.addVariable(type, shape, "grads");
  util::mapTensorLinearly(graph, grads);
  const auto [gam, bet] = nn::createNormParams(graph, acts, "params");
  program::Sequence prog;
  nn::NormGrouping grouping;
  if (!g.batch)
    grouping = {nn::NormGrouping::Kind::Group, unsigned(g.groups)};
  const auto [mean, invStd] =
      nn::normStatistics(graph, acts, kEps, prog, unbiased, stable, FLOAT, grouping, "stats", options);
  const auto [out, whitened] =
      nn::normalise(graph, acts, gam, bet, mean, invStd, prog, grouping, "norm", options);
  const auto [gammaDelta, betaDelta] =
      nn::normParamGradients(graph, whitened, grads, prog, grouping, "pg", options);
  // The same from the acts and their statistics (one pass, no whitened copy).
  const auto [gammaDeltaActs, betaDeltaActs] =
      nn::normParamGradients(graph, acts, grads, mean, invStd, prog, grouping, "pga", options);
  const Tensor gradsOut =
      nn::normGradients(graph, whitened, grads, invStd, gam, prog, grouping, "g", options);
  // Copies of gamma and beta before the update, read afterwards.
  nn::normParamUpdate(graph, gammaDelta, betaDelta, kScale, gam, bet, prog, "update");
  const std::pair<const char *, Tensor> written[] = {
      {"acts", acts}, {"grads", grads}, {"gamma", gam}, {"beta", bet}};
  const std::pair<const char *, Tensor> read[] = {
      {"mean", mean},         {"invStd", invStd},       {"out", out},
      {"whitened", whitened}, {"gammaDelta", gammaDelta}, {"betaDelta", betaDelta},
      {"gradsOut", gradsOut}, {"gammaNew", gam},        {"betaNew", bet},
      {"gammaDeltaActs", gammaDeltaActs}, {"betaDeltaActs", betaDeltaActs}};
  for (const auto &[name, t] : written)
    graph.createHostWrite(name, t);
  for (const auto &[name, t] : read)
    graph.createHostRead(name, t);
  Engine e(graph, prog);
  e.load(test::deviceFor(graph.getTarget()));
  const std::vector<double> *values[] = {&x, &dy, &gamma, &beta};
  for (std::size_t i = 0; i < std::size(written); ++i) {
    const auto bytes = reducetest::encode(type, *values[i]);
    e.writeTensor(written[i].first, bytes.data(), bytes.data() + bytes.size());
  }
  e.run(0);
  Results r;
  for (const auto &[name, t] : read) {
    std::vector<unsigned char> bytes(t.numElements() * t.elementType().size());
    e.readTensor(name, bytes.data(), bytes.data() + bytes.size());
    r.values[name] = reducetest::decode(t.elementType(), bytes);
  }
  return r;
}

void requireClose(const std::string &what, const std::vector<double> &got,
                  const std::vector<double> &want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO(what << "[" << i << "]: Aspen " << got[i] << ", model " << want[i]);
    REQUIRE(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

std::vector<double> uniform(std::mt19937 &rng, std::size_t n, double lo, double hi, Type type) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double &x : v)
    x = u(rng);
  return reducetest::rounded(type, v);
}

void checkGrouping(const Grouping &g, Type type, bool unbiased, bool stable, unsigned seed) {
  INFO(g.name << " " << type.toString() << " unbiased " << unbiased << " stable " << stable);
  const std::size_t B = 3, C = 4;
  const std::vector<std::size_t> shape = {B, C, 3, 2};
  const std::size_t F = 6, N = B * C * F;
  std::mt19937 rng(seed);
  const std::vector<double> x = uniform(rng, N, -1.5, 2.5, type);
  const std::vector<double> dy = uniform(rng, N, -1, 1, type);
  const std::vector<double> gamma = uniform(rng, C, 0.5, 1.5, type);
  const std::vector<double> beta = uniform(rng, C, -0.5, 0.5, type);
  OptionFlags options;
  if (g.strided)
    options.set("groupNormStridedChannelGrouping", "true");
  const Results r = runAspen(g, type, shape, x, gamma, beta, dy, unbiased, stable, options);
  const double tol = type == HALF ? 1e-2 : 2e-5;
  const Model m = model(g, B, C, F, x, gamma, beta, kEps, unbiased);
  requireClose("mean", r.values.at("mean"), m.mean, tol);
  requireClose("invStdDev", r.values.at("invStd"), m.invStd, tol);
  requireClose("whitened", r.values.at("whitened"), m.whitened, tol);
  requireClose("out", r.values.at("out"), m.out, tol);
  // The parameter gradients and the update: sums of dy * whitened and of dy a channel.
  std::vector<double> gd(C, 0), bd(C, 0);
  for (std::size_t i = 0; i < N; ++i) {
    const std::size_t c = (i / F) % C;
    gd[c] += dy[i] * m.whitened[i];
    bd[c] += dy[i];
  }
  requireClose("gammaDelta", r.values.at("gammaDelta"), gd, tol * 4);
  requireClose("betaDelta", r.values.at("betaDelta"), bd, tol * 4);
  requireClose("gammaDelta from the acts", r.values.at("gammaDeltaActs"), gd, tol * 4);
  requireClose("betaDelta from the acts", r.values.at("betaDeltaActs"), bd, tol * 4);
  std::vector<double> gNew = gamma, bNew = beta;
  for (std::size_t c = 0; c < C; ++c)
    gNew[c] += kScale * gd[c], bNew[c] += kScale * bd[c];
  requireClose("gamma updated", r.values.at("gammaNew"), gNew, tol * 4);
  requireClose("beta updated", r.values.at("betaNew"), bNew, tol * 4);
  if (type != FLOAT || unbiased)
    return;
  // The input gradient of L = sum(dy * out) by central differences of the model's forward.
  const auto loss = [&](const std::vector<double> &xs) {
    const Model mm = model(g, B, C, F, xs, gamma, beta, kEps, false);
    double l = 0;
    for (std::size_t i = 0; i < N; ++i)
      l += dy[i] * mm.out[i];
    return l;
  };
  std::vector<double> fd(N);
  const double h = 1e-5;
  for (std::size_t i = 0; i < N; ++i) {
    std::vector<double> plus = x, minus = x;
    plus[i] += h, minus[i] -= h;
    fd[i] = (loss(plus) - loss(minus)) / (2 * h);
  }
  requireClose("input gradient (finite differences)", r.values.at("gradsOut"), fd, 1e-4);
}

const Grouping kGroupings[] = {{"batch", true, 0, false},
                               {"group 2, contiguous", false, 2, false},
                               {"group 2, strided", false, 2, true},
                               {"layer", false, 1, false},
                               {"instance", false, 4, false}};

} // namespace

TEST_CASE("norms match the double model: statistics, whitening, affine, gradients, update",
          "[correctness][norms]") {
  // Each grouping: float biased (with the finite-difference check), plain and stable; float
  // unbiased, stable; half, plain.
  unsigned seed = 1;
  for (const Grouping &g : kGroupings) {
    checkGrouping(g, FLOAT, false, false, seed++);
    checkGrouping(g, FLOAT, false, true, seed++);
    checkGrouping(g, FLOAT, true, true, seed++);
    checkGrouping(g, HALF, false, false, seed++);
  }
}

TEST_CASE("the stable statistics keep the variance of data with a large mean",
          "[correctness][norms]") {
  // 1000 + noise of variance ~0.01: E[x^2] - E[x]^2 cancels 1e6 against 1e6 in float.
  const Grouping g = kGroupings[0];
  const std::size_t B = 4, C = 2, F = 64, N = B * C * F;
  std::mt19937 rng(3);
  std::vector<double> x = uniform(rng, N, -0.17, 0.17, FLOAT);
  for (double &v : x)
    v = double(float(1000.0 + v));
  const std::vector<double> ones(C, 1.0), zeros(C, 0.0), dy(N, 0.0);
  const Model m = model(g, B, C, F, x, ones, zeros, kEps, false);
  double stableError = 0, plainError = 0;
  for (const bool stable : {true, false}) {
    const Results r = runAspen(g, FLOAT, {B, C, F}, x, ones, zeros, dy, false, stable);
    for (std::size_t c = 0; c < C; ++c) {
      const double e = std::abs(r.values.at("invStd")[c] - m.invStd[c]) / m.invStd[c];
      (stable ? stableError : plainError) = std::max(stable ? stableError : plainError, e);
    }
  }
  INFO("relative error of invStdDev: stable " << stableError << ", plain " << plainError);
  CHECK(stableError < 1e-4);
  CHECK(plainError > 10 * stableError);
}

TEST_CASE("batch norm through popnn's names: float statistics for half data, inference, running "
          "statistics",
          "[correctness][norms]") {
  const std::size_t B = 2, C = 3, F = 5, N = B * C * F;
  Graph graph(Target::createGeneric(2, 2));
  nn::addCodelets(graph);
  const Tensor acts = graph.addVariable(HALF, {B, C, F}, "acts");
  util::mapTensorLinearly(graph, acts);
  program::Sequence prog;
  const auto [mean, invStd] = nn::bn::batchNormStatistics(graph, acts, kEps, prog, false, true,
                                                          FLOAT, "bn", {{"statisticsType", "float"}});
  REQUIRE(mean.elementType() == FLOAT);
  REQUIRE(invStd.elementType() == FLOAT);
  // Inference from combined parameters: m = 2, a = -1 a channel.
  const Tensor m = graph.addConstant<float>(FLOAT, {C}, std::vector<float>(C, 2.0f), "m");
  const Tensor a = graph.addConstant<float>(FLOAT, {C}, std::vector<float>(C, -1.0f), "a");
  graph.setTileMapping(m, 0);
  graph.setTileMapping(a, 0);
  const Tensor inferred = nn::bn::batchNormalise(graph, acts, m, a, prog, "infer");
  // Running statistics: from 0 and 1 with momentum 0.25.
  const Tensor runningMean = graph.addVariable(FLOAT, {C}, "runningMean");
  const Tensor runningVar = graph.addVariable(FLOAT, {C}, "runningVar");
  graph.setTileMapping(runningMean, 1);
  graph.setTileMapping(runningVar, 1);
  nn::bn::batchNormRunningStatistics(graph, mean, invStd, kEps, B * F, 0.25f, runningMean,
                                     runningVar, prog, "running");
  graph.createHostWrite("acts", acts);
  graph.createHostWrite("runningMean", runningMean);
  graph.createHostWrite("runningVar", runningVar);
  for (const auto &[name, t] : {std::pair<const char *, Tensor>{"mean", mean},
                                {"invStd", invStd},
                                {"inferred", inferred},
                                {"runningMean", runningMean},
                                {"runningVar", runningVar}})
    graph.createHostRead(std::string("read-") + name, t);
  Engine e(graph, prog);
  e.load(test::deviceFor(graph.getTarget()));
  std::mt19937 rng(9);
  const std::vector<double> x = uniform(rng, N, -2, 2, HALF);
  const auto bytes = reducetest::encode(HALF, x);
  e.writeTensor("acts", bytes.data(), bytes.data() + bytes.size());
  const std::vector<float> zerosF(C, 0.0f), onesF(C, 1.0f);
  e.writeTensor("runningMean", zerosF.data(), zerosF.data() + C);
  e.writeTensor("runningVar", onesF.data(), onesF.data() + C);
  e.run(0);
  const auto readFloats = [&](const char *name, std::size_t n) {
    std::vector<float> v(n);
    e.readTensor(std::string("read-") + name, v.data(), v.data() + n);
    return v;
  };
  const auto readHalves = [&](const char *name, std::size_t n) {
    std::vector<unsigned char> raw(n * 2);
    e.readTensor(std::string("read-") + name, raw.data(), raw.data() + raw.size());
    return reducetest::decode(HALF, raw);
  };
  const std::vector<double> ones(C, 1.0), zeros(C, 0.0);
  const Model model1 = model(kGroupings[0], B, C, F, x, ones, zeros, kEps, false);
  const std::vector<float> gotMean = readFloats("mean", C), gotInv = readFloats("invStd", C);
  const std::vector<float> rm = readFloats("runningMean", C), rv = readFloats("runningVar", C);
  for (std::size_t c = 0; c < C; ++c) {
    INFO("channel " << c);
    CHECK(std::abs(gotMean[c] - model1.mean[c]) < 1e-6); // float statistics: no half rounding
    CHECK(std::abs(gotInv[c] - model1.invStd[c]) < 1e-5 * model1.invStd[c]);
    const double var = 1.0 / (model1.invStd[c] * model1.invStd[c]) - kEps;
    CHECK(std::abs(rm[c] - 0.25 * model1.mean[c]) < 1e-6);
    CHECK(std::abs(rv[c] - (0.75 + 0.25 * var * double(B * F) / double(B * F - 1))) < 1e-5);
  }
  const std::vector<double> inf = readHalves("inferred", N);
  for (std::size_t i = 0; i < N; ++i)
    CHECK(std::abs(inf[i] - (2 * x[i] - 1)) <= 4e-3 * (1 + std::abs(2 * x[i] - 1)));
}

TEST_CASE("poplin's norm steps compose to popnn's batch norm gradients", "[correctness][norms]") {
  const std::size_t B = 2, C = 3, F = 4, N = B * C * F;
  Graph graph(Target::createGeneric(2, 2));
  nn::addCodelets(graph);
  const Tensor acts = graph.addVariable(FLOAT, {B, C, F}, "acts");
  const Tensor grads = graph.addVariable(FLOAT, {B, C, F}, "grads");
  util::mapTensorLinearly(graph, acts);
  util::mapTensorLinearly(graph, grads);
  const auto [gamma, beta] = poplin::createNormParams(graph, acts);
  program::Sequence prog;
  const auto [mean, invStd] = poplin::normStatistics(graph, acts, kEps, prog, false);
  const Tensor whitened = poplin::normWhiten(graph, acts, mean, invStd, prog);
  const Tensor out = poplin::normalise(graph, whitened, gamma, beta, prog);
  const Tensor viaPoplin = poplin::normStatisticsGradients(
      graph, whitened, poplin::normGradients(graph, grads, gamma, prog), invStd, prog);
  const Tensor viaPopnn = nn::bn::batchNormGradients(graph, acts, grads, mean, invStd, gamma, prog);
  const auto popnnOut = nn::bn::batchNormalise(graph, acts, gamma, beta, mean, invStd, prog);
  for (const auto &[name, t] : {std::pair<const char *, Tensor>{"acts", acts},
                                {"grads", grads},
                                {"gamma", gamma},
                                {"beta", beta}})
    graph.createHostWrite(name, t);
  for (const auto &[name, t] : {std::pair<const char *, Tensor>{"out", out},
                                {"popnnOut", popnnOut.first},
                                {"viaPoplin", viaPoplin},
                                {"viaPopnn", viaPopnn}})
    graph.createHostRead(name, t);
  Engine e(graph, prog);
  e.load(test::deviceFor(graph.getTarget()));
  std::mt19937 rng(4);
  const auto write = [&](const char *name, const std::vector<double> &v) {
    const auto bytes = reducetest::encode(FLOAT, v);
    e.writeTensor(name, bytes.data(), bytes.data() + bytes.size());
  };
  write("acts", uniform(rng, N, -1, 3, FLOAT));
  write("grads", uniform(rng, N, -1, 1, FLOAT));
  write("gamma", uniform(rng, C, 0.5, 2, FLOAT));
  write("beta", uniform(rng, C, -1, 1, FLOAT));
  e.run(0);
  const auto read = [&](const char *name) {
    std::vector<float> v(N);
    e.readTensor(name, v.data(), v.data() + N);
    return v;
  };
  const std::vector<float> a = read("out"), b = read("popnnOut"), c = read("viaPoplin"),
                           d = read("viaPopnn");
  for (std::size_t i = 0; i < N; ++i) {
    CHECK(std::abs(a[i] - b[i]) <= 1e-6f * (1 + std::abs(b[i])));
    CHECK(std::abs(c[i] - d[i]) <= 1e-5f * (1 + std::abs(d[i])));
  }
}
