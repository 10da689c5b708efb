// An independent double-precision host model of the GRU and AUGRU layers (docs/recurrent.md is
// the contract): forward, and backward as exact reverse-mode differentiation of that forward
// (hard_sigmoid's derivative under hardSigmoidGradient: popnn's 0.2 everywhere by default, as
// the layer, or the exact one),
// including the masking of variable sequence lengths, the attention of AUGRU and the Jacobian of
// a softmax activation. gru_layer checks Aspen against it; tests/unit/test_gru_reference.cpp
// checks it against hand values and central finite differences. Plain C++17, no Aspen
// dependency; the activations and the sequence-length rule are rnnref's
// (tools/rnnref/Common.hpp).
//
// Notation: T time steps, B batch rows, I input size, H hidden size. Gate ids: reset 0,
// update 1, candidate 2. Every tensor is a flat row-major std::vector<double>:
//   input          [T, B, I]
//   initialOutput  [B, H]        h_{-1}
//   inputWeights   [3, I, H]     dimension 0 in cellOrder slot order (like biases and their
//   outputWeights  [3, H, H]     gradients); slot s holds gate cellOrder[s]
//   biases         [3, H], or [3, 2, H] with resetAfter ([s][0] input bias bx, [s][1] recurrent
//                  bias bh)
//   attention      [B, T] (AUGRU), or empty (GRU)
//   output         [T, B, H] (outputFullSequence) or [B, H] (each row's final h)
//
// Per step, with rho = recAct and phi = act applied to a [H] row at a time (softmax is over that
// row; every other kind is element-wise), h = h_{t-1}, x = x_t:
//   r = rho(x.Wi[r] + h.Wo[r] + b[r]),  u~ = rho(x.Wi[u] + h.Wo[u] + b[u])
//     (with resetAfter b[g] = bx[g] + bh[g])
//   u = (1 - a[b][t]) * u~ (AUGRU), u = u~ (GRU)
//   resetAfter false: c = phi(x.Wi[c] + (r*h).Wo[c] + b[c])
//   resetAfter true:  n = h.Wo[c] + bh[c],  c = phi(x.Wi[c] + bx[c] + r*n)
//   h_t = u*h + (1-u)*c,  y_t = h_t
// Variable lengths: L_b = timeSteps[b] (or timeSteps[0] for every row, or T when empty), capped
// at T. At a step t >= L_b row b keeps its state (h_t = h_{t-1}) and its output y_t is zero, so
// its final state is its state at step L_b - 1 (the initial state when L_b = 0).
#pragma once

#include "Common.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

namespace gruref {

enum Gate { kReset = 0, kUpdate = 1, kCandidate = 2 };
inline constexpr std::size_t kNumGates = 3;

struct GruModel {
  std::size_t T = 1, B = 1, I = 1, H = 1;
  std::array<int, kNumGates> cellOrder{kReset, kUpdate, kCandidate}; // gate id of each slot
  rnnref::Activation act = rnnref::Activation::tanh;
  rnnref::Activation recAct = rnnref::Activation::sigmoid;
  // hard_sigmoid's derivative: popnn's rule (the layer's default) or the exact one.
  rnnref::HardSigmoidGradient hardSigmoidGradient = rnnref::HardSigmoidGradient::popnn;
  bool resetAfter = false;
  bool outputFullSequence = true;
  std::vector<unsigned> timeSteps; // empty (all T), one length for all rows, or one per row
  // ONNX's clip (activationClip t > 0; 0: none): the three gates' pre-activations clipped to
  // [-t, t] before their activations; the gradient does not pass a clipped one (|a| >= t).
  double activationClip = 0.0;
  double clipInput(double x) const {
    return activationClip > 0 ? std::clamp(x, -activationClip, activationClip) : x;
  }
  bool passes(double x) const { return activationClip <= 0 || std::abs(x) < activationClip; }
  // Zero dx where a (the clipped pre-activation) was clipped.
  void stopClipped(const double *a, double *dx, std::size_t n) const {
    for (std::size_t j = 0; j < n; ++j)
      if (!passes(a[j]))
        dx[j] = 0.0;
  }

  // Row b's length, capped at T.
  std::size_t length(std::size_t b) const { return rnnref::sequenceLength(timeSteps, T, b); }
  // The slot holding gate `gate`.
  std::size_t slotOf(int gate) const { return rnnref::slotOf(cellOrder, gate); }
  std::size_t outputSize() const { return (outputFullSequence ? T : 1) * B * H; }
  // Bias vectors per gate: bx, and bh with resetAfter.
  std::size_t biasesPerGate() const { return resetAfter ? 2 : 1; }
  std::size_t biasesSize() const { return kNumGates * biasesPerGate() * H; }
};

struct GruData {
  std::vector<double> input;         // [T, B, I]
  std::vector<double> initialOutput; // [B, H]
  std::vector<double> inputWeights;  // [3, I, H], slot order
  std::vector<double> outputWeights; // [3, H, H], slot order
  std::vector<double> biases;        // [3, H] or [3, 2, H], slot order
  std::vector<double> attention;     // [B, T] (AUGRU) or empty
};

struct GruForward {
  std::vector<double> output;      // [T, B, H] or [B, H]
  std::vector<double> finalOutput; // [B, H]
  // What backward needs, every step computed for every row (masked rows included):
  std::vector<double> preActivations;     // [T, 3, B, H] gate ids (canonical order)
  std::vector<double> gates;              // [T, 3, B, H] r, u~ (before attention), c
  std::vector<double> update;             // [T, B, H] u, after attention
  std::vector<double> recurrentCandidate; // [T, B, H] n = h.Wo[c] + bh[c] (resetAfter)
  std::vector<double> outputState;        // [T + 1, B, H] h_{t-1} at index t (h_{-1} at 0)
};

struct GruGrads {
  std::vector<double> inputGrad;         // [T, B, I]
  std::vector<double> initialOutputGrad; // [B, H]
  std::vector<double> inputWeightsGrad;  // [3, I, H]
  std::vector<double> outputWeightsGrad; // [3, H, H]
  std::vector<double> biasesGrad;        // biases' shape
  std::vector<double> attentionGrad;     // [B, T] (AUGRU), empty otherwise
};

namespace detail {

inline void validate(const GruModel &m, const GruData &d) {
  rnnref::requirePermutation("gruref", m.cellOrder, "three gates");
  rnnref::requireTimeSteps("gruref", m.timeSteps, m.B);
  rnnref::requireSize("gruref", "input", d.input, m.T * m.B * m.I);
  rnnref::requireSize("gruref", "initialOutput", d.initialOutput, m.B * m.H);
  rnnref::requireSize("gruref", "inputWeights", d.inputWeights, kNumGates * m.I * m.H);
  rnnref::requireSize("gruref", "outputWeights", d.outputWeights, kNumGates * m.H * m.H);
  rnnref::requireSize("gruref", "biases", d.biases, m.biasesSize());
  if (!d.attention.empty())
    rnnref::requireSize("gruref", "attention", d.attention, m.B * m.T);
}

} // namespace detail

inline GruForward forward(const GruModel &m, const GruData &d) {
  detail::validate(m, d);
  const std::size_t T = m.T, B = m.B, I = m.I, H = m.H, BH = B * H;
  const std::size_t nb = m.biasesPerGate();
  // The bias of gate slot s: bx (k = 0) or bh (k = 1).
  const auto bias = [&](std::size_t s, std::size_t k) { return &d.biases[(s * nb + k) * H]; };
  GruForward r;
  r.output.assign(m.outputSize(), 0.0);
  r.preActivations.assign(T * kNumGates * BH, 0.0);
  r.gates.assign(T * kNumGates * BH, 0.0);
  r.update.assign(T * BH, 0.0);
  r.recurrentCandidate.assign(m.resetAfter ? T * BH : 0, 0.0);
  r.outputState.assign((T + 1) * BH, 0.0);
  std::copy(d.initialOutput.begin(), d.initialOutput.end(), r.outputState.begin());
  std::vector<double> resetState(H);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t b = 0; b < B; ++b) {
      const double *x = &d.input[(t * B + b) * I];
      const double *hPrev = &r.outputState[t * BH + b * H];
      auto at = [&](std::vector<double> &v, int gate) {
        return &v[((t * kNumGates + gate) * B + b) * H];
      };
      for (int gate : {kReset, kUpdate}) {
        const std::size_t s = m.slotOf(gate);
        double *a = at(r.preActivations, gate);
        for (std::size_t j = 0; j < H; ++j)
          a[j] = bias(s, 0)[j] + (m.resetAfter ? bias(s, 1)[j] : 0.0);
        rnnref::addProduct(x, d.inputWeights, s, I, H, a);
        rnnref::addProduct(hPrev, d.outputWeights, s, H, H, a);
        for (std::size_t j = 0; j < H; ++j)
          a[j] = m.clipInput(a[j]);
        rnnref::forwardRow(m.recAct, a, at(r.gates, gate), H);
      }
      const double *reset = at(r.gates, kReset), *updateGate = at(r.gates, kUpdate);
      double *u = &r.update[t * BH + b * H];
      const double keep = d.attention.empty() ? 1.0 : 1.0 - d.attention[b * T + t];
      for (std::size_t j = 0; j < H; ++j)
        u[j] = keep * updateGate[j];

      const std::size_t sc = m.slotOf(kCandidate);
      double *ac = at(r.preActivations, kCandidate);
      std::copy(bias(sc, 0), bias(sc, 0) + H, ac);
      rnnref::addProduct(x, d.inputWeights, sc, I, H, ac);
      if (m.resetAfter) {
        double *n = &r.recurrentCandidate[t * BH + b * H];
        std::copy(bias(sc, 1), bias(sc, 1) + H, n);
        rnnref::addProduct(hPrev, d.outputWeights, sc, H, H, n);
        for (std::size_t j = 0; j < H; ++j)
          ac[j] += reset[j] * n[j];
      } else {
        for (std::size_t k = 0; k < H; ++k)
          resetState[k] = reset[k] * hPrev[k];
        rnnref::addProduct(resetState.data(), d.outputWeights, sc, H, H, ac);
      }
      const double *c = at(r.gates, kCandidate);
      for (std::size_t j = 0; j < H; ++j)
        ac[j] = m.clipInput(ac[j]);
      rnnref::forwardRow(m.act, ac, at(r.gates, kCandidate), H);

      const bool active = t < m.length(b);
      double *hNext = &r.outputState[(t + 1) * BH + b * H];
      for (std::size_t j = 0; j < H; ++j) {
        const double h = u[j] * hPrev[j] + (1.0 - u[j]) * c[j];
        hNext[j] = active ? h : hPrev[j];
        if (m.outputFullSequence)
          r.output[t * BH + b * H + j] = active ? h : 0.0;
      }
    }
  }
  r.finalOutput.assign(r.outputState.begin() + T * BH, r.outputState.end());
  if (!m.outputFullSequence)
    r.output = r.finalOutput;
  return r;
}

namespace detail {

// One row b's step t of the backward: from dhTotal (the gradient reaching h_t), the gate
// deltas, their product gradients into r and dh (the gradient reaching h_{t-1}, written), and
// the attention's gradient.
inline void rowBackward(const GruModel &m, const GruData &d, const GruForward &fwd,
                        std::size_t t, std::size_t b, const std::vector<double> &dhTotal,
                        double *dh, GruGrads &r) {
  const std::size_t T = m.T, B = m.B, I = m.I, H = m.H, BH = B * H;
  const std::size_t nb = m.biasesPerGate();
  auto at = [&](const std::vector<double> &v, int gate) {
    return &v[((t * kNumGates + gate) * B + b) * H];
  };
  const auto biasGrad = [&](std::size_t s, std::size_t k) { return &r.biasesGrad[(s * nb + k) * H]; };
  const double *reset = at(fwd.gates, kReset), *updateGate = at(fwd.gates, kUpdate);
  const double *c = at(fwd.gates, kCandidate);
  const double *u = &fwd.update[t * BH + b * H];
  const double *hPrev = &fwd.outputState[t * BH + b * H];
  const double *x = &d.input[(t * B + b) * I];
  const double keep = d.attention.empty() ? 1.0 : 1.0 - d.attention[b * T + t];
  std::vector<double> dUpdateGate(H), dCandidate(H), dReset(H), dn(H), dResetState(H, 0.0),
      resetState(H);
  std::array<std::vector<double>, kNumGates> delta; // d loss / d pre-activation, gate ids
  delta.fill(std::vector<double>(H));
  double dKeep = 0; // d loss / d (1 - a[b][t])
  for (std::size_t j = 0; j < H; ++j) {
    const double du = dhTotal[j] * (hPrev[j] - c[j]);
    dKeep += du * updateGate[j];
    dUpdateGate[j] = du * keep;
    dCandidate[j] = dhTotal[j] * (1.0 - u[j]);
    dh[j] = dhTotal[j] * u[j];
  }
  if (!d.attention.empty())
    r.attentionGrad[b * T + t] = -dKeep;
  rnnref::backwardRow(m.recAct, at(fwd.preActivations, kUpdate), updateGate, dUpdateGate.data(),
                      delta[kUpdate].data(), H, m.hardSigmoidGradient);
  rnnref::backwardRow(m.act, at(fwd.preActivations, kCandidate), c, dCandidate.data(),
                      delta[kCandidate].data(), H, m.hardSigmoidGradient);
  m.stopClipped(at(fwd.preActivations, kUpdate), delta[kUpdate].data(), H);
  m.stopClipped(at(fwd.preActivations, kCandidate), delta[kCandidate].data(), H);
  const std::size_t sc = m.slotOf(kCandidate);
  const double *dc = delta[kCandidate].data();
  for (std::size_t j = 0; j < H; ++j)
    biasGrad(sc, 0)[j] += dc[j];
  if (m.resetAfter) {
    const double *n = &fwd.recurrentCandidate[t * BH + b * H];
    for (std::size_t j = 0; j < H; ++j) {
      dReset[j] = dc[j] * n[j];
      dn[j] = dc[j] * reset[j];
      biasGrad(sc, 1)[j] += dn[j];
    }
    rnnref::addProductGrads(hPrev, d.outputWeights, sc, H, H, dn.data(), dh, r.outputWeightsGrad);
  } else {
    for (std::size_t k = 0; k < H; ++k)
      resetState[k] = reset[k] * hPrev[k];
    rnnref::addProductGrads(resetState.data(), d.outputWeights, sc, H, H, dc, dResetState.data(),
                            r.outputWeightsGrad);
    for (std::size_t k = 0; k < H; ++k) {
      dReset[k] = dResetState[k] * hPrev[k];
      dh[k] += dResetState[k] * reset[k];
    }
  }
  rnnref::backwardRow(m.recAct, at(fwd.preActivations, kReset), reset, dReset.data(),
                      delta[kReset].data(), H, m.hardSigmoidGradient);
  m.stopClipped(at(fwd.preActivations, kReset), delta[kReset].data(), H);
  for (int gate : {kReset, kUpdate}) {
    const std::size_t s = m.slotOf(gate);
    for (std::size_t k = 0; k < nb; ++k)
      for (std::size_t j = 0; j < H; ++j)
        biasGrad(s, k)[j] += delta[gate][j];
    rnnref::addProductGrads(hPrev, d.outputWeights, s, H, H, delta[gate].data(), dh,
                            r.outputWeightsGrad);
  }
  for (int gate : {kReset, kUpdate, kCandidate})
    rnnref::addProductGrads(x, d.inputWeights, m.slotOf(gate), I, H, delta[gate].data(),
                            &r.inputGrad[(t * B + b) * I], r.inputWeightsGrad);
}

} // namespace detail

// Gradients of sum(outputGrad * output) with respect to every input of forward(m, d); fwd is
// forward(m, d). attentionGrad is computed when d.attention is given.
inline GruGrads backward(const GruModel &m, const GruData &d, const GruForward &fwd,
                         const std::vector<double> &outputGrad) {
  detail::validate(m, d);
  const std::size_t T = m.T, B = m.B, I = m.I, H = m.H, BH = B * H;
  rnnref::requireSize("gruref", "outputGrad", outputGrad, m.outputSize());
  GruGrads r;
  r.inputGrad.assign(T * B * I, 0.0);
  r.initialOutputGrad.assign(BH, 0.0);
  r.inputWeightsGrad.assign(kNumGates * I * H, 0.0);
  r.outputWeightsGrad.assign(kNumGates * H * H, 0.0);
  r.biasesGrad.assign(m.biasesSize(), 0.0);
  r.attentionGrad.assign(d.attention.empty() ? 0 : B * T, 0.0);
  // The gradient flowing into h_t of the state, carried from step t+1 down to t.
  std::vector<double> &dh = r.initialOutputGrad;
  if (!m.outputFullSequence) // output is finalOutput
    dh = outputGrad;
  std::vector<double> dhTotal(H);
  for (std::size_t t = T; t-- > 0;)
    for (std::size_t b = 0; b < B; ++b) {
      if (t >= m.length(b)) // the state passes through unchanged and y_t is the constant 0
        continue;
      double *dhRow = &dh[b * H];
      for (std::size_t j = 0; j < H; ++j)
        dhTotal[j] = dhRow[j] + (m.outputFullSequence ? outputGrad[t * BH + b * H + j] : 0.0);
      detail::rowBackward(m, d, fwd, t, b, dhTotal, dhRow, r);
    }
  return r;
}

} // namespace gruref
