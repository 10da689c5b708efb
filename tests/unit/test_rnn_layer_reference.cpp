// The double-precision vanilla RNN host model that rnn_layer checks Aspen against
// (tools/rnnref/Vanilla.hpp): one hand-computed step, and every gradient of
// backward() (the initial state's included) against central finite differences of forward(),
// for each non-linearity the layer allows.
#include "rnnref/Vanilla.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

using namespace rnnlayerref;

namespace {

std::vector<double> randomVector(std::size_t n, unsigned seed, double scale = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double &x : v)
    x = scale * u(rng);
  return v;
}

RnnData randomData(const RnnModel &m, unsigned seed) {
  const double w = 1.0 / std::sqrt(double(m.H));
  return {randomVector(m.T * m.B * m.I, seed), randomVector(m.B * m.H, seed + 1000),
          randomVector(m.I * m.H, seed + 2000, w), randomVector(m.H * m.H, seed + 3000, w),
          randomVector(m.H, seed + 4000)};
}

double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (std::size_t k = 0; k < a.size(); ++k)
    s += a[k] * b[k];
  return s;
}

// sum(outputGrad * output) + sum(finalGrad * finalOutput)
double objective(const RnnModel &m, const RnnData &d, const std::vector<double> &outputGrad,
                 const std::vector<double> &finalGrad) {
  const RnnForward f = forward(m, d);
  return dot(outputGrad, f.output) + (finalGrad.empty() ? 0.0 : dot(finalGrad, f.finalOutput));
}

// Every gradient of backward() against central differences of the objective, with or without
// a gradient of the final state.
void checkGradients(const RnnModel &m, const RnnData &d, unsigned seed = 7,
                    bool withFinalGrad = false) {
  const std::vector<double> outputGrad = randomVector(m.T * m.B * m.H, seed);
  const std::vector<double> finalGrad =
      withFinalGrad ? randomVector(m.B * m.H, seed + 1) : std::vector<double>{};
  const RnnGrads g = backward(m, d, forward(m, d), outputGrad, finalGrad);
  const struct {
    const char *name;
    std::vector<double> RnnData::*value;
    const std::vector<double> &grad;
  } params[] = {{"input", &RnnData::input, g.inputGrad},
                {"initialOutput", &RnnData::initialOutput, g.initialOutputGrad},
                {"inputWeights", &RnnData::inputWeights, g.inputWeightsGrad},
                {"outputWeights", &RnnData::outputWeights, g.outputWeightsGrad},
                {"biases", &RnnData::biases, g.biasesGrad}};
  constexpr double h = 1e-6, tol = 1e-6;
  for (const auto &p : params) {
    REQUIRE(p.grad.size() == (d.*p.value).size());
    for (std::size_t k = 0; k < p.grad.size(); ++k) {
      RnnData plus = d, minus = d;
      (plus.*p.value)[k] += h;
      (minus.*p.value)[k] -= h;
      const double numeric = (objective(m, plus, outputGrad, finalGrad) -
                              objective(m, minus, outputGrad, finalGrad)) /
                             (2 * h);
      INFO(p.name << "[" << k << "]: backward " << p.grad[k] << ", finite difference "
                  << numeric);
      CHECK(std::abs(numeric - p.grad[k]) <= tol * std::max(1.0, std::abs(p.grad[k])));
    }
  }
}

} // namespace

TEST_CASE("RNN reference: one hand-computed step", "[unit][rnn]") {
  // T=1, B=1, I=2, H=2: a = x.Wff + y0.Wfb + b
  //   x = [1, 2], Wff = [[0.1, 0.2], [0.3, -0.4]] -> x.Wff = [0.7, -0.6]
  //   y0 = [0.5, -1], Wfb = [[0.2, 0], [0.1, 0.3]] -> y0.Wfb = [0, -0.3]
  //   b = [0.05, 0.1] -> a = [0.75, -0.8]
  RnnModel m;
  m.T = 1, m.B = 1, m.I = 2, m.H = 2;
  const RnnData d{{1, 2}, {0.5, -1}, {0.1, 0.2, 0.3, -0.4}, {0.2, 0, 0.1, 0.3}, {0.05, 0.1}};
  const double a0 = 0.75, a1 = -0.8;
  const std::vector<double> dy = {1.0, -2.0};

  SECTION("tanh: values and every gradient") {
    m.nl = Activation::tanh;
    const RnnForward f = forward(m, d);
    REQUIRE(f.preActivation[0] == Approx(a0));
    REQUIRE(f.preActivation[1] == Approx(a1));
    REQUIRE(f.output[0] == Approx(std::tanh(a0)));
    REQUIRE(f.output[1] == Approx(std::tanh(a1)));
    const RnnGrads g = backward(m, d, f, dy);
    const double t0 = std::tanh(a0), t1 = std::tanh(a1);
    const double d0 = (1 - t0 * t0) * 1.0, d1 = (1 - t1 * t1) * -2.0; // delta
    CHECK(g.biasesGrad[0] == Approx(d0));
    CHECK(g.biasesGrad[1] == Approx(d1));
    // dx = delta . Wff^T
    CHECK(g.inputGrad[0] == Approx(0.1 * d0 + 0.2 * d1));
    CHECK(g.inputGrad[1] == Approx(0.3 * d0 - 0.4 * d1));
    // dy0 = delta . Wfb^T
    CHECK(g.initialOutputGrad[0] == Approx(0.2 * d0 + 0 * d1));
    CHECK(g.initialOutputGrad[1] == Approx(0.1 * d0 + 0.3 * d1));
    // dWff = x^T delta, dWfb = y0^T delta
    CHECK(g.inputWeightsGrad[0] == Approx(1 * d0));
    CHECK(g.inputWeightsGrad[1] == Approx(1 * d1));
    CHECK(g.inputWeightsGrad[2] == Approx(2 * d0));
    CHECK(g.inputWeightsGrad[3] == Approx(2 * d1));
    CHECK(g.outputWeightsGrad[0] == Approx(0.5 * d0));
    CHECK(g.outputWeightsGrad[1] == Approx(0.5 * d1));
    CHECK(g.outputWeightsGrad[2] == Approx(-1 * d0));
    CHECK(g.outputWeightsGrad[3] == Approx(-1 * d1));
  }
  SECTION("the other non-linearities") {
    m.nl = Activation::sigmoid;
    CHECK(forward(m, d).output[1] == Approx(1 / (1 + std::exp(0.8))));
    m.nl = Activation::hard_sigmoid;
    CHECK(forward(m, d).output[0] == Approx(0.65));
    CHECK(forward(m, d).output[1] == Approx(0.34));
    m.nl = Activation::relu;
    CHECK(forward(m, d).output[0] == Approx(0.75));
    CHECK(forward(m, d).output[1] == 0.0);
    m.nl = Activation::softmax;
    const RnnForward f = forward(m, d);
    const double e0 = std::exp(a0), e1 = std::exp(a1);
    CHECK(f.output[0] == Approx(e0 / (e0 + e1)));
    CHECK(f.output[1] == Approx(e1 / (e0 + e1)));
    // softmax: delta_i = y_i (dy_i - sum_j y_j dy_j)
    const RnnGrads g = backward(m, d, f, dy);
    const double s = f.output[0] * 1.0 + f.output[1] * -2.0;
    CHECK(g.biasesGrad[0] == Approx(f.output[0] * (1.0 - s)));
    CHECK(g.biasesGrad[1] == Approx(f.output[1] * (-2.0 - s)));
  }
}

TEST_CASE("RNN reference: gradients match finite differences", "[unit][rnn]") {
  RnnModel m;
  m.T = 4, m.B = 3, m.I = 3, m.H = 5;
  const Activation kinds[] = {Activation::sigmoid, Activation::hard_sigmoid, Activation::relu,
                              Activation::tanh, Activation::softmax};
  for (Activation nl : kinds) {
    SECTION(rnnref::activationName(nl)) {
      m.nl = nl;
      checkGradients(m, randomData(m, 11));
    }
  }
  SECTION("one step, one row") {
    m.T = 1, m.B = 1;
    checkGradients(m, randomData(m, 3));
  }
  SECTION("lengths (0, 1 and past T) and the final state's gradient") {
    m.B = 4;
    m.timeSteps = {2, 0, 1, 9};
    for (Activation nl : {Activation::tanh, Activation::relu, Activation::softmax}) {
      m.nl = nl;
      checkGradients(m, randomData(m, 5), 9, true);
    }
    m.timeSteps = {3}; // one length for every row
    checkGradients(m, randomData(m, 6), 9, true);
  }
}

TEST_CASE("RNN reference: rows past their length keep their state", "[unit][rnn]") {
  RnnModel m;
  m.T = 3, m.B = 3, m.I = 2, m.H = 2;
  const RnnData d = randomData(m, 21);
  const RnnForward full = forward(m, d);
  m.timeSteps = {3, 1, 0};
  const RnnForward f = forward(m, d);
  for (std::size_t j = 0; j < m.H; ++j) {
    // row 0 runs every step: the same outputs, its last one the final state
    for (std::size_t t = 0; t < m.T; ++t)
      CHECK(f.output[(t * m.B) * m.H + j] == full.output[(t * m.B) * m.H + j]);
    CHECK(f.finalOutput[j] == full.output[(2 * m.B) * m.H + j]);
    // row 1 stops after step 0: zeros after it, y_0 its final state
    CHECK(f.output[(0 * m.B + 1) * m.H + j] == full.output[(0 * m.B + 1) * m.H + j]);
    CHECK(f.output[(1 * m.B + 1) * m.H + j] == 0.0);
    CHECK(f.output[(2 * m.B + 1) * m.H + j] == 0.0);
    CHECK(f.finalOutput[m.H + j] == full.output[(0 * m.B + 1) * m.H + j]);
    // row 2 runs nothing: zeros, the initial state its final one
    for (std::size_t t = 0; t < m.T; ++t)
      CHECK(f.output[(t * m.B + 2) * m.H + j] == 0.0);
    CHECK(f.finalOutput[2 * m.H + j] == d.initialOutput[2 * m.H + j]);
  }
}

TEST_CASE("RNN reference: bad arguments are reported", "[unit][rnn]") {
  RnnModel m;
  m.T = 2, m.B = 1, m.I = 2, m.H = 2;
  RnnData d = randomData(m, 1);
  m.nl = Activation::gelu;
  CHECK_THROWS_WITH(forward(m, d), Catch::Contains("gelu"));
  m.nl = Activation::tanh;
  d.biases.push_back(0);
  CHECK_THROWS_WITH(forward(m, d), Catch::Contains("biases"));
}
