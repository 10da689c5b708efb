// Pooling (aspen::nn::pooling) against a double-precision model written another way: each field
// dimension is materialised as the list of input indices the padded, truncated dimension holds
// (holes for padding), windows slide over that list, and the backward passes scatter into the
// input (the vertices gather). MAX, AVG and SUM; both gradient rules and popnn's scaled one;
// padding, truncation, strides 1-3, 1-D to 3-D fields, float and half.
#include "TestDevice.hpp"
#include "correctness/test_reduce_harness.hpp" // encode / decode / rounded

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Pooling.hpp>
#include <aspen/util/TileMapping.hpp>
#include <popnn/Pooling.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace aspen;
using aspen::nn::PoolingType;
using aspen::nn::pooling::PoolParams;

namespace {

// The model ------------------------------------------------------------------------------------

// Dimension d of the padded, truncated field: the input index at each position, or nothing.
std::vector<std::optional<std::size_t>> positions(const PoolParams &p, std::size_t d) {
  const int lower = p.inputTruncationOrPaddingLower[d], upper = p.inputTruncationOrPaddingUpper[d];
  std::vector<std::optional<std::size_t>> list;
  for (int i = 0; i < lower; ++i)
    list.push_back(std::nullopt);
  for (std::size_t i = lower < 0 ? std::size_t(-lower) : 0;
       i + (upper < 0 ? std::size_t(-upper) : 0) < p.inputFieldShape[d]; ++i)
    list.push_back(i);
  for (int i = 0; i < upper; ++i)
    list.push_back(std::nullopt);
  return list;
}

struct Model {
  std::vector<std::size_t> outShape;
  std::size_t F = 1, P = 1, K = 1;
  // windows[p]: the flat input elements output p's window holds, in kernel row-major order
  // (nothing for a hole), as (kernel position, element).
  std::vector<std::vector<std::optional<std::size_t>>> windows;
};

Model modelOf(const PoolParams &p) {
  Model m;
  const std::size_t dims = p.getNumFieldDims();
  std::vector<std::vector<std::optional<std::size_t>>> lists;
  for (std::size_t d = 0; d < dims; ++d) {
    lists.push_back(positions(p, d));
    m.outShape.push_back((lists.back().size() - p.kernelShape[d]) / p.stride[d] + 1);
    m.F *= p.inputFieldShape[d], m.P *= m.outShape.back(), m.K *= p.kernelShape[d];
  }
  for (std::size_t o = 0; o < m.P; ++o) {
    std::vector<std::optional<std::size_t>> window;
    for (std::size_t k = 0; k < m.K; ++k) {
      std::size_t orest = o, krest = k, flat = 0, scale = 1;
      bool real = true;
      for (std::size_t d = dims; d-- > 0;) {
        const std::size_t od = orest % m.outShape[d], kd = krest % p.kernelShape[d];
        orest /= m.outShape[d], krest /= p.kernelShape[d];
        const std::optional<std::size_t> i = lists[d][od * p.stride[d] + kd];
        real = real && i.has_value();
        if (real)
          flat += *i * scale;
        scale *= p.inputFieldShape[d];
      }
      window.push_back(real ? std::optional<std::size_t>(flat) : std::nullopt);
    }
    m.windows.push_back(window);
  }
  return m;
}

std::vector<double> modelForward(const PoolParams &p, const Model &m, const std::vector<double> &x,
                                 bool includePadding) {
  const std::size_t rows = p.batchSize * p.numChannels;
  std::vector<double> y(rows * m.P);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < m.P; ++o) {
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      std::size_t real = 0;
      for (const auto &e : m.windows[o])
        if (e) {
          best = std::max(best, x[r * m.F + *e]);
          sum += x[r * m.F + *e];
          ++real;
        }
      y[r * m.P + o] = p.poolingType == PoolingType::MAX   ? best
                       : p.poolingType == PoolingType::SUM ? sum
                                                           : sum / double(includePadding ? m.K : real);
    }
  return y;
}

enum class Rule { All, Scaled, First };

std::vector<double> modelBackward(const PoolParams &p, const Model &m, const std::vector<double> &x,
                                  const std::vector<double> &y, const std::vector<double> &dy,
                                  Rule rule, bool includePadding) {
  const std::size_t rows = p.batchSize * p.numChannels;
  std::vector<double> dx(rows * m.F, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < m.P; ++o) {
      const double g = dy[r * m.P + o];
      std::vector<std::size_t> reals, ties;
      for (const auto &e : m.windows[o])
        if (e) {
          reals.push_back(*e);
          if (x[r * m.F + *e] == y[r * m.P + o])
            ties.push_back(*e);
        }
      if (p.poolingType == PoolingType::MAX) {
        if (rule == Rule::First && !ties.empty())
          dx[r * m.F + ties.front()] += g;
        else if (rule != Rule::First)
          for (std::size_t e : ties)
            dx[r * m.F + e] += rule == Rule::Scaled ? g / double(ties.size()) : g;
      } else {
        const double share =
            p.poolingType == PoolingType::SUM ? g : g / double(includePadding ? m.K : reals.size());
        for (std::size_t e : reals)
          dx[r * m.F + e] += share;
      }
    }
  return dx;
}

// Aspen ----------------------------------------------------------------------------------------

struct Run {
  std::vector<double> y, dx;
};

Run runAspen(const PoolParams &p, const std::vector<double> &x, const std::vector<double> &dy,
             bool scaled, const OptionFlags &options) {
  Graph g(Target::createGeneric(3, 2));
  nn::addCodelets(g);
  std::vector<std::size_t> shape = {p.batchSize, p.numChannels};
  shape.insert(shape.end(), p.inputFieldShape.begin(), p.inputFieldShape.end());
  const Tensor in = g.addVariable(p.dType, shape, "in");
  util::mapTensorLinearly(g, in);
  program::Sequence prog;
  const Tensor out = nn::pooling::pool(g, p, in, prog, "pool", options);
  const Tensor outGrad = g.addVariable(p.dType, out.shape(), "outGrad");
  util::mapTensorLinearly(g, outGrad);
  const Tensor inGrad =
      p.poolingType == PoolingType::MAX
          ? nn::pooling::poolInputGradient(g, p, in, out, outGrad, scaled, prog, "bwd", options)
          : nn::pooling::poolInputGradient(g, p, 1, outGrad, prog, "bwd", options);
  g.createHostWrite("in", in);
  g.createHostWrite("outGrad", outGrad);
  g.createHostRead("out", out);
  g.createHostRead("inGrad", inGrad);
  Engine e(g, prog);
  e.load(test::deviceFor(g.getTarget()));
  const auto xb = reducetest::encode(p.dType, x), dyb = reducetest::encode(p.dType, dy);
  e.writeTensor("in", xb.data(), xb.data() + xb.size());
  e.writeTensor("outGrad", dyb.data(), dyb.data() + dyb.size());
  e.run(0);
  Run r;
  std::vector<unsigned char> yb(out.numElements() * p.dType.size()),
      dxb(inGrad.numElements() * p.dType.size());
  e.readTensor("out", yb.data(), yb.data() + yb.size());
  e.readTensor("inGrad", dxb.data(), dxb.data() + dxb.size());
  r.y = reducetest::decode(p.dType, yb);
  r.dx = reducetest::decode(p.dType, dxb);
  return r;
}

void requireClose(const char *what, const std::vector<double> &got, const std::vector<double> &want,
                  Type type) {
  REQUIRE(got.size() == want.size());
  const double tol = type == HALF ? 4e-3 : 1e-6;
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO(what << "[" << i << "]: Aspen " << got[i] << ", model " << want[i]);
    if (std::isinf(want[i]))
      REQUIRE(got[i] == want[i]);
    else
      REQUIRE(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

// x from `values` (or uniform in [-1, 1]), rounded to the type; both passes against the model.
void check(const PoolParams &p, Rule rule, bool includePadding, unsigned seed,
           std::vector<double> x = {}) {
  std::ostringstream text;
  text << p;
  INFO(text.str() << " rule " << int(rule) << " includePadding " << includePadding);
  const Model m = modelOf(p);
  REQUIRE(p.getOutputFieldShape() == m.outShape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const std::size_t rows = p.batchSize * p.numChannels;
  if (x.empty()) {
    x.resize(rows * m.F);
    for (double &v : x)
      v = u(rng);
  }
  std::vector<double> dy(rows * m.P);
  for (double &v : dy)
    v = u(rng);
  x = reducetest::rounded(p.dType, x);
  dy = reducetest::rounded(p.dType, dy);
  OptionFlags options;
  if (includePadding)
    options.set("avgIncludePadding", "true");
  if (rule == Rule::First)
    options.set("maxPoolGradient", "first");
  const Run r = runAspen(p, x, dy, rule == Rule::Scaled, options);
  // The model's forward from the same rounded inputs, rounded as Aspen's output is.
  const std::vector<double> y = modelForward(p, m, x, includePadding);
  requireClose("pooled", r.y, y, p.dType);
  // The backward's ties compare Aspen's own (rounded) output, as the vertices do.
  requireClose("input gradient", r.dx,
               modelBackward(p, m, x, reducetest::rounded(p.dType, y), dy, rule, includePadding),
               p.dType);
}

PoolParams params(PoolingType type, std::vector<std::size_t> field, std::vector<std::size_t> kernel,
                  std::vector<unsigned> stride, std::vector<int> lower, std::vector<int> upper,
                  std::size_t channels = 2, std::size_t batch = 2, Type dType = FLOAT) {
  return PoolParams(type, std::move(field), std::move(kernel), std::move(stride),
                    std::move(lower), std::move(upper), channels, batch, dType);
}

} // namespace

TEST_CASE("pooling matches the model: kinds, strides 1-3, padding and truncation, 2-D",
          "[correctness][pooling]") {
  unsigned seed = 1;
  for (const Type type : {FLOAT, HALF})
    for (const PoolingType kind : {PoolingType::MAX, PoolingType::AVG, PoolingType::SUM})
      for (const unsigned stride : {1u, 2u, 3u})
        for (const auto &[lower, upper] :
             {std::pair<int, int>{0, 0}, {1, 1}, {0, 2}, {2, 1}, {-1, 1}, {1, -2}}) {
          const PoolParams p =
              params(kind, {7, 6}, {3, 2}, {stride, stride}, {lower, 0}, {upper, 1}, 3, 2, type);
          check(p, Rule::All, false, seed++);
          if (kind == PoolingType::AVG)
            check(p, Rule::All, true, seed++);
          if (kind == PoolingType::MAX) {
            check(p, Rule::Scaled, false, seed++);
            check(p, Rule::First, false, seed++);
          }
        }
}

TEST_CASE("pooling matches the model on 1-D and 3-D fields and kernels of 1", "[correctness][pooling]") {
  for (const PoolingType kind : {PoolingType::MAX, PoolingType::AVG, PoolingType::SUM}) {
    check(params(kind, {11}, {4}, {3}, {1}, {2}, 2, 1), Rule::All, false, 20);
    check(params(kind, {5, 4, 6}, {2, 3, 2}, {2, 1, 2}, {1, 0, 1}, {0, 1, 1}, 2, 2), Rule::All,
          kind == PoolingType::AVG, 21);
    check(params(kind, {5, 5}, {1, 1}, {1, 2}, {0, 0}, {0, 0}, 1, 3), Rule::All, false, 22);
  }
}

TEST_CASE("max pooling's gradient on ties: every tie, scaled, or the first", "[correctness][pooling]") {
  // After a ReLU: half the inputs are 0, so many windows' maximum 0 is tied, and some windows
  // hold only zeros.
  const PoolParams p = params(PoolingType::MAX, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 2, 2);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> x(2 * 2 * 64);
  for (double &v : x)
    v = std::max(0.0, u(rng)) * (u(rng) > 0.3 ? 1.0 : 0.0);
  for (const Rule rule : {Rule::All, Rule::Scaled, Rule::First})
    for (const Type type : {FLOAT, HALF}) {
      PoolParams typed = p;
      typed.dType = type;
      check(typed, rule, false, 30 + unsigned(rule), x);
    }
  // Rows of 18 windows, and three consecutive rows wholly inside the field (padded above and
  // below only): the host vertex takes a row's windows 16 at a time (codelets/nn/pooling.cpp),
  // so runs end mid-row and at a row's end, not in the next row.
  const PoolParams wide =
      params(PoolingType::MAX, {9, 37}, {3, 3}, {2, 2}, {1, 0}, {1, 0}, 2, 1);
  std::vector<double> xw(2 * 9 * 37);
  for (double &v : xw)
    v = std::max(0.0, u(rng)) * (u(rng) > 0.3 ? 1.0 : 0.0);
  for (const Rule rule : {Rule::All, Rule::Scaled, Rule::First})
    check(wide, rule, false, 40 + unsigned(rule), xw);
  // The rules differ on these inputs: a tied window's gradient is counted once with "first",
  // once in all with "scaled", and once a tie with "all".
  const Model m = modelOf(p);
  const std::vector<double> y = modelForward(p, m, x, false);
  const std::vector<double> ones(y.size(), 1.0);
  double all = 0, scaled = 0, first = 0;
  for (double v : modelBackward(p, m, x, y, ones, Rule::All, false))
    all += v;
  for (double v : modelBackward(p, m, x, y, ones, Rule::Scaled, false))
    scaled += v;
  for (double v : modelBackward(p, m, x, y, ones, Rule::First, false))
    first += v;
  CHECK(std::abs(first - double(y.size())) < 1e-9);
  CHECK(std::abs(scaled - double(y.size())) < 1e-9);
  CHECK(all > first + 10);
}

TEST_CASE("pool parameters: output shapes by hand, popnn's names, bad parameters refused",
          "[correctness][pooling]") {
  // 224 with a 3x3/2 window and padding 1: (224 + 2 - 3) / 2 + 1 = 112 (ResNet's max pool).
  const PoolParams resnet = params(PoolingType::MAX, {224, 224}, {3, 3}, {2, 2}, {1, 1}, {1, 1});
  CHECK(resnet.getOutputFieldShape() == std::vector<std::size_t>{112, 112});
  // Truncation: 10 - 2 - 1 = 7 elements, kernel 2 stride 2: 3 outputs.
  CHECK(nn::pooling::getOutputFieldShape(
            params(PoolingType::SUM, {10}, {2}, {2}, {-2}, {-1})) == std::vector<std::size_t>{3});
  CHECK(std::string(popnn::pooling::asString(popnn::PoolingType::AVG)) == "AVG");
  // Flops: a 2x2/2 max pool over 4x4, one channel, one image: 4 windows of 4 reads.
  CHECK(nn::pooling::getFwdFlops(params(PoolingType::MAX, {4, 4}, {2, 2}, {2, 2}, {0, 0}, {0, 0},
                                        1, 1)) == 16);
  CHECK(nn::pooling::getFwdFlops(params(PoolingType::AVG, {4, 4}, {2, 2}, {2, 2}, {0, 0}, {0, 0},
                                        1, 1)) == 20);
  CHECK_THROWS_AS(params(PoolingType::MAX, {4, 4}, {0, 2}, {1, 1}, {0, 0}, {0, 0}).validate(),
                  invalid_option);
  CHECK_THROWS_AS(params(PoolingType::MAX, {4, 4}, {5, 2}, {1, 1}, {0, 0}, {0, 0}).validate(),
                  invalid_option);
  CHECK_THROWS_AS(params(PoolingType::MAX, {4, 4}, {2}, {1, 1}, {0, 0}, {0, 0}).validate(),
                  invalid_option);
  CHECK_THROWS_AS(params(PoolingType::MAX, {4}, {1}, {1}, {-3}, {-1}).validate(), invalid_option);
  CHECK_THROWS_AS(
      params(PoolingType::MAX, {4}, {1}, {1}, {0}, {0}, 1, 1, INT).validate(), invalid_option);
}

TEST_CASE("max pooling propagates NaN wherever it sits in a window, and keeps infinities",
          "[correctness][pooling]") {
  // One channel 2 x 6 pooled 2 x 2 / 2: windows [0,1,6,7], [2,3,8,9], [4,5,10,11].
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x = {nan, 5,   1, 2,   -inf, -inf,
                                 3,   4,   7, nan, -inf, -inf};
  for (const Type type : {FLOAT, HALF}) {
    INFO(type.toString());
    const PoolParams p = params(PoolingType::MAX, {2, 6}, {2, 2}, {2, 2}, {0, 0}, {0, 0}, 1, 1, type);
    const Run r = runAspen(p, x, std::vector<double>(3, 1.0), false, {});
    REQUIRE(r.y.size() == 3);
    CHECK(std::isnan(r.y[0])); // NaN first, larger values after it: it stays
    CHECK(std::isnan(r.y[1])); // NaN last, after the window's maximum: it wins
    CHECK(r.y[2] == -inf);     // all -infinity: -infinity, not the empty window's value
  }
}
