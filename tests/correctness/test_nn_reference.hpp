// Double-precision host models of the aspen::nn non-linearities, written independently of the
// codelets: forward values with their limits at +-inf, analytic derivatives, softmax rows.
#pragma once

#include <aspen/nn/NonLinearityDef.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace nntest {

using aspen::nn::NonLinearityType;

inline double refSigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// f(x) for an element-wise kind.
inline double refForward(NonLinearityType type, double x) {
  if (std::isnan(x))
    return x;
  const double kPi = 3.14159265358979323846;
  switch (type) {
  case NonLinearityType::SIGMOID:
    return refSigmoid(x);
  case NonLinearityType::HARD_SIGMOID:
    return std::min(1.0, std::max(0.0, 0.2 * x + 0.5));
  case NonLinearityType::RELU:
    return x > 0 ? x : 0.0;
  case NonLinearityType::TANH:
    return std::tanh(x);
  case NonLinearityType::GELU:
    if (std::isinf(x))
      return x > 0 ? x : 0.0;
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x)));
  case NonLinearityType::GELU_ERF:
    if (std::isinf(x))
      return x > 0 ? x : 0.0;
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case NonLinearityType::SWISH:
    if (std::isinf(x))
      return x > 0 ? x : 0.0;
    return x * refSigmoid(x);
  default:
    return std::numeric_limits<double>::quiet_NaN();
  }
}

// f'(x), analytically (hard sigmoid: 0.2 strictly inside (-2.5, 2.5); relu: 1 for x > 0).
inline double refDerivative(NonLinearityType type, double x) {
  if (std::isnan(x))
    return x;
  const double kPi = 3.14159265358979323846;
  if (std::isinf(x)) {
    const bool identityAtInf = type == NonLinearityType::RELU || type == NonLinearityType::GELU ||
                               type == NonLinearityType::GELU_ERF ||
                               type == NonLinearityType::SWISH;
    return identityAtInf && x > 0 ? 1.0 : 0.0;
  }
  switch (type) {
  case NonLinearityType::SIGMOID: {
    const double s = refSigmoid(x);
    return s * (1 - s);
  }
  case NonLinearityType::HARD_SIGMOID:
    return x > -2.5 && x < 2.5 ? 0.2 : 0.0;
  case NonLinearityType::RELU:
    return x > 0 ? 1.0 : 0.0;
  case NonLinearityType::TANH: {
    const double t = std::tanh(x);
    return 1 - t * t;
  }
  case NonLinearityType::GELU: {
    const double k = std::sqrt(2.0 / kPi);
    const double u = k * (x + 0.044715 * x * x * x);
    const double t = std::tanh(u);
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
  }
  case NonLinearityType::GELU_ERF:
    return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
           x * std::exp(-0.5 * x * x) / std::sqrt(2 * kPi);
  case NonLinearityType::SWISH: {
    const double s = refSigmoid(x);
    return s + x * s * (1 - s);
  }
  default:
    return std::numeric_limits<double>::quiet_NaN();
  }
}

// scale * softmax(row) in double (the maximum is subtracted, which does not change the value).
inline std::vector<double> refSoftmax(const std::vector<double> &row, double scale) {
  double m = -std::numeric_limits<double>::infinity();
  for (double x : row)
    m = std::max(m, x);
  double sum = 0;
  for (double x : row)
    sum += std::exp(x - m);
  std::vector<double> y;
  for (double x : row)
    y.push_back(scale * std::exp(x - m) / sum);
  return y;
}

} // namespace nntest
