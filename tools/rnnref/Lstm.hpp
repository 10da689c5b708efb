// An independent double-precision host model of the LSTM layer (docs/recurrent.md is the
// contract): forward, and backward as exact reverse-mode differentiation of that forward
// (hard_sigmoid's derivative under hardSigmoidGradient: popnn's 0.2 everywhere by default, as
// the layer, or the exact one),
// including the masking of variable sequence lengths and the Jacobian of a softmax activation.
// lstm_layer checks Aspen against it; tests/unit/test_lstm_reference.cpp checks it against hand
// values and central finite differences. Plain C++17, no Aspen dependency; the activations and
// the sequence-length rule are rnnref's (tools/rnnref/Common.hpp).
//
// Notation: T time steps, B batch rows, I input size, H hidden size. Gate ids: forget 0,
// input 1, candidate 2, output 3. Every tensor is a flat row-major std::vector<double>:
//   input            [T, B, I]
//   initialOutput    [B, H]      h_{-1}
//   initialCellState [B, H]      c_{-1}
//   inputWeights     [4, I, H]   dimension 0 in cellOrder slot order (like biases and their
//   outputWeights    [4, H, H]   gradients); slot s holds gate cellOrder[s]
//   biases           [4, H]
//   output           [T, B, H] (outputFullSequence) or [B, H] (each row's final h)
// With a projection (P = projSize > 0, P < H) h is [P] wide: initialOutput [B, P],
// outputWeights [4, P, H], projection [H, P], output [T, B, P] or [B, P], and per step
// h_t = m_t . Wp with m_t = o*phi(c_t) (PyTorch's proj_size: h_t = W_hr m_t).
//
// Per step, with rho = recAct and phi = act applied to a [H] row at a time (softmax is over that
// row; every other kind is element-wise):
//   a_u = [doInputWeightCalc] x_t.Wi[u] + h_{t-1}.Wo[u] + b[u]
//   f = rho(a_f), i = rho(a_i), o = rho(a_o), g = phi(a_g)
//   c_t = f*c_{t-1} + i*g,  h_t = o*phi(c_t),  y_t = h_t
// Variable lengths: L_b = timeSteps[b] (or timeSteps[0] for every row, or T when empty), capped
// at T. At a step t >= L_b row b keeps its state (h_t = h_{t-1}, c_t = c_{t-1}) and its output
// y_t is zero, so its final state is its state at step L_b - 1 (the initial state when L_b = 0).
#pragma once

#include "Common.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

namespace lstmref {

enum Gate { kForget = 0, kInput = 1, kCandidate = 2, kOutput = 3 };

struct LstmModel {
  std::size_t T = 1, B = 1, I = 1, H = 1;
  std::size_t P = 0; // the projection's size; 0: none (h_t = m_t)
  std::array<int, 4> cellOrder{kForget, kInput, kCandidate, kOutput}; // gate id of each slot
  rnnref::Activation act = rnnref::Activation::tanh;
  rnnref::Activation recAct = rnnref::Activation::sigmoid;
  // hard_sigmoid's derivative: popnn's rule (the layer's default) or the exact one.
  rnnref::HardSigmoidGradient hardSigmoidGradient = rnnref::HardSigmoidGradient::popnn;
  bool outputFullSequence = true;
  bool doInputWeightCalc = true;
  std::vector<unsigned> timeSteps; // empty (all T), one length for all rows, or one per row
  // The cell clip: c_t = min(max(f c_{t-1} + i g, cellClipMin), cellClipMax); its gradient is
  // 1 strictly inside the bounds and 0 elsewhere.
  bool cellClip = false;
  double cellClipMin = 0.0, cellClipMax = 0.0;
  // ONNX's clip (activationClip t > 0; 0: none): every activation's input clipped to [-t, t],
  // the four gates' pre-activations and the c_t that h_t = o*phi(.) takes (c_t itself, carried
  // to the next step, is not changed); the gradient does not pass a clipped input (|x| >= t).
  double activationClip = 0.0;
  double clipInput(double x) const {
    return activationClip > 0 ? std::clamp(x, -activationClip, activationClip) : x;
  }
  bool passes(double x) const { return activationClip <= 0 || std::abs(x) < activationClip; }

  // Row b's length, capped at T.
  std::size_t length(std::size_t b) const { return rnnref::sequenceLength(timeSteps, T, b); }
  // The slot holding gate `gate`.
  std::size_t slotOf(int gate) const { return rnnref::slotOf(cellOrder, gate); }
  // The width of h: P with a projection, else H.
  std::size_t R() const { return P ? P : H; }
  std::size_t outputSize() const { return (outputFullSequence ? T : 1) * B * R(); }
};

struct LstmData {
  std::vector<double> input;            // [T, B, I]
  std::vector<double> initialOutput;    // [B, R]
  std::vector<double> initialCellState; // [B, H]
  std::vector<double> inputWeights;     // [4, I, H], slot order
  std::vector<double> outputWeights;    // [4, R, H], slot order
  std::vector<double> biases;           // [4, H], slot order
  std::vector<double> projection = {};  // [H, P]; empty without a projection
};

struct LstmForward {
  std::vector<double> output;         // [T, B, R] or [B, R]
  std::vector<double> finalOutput;    // [B, R]
  std::vector<double> finalCellState; // [B, H]
  // What backward needs, every step computed for every row (masked rows included):
  std::vector<double> preActivations;  // [T, 4, B, H] a_u (clipped), gate ids (canonical order)
  std::vector<double> gates;           // [T, 4, B, H] f, i, g, o
  std::vector<double> newCellState;    // [T, B, H] f*c_{t-1} + i*g before masking
  std::vector<double> phiNewCellState; // [T, B, H] phi of it
  std::vector<double> cellOutput;      // [T, B, H] m_t = o*phi(c_t) before masking
  std::vector<double> outputState;     // [T + 1, B, R] h_{t-1} at index t (h_{-1} at 0)
  std::vector<double> cellState;       // [T + 1, B, H] c_{t-1} at index t
};

// Incoming gradients of the final state; an empty member means none.
struct LstmStateGrad {
  std::vector<double> output;    // [B, R]
  std::vector<double> cellState; // [B, H]
};

struct LstmGrads {
  std::vector<double> inputGrad;            // [T, B, I]
  std::vector<double> initialOutputGrad;    // [B, R]
  std::vector<double> initialCellStateGrad; // [B, H]
  std::vector<double> inputWeightsGrad;     // [4, I, H]
  std::vector<double> outputWeightsGrad;    // [4, R, H]
  std::vector<double> biasesGrad;           // [4, H]
  std::vector<double> projectionGrad;       // [H, P]; empty without a projection
};

namespace detail {

inline void requireSize(const char *what, const std::vector<double> &v, std::size_t expected) {
  rnnref::requireSize("lstmref", what, v, expected);
}

inline void validate(const LstmModel &m, const LstmData &d) {
  rnnref::requirePermutation("lstmref", m.cellOrder, "four gates");
  rnnref::requireTimeSteps("lstmref", m.timeSteps, m.B);
  requireSize("input", d.input, m.T * m.B * m.I);
  if (m.P >= m.H && m.P != 0)
    throw std::invalid_argument("lstmref: the projection's size P must be less than H");
  requireSize("initialOutput", d.initialOutput, m.B * m.R());
  requireSize("initialCellState", d.initialCellState, m.B * m.H);
  requireSize("inputWeights", d.inputWeights, 4 * m.I * m.H);
  requireSize("outputWeights", d.outputWeights, 4 * m.R() * m.H);
  requireSize("biases", d.biases, 4 * m.H);
  requireSize("projection", d.projection, m.H * m.P);
}

} // namespace detail

inline LstmForward forward(const LstmModel &m, const LstmData &d) {
  detail::validate(m, d);
  const std::size_t T = m.T, B = m.B, I = m.I, H = m.H, BH = B * H, R = m.R(), BR = B * R;
  LstmForward r;
  r.output.assign(m.outputSize(), 0.0);
  r.preActivations.assign(T * 4 * BH, 0.0);
  r.gates.assign(T * 4 * BH, 0.0);
  r.newCellState.assign(T * BH, 0.0);
  r.phiNewCellState.assign(T * BH, 0.0);
  r.cellOutput.assign(T * BH, 0.0);
  r.outputState.assign((T + 1) * BR, 0.0);
  r.cellState.assign((T + 1) * BH, 0.0);
  std::copy(d.initialOutput.begin(), d.initialOutput.end(), r.outputState.begin());
  std::copy(d.initialCellState.begin(), d.initialCellState.end(), r.cellState.begin());
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t b = 0; b < B; ++b) {
      const double *x = &d.input[(t * B + b) * I];
      const double *hPrev = &r.outputState[t * BR + b * R];
      const double *cPrev = &r.cellState[t * BH + b * H];
      auto at = [&](std::vector<double> &v, int gate) { return &v[((t * 4 + gate) * B + b) * H]; };
      for (int gate = 0; gate < 4; ++gate) {
        const std::size_t s = m.slotOf(gate);
        double *a = at(r.preActivations, gate);
        for (std::size_t j = 0; j < H; ++j) {
          double sum = d.biases[s * H + j];
          if (m.doInputWeightCalc)
            for (std::size_t k = 0; k < I; ++k)
              sum += x[k] * d.inputWeights[(s * I + k) * H + j];
          for (std::size_t k = 0; k < R; ++k)
            sum += hPrev[k] * d.outputWeights[(s * R + k) * H + j];
          a[j] = m.clipInput(sum);
        }
        rnnref::forwardRow(gate == kCandidate ? m.act : m.recAct, a, at(r.gates, gate), H);
      }
      const double *f = at(r.gates, kForget), *i = at(r.gates, kInput);
      const double *g = at(r.gates, kCandidate), *o = at(r.gates, kOutput);
      double *c = &r.newCellState[t * BH + b * H];
      double *phiC = &r.phiNewCellState[t * BH + b * H];
      for (std::size_t j = 0; j < H; ++j) {
        c[j] = f[j] * cPrev[j] + i[j] * g[j];
        if (m.cellClip)
          c[j] = std::min(std::max(c[j], m.cellClipMin), m.cellClipMax);
      }
      std::vector<double> phiIn(c, c + H);
      for (double &x : phiIn)
        x = m.clipInput(x);
      rnnref::forwardRow(m.act, phiIn.data(), phiC, H);
      const bool active = t < m.length(b);
      double *mOut = &r.cellOutput[t * BH + b * H];
      for (std::size_t j = 0; j < H; ++j)
        mOut[j] = o[j] * phiC[j];
      double *hNext = &r.outputState[(t + 1) * BR + b * R];
      double *cNext = &r.cellState[(t + 1) * BH + b * H];
      for (std::size_t j = 0; j < H; ++j)
        cNext[j] = active ? c[j] : cPrev[j];
      for (std::size_t k = 0; k < R; ++k) {
        double h = m.P ? 0.0 : mOut[k];
        if (m.P)
          for (std::size_t j = 0; j < H; ++j)
            h += mOut[j] * d.projection[j * R + k];
        hNext[k] = active ? h : hPrev[k];
        if (m.outputFullSequence)
          r.output[t * BR + b * R + k] = active ? h : 0.0;
      }
    }
  }
  r.finalOutput.assign(r.outputState.begin() + T * BR, r.outputState.end());
  r.finalCellState.assign(r.cellState.begin() + T * BH, r.cellState.end());
  if (!m.outputFullSequence)
    r.output = r.finalOutput;
  return r;
}

namespace detail {

// One row b's step t of the backward through the cell: from dhTotal (the gradient reaching
// h_t) and dc (the cell state's, carried in place to c_{t-1}), the gate deltas (gate ids), with
// dWp accumulated for a projected layer.
inline void cellRowBackward(const LstmModel &m, const LstmData &d, const LstmForward &fwd,
                            std::size_t t, std::size_t b, const std::vector<double> &dhTotal,
                            double *dc, std::array<std::vector<double>, 4> &delta,
                            std::vector<double> &projectionGrad) {
  const std::size_t B = m.B, H = m.H, BH = B * H;
  auto at = [&](const std::vector<double> &v, int gate) {
    return &v[((t * 4 + gate) * B + b) * H];
  };
  const double *f = at(fwd.gates, kForget), *i = at(fwd.gates, kInput);
  const double *g = at(fwd.gates, kCandidate), *o = at(fwd.gates, kOutput);
  const double *c = &fwd.newCellState[t * BH + b * H];
  const double *phiC = &fwd.phiNewCellState[t * BH + b * H];
  const double *cPrev = &fwd.cellState[t * BH + b * H];
  const double *mOut = &fwd.cellOutput[t * BH + b * H];
  std::vector<double> dm(H), dPhiC(H), dcNew(H), dGate(H);
  for (std::size_t j = 0; j < H; ++j) { // dm = dh . Wp^T, dWp += m^T dh
    dm[j] = m.P ? 0.0 : dhTotal[j];
    for (std::size_t k = 0; k < m.P; ++k) {
      dm[j] += dhTotal[k] * d.projection[j * m.P + k];
      projectionGrad[j * m.P + k] += mOut[j] * dhTotal[k];
    }
  }
  for (std::size_t j = 0; j < H; ++j) {
    dGate[j] = dm[j] * phiC[j]; // d o
    dPhiC[j] = dm[j] * o[j];
  }
  rnnref::backwardRow(m.recAct, at(fwd.preActivations, kOutput), o, dGate.data(),
                      delta[kOutput].data(), H, m.hardSigmoidGradient);
  std::vector<double> phiIn(c, c + H);
  for (double &x : phiIn)
    x = m.clipInput(x);
  rnnref::backwardRow(m.act, phiIn.data(), phiC, dPhiC.data(), dcNew.data(), H,
                      m.hardSigmoidGradient);
  for (std::size_t j = 0; j < H; ++j) {
    if (!m.passes(c[j])) // phi took the clipped c_t
      dcNew[j] = 0.0;
    if (!m.passes(at(fwd.preActivations, kOutput)[j]))
      delta[kOutput][j] = 0.0;
    dcNew[j] += dc[j];
    const double unclipped = f[j] * cPrev[j] + i[j] * g[j];
    if (m.cellClip && !(unclipped > m.cellClipMin && unclipped < m.cellClipMax))
      dcNew[j] = 0.0;
  }
  auto gateBackward = [&](int gate, rnnref::Activation a, const double *factor) {
    for (std::size_t j = 0; j < H; ++j)
      dGate[j] = dcNew[j] * factor[j];
    rnnref::backwardRow(a, at(fwd.preActivations, gate), at(fwd.gates, gate), dGate.data(),
                        delta[gate].data(), H, m.hardSigmoidGradient);
    for (std::size_t j = 0; j < H; ++j)
      if (!m.passes(at(fwd.preActivations, gate)[j]))
        delta[gate][j] = 0.0;
  };
  gateBackward(kInput, m.recAct, g);
  gateBackward(kCandidate, m.act, i);
  gateBackward(kForget, m.recAct, cPrev);
  for (std::size_t j = 0; j < H; ++j)
    dc[j] = dcNew[j] * f[j];
}

} // namespace detail

// Gradients of sum(outputGrad * output) + sum(stateGrad.output * finalOutput) +
// sum(stateGrad.cellState * finalCellState) with respect to every input of forward(m, d); fwd is
// forward(m, d).
inline LstmGrads backward(const LstmModel &m, const LstmData &d, const LstmForward &fwd,
                          const std::vector<double> &outputGrad,
                          const LstmStateGrad &stateGrad = {}) {
  detail::validate(m, d);
  const std::size_t T = m.T, B = m.B, I = m.I, H = m.H, BH = B * H, R = m.R(), BR = B * R;
  detail::requireSize("outputGrad", outputGrad, m.outputSize());
  if (!stateGrad.output.empty())
    detail::requireSize("lastStepStateGrad.output", stateGrad.output, BR);
  if (!stateGrad.cellState.empty())
    detail::requireSize("lastStepStateGrad.cellState", stateGrad.cellState, BH);
  LstmGrads r;
  r.inputGrad.assign(T * B * I, 0.0);
  r.inputWeightsGrad.assign(4 * I * H, 0.0);
  r.outputWeightsGrad.assign(4 * R * H, 0.0);
  r.biasesGrad.assign(4 * H, 0.0);
  r.projectionGrad.assign(H * m.P, 0.0);
  // The gradients flowing into h_t and c_t of the state, carried from step t+1 down to t.
  std::vector<double> dh(BR, 0.0), dc(BH, 0.0);
  if (!stateGrad.output.empty())
    dh = stateGrad.output;
  if (!stateGrad.cellState.empty())
    dc = stateGrad.cellState;
  if (!m.outputFullSequence) // output is finalOutput
    for (std::size_t k = 0; k < BR; ++k)
      dh[k] += outputGrad[k];
  std::vector<double> dhTotal(R);
  std::array<std::vector<double>, 4> delta; // d loss / d a_u for one row, gate ids
  delta.fill(std::vector<double>(H));
  for (std::size_t t = T; t-- > 0;) {
    for (std::size_t b = 0; b < B; ++b) {
      if (t >= m.length(b)) // the state passes through unchanged and y_t is the constant 0
        continue;
      double *dhRow = &dh[b * R];
      for (std::size_t k = 0; k < R; ++k)
        dhTotal[k] = dhRow[k] + (m.outputFullSequence ? outputGrad[t * BR + b * R + k] : 0.0);
      detail::cellRowBackward(m, d, fwd, t, b, dhTotal, &dc[b * H], delta, r.projectionGrad);
      std::fill(dhRow, dhRow + R, 0.0);
      const double *hPrev = &fwd.outputState[t * BR + b * R];
      const double *x = &d.input[(t * B + b) * I];
      for (int gate = 0; gate < 4; ++gate) {
        const std::size_t s = m.slotOf(gate);
        for (std::size_t j = 0; j < H; ++j)
          r.biasesGrad[s * H + j] += delta[gate][j];
        rnnref::addProductGrads(hPrev, d.outputWeights, s, R, H, delta[gate].data(), dhRow,
                                r.outputWeightsGrad);
        if (m.doInputWeightCalc)
          rnnref::addProductGrads(x, d.inputWeights, s, I, H, delta[gate].data(),
                                  &r.inputGrad[(t * B + b) * I], r.inputWeightsGrad);
      }
    }
  }
  r.initialOutputGrad = dh;
  r.initialCellStateGrad = dc;
  return r;
}

} // namespace lstmref
