// aspen::nn non-linearities and their gradients against double-precision host models, with edge
// values, for float and half, on 1, 7 and 1472 tiles and with 1 and 4 CPU threads.
#include "test_nn_harness.hpp"
#include "test_nn_reference.hpp"

#include <aspen/nn/NonLinearity.hpp>
#include <aspen/util/Broadcast.hpp>

using namespace nntest;
using aspen::nn::NonLinearityType;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Tolerance {
  double atol, rtol;
};
Tolerance toleranceFor(Type type) {
  return type == HALF ? Tolerance{4e-3, 4e-3} : Tolerance{2e-5, 1e-4};
}

std::vector<NonLinearityType> elementwiseKinds() {
  return {
#define ASPEN_NN_TEST_KIND(name, helper, takesInput) NonLinearityType::name,
      ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(ASPEN_NN_TEST_KIND)
#undef ASPEN_NN_TEST_KIND
  };
}
std::vector<NonLinearityType> softmaxKinds() {
  return {
#define ASPEN_NN_TEST_KIND(name, helper, stable, scaled) NonLinearityType::name,
      ASPEN_NN_SOFTMAX_NON_LINEARITIES(ASPEN_NN_TEST_KIND)
#undef ASPEN_NN_TEST_KIND
  };
}

const Values kEdges{0.0,   -0.0, 1e-40, -1e-40, 1e-5,  2.5,  -2.5,  1.0,  -1.0, 20.0,
                    -20.0, 100,  -100,  1e30,   -1e30, kInf, -kInf, kNaN, 11.0, -11.0};

// Softmax inputs: random rows, and rows of large values that only the stable kinds survive.
const Shape kRowsShape{4, 37};
const Shape kBigShape{2, 5};
const Values kBig{1000, 999, -1000, 0, 998, -500, -501, -499.5, -2000, -500};

// Builds every non-linearity, in and out of place, with gradients, on one graph.
Harness buildAll(const Target &target, Type type) {
  Harness h(target);
  const Shape shape{3, 37};
  const Values x = roundAll(type, randomValues(111, -6, 6, 1));
  const Values g = roundAll(type, randomValues(111, -1, 1, 2));
  Tensor tx = h.input(type, shape, "x", x);
  Tensor tg = h.input(type, shape, "g", g);
  Tensor te = h.input(type, {kEdges.size()}, "e", roundAll(type, kEdges));
  Tensor tones = h.input(type, {kEdges.size()}, "ones", Values(kEdges.size(), 1.0));
  for (NonLinearityType kind : elementwiseKinds()) {
    const std::string name = nn::asString(kind);
    Tensor y = nn::nonLinearity(h.graph, kind, tx, h.prog, name);
    h.output("y" + name, y);
    Tensor copy = util::duplicate(h.graph, tx, h.prog);
    nn::nonLinearityInPlace(h.graph, kind, copy, h.prog);
    h.output("yi" + name, copy);
    const bool takesInput = nn::gradientTakesInput(kind);
    const auto exact = nn::NonLinearityGradient::Exact;
    h.output("dx" + name, nn::nonLinearityInputGradient(h.graph, kind, takesInput ? tx : y, tg,
                                                        exact, h.prog));
    // The default derivative: popnn's (differs from the exact one for HARD_SIGMOID only).
    h.output("dxp" + name,
             nn::nonLinearityInputGradient(h.graph, kind, takesInput ? tx : y, tg, h.prog));
    Tensor ye = nn::nonLinearity(h.graph, kind, te, h.prog);
    h.output("ye" + name, ye);
    h.output("dxe" + name, nn::nonLinearityInputGradient(h.graph, kind, takesInput ? te : ye,
                                                         tones, exact, h.prog));
  }
  const Values xs = roundAll(type, randomValues(4 * 37, -6, 6, 3));
  const Values gs = roundAll(type, randomValues(4 * 37, -1, 1, 4));
  Tensor txs = h.input(type, kRowsShape, "xs", xs);
  Tensor tgs = h.input(type, kRowsShape, "gs", gs);
  Tensor tbig = h.input(type, kBigShape, "big", roundAll(type, kBig));
  Tensor t3 = h.input(type, {2, 2, 5}, "x3", roundAll(type, randomValues(20, -3, 3, 5)));
  Tensor t1 = h.input(type, {7}, "x1", roundAll(type, randomValues(7, -3, 3, 6)));
  for (NonLinearityType kind : softmaxKinds()) {
    const std::string name = nn::asString(kind);
    Tensor ys = nn::nonLinearity(h.graph, kind, txs, h.prog);
    h.output("ys" + name, ys);
    Tensor copy = util::duplicate(h.graph, txs, h.prog);
    nn::nonLinearityInPlace(h.graph, kind, copy, h.prog);
    h.output("ysi" + name, copy);
    h.output("dxs" + name, nn::nonLinearityInputGradient(h.graph, kind, ys, tgs, h.prog));
    h.output("ybig" + name, nn::nonLinearity(h.graph, kind, tbig, h.prog));
    h.output("y3" + name, nn::nonLinearity(h.graph, kind, t3, h.prog));
    h.output("y1" + name, nn::nonLinearity(h.graph, kind, t1, h.prog));
  }
  return h;
}

// Softmax of each row of `x` (rows of `cols`), scaled.
Values softmaxRows(const Values &x, std::size_t cols, double scale) {
  Values y;
  for (std::size_t r = 0; r < x.size() / cols; ++r) {
    const auto row = refSoftmax(Values(x.begin() + r * cols, x.begin() + (r + 1) * cols), scale);
    y.insert(y.end(), row.begin(), row.end());
  }
  return y;
}

void checkResults(Type type, std::map<std::string, Values> &out) {
  const Tolerance tol = toleranceFor(type);
  const Values x = roundAll(type, randomValues(111, -6, 6, 1));
  const Values g = roundAll(type, randomValues(111, -1, 1, 2));
  const Values e = roundAll(type, kEdges);
  for (NonLinearityType kind : elementwiseKinds()) {
    const std::string name = nn::asString(kind);
    Values y, dx, ye, dxe;
    for (std::size_t i = 0; i < x.size(); ++i) {
      y.push_back(roundTo(type, refForward(kind, x[i])));
      dx.push_back(refDerivative(kind, x[i]) * g[i]);
    }
    for (double v : e) {
      ye.push_back(roundTo(type, refForward(kind, v)));
      dxe.push_back(refDerivative(kind, v));
    }
    requireClose(out["y" + name], y, tol.atol, tol.rtol, "forward " + name);
    REQUIRE(sameValues(out["yi" + name], out["y" + name]));
    requireClose(out["dx" + name], dx, tol.atol, tol.rtol, "gradient " + name);
    if (kind == NonLinearityType::HARD_SIGMOID) {
      // popnn's: 0.2 g wherever |y| <= 2.5, which every output y in [0, 1] is.
      Values dxp;
      for (std::size_t i = 0; i < x.size(); ++i)
        dxp.push_back(0.2 * g[i]);
      requireClose(out["dxp" + name], dxp, tol.atol, tol.rtol, "popnn gradient " + name);
    } else {
      REQUIRE(sameValues(out["dxp" + name], out["dx" + name]));
    }
    requireClose(out["ye" + name], ye, tol.atol, tol.rtol, "edge forward " + name);
    requireClose(out["dxe" + name], dxe, tol.atol, tol.rtol, "edge gradient " + name);
  }
  const Values xs = roundAll(type, randomValues(4 * 37, -6, 6, 3));
  const Values gs = roundAll(type, randomValues(4 * 37, -1, 1, 4));
  for (NonLinearityType kind : softmaxKinds()) {
    const std::string name = nn::asString(kind);
    const double scale = nn::getNonLinearityScaling(kind);
    const Values ys = softmaxRows(xs, 37, scale);
    requireClose(out["ys" + name], ys, tol.atol * scale, tol.rtol, "softmax " + name);
    REQUIRE(sameValues(out["ysi" + name], out["ys" + name]));
    for (std::size_t r = 0; r < 4; ++r) {
      double sum = 0;
      for (std::size_t c = 0; c < 37; ++c)
        sum += out["ys" + name][r * 37 + c];
      REQUIRE(close(sum, scale, 0, type == HALF ? 1e-2 : 1e-5));
    }
    // popnn's dL/dx = y (g - sum(g y)) from the reference y, for SOFTMAX_SCALED too (whose true
    // gradient would divide the sum by S): its values reach S^2, past half's range (infinity).
    Values dxs;
    for (std::size_t r = 0; r < 4; ++r) {
      double dot = 0;
      for (std::size_t c = 0; c < 37; ++c)
        dot += gs[r * 37 + c] * ys[r * 37 + c];
      for (std::size_t c = 0; c < 37; ++c)
        dxs.push_back(roundTo(type, ys[r * 37 + c] * (gs[r * 37 + c] - dot)));
    }
    requireClose(out["dxs" + name], dxs, tol.atol * scale * scale, tol.rtol * 4,
                 "softmax gradient " + name);
    if (kind == NonLinearityType::SOFTMAX_SCALED && type == FLOAT) {
      // Not the true gradient: the two differ by far more than rounding.
      double dot = 0;
      for (std::size_t c = 0; c < 37; ++c)
        dot += gs[c] * ys[c];
      const double trueGradient = ys[0] * (gs[0] - dot / scale);
      REQUIRE_FALSE(close(out["dxs" + name][0], trueGradient, tol.atol * scale, tol.rtol * 4));
    }
    if (kind == NonLinearityType::SOFTMAX) {
      // exp(1000) overflows: the plain softmax is documented to give NaN there.
      REQUIRE(std::isnan(out["ybig" + name][0]));
    } else {
      requireClose(out["ybig" + name], softmaxRows(roundAll(type, kBig), 5, scale),
                   tol.atol * scale, tol.rtol, "large inputs " + name);
    }
    requireClose(out["y3" + name],
                 softmaxRows(roundAll(type, randomValues(20, -3, 3, 5)), 5, scale),
                 tol.atol * scale, tol.rtol, "rank 3 " + name);
    requireClose(out["y1" + name], softmaxRows(roundAll(type, randomValues(7, -3, 3, 6)), 7, scale),
                 tol.atol * scale, tol.rtol, "rank 1 " + name);
  }
}

} // namespace

TEST_CASE("non-linearities and gradients match the host model on any tiles and threads",
          "[correctness][nn]") {
  for (Type type : {FLOAT, HALF}) {
    std::map<std::string, Values> first;
    for (auto &[targetName, target] : targets()) {
      INFO(type << " on " << targetName);
      Harness h = buildAll(target, type);
      auto one = h.run(1);
      auto four = h.run(4);
      for (auto &[name, values] : one) {
        INFO(name);
        REQUIRE(sameValues(values, four[name]));
        if (!first.empty())
          REQUIRE(sameValues(values, first[name]));
      }
      if (first.empty()) {
        checkResults(type, one);
        first = one;
      }
    }
  }
}

TEST_CASE("non-linearities of empty tensors and scalars", "[correctness][nn]") {
  Harness h(Target::createGeneric(3));
  Tensor empty = h.input(FLOAT, {0, 4}, "empty", {});
  Tensor scalar = h.input(FLOAT, {}, "scalar", {-0.5});
  Tensor emptyRows = nn::nonLinearity(h.graph, NonLinearityType::SOFTMAX_STABLE, empty, h.prog);
  REQUIRE(emptyRows.shape() == Shape{0, 4});
  h.output("relu", nn::relu(h.graph, scalar, h.prog));
  h.output("sigmoid", nn::sigmoid(h.graph, scalar, h.prog));
  auto out = h.run(2);
  REQUIRE(out["relu"] == Values{0.0});
  REQUIRE(close(out["sigmoid"][0], 1 / (1 + std::exp(0.5)), 1e-7, 1e-6));
}

TEST_CASE("softmax of long rows mapped linearly over many tiles", "[correctness][nn]") {
  const std::size_t rows = 16, cols = 3000;
  const Values x = roundAll(FLOAT, randomValues(rows * cols, -20, 20, 31));
  Harness h(Target::createModel("ipu2"));
  Tensor t = h.input(FLOAT, {rows, cols}, "x", x, false);
  h.output("y", nn::softmaxStable(h.graph, t, h.prog));
  auto out = h.run(4);
  const Values y = softmaxRows(x, cols, 1.0);
  requireClose(out["y"], y, 1e-9, 1e-4, "long rows");
}

TEST_CASE("element-wise non-linearities added to a caller's compute set", "[correctness][nn]") {
  Harness h(Target::createGeneric(7));
  const Values x = randomValues(50, -3, 3, 41), g = randomValues(50, -1, 1, 42);
  Tensor tx = h.input(FLOAT, {5, 10}, "x", x);
  Tensor tg = h.input(FLOAT, {5, 10}, "g", g);
  ComputeSet forward = h.graph.addComputeSet("forward");
  nn::nonLinearityInPlace(h.graph, NonLinearityType::SWISH, tx, forward);
  ComputeSet backward = h.graph.addComputeSet("backward");
  Tensor dx = nn::nonLinearityInputGradient(h.graph, NonLinearityType::TANH, tx, tg, backward);
  h.prog.add(program::Execute(forward));
  h.prog.add(program::Execute(backward));
  h.output("y", tx);
  h.output("dx", dx);
  auto out = h.run(3);
  Values y, d;
  for (std::size_t i = 0; i < x.size(); ++i) {
    y.push_back(refForward(NonLinearityType::SWISH, x[i]));
    // dx treats the swish output as a tanh output: g (1 - y^2).
    d.push_back(g[i] * (1 - y.back() * y.back()));
  }
  requireClose(out["y"], y, 1e-6, 1e-5, "swish in a compute set");
  requireClose(out["dx"], d, 1e-5, 1e-4, "tanh gradient in a compute set");
}
