// Non-linearities and their gradients (popnn's NonLinearity.hpp). Kinds: NonLinearityDef.hpp.
//
// nonLinearity(graph, type, t, prog, debug) -> Tensor
//   t: any shape, FLOAT or HALF (computed in float). Returns a new tensor of t's shape and type,
//   mapped like t. Element-wise kinds apply to every element; the softmax kinds work over the
//   innermost dimension (t needs rank >= 1; each row of t.dim(rank-1) elements independently).
//   A row containing NaN or +inf gives a NaN row; so does a row that is all -inf.
// nonLinearityInPlace(graph, type, t, prog, debug)
//   The same, writing t (t must not contain aliases such as broadcast views).
// The overloads with `float &nonLinearityScaling` also return getNonLinearityScaling(type).
// The ComputeSet overloads add the vertices of an element-wise kind to `cs` (softmax kinds need
// two passes over a row and raise invalid_option there, as in popnn).
//
// nonLinearityInputGradient(graph, type, act, outGradient, prog, debug) -> Tensor
//   act: the forward *output* for SIGMOID, HARD_SIGMOID, RELU, TANH and the softmax kinds (the
//   derivative is exact from it); the forward *input* for GELU, GELU_ERF and SWISH (as popnn does
//   for GELU; their derivative cannot be recovered from the output). gradientTakesInput(type)
//   says which. outGradient: dL/dy, same shape and type as act. Returns dL/dx, mapped like act.
//   Derivatives: sigmoid y(1-y); tanh 1-y^2; relu 1 where y > 0, else 0; softmax y(g - sum(g y));
//   SOFTMAX_SCALED, whose output is y = S softmax(x): popnn's y (g - sum(g y)), the softmax
//   formula applied to the scaled output -- not the true gradient, y (g - sum(g y) / S) -- as
//   popnn's layer, reference and tests have it. HARD_SIGMOID: popnn's (HardSigmoidExpr), 0.2
//   where |act| <= 2.5 and 0 elsewhere, so 0.2 for every output the forward can give, saturated
//   ones included. GELU, GELU_ERF, SWISH: their analytic derivatives, 0 at -inf and 1 at +inf.
// The overloads taking NonLinearityGradient::Exact give the true HARD_SIGMOID derivative
// instead: 0.2 where 0 < y < 1 (x in (-2.5, 2.5)) and 0 elsewhere. The LSTM and GRU cells offer
// the same two rules through their hardSigmoidGradient option (poplibs by default, exact in the
// C backend); the vanilla RNN (Recurrent.hpp) uses the exact one. Every other kind has one
// derivative.
//
// Errors: type_error (not FLOAT/HALF, act and outGradient of different types), shape_error
// (shapes differ, softmax of a scalar), graph_connection_error (in-place on a tensor with aliases),
// invalid_option (a softmax kind in a ComputeSet overload, naming the allowed kinds).
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>
#include <aspen/nn/NonLinearityDef.hpp>

namespace aspen::nn {

ASPEN_API Tensor nonLinearity(Graph &graph, NonLinearityType type, Tensor t,
                              program::Sequence &prog, const DebugContext &debug = {});
ASPEN_API Tensor nonLinearity(Graph &graph, NonLinearityType type, Tensor t,
                              float &nonLinearityScaling, program::Sequence &prog,
                              const DebugContext &debug = {});
ASPEN_API void nonLinearityInPlace(Graph &graph, NonLinearityType type, Tensor t,
                                   program::Sequence &prog, const DebugContext &debug = {});
ASPEN_API void nonLinearityInPlace(Graph &graph, NonLinearityType type, Tensor t,
                                   float &nonLinearityScaling, program::Sequence &prog,
                                   const DebugContext &debug = {});
ASPEN_API void nonLinearityInPlace(Graph &graph, NonLinearityType type, Tensor t, ComputeSet &cs,
                                   const DebugContext &debug = {});

// Which HARD_SIGMOID derivative nonLinearityInputGradient takes (see above).
enum class NonLinearityGradient { Popnn, Exact };

ASPEN_API Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type, Tensor act,
                                           Tensor outGradient, program::Sequence &prog,
                                           const DebugContext &debug = {});
ASPEN_API Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type, Tensor act,
                                           Tensor outGradient, NonLinearityGradient derivative,
                                           program::Sequence &prog,
                                           const DebugContext &debug = {});
ASPEN_API Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type, Tensor act,
                                           Tensor outGradient, ComputeSet &cs,
                                           const DebugContext &debug = {});
ASPEN_API Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type, Tensor act,
                                           Tensor outGradient, NonLinearityGradient derivative,
                                           ComputeSet &cs, const DebugContext &debug = {});

// One named helper per kind, as popnn: sigmoid(graph, t, prog), sigmoidInPlace(graph, t, prog),
// hardSigmoid, relu, tanh, gelu, geluErf, swish, softmax, softmaxStable, scaledSoftmaxStable.
#define ASPEN_NN_DEFINE_HELPERS(name, helper)                                                     \
  inline Tensor helper(Graph &graph, Tensor t, program::Sequence &prog,                          \
                       const DebugContext &debug = {}) {                                          \
    return nonLinearity(graph, NonLinearityType::name, t, prog, debug);                          \
  }                                                                                               \
  inline void helper##InPlace(Graph &graph, Tensor t, program::Sequence &prog,                   \
                              const DebugContext &debug = {}) {                                   \
    nonLinearityInPlace(graph, NonLinearityType::name, t, prog, debug);                          \
  }
#define ASPEN_NN_HELPERS_E(name, helper, takesInput) ASPEN_NN_DEFINE_HELPERS(name, helper)
#define ASPEN_NN_HELPERS_S(name, helper, stable, scaled) ASPEN_NN_DEFINE_HELPERS(name, helper)
ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(ASPEN_NN_HELPERS_E)
ASPEN_NN_SOFTMAX_NON_LINEARITIES(ASPEN_NN_HELPERS_S)
#undef ASPEN_NN_HELPERS_E
#undef ASPEN_NN_HELPERS_S
#undef ASPEN_NN_DEFINE_HELPERS

} // namespace aspen::nn
