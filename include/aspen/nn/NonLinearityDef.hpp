// NonLinearityType (popnn's NonLinearityDef.hpp) and the facts about each kind, all derived from
// the table in aspen/nn/codelets/NonLinearityTable.hpp.
//
//   SIGMOID        y = 1 / (1 + e^-x)
//   HARD_SIGMOID   y = clamp(0.2x + 0.5, 0, 1)
//   RELU           y = max(x, 0)                      (NaN stays NaN)
//   TANH           y = tanh(x)
//   GELU           y = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))     (tanh approximation)
//   GELU_ERF       y = x/2 (1 + erf(x / sqrt(2)))
//   SWISH          y = x * sigmoid(x)
//   SOFTMAX        y = e^x / sum(e^x) over the innermost dimension (overflows for x > ~88)
//   SOFTMAX_STABLE y = e^(x-m) / sum(e^(x-m)), m the row maximum
//   SOFTMAX_SCALED SOFTMAX_STABLE times SOFTMAX_SCALING (popnn's scaled variant: more dynamic range
//                  for half outputs; getNonLinearityScaling says by how much)
// GELU, GELU_ERF and SWISH are 0 at -inf and x at +inf (their limits).
#pragma once

#include <aspen/Export.hpp>
#include <aspen/nn/codelets/NonLinearityTable.hpp>

#include <ostream>
#include <string>

namespace aspen::nn {

inline constexpr unsigned kNumNonLinearityTypes = ASPEN_NN_NON_LINEARITY_COUNT;

// The factor SOFTMAX_SCALED multiplies its outputs by (popnn's SOFTMAX_SCALING).
inline constexpr float SOFTMAX_SCALING = 62000.0f; // popnn's: within half's range (65504)

// "SIGMOID", "SOFTMAX_STABLE", ...; invalid_option for a value outside the enum.
ASPEN_API std::string nonLinearityName(NonLinearityType type);
// The same name. asString and the stream operator below are function templates so that a
// program's own asString or operator<< for NonLinearityType (PopLibs declares none in this
// header, so ported programs write them) is chosen over Aspen's rather than being ambiguous.
template <class = void> std::string asString(NonLinearityType type) {
  return nonLinearityName(type);
}

} // namespace aspen::nn

namespace popnn {
template <class CharT, class Traits>
std::basic_ostream<CharT, Traits> &operator<<(std::basic_ostream<CharT, Traits> &os,
                                              NonLinearityType type) {
  return os << aspen::nn::nonLinearityName(type).c_str();
}
} // namespace popnn

namespace aspen::nn {

// The softmax family (computed over the innermost dimension) rather than element-wise.
constexpr bool isSoftmax(NonLinearityType type) {
  switch (type) {
#define ASPEN_NN_IS_SOFTMAX_E(name, helper, takesInput)                                           \
  case NonLinearityType::name:                                                                    \
    return false;
#define ASPEN_NN_IS_SOFTMAX_S(name, helper, stable, scaled)                                       \
  case NonLinearityType::name:                                                                    \
    return true;
    ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(ASPEN_NN_IS_SOFTMAX_E)
    ASPEN_NN_SOFTMAX_NON_LINEARITIES(ASPEN_NN_IS_SOFTMAX_S)
#undef ASPEN_NN_IS_SOFTMAX_E
#undef ASPEN_NN_IS_SOFTMAX_S
  }
  return false;
}

// True when nonLinearityInputGradient takes the forward input (GELU, GELU_ERF, SWISH) rather
// than the forward output (every other kind).
constexpr bool gradientTakesInput(NonLinearityType type) {
  switch (type) {
#define ASPEN_NN_TAKES_INPUT_E(name, helper, takesInput)                                          \
  case NonLinearityType::name:                                                                    \
    return takesInput;
#define ASPEN_NN_TAKES_INPUT_S(name, helper, stable, scaled)                                      \
  case NonLinearityType::name:                                                                    \
    return false;
    ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(ASPEN_NN_TAKES_INPUT_E)
    ASPEN_NN_SOFTMAX_NON_LINEARITIES(ASPEN_NN_TAKES_INPUT_S)
#undef ASPEN_NN_TAKES_INPUT_E
#undef ASPEN_NN_TAKES_INPUT_S
  }
  return false;
}

// The factor the outputs of `type` are scaled by: SOFTMAX_SCALING for SOFTMAX_SCALED, else 1.
constexpr float getNonLinearityScaling(NonLinearityType type) {
  switch (type) {
#define ASPEN_NN_SCALING_S(name, helper, stable, scaled)                                          \
  case NonLinearityType::name:                                                                    \
    return scaled ? SOFTMAX_SCALING : 1.0f;
    ASPEN_NN_SOFTMAX_NON_LINEARITIES(ASPEN_NN_SCALING_S)
#undef ASPEN_NN_SCALING_S
  default:
    return 1.0f;
  }
}

// The softmax kinds that subtract the row maximum first (SOFTMAX_STABLE, SOFTMAX_SCALED).
constexpr bool isStableSoftmax(NonLinearityType type) {
  switch (type) {
#define ASPEN_NN_STABLE_S(name, helper, stable, scaled)                                           \
  case NonLinearityType::name:                                                                    \
    return stable;
    ASPEN_NN_SOFTMAX_NON_LINEARITIES(ASPEN_NN_STABLE_S)
#undef ASPEN_NN_STABLE_S
  default:
    return false;
  }
}

} // namespace aspen::nn
