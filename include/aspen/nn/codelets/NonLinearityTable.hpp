// The one list of aspen::nn non-linearities. Everything else is derived from it: the enum
// NonLinearityType, the names, the helper builders (sigmoid(), softmaxStable(), ...), the codelet
// instantiations, the host dispatch and the tests' iteration over kinds.
//
// Two families, because they are computed differently:
//   element-wise  X(NAME, helper, gradientTakesInput)
//       gradientTakesInput: nonLinearityInputGradient takes the forward *input* (the output is not
//       enough to recover the derivative) rather than the forward output.
//   softmax       X(NAME, helper, stable, scaled)   over the innermost dimension
//       stable: subtract the row maximum before exp; scaled: outputs multiplied by SOFTMAX_SCALING.
//
// This header is included by codelets as well: no standard library, macros and an enum only.
#pragma once

#define ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(X)                                                   \
  X(SIGMOID, sigmoid, false)                                                                      \
  X(HARD_SIGMOID, hardSigmoid, false)                                                             \
  X(RELU, relu, false)                                                                            \
  X(TANH, tanh, false)                                                                            \
  X(GELU, gelu, true)                                                                             \
  X(GELU_ERF, geluErf, true)                                                                      \
  X(SWISH, swish, true)

#define ASPEN_NN_SOFTMAX_NON_LINEARITIES(X)                                                       \
  X(SOFTMAX, softmax, false, false)                                                               \
  X(SOFTMAX_STABLE, softmaxStable, true, false)                                                   \
  X(SOFTMAX_SCALED, scaledSoftmaxStable, true, true)

#define ASPEN_NN_NON_LINEARITY_COUNT 10

// The enum is declared in namespace popnn, PopLibs' own, so that the operators a ported program
// declares there for it (stream operators for option parsing, say) are found by argument-
// dependent lookup as they are with PopLibs; aspen::nn::NonLinearityType names the same type.
namespace popnn {

enum class NonLinearityType {
#define ASPEN_NN_ENUM_ELEMENTWISE(name, helper, takesInput) name,
#define ASPEN_NN_ENUM_SOFTMAX(name, helper, stable, scaled) name,
  ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(ASPEN_NN_ENUM_ELEMENTWISE)
  ASPEN_NN_SOFTMAX_NON_LINEARITIES(ASPEN_NN_ENUM_SOFTMAX)
#undef ASPEN_NN_ENUM_ELEMENTWISE
#undef ASPEN_NN_ENUM_SOFTMAX
};

static_assert(static_cast<int>(NonLinearityType::SOFTMAX_SCALED) + 1 ==
                  ASPEN_NN_NON_LINEARITY_COUNT,
              "ASPEN_NN_NON_LINEARITY_COUNT must match the table");

} // namespace popnn

namespace aspen::nn {
using NonLinearityType = ::popnn::NonLinearityType;
} // namespace aspen::nn
