// The double-precision GRU/AUGRU host model that gru_layer checks Aspen against
// (tools/rnnref/Gru.hpp): hand-computed values, every gradient of backward()
// (attention's included) against central finite differences of forward(), and the
// variable-length semantics of docs/recurrent.md.
#include "rnnref/Gru.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace gruref;
using rnnref::Activation;

namespace {

std::vector<double> randomVector(std::size_t n, unsigned seed, double scale = 1.0,
                                 double offset = 0.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double &x : v)
    x = offset + scale * u(rng);
  return v;
}

// Weights scaled by 1/sqrt(H); attention (withAttention) uniform in [0, 1].
GruData randomData(const GruModel &m, unsigned seed, bool withAttention = false,
                   double biasScale = 1.0) {
  const double w = 1.0 / std::sqrt(double(m.H));
  GruData d{randomVector(m.T * m.B * m.I, seed),
            randomVector(m.B * m.H, seed + 1000),
            randomVector(kNumGates * m.I * m.H, seed + 2000, w),
            randomVector(kNumGates * m.H * m.H, seed + 3000, w),
            randomVector(m.biasesSize(), seed + 4000, biasScale),
            {}};
  if (withAttention)
    d.attention = randomVector(m.B * m.T, seed + 5000, 0.5, 0.5);
  return d;
}

double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (std::size_t k = 0; k < a.size() && k < b.size(); ++k)
    s += a[k] * b[k];
  return s;
}

// Compares every gradient of backward() with central differences of sum(outputGrad * output);
// returns the number of elements checked.
// Against finite differences, so with hard_sigmoid's exact derivative.
std::size_t checkGradients(const GruModel &model, const GruData &d, unsigned seed = 7) {
  GruModel m = model;
  m.hardSigmoidGradient = rnnref::HardSigmoidGradient::exact;
  const std::vector<double> outputGrad = randomVector(m.outputSize(), seed);
  const GruGrads g = backward(m, d, forward(m, d), outputGrad);
  const struct {
    const char *name;
    std::vector<double> GruData::*value;
    const std::vector<double> &grad;
  } params[] = {{"input", &GruData::input, g.inputGrad},
                {"initialOutput", &GruData::initialOutput, g.initialOutputGrad},
                {"inputWeights", &GruData::inputWeights, g.inputWeightsGrad},
                {"outputWeights", &GruData::outputWeights, g.outputWeightsGrad},
                {"biases", &GruData::biases, g.biasesGrad},
                {"attention", &GruData::attention, g.attentionGrad}};
  constexpr double h = 1e-6, relTol = 1e-6;
  std::size_t checked = 0;
  for (const auto &p : params) {
    REQUIRE(p.grad.size() == (d.*p.value).size());
    for (std::size_t k = 0; k < p.grad.size(); ++k) {
      GruData plus = d, minus = d;
      (plus.*p.value)[k] += h;
      (minus.*p.value)[k] -= h;
      const double numeric =
          (dot(outputGrad, forward(m, plus).output) - dot(outputGrad, forward(m, minus).output)) /
          (2 * h);
      INFO(p.name << "[" << k << "]: backward " << p.grad[k] << ", finite difference " << numeric);
      CHECK(std::abs(numeric - p.grad[k]) <= relTol * std::max(1.0, std::abs(p.grad[k])));
      ++checked;
    }
  }
  return checked;
}

// How many reset and update pre-activations lie outside hard_sigmoid's linear range.
std::size_t saturated(const GruModel &m, const GruForward &f) {
  std::size_t n = 0;
  const std::size_t BH = m.B * m.H;
  for (std::size_t t = 0; t < m.T; ++t)
    for (int gate : {kReset, kUpdate})
      for (std::size_t k = 0; k < BH; ++k)
        n += std::abs(f.preActivations[(t * kNumGates + gate) * BH + k]) > 2.5;
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

// The data of `d` in a model whose slots are in `order` instead of {reset, update, candidate}.
GruData reorder(const GruModel &m, GruData d, const std::array<int, kNumGates> &order) {
  const std::size_t nb = m.biasesPerGate();
  auto permute = [&](const std::vector<double> &v, std::size_t block) {
    std::vector<double> out(v.size());
    for (std::size_t s = 0; s < kNumGates; ++s)
      std::copy(v.begin() + order[s] * block, v.begin() + (order[s] + 1) * block,
                out.begin() + s * block);
    return out;
  };
  d.inputWeights = permute(d.inputWeights, m.I * m.H);
  d.outputWeights = permute(d.outputWeights, m.H * m.H);
  d.biases = permute(d.biases, nb * m.H);
  return d;
}

} // namespace

// One step, B = I = H = 1: x = 0.5, h0 = 0.1, Wi = {0.1, 0.2, 0.3}, Wo = {0.5, 0.6, 0.7}
// (r, u, c), b = {0.01, 0.02, 0.03}:
//   a_r = 0.05 + 0.05 + 0.01 = 0.11               r = sigmoid(0.11) = 0.5274723043
//   a_u = 0.10 + 0.06 + 0.02 = 0.18               u = sigmoid(0.18) = 0.5448788924
//   a_c = 0.15 + 0.7 r 0.1 + 0.03 = 0.2169230613  c = tanh(a_c)     = 0.2135834241
//   h = u h0 + (1 - u) c = 0.1516942138
//   dh/da_c = (1 - u)(1 - c^2) = 0.4343594480,  dh/da_u = (h0 - c) u (1 - u) = -0.0281670859,
//   dh/da_r = dh/da_c 0.7 h0 r (1 - r) = 0.0075783427,
//   dh/dh0 = u + dh/da_c 0.7 r + dh/da_u 0.6 + dh/da_r 0.5 = 0.6921466174
// resetAfter, bx = {0.01, 0.02, 0.03}, bh = {0.04, 0.05, 0.06}:
//   a_r = 0.15, r = 0.5374298453; a_u = 0.23, u = 0.5572478546; n = 0.07 + 0.06 = 0.13
//   a_c = 0.15 + 0.03 + r n = 0.2498658799, c = 0.2447925834, h = 0.1641072269
//   dh/dbx_c = (1 - u)(1 - c^2) = 0.4162209276, dh/dbh_c = r dh/dbx_c = 0.2236895487,
//   dh/dh0 = u + dh/dbx_c r 0.7 + (h0 - c) u (1 - u) 0.6 + dh/dbx_c n r (1 - r) 0.5 = 0.6991220570
// AUGRU (resetAfter false) with a = 0.25: u = 0.75 sigmoid(0.18) = 0.4086591693,
//   h = 0.1671665163, dh/da = -(h0 - c) sigmoid(0.18) = 0.0618892103
TEST_CASE("GRU reference: one hand-computed step", "[unit][gru]") {
  GruModel m;
  const GruData gru{{0.5}, {0.1}, {0.1, 0.2, 0.3}, {0.5, 0.6, 0.7}, {0.01, 0.02, 0.03}, {}};

  // Every check holds for the default slot order and, with the data moved, for another one.
  for (const std::array<int, kNumGates> order :
       {std::array<int, kNumGates>{kReset, kUpdate, kCandidate},
        std::array<int, kNumGates>{kCandidate, kReset, kUpdate}}) {
    INFO("cellOrder " << order[0] << order[1] << order[2]);
    m.cellOrder = order;
    m.resetAfter = false;
    const std::size_t sr = m.slotOf(kReset), su = m.slotOf(kUpdate), sc = m.slotOf(kCandidate);
    {
      const GruData d = reorder(m, gru, order);
      const GruForward f = forward(m, d);
      CHECK(f.gates[kReset] == Approx(0.5274723043).epsilon(1e-9));
      CHECK(f.gates[kUpdate] == Approx(0.5448788924).epsilon(1e-9));
      CHECK(f.preActivations[kCandidate] == Approx(0.2169230613).epsilon(1e-9));
      CHECK(f.gates[kCandidate] == Approx(0.2135834241).epsilon(1e-9));
      CHECK(f.finalOutput[0] == Approx(0.1516942138).epsilon(1e-9));
      REQUIRE(f.output.size() == 1);
      CHECK(f.output[0] == f.finalOutput[0]);
      const GruGrads g = backward(m, d, f, {1.0});
      CHECK(g.biasesGrad[sc] == Approx(0.4343594480).epsilon(1e-9));
      CHECK(g.biasesGrad[su] == Approx(-0.0281670859).epsilon(1e-8));
      CHECK(g.biasesGrad[sr] == Approx(0.0075783427).epsilon(1e-8));
      CHECK(g.initialOutputGrad[0] == Approx(0.6921466174).epsilon(1e-9));
      // The pre-activations are linear in b, x.Wi and h0.Wo (r h0 for the candidate).
      CHECK(g.inputWeightsGrad[sc] == Approx(0.5 * g.biasesGrad[sc]));
      CHECK(g.outputWeightsGrad[su] == Approx(0.1 * g.biasesGrad[su]));
      CHECK(g.outputWeightsGrad[sc] == Approx(0.1 * 0.5274723043 * g.biasesGrad[sc]));
      CHECK(g.inputGrad[0] ==
            Approx(0.1 * g.biasesGrad[sr] + 0.2 * g.biasesGrad[su] + 0.3 * g.biasesGrad[sc]));
      CHECK(g.attentionGrad.empty());
    }
    {
      m.resetAfter = true;
      GruData ra = gru;
      ra.biases = {0.01, 0.04, 0.02, 0.05, 0.03, 0.06}; // [3, 2, 1]: bx, bh of each gate
      const GruData d = reorder(m, ra, order);
      const GruForward f = forward(m, d);
      CHECK(f.gates[kReset] == Approx(0.5374298453).epsilon(1e-9));
      CHECK(f.gates[kUpdate] == Approx(0.5572478546).epsilon(1e-9));
      CHECK(f.recurrentCandidate[0] == Approx(0.13).epsilon(1e-12));
      CHECK(f.preActivations[kCandidate] == Approx(0.2498658799).epsilon(1e-9));
      CHECK(f.gates[kCandidate] == Approx(0.2447925834).epsilon(1e-9));
      CHECK(f.finalOutput[0] == Approx(0.1641072269).epsilon(1e-9));
      const GruGrads g = backward(m, d, f, {1.0});
      REQUIRE(g.biasesGrad.size() == 6);
      CHECK(g.biasesGrad[2 * sc] == Approx(0.4162209276).epsilon(1e-9));
      CHECK(g.biasesGrad[2 * sc + 1] == Approx(0.2236895487).epsilon(1e-9));
      // bx and bh of the reset and update gates both add to the pre-activation.
      CHECK(g.biasesGrad[2 * sr] == g.biasesGrad[2 * sr + 1]);
      CHECK(g.biasesGrad[2 * su] == g.biasesGrad[2 * su + 1]);
      CHECK(g.initialOutputGrad[0] == Approx(0.6991220570).epsilon(1e-9));
      // n = h0.Wo_c + bh_c: the recurrent weight's gradient is h0 times bh's.
      CHECK(g.outputWeightsGrad[sc] == Approx(0.1 * g.biasesGrad[2 * sc + 1]));
    }
    {
      m.resetAfter = false;
      GruData au = gru;
      au.attention = {0.25};
      const GruData d = reorder(m, au, order);
      const GruForward f = forward(m, d);
      CHECK(f.gates[kUpdate] == Approx(0.5448788924).epsilon(1e-9));
      CHECK(f.update[0] == Approx(0.4086591693).epsilon(1e-9));
      CHECK(f.finalOutput[0] == Approx(0.1671665163).epsilon(1e-9));
      const GruGrads g = backward(m, d, f, {1.0});
      REQUIRE(g.attentionGrad.size() == 1);
      CHECK(g.attentionGrad[0] == Approx(0.0618892103).epsilon(1e-9));
    }
  }
}

TEST_CASE("GRU reference: AUGRU's attention scales the update gate", "[unit][gru]") {
  GruModel m;
  m.T = 3, m.B = 2, m.I = 2, m.H = 3;
  GruData d = randomData(m, 51);
  const GruForward gru = forward(m, d);
  d.attention.assign(m.B * m.T, 0.0); // a = 0: the GRU
  CHECK(forward(m, d).output == gru.output);
  d.attention.assign(m.B * m.T, 1.0); // a = 1: u = 0, so h_t = c_t
  const GruForward f = forward(m, d);
  const std::size_t BH = m.B * m.H;
  for (std::size_t t = 0; t < m.T; ++t)
    for (std::size_t k = 0; k < BH; ++k)
      CHECK(f.output[t * BH + k] == f.gates[(t * kNumGates + kCandidate) * BH + k]);
}

TEST_CASE("GRU reference: gradients match finite differences, activation pairs", "[unit][gru]") {
  for (bool resetAfter : {false, true})
    for (std::size_t k = 0; k < rnnref::kNumActivations; ++k)
      for (Activation recAct :
           {Activation::sigmoid, Activation::hard_sigmoid, Activation::softmax}) {
        GruModel m;
        m.T = 3, m.B = 2, m.I = 2, m.H = 3;
        m.resetAfter = resetAfter;
        m.act = static_cast<Activation>(k);
        m.recAct = recAct;
        // Wide biases push some hard_sigmoid gates into their flat parts.
        const double biasScale = recAct == Activation::hard_sigmoid ? 3.0 : 1.0;
        const GruData d = randomData(m, 100 + unsigned(k), false, biasScale);
        INFO("activation " << rnnref::activationName(m.act) << ", recurrent "
                           << rnnref::activationName(recAct) << ", resetAfter " << resetAfter);
        if (recAct == Activation::hard_sigmoid)
          CHECK(saturated(m, forward(m, d)) > 0);
        CHECK(checkGradients(m, d) == 12 + 6 + 18 + 27 + (resetAfter ? 18 : 9));
      }
}

TEST_CASE("GRU reference: gradients match finite differences, layer options", "[unit][gru]") {
  GruModel base;
  base.T = 4, base.B = 3, base.I = 3, base.H = 4;

  for (bool resetAfter : {false, true}) {
    base.resetAfter = resetAfter;
    INFO("resetAfter " << resetAfter);
    SECTION(std::string("default") + (resetAfter ? ", reset after" : "")) {
      checkGradients(base, randomData(base, 1));
    }
    SECTION(std::string("cell orders") + (resetAfter ? ", reset after" : "")) {
      for (std::array<int, kNumGates> order :
           {std::array<int, kNumGates>{kCandidate, kReset, kUpdate},
            std::array<int, kNumGates>{kUpdate, kCandidate, kReset}}) {
        GruModel m = base;
        m.cellOrder = order;
        checkGradients(m, randomData(m, 2));
      }
    }
    SECTION(std::string("last output only") + (resetAfter ? ", reset after" : "")) {
      GruModel m = base;
      m.outputFullSequence = false;
      checkGradients(m, randomData(m, 3));
    }
    SECTION(std::string("one length for all rows") + (resetAfter ? ", reset after" : "")) {
      for (unsigned length : {2u, 9u}) {
        GruModel m = base;
        m.timeSteps = {length};
        checkGradients(m, randomData(m, 4));
      }
    }
    SECTION(std::string("a length per row, one of them zero") +
            (resetAfter ? ", reset after" : "")) {
      GruModel m = base;
      m.timeSteps = {3, 0, 6};
      checkGradients(m, randomData(m, 5));
      m.outputFullSequence = false;
      checkGradients(m, randomData(m, 6));
      m.act = Activation::softmax;
      checkGradients(m, randomData(m, 7));
    }
    SECTION(std::string("ONNX's activation clip") + (resetAfter ? ", reset after" : "")) {
      GruModel m = base;
      m.activationClip = 0.4;
      const GruData d = randomData(m, 12);
      std::size_t atBound = 0;
      for (double a : forward(m, d).preActivations) {
        CHECK(std::abs(a) <= 0.4);
        atBound += std::abs(a) == 0.4;
      }
      CHECK(atBound > 10); // clipped inputs are there to test
      checkGradients(m, d);
      m.timeSteps = {3, 0, 6};
      checkGradients(m, randomData(m, 13, true)); // AUGRU
    }
    SECTION(std::string("AUGRU") + (resetAfter ? ", reset after" : "")) {
      GruModel m = base;
      CHECK(checkGradients(m, randomData(m, 8, true)) > 0);
      m.cellOrder = {kUpdate, kCandidate, kReset};
      m.timeSteps = {4, 0, 2};
      checkGradients(m, randomData(m, 9, true));
      m.outputFullSequence = false;
      m.act = Activation::gelu;
      m.recAct = Activation::hard_sigmoid;
      checkGradients(m, randomData(m, 10, true));
      m.timeSteps = {3};
      m.act = Activation::softmax;
      m.recAct = Activation::softmax;
      checkGradients(m, randomData(m, 11, true));
    }
  }
}

TEST_CASE("GRU reference: variable lengths keep state and zero outputs", "[unit][gru]") {
  GruModel m;
  m.T = 4, m.B = 4, m.I = 2, m.H = 3;
  m.timeSteps = {4, 0, 1, 3};
  for (bool resetAfter : {false, true}) {
    m.resetAfter = resetAfter;
    INFO("resetAfter " << resetAfter);
    const GruData d = randomData(m, 31, true);
    const GruForward f = forward(m, d);
    const std::vector<double> outputGrad = randomVector(m.outputSize(), 32);
    const GruGrads g = backward(m, d, f, outputGrad);
    const std::size_t H = m.H, I = m.I, B = m.B, T = m.T;
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t L = m.timeSteps[b];
      INFO("row " << b << " of length " << L);
      // The row alone, run for exactly L steps.
      GruModel single = m;
      single.T = L, single.B = 1, single.timeSteps.clear();
      GruData row = d;
      row.input = rowOf(d.input, L, B, b, I);
      row.initialOutput = rowOf(d.initialOutput, 1, B, b, H);
      row.attention.assign(d.attention.begin() + b * T, d.attention.begin() + b * T + L);
      const GruForward alone = forward(single, row);
      CHECK(rowOf(f.finalOutput, 1, B, b, H) == alone.finalOutput);
      if (L == 0)
        CHECK(alone.finalOutput == row.initialOutput);
      for (std::size_t t = 0; t < T; ++t) {
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
          CHECK(g.attentionGrad[b * T + t] == 0.0);
        }
      }
    }
    // A zero-length row passes the gradient of its final output straight to its initial one.
    GruModel last = m;
    last.outputFullSequence = false;
    const GruForward lastForward = forward(last, d);
    CHECK(lastForward.output == f.finalOutput);
    const std::vector<double> lastGrad = randomVector(B * H, 33);
    const GruGrads lg = backward(last, d, lastForward, lastGrad);
    CHECK(rowOf(lg.initialOutputGrad, 1, B, 1, H) == rowOf(lastGrad, 1, B, 1, H));
  }

  // One length for every row runs that many steps; lengths above T count as T.
  GruModel common = m;
  common.resetAfter = false;
  common.timeSteps = {2};
  GruModel shorter = common;
  shorter.T = 2, shorter.timeSteps.clear();
  const GruData d = randomData(common, 34);
  GruData shorterData = d;
  shorterData.input.resize(2 * m.B * m.I);
  const GruForward c = forward(common, d), s = forward(shorter, shorterData);
  const std::size_t BH = m.B * m.H;
  CHECK(c.finalOutput == s.finalOutput);
  CHECK(std::vector<double>(c.output.begin(), c.output.begin() + 2 * BH) == s.output);
  CHECK(std::vector<double>(c.output.begin() + 2 * BH, c.output.end()) ==
        std::vector<double>(2 * BH, 0.0));
  common.timeSteps = {100};
  GruModel full = common;
  full.timeSteps.clear();
  CHECK(forward(common, d).output == forward(full, d).output);
}

TEST_CASE("GRU reference: bad arguments are reported", "[unit][gru]") {
  GruModel m;
  m.T = 2, m.B = 3, m.I = 2, m.H = 2;
  GruData d = randomData(m, 41);
  m.timeSteps = {1, 2};
  CHECK_THROWS_WITH(forward(m, d), Catch::Contains("timeSteps"));
  m.timeSteps.clear();
  m.cellOrder = {kReset, kReset, kCandidate};
  CHECK_THROWS_WITH(forward(m, d), Catch::Contains("permutation"));
  m.cellOrder = {kReset, kUpdate, kCandidate};
  m.resetAfter = true; // biases [3, 2, H]
  CHECK_THROWS_WITH(forward(m, d), Catch::Contains("biases has 6 elements, expected 12"));
  m.resetAfter = false;
  d.attention.assign(m.T, 0.5);
  CHECK_THROWS_WITH(forward(m, d), Catch::Contains("attention has 2 elements, expected 6"));
  d.attention.clear();
  const GruForward f = forward(m, d);
  CHECK_THROWS_WITH(backward(m, d, f, std::vector<double>(3)),
                    Catch::Contains("outputGrad has 3 elements, expected 12"));
}
