// What the double-precision host models of the recurrent layers share (tools/rnnref/Lstm.hpp,
// tools/rnnref/Gru.hpp; docs/recurrent.md is the contract): the non-linearities with their
// derivatives and row Jacobians, the variable-sequence-length rule and argument checks.
// Plain C++17, header-only, no Aspen dependency.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace rnnref {

// The one list of activations: enum, names and dispatch follow it.
#define RNNREF_ACTIVATIONS(X)                                                                      \
  X(sigmoid)                                                                                       \
  X(hard_sigmoid)                                                                                  \
  X(relu)                                                                                          \
  X(tanh)                                                                                          \
  X(gelu)                                                                                          \
  X(gelu_erf)                                                                                      \
  X(swish)                                                                                         \
  X(softmax)

enum class Activation {
#define RNNREF_ENUM(name) name,
  RNNREF_ACTIVATIONS(RNNREF_ENUM)
#undef RNNREF_ENUM
};

inline constexpr const char *kActivationNames[] = {
#define RNNREF_NAME(name) #name,
    RNNREF_ACTIVATIONS(RNNREF_NAME)
#undef RNNREF_NAME
};
inline constexpr std::size_t kNumActivations = std::size(kActivationNames);
static_assert(static_cast<std::size_t>(Activation::softmax) + 1 == kNumActivations,
              "kActivationNames must follow RNNREF_ACTIVATIONS");

inline std::string activationName(Activation a) {
  return kActivationNames[static_cast<std::size_t>(a)];
}

// The lower-case name; throws std::invalid_argument listing the names otherwise.
inline Activation parseActivation(const std::string &name) {
  std::string allowed;
  for (std::size_t k = 0; k < kNumActivations; ++k) {
    if (name == kActivationNames[k])
      return static_cast<Activation>(k);
    allowed += (k ? ", " : "") + std::string(kActivationNames[k]);
  }
  throw std::invalid_argument("unknown activation '" + name + "' (allowed: " + allowed + ")");
}

inline double sigmoidOf(double x) { return 1.0 / (1.0 + std::exp(-x)); }

inline constexpr double kPi = 3.14159265358979323846;

// y = act(x) for an element-wise kind; softmax has no scalar form (use forwardRow).
inline double forward(Activation a, double x) {
  const double k = std::sqrt(2.0 / kPi);
  switch (a) {
  case Activation::sigmoid:
    return sigmoidOf(x);
  case Activation::hard_sigmoid:
    return std::clamp(0.2 * x + 0.5, 0.0, 1.0);
  case Activation::relu:
    return x > 0 ? x : 0.0;
  case Activation::tanh:
    return std::tanh(x);
  case Activation::gelu:
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  case Activation::gelu_erf:
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case Activation::swish:
    return x * sigmoidOf(x);
  case Activation::softmax:
    break;
  }
  throw std::invalid_argument("rnnref::forward: softmax is over a row, not element-wise");
}

// The derivative a layer gives hard_sigmoid: popnn's rule, 0.2 wherever the output is in
// [0, 1] -- that is everywhere, saturated inputs included (the layers' default) -- or the exact
// one, 0.2 strictly inside (-2.5, 2.5) and 0 outside.
enum class HardSigmoidGradient { popnn, exact };

inline const char *hardSigmoidGradientName(HardSigmoidGradient g) {
  return g == HardSigmoidGradient::popnn ? "popnn" : "exact";
}

// d act / dx at x for an element-wise kind. hard_sigmoid: 0.2 strictly inside (-2.5, 2.5), 0
// outside (the exact derivative); relu: 1 for x > 0, else 0.
inline double derivative(Activation a, double x) {
  const double k = std::sqrt(2.0 / kPi);
  switch (a) {
  case Activation::sigmoid: {
    const double s = sigmoidOf(x);
    return s * (1.0 - s);
  }
  case Activation::hard_sigmoid:
    return x > -2.5 && x < 2.5 ? 0.2 : 0.0;
  case Activation::relu:
    return x > 0 ? 1.0 : 0.0;
  case Activation::tanh: {
    const double t = std::tanh(x);
    return 1.0 - t * t;
  }
  case Activation::gelu: {
    const double t = std::tanh(k * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
  }
  case Activation::gelu_erf:
    return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) +
           x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * kPi);
  case Activation::swish: {
    const double s = sigmoidOf(x);
    return s + x * s * (1.0 - s);
  }
  case Activation::softmax:
    break;
  }
  throw std::invalid_argument("rnnref::derivative: softmax is over a row, not element-wise");
}

// The derivative a layer built with rule `g` uses: derivative(a, x), except hard_sigmoid under
// popnn's rule, 0.2 for every x.
inline double layerDerivative(Activation a, double x, HardSigmoidGradient g) {
  if (a == Activation::hard_sigmoid && g == HardSigmoidGradient::popnn)
    return 0.2;
  return derivative(a, x);
}

// y[0..n) = act(x[0..n)): softmax over the row, every other kind element by element.
inline void forwardRow(Activation a, const double *x, double *y, std::size_t n) {
  if (a != Activation::softmax) {
    for (std::size_t j = 0; j < n; ++j)
      y[j] = forward(a, x[j]);
    return;
  }
  const double m = *std::max_element(x, x + n); // exact in double: only for the exponent's range
  double sum = 0;
  for (std::size_t j = 0; j < n; ++j)
    sum += y[j] = std::exp(x[j] - m);
  for (std::size_t j = 0; j < n; ++j)
    y[j] /= sum;
}

// dx = J^T dy for the row y = act(x): softmax's Jacobian is y_i (delta_ij - y_j), so
// dx_i = y_i (dy_i - sum_j y_j dy_j); element-wise kinds give dx_j = act'(x_j) dy_j, with
// hard_sigmoid's act' under rule `g`.
inline void backwardRow(Activation a, const double *x, const double *y, const double *dy,
                        double *dx, std::size_t n,
                        HardSigmoidGradient g = HardSigmoidGradient::popnn) {
  if (a != Activation::softmax) {
    for (std::size_t j = 0; j < n; ++j)
      dx[j] = layerDerivative(a, x[j], g) * dy[j];
    return;
  }
  double dot = 0;
  for (std::size_t j = 0; j < n; ++j)
    dot += y[j] * dy[j];
  for (std::size_t j = 0; j < n; ++j)
    dx[j] = y[j] * (dy[j] - dot);
}

// Row b's sequence length under docs/recurrent.md: T when timeSteps is empty, else timeSteps[0]
// for every row (size 1) or timeSteps[b] (size B), capped at T.
inline std::size_t sequenceLength(const std::vector<unsigned> &timeSteps, std::size_t T,
                                  std::size_t b) {
  if (timeSteps.empty())
    return T;
  return std::min<std::size_t>(timeSteps.size() == 1 ? timeSteps[0] : timeSteps[b], T);
}

// v [T, B, F] (rowMajor: [B, T], an attention) with each row's first sequenceLength(b) steps
// in reverse order and the rest in place: a reverse layer (option direction reverse) is the
// forward one run on the sequences so reordered, its sequence results reordered back (the
// reordering is its own inverse).
inline std::vector<double> reverseRowSteps(const std::vector<double> &v,
                                           const std::vector<unsigned> &timeSteps, std::size_t T,
                                           std::size_t B, bool rowMajor = false) {
  const std::size_t F = v.size() / (T * B);
  std::vector<double> out(v.size());
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t n = sequenceLength(timeSteps, T, b);
    for (std::size_t t = 0; t < T; ++t) {
      const std::size_t from = t < n ? n - 1 - t : t;
      for (std::size_t f = 0; f < F; ++f)
        out[rowMajor ? b * T + t : (t * B + b) * F + f] =
            v[rowMajor ? b * T + from : (from * B + b) * F + f];
    }
  }
  return out;
}

// The slot of `order` holding gate `gate` (order.size() when none does).
template <std::size_t N> std::size_t slotOf(const std::array<int, N> &order, int gate) {
  return static_cast<std::size_t>(std::find(order.begin(), order.end(), gate) - order.begin());
}

// Argument checks; `model` ("lstmref", "gruref") starts each message.
inline void requireSize(const char *model, const char *what, const std::vector<double> &v,
                        std::size_t expected) {
  if (v.size() != expected)
    throw std::invalid_argument(std::string(model) + ": " + what + " has " +
                                std::to_string(v.size()) + " elements, expected " +
                                std::to_string(expected));
}

template <std::size_t N>
void requirePermutation(const char *model, const std::array<int, N> &cellOrder, const char *gates) {
  std::array<bool, N> seen{};
  for (int gate : cellOrder) {
    if (gate < 0 || gate >= int(N) || seen[gate])
      throw std::invalid_argument(std::string(model) + ": cellOrder is not a permutation of the " +
                                  gates);
    seen[gate] = true;
  }
}

inline void requireTimeSteps(const char *model, const std::vector<unsigned> &timeSteps,
                             std::size_t B) {
  if (!(timeSteps.empty() || timeSteps.size() == 1 || timeSteps.size() == B))
    throw std::invalid_argument(std::string(model) + ": timeSteps has " +
                                std::to_string(timeSteps.size()) +
                                " lengths, expected 0, 1 or B = " + std::to_string(B));
}

// out[j] (+)= sum_k v[k] * W[slot][k][j] for the [G, K, H] weights W (G gates).
inline void addProduct(const double *v, const std::vector<double> &W, std::size_t slot,
                       std::size_t K, std::size_t H, double *out) {
  for (std::size_t j = 0; j < H; ++j)
    for (std::size_t k = 0; k < K; ++k)
      out[j] += v[k] * W[(slot * K + k) * H + j];
}

// dv[k] += sum_j delta[j] * W[slot][k][j] and dW[slot][k][j] += v[k] * delta[j]: the reverse of
// addProduct.
inline void addProductGrads(const double *v, const std::vector<double> &W, std::size_t slot,
                            std::size_t K, std::size_t H, const double *delta, double *dv,
                            std::vector<double> &dW) {
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t j = 0; j < H; ++j) {
      dv[k] += delta[j] * W[(slot * K + k) * H + j];
      dW[(slot * K + k) * H + j] += v[k] * delta[j];
    }
}


} // namespace rnnref
