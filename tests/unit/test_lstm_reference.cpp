// The double-precision LSTM host model that lstm_layer checks Aspen against
// (tools/rnnref/Lstm.hpp): hand-computed values, every gradient of backward()
// against central finite differences of forward(), the variable-length semantics of
// docs/recurrent.md, the activations they share with the GRU model
// (tools/rnnref/Common.hpp) and the .npy writer that lstm_layer --save-tensors uses.
#include "rnnref/Lstm.hpp"
#include "../../tools/rnn_common/NpyWriter.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace lstmref;
using namespace rnnref;

namespace {

LstmData randomData(const LstmModel &m, unsigned seed, double biasScale = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto fill = [&](std::size_t n, double scale) {
    std::vector<double> v(n);
    for (double &x : v)
      x = scale * u(rng);
    return v;
  };
  const double w = 1.0 / std::sqrt(double(m.H));
  LstmData d{fill(m.T * m.B * m.I, 1.0), fill(m.B * m.R(), 1.0),   fill(m.B * m.H, 1.0),
             fill(4 * m.I * m.H, w),     fill(4 * m.R() * m.H, w), fill(4 * m.H, biasScale)};
  d.projection = fill(m.H * m.P, w);
  return d;
}

std::vector<double> randomVector(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double &x : v)
    x = u(rng);
  return v;
}

double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (std::size_t k = 0; k < a.size() && k < b.size(); ++k)
    s += a[k] * b[k];
  return s;
}

// The scalar whose gradient backward() computes.
double loss(const LstmModel &m, const LstmData &d, const std::vector<double> &outputGrad,
            const LstmStateGrad &stateGrad) {
  const LstmForward f = forward(m, d);
  return dot(outputGrad, f.output) + dot(stateGrad.output, f.finalOutput) +
         dot(stateGrad.cellState, f.finalCellState);
}

// Compares every gradient of backward() with central differences of loss(); returns the
// number of elements checked.
// Against finite differences, so with hard_sigmoid's exact derivative.
std::size_t checkGradients(const LstmModel &model, const LstmData &d,
                           const LstmStateGrad &stateGrad = {}, unsigned seed = 7) {
  LstmModel m = model;
  m.hardSigmoidGradient = rnnref::HardSigmoidGradient::exact;
  const std::vector<double> outputGrad = randomVector(m.outputSize(), seed);
  const LstmGrads g = backward(m, d, forward(m, d), outputGrad, stateGrad);
  const struct {
    const char *name;
    std::vector<double> LstmData::*value;
    const std::vector<double> &grad;
  } params[] = {{"input", &LstmData::input, g.inputGrad},
                {"initialOutput", &LstmData::initialOutput, g.initialOutputGrad},
                {"initialCellState", &LstmData::initialCellState, g.initialCellStateGrad},
                {"inputWeights", &LstmData::inputWeights, g.inputWeightsGrad},
                {"outputWeights", &LstmData::outputWeights, g.outputWeightsGrad},
                {"biases", &LstmData::biases, g.biasesGrad},
                {"projection", &LstmData::projection, g.projectionGrad}};
  constexpr double h = 1e-6, relTol = 1e-6;
  std::size_t checked = 0;
  for (const auto &p : params) {
    REQUIRE(p.grad.size() == (d.*p.value).size());
    for (std::size_t k = 0; k < p.grad.size(); ++k) {
      LstmData plus = d, minus = d;
      (plus.*p.value)[k] += h;
      (minus.*p.value)[k] -= h;
      const double numeric =
          (loss(m, plus, outputGrad, stateGrad) - loss(m, minus, outputGrad, stateGrad)) / (2 * h);
      INFO(p.name << "[" << k << "]: backward " << p.grad[k] << ", finite difference " << numeric);
      CHECK(std::abs(numeric - p.grad[k]) <= relTol * std::max(1.0, std::abs(p.grad[k])));
      ++checked;
    }
  }
  return checked;
}

// How many pre-activations of the gates using `a` lie outside hard_sigmoid's linear range.
std::size_t saturated(const LstmModel &m, const LstmForward &f) {
  std::size_t n = 0;
  const std::size_t BH = m.B * m.H;
  for (std::size_t t = 0; t < m.T; ++t)
    for (int gate : {kForget, kInput, kOutput})
      for (std::size_t k = 0; k < BH; ++k)
        n += std::abs(f.preActivations[(t * 4 + gate) * BH + k]) > 2.5;
  return n;
}

// Row b of a [T, B, n] or [B, n] tensor over the first `steps` steps, as [steps, 1, n].
std::vector<double> rowOf(const std::vector<double> &v, std::size_t steps, std::size_t B,
                          std::size_t b, std::size_t n) {
  std::vector<double> r;
  for (std::size_t t = 0; t < steps; ++t)
    r.insert(r.end(), v.begin() + (t * B + b) * n, v.begin() + (t * B + b + 1) * n);
  return r;
}

} // namespace

TEST_CASE("LSTM reference: activation names, values and derivatives", "[unit][lstm]") {
  for (std::size_t k = 0; k < kNumActivations; ++k) {
    const auto a = static_cast<Activation>(k);
    CHECK(parseActivation(activationName(a)) == a);
  }
  CHECK(activationName(Activation::hard_sigmoid) == "hard_sigmoid");
  CHECK(activationName(Activation::gelu_erf) == "gelu_erf");
  CHECK_THROWS_WITH(parseActivation("TANH"), Catch::Contains("hard_sigmoid"));

  CHECK(forward(Activation::hard_sigmoid, 1.0) == Approx(0.7));
  CHECK(forward(Activation::hard_sigmoid, 3.0) == 1.0);
  CHECK(forward(Activation::hard_sigmoid, -3.0) == 0.0);
  CHECK(derivative(Activation::hard_sigmoid, 2.4) == 0.2);
  CHECK(derivative(Activation::hard_sigmoid, -2.4) == 0.2);
  CHECK(derivative(Activation::hard_sigmoid, 2.6) == 0.0);
  CHECK(derivative(Activation::hard_sigmoid, -2.6) == 0.0);
  // The layers' default: popnn's 0.2 wherever the output is in range, saturated inputs included.
  using rnnref::HardSigmoidGradient, rnnref::layerDerivative;
  CHECK(layerDerivative(Activation::hard_sigmoid, 2.6, HardSigmoidGradient::popnn) == 0.2);
  CHECK(layerDerivative(Activation::hard_sigmoid, -9.0, HardSigmoidGradient::popnn) == 0.2);
  CHECK(layerDerivative(Activation::hard_sigmoid, 2.6, HardSigmoidGradient::exact) == 0.0);
  CHECK(layerDerivative(Activation::tanh, 0.5, HardSigmoidGradient::popnn) ==
        derivative(Activation::tanh, 0.5));
  CHECK(forward(Activation::gelu, 1.0) == Approx(0.8411919906).epsilon(1e-9));
  CHECK(forward(Activation::gelu_erf, 1.0) == Approx(0.8413447461).epsilon(1e-9));
  CHECK(forward(Activation::swish, 1.0) == Approx(0.7310585786).epsilon(1e-9));
  CHECK_THROWS(forward(Activation::softmax, 1.0));

  for (std::size_t k = 0; k < kNumActivations; ++k) {
    const auto a = static_cast<Activation>(k);
    if (a == Activation::softmax)
      continue;
    for (double x : {-3.1, -1.7, -0.4, 0.3, 0.9, 2.2, 4.0}) {
      const double h = 1e-6;
      const double numeric = (forward(a, x + h) - forward(a, x - h)) / (2 * h);
      INFO(activationName(a) << " at " << x);
      CHECK(derivative(a, x) == Approx(numeric).epsilon(1e-7).margin(1e-9));
    }
  }

  const std::vector<double> x{0.3, -1.2, 2.0, 0.1}, dy{0.5, -0.25, 1.0, 2.0};
  std::vector<double> y(4), dx(4);
  forwardRow(Activation::softmax, x.data(), y.data(), 4);
  CHECK(y[0] + y[1] + y[2] + y[3] == Approx(1.0));
  CHECK(y[2] / y[0] == Approx(std::exp(1.7)));
  backwardRow(Activation::softmax, x.data(), y.data(), dy.data(), dx.data(), 4);
  for (std::size_t i = 0; i < 4; ++i) {
    std::vector<double> xp = x, xm = x, yp(4), ym(4);
    xp[i] += 1e-6;
    xm[i] -= 1e-6;
    forwardRow(Activation::softmax, xp.data(), yp.data(), 4);
    forwardRow(Activation::softmax, xm.data(), ym.data(), 4);
    CHECK(dx[i] == Approx((dot(dy, yp) - dot(dy, ym)) / 2e-6).epsilon(1e-7));
  }
}

// One step, B = I = H = 1: x = 0.5, h0 = 0.1, c0 = 0.2, Wi = {0.1, 0.2, 0.3, 0.4},
// Wo = {0.5, 0.6, 0.7, 0.8}, b = {0.01, 0.02, 0.03, 0.04} (f, i, g, o):
//   a_f = 0.05 + 0.05 + 0.01 = 0.11    f = sigmoid(0.11) = 0.5274723043
//   a_i = 0.10 + 0.06 + 0.02 = 0.18    i = sigmoid(0.18) = 0.5448788924
//   a_g = 0.15 + 0.07 + 0.03 = 0.25    g = tanh(0.25)    = 0.2449186624
//   a_o = 0.20 + 0.08 + 0.04 = 0.32    o = sigmoid(0.32) = 0.5793242521
//   c = 0.2 f + i g = 0.2389454704,    h = o tanh(c) = 0.1358512215
//   dh/dc0 = o (1 - tanh(c)^2) f = 0.2887737933,  dh/db_o = o (1 - o) tanh(c) = 0.0571493142
TEST_CASE("LSTM reference: one hand-computed step", "[unit][lstm]") {
  LstmModel m;
  LstmData d{
      {0.5}, {0.1}, {0.2}, {0.1, 0.2, 0.3, 0.4}, {0.5, 0.6, 0.7, 0.8}, {0.01, 0.02, 0.03, 0.04}};
  auto check = [](const LstmModel &model, const LstmData &data, std::size_t outputSlot) {
    const LstmForward f = forward(model, data);
    CHECK(f.gates[kForget] == Approx(0.5274723043).epsilon(1e-9));
    CHECK(f.gates[kInput] == Approx(0.5448788924).epsilon(1e-9));
    CHECK(f.gates[kCandidate] == Approx(0.2449186624).epsilon(1e-9));
    CHECK(f.gates[kOutput] == Approx(0.5793242521).epsilon(1e-9));
    CHECK(f.finalCellState[0] == Approx(0.2389454704).epsilon(1e-9));
    CHECK(f.finalOutput[0] == Approx(0.1358512215).epsilon(1e-9));
    REQUIRE(f.output.size() == 1);
    CHECK(f.output[0] == f.finalOutput[0]);
    const LstmGrads g = backward(model, data, f, {1.0});
    CHECK(g.initialCellStateGrad[0] == Approx(0.2887737933).epsilon(1e-9));
    CHECK(g.biasesGrad[outputSlot] == Approx(0.0571493142).epsilon(1e-9));
    // a_u is linear in b, x.Wi and h0.Wo: their gradients follow from the bias gradient.
    CHECK(g.inputWeightsGrad[outputSlot] == Approx(0.5 * g.biasesGrad[outputSlot]));
    CHECK(g.outputWeightsGrad[outputSlot] == Approx(0.1 * g.biasesGrad[outputSlot]));
  };
  check(m, d, 3);

  // The same cell with its slots in the order {output, cell, forget, input}.
  m.cellOrder = {kOutput, kCandidate, kForget, kInput};
  d.inputWeights = {0.4, 0.3, 0.1, 0.2};
  d.outputWeights = {0.8, 0.7, 0.5, 0.6};
  d.biases = {0.04, 0.03, 0.01, 0.02};
  check(m, d, 0);
}

TEST_CASE("LSTM reference: gradients match finite differences, activation pairs", "[unit][lstm]") {
  for (std::size_t k = 0; k < kNumActivations; ++k)
    for (Activation recAct : {Activation::sigmoid, Activation::hard_sigmoid, Activation::softmax}) {
      LstmModel m;
      m.T = 3, m.B = 2, m.I = 2, m.H = 3;
      m.act = static_cast<Activation>(k);
      m.recAct = recAct;
      // Wide biases push some hard_sigmoid gates into their flat parts.
      const double biasScale = recAct == Activation::hard_sigmoid ? 3.0 : 1.0;
      const LstmData d = randomData(m, 100 + unsigned(k), biasScale);
      INFO("activation " << activationName(m.act) << ", recurrent " << activationName(recAct));
      if (recAct == Activation::hard_sigmoid)
        CHECK(saturated(m, forward(m, d)) > 0);
      CHECK(checkGradients(m, d) == 12 + 6 + 6 + 24 + 36 + 12);
      if (recAct == Activation::hard_sigmoid) {
        // popnn's rule (the model's default) passes gradient through the saturated gates.
        const std::vector<double> dy = randomVector(m.outputSize(), 7);
        LstmModel exact = m;
        exact.hardSigmoidGradient = rnnref::HardSigmoidGradient::exact;
        CHECK(backward(m, d, forward(m, d), dy).inputGrad !=
              backward(exact, d, forward(exact, d), dy).inputGrad);
      }
    }
}

TEST_CASE("LSTM reference: gradients match finite differences, layer options", "[unit][lstm]") {
  LstmModel base;
  base.T = 4, base.B = 3, base.I = 3, base.H = 4;
  LstmStateGrad stateGrad{randomVector(base.B * base.H, 21), randomVector(base.B * base.H, 22)};

  SECTION("default") { checkGradients(base, randomData(base, 1)); }
  SECTION("cell orders") {
    for (std::array<int, 4> order : {std::array<int, 4>{kOutput, kCandidate, kInput, kForget},
                                     std::array<int, 4>{kInput, kOutput, kForget, kCandidate}}) {
      LstmModel m = base;
      m.cellOrder = order;
      checkGradients(m, randomData(m, 2));
    }
  }
  SECTION("last output only") {
    LstmModel m = base;
    m.outputFullSequence = false;
    checkGradients(m, randomData(m, 3));
  }
  SECTION("one length for all rows, shorter and longer than T") {
    for (unsigned length : {2u, 9u}) {
      LstmModel m = base;
      m.timeSteps = {length};
      checkGradients(m, randomData(m, 4));
    }
  }
  SECTION("a length per row, one of them zero") {
    LstmModel m = base;
    m.timeSteps = {3, 0, 6};
    checkGradients(m, randomData(m, 5));
    m.outputFullSequence = false;
    checkGradients(m, randomData(m, 6));
    m.act = Activation::softmax;
    checkGradients(m, randomData(m, 7));
  }
  SECTION("incoming final-state gradients") {
    checkGradients(base, randomData(base, 8), stateGrad);
    checkGradients(base, randomData(base, 9), {stateGrad.output, {}});
    checkGradients(base, randomData(base, 10), {{}, stateGrad.cellState});
    LstmModel m = base;
    m.outputFullSequence = false;
    m.timeSteps = {2, 4, 0};
    checkGradients(m, randomData(m, 11), stateGrad);
  }
  SECTION("a projection, P < H") {
    LstmModel m = base;
    m.P = 2;
    const LstmStateGrad projected{randomVector(m.B * m.P, 23), stateGrad.cellState};
    CHECK(checkGradients(m, randomData(m, 13), projected) ==
          m.T * m.B * m.I + m.B * (m.P + m.H) + 4 * m.H * (m.I + m.P + 1) + m.H * m.P);
    m.timeSteps = {3, 0, 6};
    m.outputFullSequence = false;
    checkGradients(m, randomData(m, 14), projected);
    // Without a projection the model is the plain layer: P = 0 leaves it unchanged, and a
    // projection by the identity's first P columns keeps those columns of m_t.
    LstmModel plain = base;
    const LstmData d = randomData(plain, 15);
    LstmModel ident = base;
    ident.P = 3;
    LstmData di = d;
    di.initialOutput.assign(base.B * 3, 0.0);
    di.outputWeights.assign(4 * 3 * base.H, 0.0);
    di.projection.assign(base.H * 3, 0.0);
    for (std::size_t j = 0; j < 3; ++j)
      di.projection[j * 3 + j] = 1.0;
    plain.I = base.I;
    LstmData dp = d;
    dp.initialOutput.assign(base.B * base.H, 0.0);
    dp.outputWeights.assign(4 * base.H * base.H, 0.0);
    const LstmForward fp = forward(plain, dp), fi = forward(ident, di);
    for (std::size_t t = 0; t < base.T; ++t)
      for (std::size_t b = 0; b < base.B; ++b)
        for (std::size_t j = 0; j < 3; ++j)
          CHECK(fi.output[(t * base.B + b) * 3 + j] ==
                fp.output[(t * base.B + b) * base.H + j]);
  }
  SECTION("ONNX's activation clip, alone and with the cell clip and a projection") {
    LstmModel m = base;
    m.activationClip = 0.45;
    const LstmData d = randomData(m, 16);
    const LstmForward f = forward(m, d);
    // Clipped inputs are there to test: pre-activations at the bound, and cell states beyond it.
    std::size_t atBound = 0, cellsBeyond = 0;
    for (double a : f.preActivations) {
      CHECK(std::abs(a) <= 0.45);
      atBound += std::abs(a) == 0.45;
    }
    for (double c : f.newCellState)
      cellsBeyond += std::abs(c) > 0.45;
    CHECK(atBound > 10);
    CHECK(cellsBeyond > 2);
    checkGradients(m, d, stateGrad);
    m.cellClip = true, m.cellClipMin = -0.8, m.cellClipMax = 0.7;
    checkGradients(m, randomData(m, 17), stateGrad);
    m.P = 2;
    m.timeSteps = {3, 0, 6};
    checkGradients(m, randomData(m, 18));
  }
  SECTION("no input weight calculation") {
    LstmModel m = base;
    m.doInputWeightCalc = false;
    const LstmData d = randomData(m, 12);
    checkGradients(m, d);
    const LstmGrads g = backward(m, d, forward(m, d), randomVector(m.outputSize(), 1));
    CHECK(g.inputGrad == std::vector<double>(g.inputGrad.size(), 0.0));
    CHECK(g.inputWeightsGrad == std::vector<double>(g.inputWeightsGrad.size(), 0.0));
  }
}

TEST_CASE("LSTM reference: variable lengths keep state and zero outputs", "[unit][lstm]") {
  LstmModel m;
  m.T = 4, m.B = 4, m.I = 2, m.H = 3;
  m.timeSteps = {4, 0, 1, 3};
  const LstmData d = randomData(m, 31);
  const LstmForward f = forward(m, d);
  const std::vector<double> outputGrad = randomVector(m.outputSize(), 32);
  const LstmGrads g = backward(m, d, f, outputGrad);
  const std::size_t H = m.H, I = m.I, B = m.B;
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t L = m.timeSteps[b];
    INFO("row " << b << " of length " << L);
    // The row alone, run for exactly L steps.
    LstmModel single = m;
    single.T = L, single.B = 1, single.timeSteps.clear();
    LstmData row = d;
    row.input = rowOf(d.input, L, B, b, I);
    row.initialOutput = rowOf(d.initialOutput, 1, B, b, H);
    row.initialCellState = rowOf(d.initialCellState, 1, B, b, H);
    const LstmForward alone = forward(single, row);
    CHECK(rowOf(f.finalOutput, 1, B, b, H) == alone.finalOutput);
    CHECK(rowOf(f.finalCellState, 1, B, b, H) == alone.finalCellState);
    if (L == 0)
      CHECK(alone.finalOutput == row.initialOutput);
    for (std::size_t t = 0; t < m.T; ++t) {
      const std::vector<double> y(f.output.begin() + (t * B + b) * H,
                                  f.output.begin() + (t * B + b + 1) * H);
      const std::vector<double> dx(g.inputGrad.begin() + (t * B + b) * I,
                                   g.inputGrad.begin() + (t * B + b + 1) * I);
      if (t < L) {
        CHECK(y == std::vector<double>(alone.output.begin() + t * H,
                                       alone.output.begin() + (t + 1) * H));
      } else {
        CHECK(y == std::vector<double>(H, 0.0));
        CHECK(dx == std::vector<double>(I, 0.0));
      }
    }
  }
  // The last-output form returns each row's final output.
  LstmModel last = m;
  last.outputFullSequence = false;
  CHECK(forward(last, d).output == f.finalOutput);

  // One length for every row runs that many steps; lengths above T count as T.
  LstmModel common = m;
  common.timeSteps = {2};
  LstmModel shorter = m;
  shorter.T = 2, shorter.timeSteps.clear();
  LstmData shorterData = d;
  shorterData.input.resize(2 * B * I);
  const LstmForward c = forward(common, d), s = forward(shorter, shorterData);
  CHECK(c.finalOutput == s.finalOutput);
  CHECK(c.finalCellState == s.finalCellState);
  CHECK(std::vector<double>(c.output.begin(), c.output.begin() + 2 * B * H) == s.output);
  CHECK(std::vector<double>(c.output.begin() + 2 * B * H, c.output.end()) ==
        std::vector<double>(2 * B * H, 0.0));
  common.timeSteps = {100};
  LstmModel full = m;
  full.timeSteps.clear();
  CHECK(forward(common, d).output == forward(full, d).output);
}

TEST_CASE("LSTM reference: bad arguments are reported", "[unit][lstm]") {
  LstmModel m;
  m.T = 2, m.B = 3, m.I = 2, m.H = 2;
  LstmData d = randomData(m, 41);
  m.timeSteps = {1, 2};
  CHECK_THROWS_WITH(forward(m, d), Catch::Contains("timeSteps"));
  m.timeSteps.clear();
  m.cellOrder = {kForget, kForget, kCandidate, kOutput};
  CHECK_THROWS_WITH(forward(m, d), Catch::Contains("permutation"));
  m.cellOrder = {kForget, kInput, kCandidate, kOutput};
  d.biases.pop_back();
  CHECK_THROWS_WITH(forward(m, d), Catch::Contains("biases has 7 elements, expected 8"));
}

TEST_CASE("npy writer: header, padding and little-endian float32 values", "[unit][lstm]") {
  CHECK(npy::headerFor({5}).find("'shape': (5,), }") != std::string::npos);
  CHECK(npy::headerFor({2, 3}).find("'shape': (2, 3), }") != std::string::npos);
  CHECK(npy::headerFor({}).find("'shape': (), }") != std::string::npos);
  for (const std::vector<std::size_t> &shape :
       {std::vector<std::size_t>{}, {1}, {4, 3}, {12345678, 1, 99999, 2}}) {
    const std::string h = npy::headerFor(shape);
    CHECK((npy::kPreambleBytes + h.size()) % 64 == 0);
    CHECK(h.back() == '\n');
    CHECK(h.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (", 0) == 0);
  }

  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "aspen_test_lstm_reference.npy";
  npy::write(path.string(), std::vector<double>{1.0, -2.0, 0.5, 0.0, 3.0, 0.25}, {2, 3});
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  // 10 + 60 characters of dict + '\n' pad to 128 bytes, as numpy writes them.
  REQUIRE(bytes.size() == 128 + 6 * 4);
  CHECK(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
  CHECK(static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]) == 118);
  CHECK(bytes.substr(10, 118) == npy::headerFor({2, 3}));
  CHECK(bytes.compare(127, 1, "\n") == 0);
  CHECK(bytes.compare(128, 4, std::string("\x00\x00\x80\x3f", 4)) == 0); // 1.0f
  CHECK(bytes.compare(132, 4, std::string("\x00\x00\x00\xc0", 4)) == 0); // -2.0f

  CHECK_THROWS_AS(npy::write("/nonexistent-dir/x.npy", std::vector<float>{1}, {1}),
                  std::runtime_error);
  CHECK_THROWS_WITH(npy::write("/nonexistent-dir/x.npy", std::vector<float>{1}, {1}),
                    Catch::Contains("/nonexistent-dir/x.npy"));
  CHECK_THROWS_AS(npy::encode({1.0f, 2.0f}, {3}), std::invalid_argument);

  CHECK(npy::jsonEscape("a\"b\\c\nd\x01") == "a\\\"b\\\\c\\nd\\u0001");
}
