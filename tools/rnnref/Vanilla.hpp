// The double-precision host model of the vanilla RNN (aspen/nn/Recurrent.hpp, docs/recurrent.md
// "Vanilla RNN") that rnn_layer checks Aspen against:
//   y_t = nl(x_t . Wff + y_{t-1} . Wfb + b),  y_{-1} = y0
// With lengths (timeSteps: one for every row, or one a row, capped at T) row b runs steps
// 0 .. L_b - 1; its outputs past them are 0 and its final state yN is y at step L_b - 1 (y0 when
// L_b = 0), as rnn::rnnStackFwd keeps it (aspen/nn/RecurrentStack.hpp).
// x [T,B,I], Wff [I,H], Wfb [H,H], b [H], y0 [B,H], y [T,B,H]; row-major throughout. nl is
// sigmoid, hard_sigmoid, relu, tanh or softmax (over H), the kinds whose gradient the layer
// takes from its output; the activations are rnnref's. backward() is exact reverse mode:
//   delta_t = J_nl(a_t)^T (dy_t + delta_{t+1} . Wfb^T),   delta_{L_b} . Wfb^T = dyN (the final
//   state's gradient, 0 when not given), delta_t = 0 for t >= L_b
//   dx_t = delta_t . Wff^T,  dy0 = delta_0 . Wfb^T,
//   dWff = sum_t x_t^T delta_t,  dWfb = sum_t y_{t-1}^T delta_t,  db = sum_{t,b} delta_t.
// Plain C++17, header-only, no Aspen dependency.
#pragma once

#include "Common.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace rnnlayerref {

using rnnref::Activation;

struct RnnModel {
  std::size_t T = 1, B = 1, I = 1, H = 1;
  Activation nl = Activation::tanh;
  // hard_sigmoid's derivative: popnn's rule or the exact one (the layer's; Recurrent.cpp).
  rnnref::HardSigmoidGradient hardSigmoidGradient = rnnref::HardSigmoidGradient::exact;
  std::vector<unsigned> timeSteps; // empty: every row runs T steps
};

struct RnnData {
  std::vector<double> input;         // x [T,B,I]
  std::vector<double> initialOutput; // y0 [B,H]
  std::vector<double> inputWeights;  // Wff [I,H]
  std::vector<double> outputWeights; // Wfb [H,H]
  std::vector<double> biases;        // b [H]
};

struct RnnForward {
  std::vector<double> preActivation; // a_t [T,B,H]
  std::vector<double> output;        // y_t [T,B,H]
  std::vector<double> finalOutput;   // yN [B,H]
};

struct RnnGrads {
  std::vector<double> inputGrad;         // [T,B,I]
  std::vector<double> initialOutputGrad; // [B,H]
  std::vector<double> inputWeightsGrad;  // [I,H]
  std::vector<double> outputWeightsGrad; // [H,H]
  std::vector<double> biasesGrad;        // [H]
};

inline void validate(const RnnModel &m, const RnnData &d) {
  if (m.nl == Activation::gelu || m.nl == Activation::gelu_erf || m.nl == Activation::swish)
    throw std::invalid_argument("rnnlayerref: " + rnnref::activationName(m.nl) +
                                " is not a vanilla RNN non-linearity (its gradient needs the "
                                "forward input)");
  const char *model = "rnnlayerref";
  rnnref::requireSize(model, "input", d.input, m.T * m.B * m.I);
  rnnref::requireSize(model, "initialOutput", d.initialOutput, m.B * m.H);
  rnnref::requireSize(model, "inputWeights", d.inputWeights, m.I * m.H);
  rnnref::requireSize(model, "outputWeights", d.outputWeights, m.H * m.H);
  rnnref::requireSize(model, "biases", d.biases, m.H);
  rnnref::requireTimeSteps(model, m.timeSteps, m.B);
}

inline RnnForward forward(const RnnModel &m, const RnnData &d) {
  validate(m, d);
  const std::size_t T = m.T, B = m.B, I = m.I, H = m.H;
  RnnForward f{std::vector<double>(T * B * H), std::vector<double>(T * B * H), d.initialOutput};
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t length = rnnref::sequenceLength(m.timeSteps, T, b);
      if (t >= length)
        continue;
      const double *x = &d.input[(t * B + b) * I];
      const double *prev = t ? &f.output[((t - 1) * B + b) * H] : &d.initialOutput[b * H];
      double *a = &f.preActivation[(t * B + b) * H];
      for (std::size_t j = 0; j < H; ++j) {
        double s = d.biases[j];
        for (std::size_t i = 0; i < I; ++i)
          s += x[i] * d.inputWeights[i * H + j];
        for (std::size_t k = 0; k < H; ++k)
          s += prev[k] * d.outputWeights[k * H + j];
        a[j] = s;
      }
      rnnref::forwardRow(m.nl, a, &f.output[(t * B + b) * H], H);
      if (t + 1 == length)
        std::copy_n(&f.output[(t * B + b) * H], H, &f.finalOutput[b * H]);
    }
  return f;
}

// outputGrad: dL/dy [T,B,H] (read only at each row's steps); finalOutputGrad: dL/dyN [B,H], or
// empty for none.
inline RnnGrads backward(const RnnModel &m, const RnnData &d, const RnnForward &f,
                         const std::vector<double> &outputGrad,
                         const std::vector<double> &finalOutputGrad = {}) {
  validate(m, d);
  const std::size_t T = m.T, B = m.B, I = m.I, H = m.H;
  rnnref::requireSize("rnnlayerref", "outputGrad", outputGrad, T * B * H);
  RnnGrads g{std::vector<double>(T * B * I), std::vector<double>(B * H),
             std::vector<double>(I * H), std::vector<double>(H * H), std::vector<double>(H)};
  // delta_{t+1} . Wfb^T: dL/dy_t through step t+1 (or as the final state)
  std::vector<double> carry(B * H, 0.0);
  if (!finalOutputGrad.empty()) {
    rnnref::requireSize("rnnlayerref", "finalOutputGrad", finalOutputGrad, B * H);
    carry = finalOutputGrad;
  }
  std::vector<double> dy(H), delta(H);
  for (std::size_t t = T; t-- > 0;)
    for (std::size_t b = 0; b < B; ++b) {
      if (t >= rnnref::sequenceLength(m.timeSteps, T, b))
        continue;
      const std::size_t row = t * B + b;
      for (std::size_t j = 0; j < H; ++j)
        dy[j] = outputGrad[row * H + j] + carry[b * H + j];
      rnnref::backwardRow(m.nl, &f.preActivation[row * H], &f.output[row * H], dy.data(),
                          delta.data(), H, m.hardSigmoidGradient);
      const double *x = &d.input[row * I];
      const double *prev = t ? &f.output[((t - 1) * B + b) * H] : &d.initialOutput[b * H];
      for (std::size_t i = 0; i < I; ++i) {
        double s = 0;
        for (std::size_t j = 0; j < H; ++j) {
          s += delta[j] * d.inputWeights[i * H + j];
          g.inputWeightsGrad[i * H + j] += x[i] * delta[j];
        }
        g.inputGrad[row * I + i] = s;
      }
      for (std::size_t k = 0; k < H; ++k) {
        double s = 0;
        for (std::size_t j = 0; j < H; ++j) {
          s += delta[j] * d.outputWeights[k * H + j];
          g.outputWeightsGrad[k * H + j] += prev[k] * delta[j];
        }
        carry[b * H + k] = s;
      }
      for (std::size_t j = 0; j < H; ++j)
        g.biasesGrad[j] += delta[j];
    }
  g.initialOutputGrad = carry;
  return g;
}

} // namespace rnnlayerref
