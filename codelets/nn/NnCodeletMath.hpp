// Scalar helpers shared by the aspen::nn codelet families: float math that compiles for the host
// and with NVRTC, the element-wise non-linearities and their derivatives (one function each,
// dispatched on NonLinearityType at compile time), NaN-aware ordering for arg-max/top-k, and the
// split of a tile's regions between a MultiVertex's workers.
// All arithmetic is in float; half data is converted on load and rounded on store.
#pragma once

#include <aspen/Vertex.hpp>
#include <aspen/nn/codelets/NonLinearityTable.hpp>

namespace aspen::nn {

#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
ASPEN_HD inline float nnExp(float x) { return expf(x); }
ASPEN_HD inline float nnLog(float x) { return logf(x); }
ASPEN_HD inline float nnTanh(float x) { return tanhf(x); }
ASPEN_HD inline float nnErf(float x) { return erff(x); }
#else
inline float nnExp(float x) { return __builtin_expf(x); }
inline float nnLog(float x) { return __builtin_logf(x); }
inline float nnTanh(float x) { return __builtin_tanhf(x); }
inline float nnErf(float x) { return __builtin_erff(x); }
#endif

// Beyond this magnitude a float is infinite; used to give the limits at ±inf where the closed
// forms below would compute inf * 0.
constexpr float kNnFloatMax = 3.40282347e38f;
constexpr float kNnSqrt2OverPi = 0.7978845608028654f;
constexpr float kNnGeluCubic = 0.044715f;
constexpr float kNnInvSqrt2 = 0.7071067811865476f;
constexpr float kNnInvSqrt2Pi = 0.3989422804014327f;

ASPEN_HD inline float nnSigmoid(float x) {
  // Two forms so that exp never overflows: exact saturation to 0 and 1.
  if (x >= 0.0f)
    return 1.0f / (1.0f + nnExp(-x));
  const float e = nnExp(x);
  return e / (1.0f + e);
}

// y = f(x) for an element-wise kind.
template <NonLinearityType K> ASPEN_HD inline float nnForward(float x) {
  if constexpr (K == NonLinearityType::SIGMOID) {
    return nnSigmoid(x);
  } else if constexpr (K == NonLinearityType::HARD_SIGMOID) {
    const float y = 0.2f * x + 0.5f;
    return y != y ? y : (y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y));
  } else if constexpr (K == NonLinearityType::RELU) {
    return x > 0.0f ? x : (x != x ? x : 0.0f);
  } else if constexpr (K == NonLinearityType::TANH) {
    return nnTanh(x);
  } else if constexpr (K == NonLinearityType::GELU) {
    if (x < -kNnFloatMax)
      return 0.0f;
    return 0.5f * x * (1.0f + nnTanh(kNnSqrt2OverPi * (x + kNnGeluCubic * x * x * x)));
  } else if constexpr (K == NonLinearityType::GELU_ERF) {
    if (x < -kNnFloatMax)
      return 0.0f;
    return 0.5f * x * (1.0f + nnErf(x * kNnInvSqrt2));
  } else {
    static_assert(K == NonLinearityType::SWISH, "not an element-wise non-linearity");
    if (x < -kNnFloatMax)
      return 0.0f;
    return x * nnSigmoid(x);
  }
}

// dL/dx from `act` (the forward output, or the forward input where the table says so) and
// g = dL/dy.
template <NonLinearityType K> ASPEN_HD inline float nnGradient(float act, float g) {
  if constexpr (K == NonLinearityType::SIGMOID) {
    return g * act * (1.0f - act);
  } else if constexpr (K == NonLinearityType::HARD_SIGMOID) {
    // The true derivative: 0.2 where the output is strictly inside (0, 1), i.e. x in (-2.5, 2.5).
    return act > 0.0f && act < 1.0f ? 0.2f * g : (act != act ? act : 0.0f * g);
  } else if constexpr (K == NonLinearityType::RELU) {
    return act > 0.0f ? g : (act != act ? act : 0.0f * g);
  } else if constexpr (K == NonLinearityType::TANH) {
    return g * (1.0f - act * act);
  } else if constexpr (K == NonLinearityType::GELU) {
    // Beyond |x| = 10 the derivative is 1 or 0 to float precision, and x^3 may overflow.
    const float x = act;
    if (x > 10.0f || x < -10.0f)
      return x > 0.0f ? g : 0.0f * g;
    const float x2 = x * x;
    const float t = nnTanh(kNnSqrt2OverPi * (x + kNnGeluCubic * x2 * x));
    const float dInner = kNnSqrt2OverPi * (1.0f + 3.0f * kNnGeluCubic * x2);
    return g * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dInner);
  } else if constexpr (K == NonLinearityType::GELU_ERF) {
    const float x = act;
    if (x > kNnFloatMax || x < -kNnFloatMax)
      return x > 0.0f ? g : 0.0f * g;
    const float cdf = 0.5f * (1.0f + nnErf(x * kNnInvSqrt2));
    const float pdf = kNnInvSqrt2Pi * nnExp(-0.5f * x * x);
    return g * (cdf + x * pdf);
  } else {
    static_assert(K == NonLinearityType::SWISH, "not an element-wise non-linearity");
    const float x = act;
    if (x > kNnFloatMax || x < -kNnFloatMax)
      return x > 0.0f ? g : 0.0f * g;
    const float s = nnSigmoid(x);
    return g * s * (1.0f + x * (1.0f - s));
  }
}

// The same two functions with the kind chosen at run time (the recurrent cells take their
// activations as vertex members). Only element-wise kinds: softmax needs a whole row.
ASPEN_HD inline float nnForwardOf(NonLinearityType k, float x) {
  switch (k) {
#define ASPEN_NN_FORWARD_CASE(name, helper, takesInput)                                           \
  case NonLinearityType::name:                                                                    \
    return nnForward<NonLinearityType::name>(x);
    ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(ASPEN_NN_FORWARD_CASE)
#undef ASPEN_NN_FORWARD_CASE
  default:
    return x;
  }
}
ASPEN_HD inline float nnGradientOf(NonLinearityType k, float act, float g) {
  switch (k) {
#define ASPEN_NN_GRADIENT_CASE(name, helper, takesInput)                                          \
  case NonLinearityType::name:                                                                    \
    return nnGradient<NonLinearityType::name>(act, g);
    ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(ASPEN_NN_GRADIENT_CASE)
#undef ASPEN_NN_GRADIENT_CASE
  default:
    return g;
  }
}
// True for the kinds whose gradient is computed from the forward input (GELU, GELU_ERF, SWISH).
ASPEN_HD inline bool nnGradientTakesInput(NonLinearityType k) {
  switch (k) {
#define ASPEN_NN_TAKES_INPUT_CASE(name, helper, takesInput)                                       \
  case NonLinearityType::name:                                                                    \
    return takesInput;
    ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(ASPEN_NN_TAKES_INPUT_CASE)
#undef ASPEN_NN_TAKES_INPUT_CASE
  default:
    return false;
  }
}

// True for float: the codelets keep float intermediates in float outputs, but not in half ones.
template <class T> struct NnIsFloat { static constexpr bool value = false; };
template <> struct NnIsFloat<float> { static constexpr bool value = true; };

// The value used to order elements: half widened to float, other types unchanged.
template <class T> struct NnOrdered { typedef T type; };
template <> struct NnOrdered<half> { typedef float type; };

// True when a ranks strictly above b for arg-max and top-k: NaN ranks above every number (so the
// first NaN of a row wins, as NumPy's argmax), otherwise the larger value.
template <class V> ASPEN_HD inline bool nnRanksAbove(V a, V b) {
  if (b != b)
    return false;
  return a != a || a > b;
}
// The same for arg-min: NaN ranks above every number, otherwise the smaller value.
template <class V> ASPEN_HD inline bool nnRanksBelow(V a, V b) {
  if (b != b)
    return false;
  return a != a || a < b;
}

// Calls f(region, index) for this worker's share of the concatenation of `regions` (an edge list
// whose elements have size()): worker w of n takes the w-th of n contiguous, nearly equal runs.
template <class Regions, class F>
ASPEN_HD inline void nnForWorkerShare(const Regions &regions, unsigned w, unsigned n, F f) {
  const auto each = [&](unsigned r, unsigned long long lo, unsigned long long hi) {
    for (unsigned long long i = lo; i < hi; ++i)
      f(r, static_cast<unsigned>(i));
  };
  ::aspen::detail::forWorkerShareOfRegions(regions, w, n, each);
}

} // namespace aspen::nn

namespace aspen::nn {

// The index of the first element of a non-empty row of T that ranks highest (Max) or lowest
// (!Max).
template <bool Max, class T, class Row> ASPEN_HD inline unsigned nnArgBest(const Row &row) {
  typedef typename NnOrdered<T>::type V;
  unsigned best = 0;
  V bestValue = V(row[0]);
  for (unsigned i = 1; i < row.size(); ++i) {
    const V v = V(row[i]);
    if (Max ? nnRanksAbove(v, bestValue) : nnRanksBelow(v, bestValue)) {
      best = i;
      bestValue = v;
    }
  }
  return best;
}

} // namespace aspen::nn
