// Scalar helpers shared by the aspen::nn codelet families: float math that compiles for the host
// and with NVRTC, the element-wise non-linearities and their derivatives (one function each,
// dispatched on NonLinearityType at compile time), NaN-aware ordering for arg-max/top-k, and the
// split of a tile's regions between a MultiVertex's workers.
// All arithmetic is in float; half data is converted on load and rounded on store.
#pragma once

#include <aspen/Vertex.hpp>
#include <aspen/detail/ActivationMath.hpp>
#include <aspen/nn/codelets/NonLinearityTable.hpp>

namespace aspen::nn {

// The maths of every non-linearity is ActivationMath.hpp's, shared with aspen::ops.
ASPEN_HD inline float nnExp(float x) { return ::aspen::detail::actExp(x); }
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
ASPEN_HD inline float nnLog(float x) { return logf(x); }
#else
inline float nnLog(float x) { return __builtin_logf(x); }
#endif

// y = f(x) for an element-wise kind.
template <NonLinearityType K> ASPEN_HD ASPEN_ACT_INLINE float nnForward(float x) {
  using namespace ::aspen::detail;
  if constexpr (K == NonLinearityType::SIGMOID)
    return actSigmoid(x);
  else if constexpr (K == NonLinearityType::HARD_SIGMOID)
    return actHardSigmoid(x);
  else if constexpr (K == NonLinearityType::RELU)
    return actRelu(x);
  else if constexpr (K == NonLinearityType::TANH)
    return actTanh(x);
  else if constexpr (K == NonLinearityType::GELU)
    return actGelu(x);
  else if constexpr (K == NonLinearityType::GELU_ERF)
    return actGeluErf(x);
  else {
    static_assert(K == NonLinearityType::SWISH, "not an element-wise non-linearity");
    return actSwish(x);
  }
}

// dL/dx from `act` (the forward output, or the forward input where the table says so) and
// g = dL/dy.
template <NonLinearityType K> ASPEN_HD inline float nnGradient(float act, float g) {
  using namespace ::aspen::detail;
  if constexpr (K == NonLinearityType::SIGMOID)
    return actSigmoidGrad(act, g);
  else if constexpr (K == NonLinearityType::HARD_SIGMOID)
    return actHardSigmoidGrad(act, g);
  else if constexpr (K == NonLinearityType::RELU)
    return actReluGrad(act, g);
  else if constexpr (K == NonLinearityType::TANH)
    return actTanhGrad(act, g);
  else if constexpr (K == NonLinearityType::GELU)
    return actGeluGrad(act, g);
  else if constexpr (K == NonLinearityType::GELU_ERF)
    return actGeluErfGrad(act, g);
  else {
    static_assert(K == NonLinearityType::SWISH, "not an element-wise non-linearity");
    return actSwishGrad(act, g);
  }
}

// popnn's HARD_SIGMOID gradient from the forward output y: 0.2 g where |y| <= 2.5, else 0. y is
// in [0, 1], so this is 0.2 g for every output, saturated ones included (NaN gives 0). The true
// derivative (0 where the output is clamped) is nnGradient<HARD_SIGMOID>.
ASPEN_HD inline float nnHardSigmoidGradPopnn(float y, float g) {
  return y >= -2.5f && y <= 2.5f ? 0.2f * g : 0.0f;
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

// Calls f(row) for the whole rows of [0, rows) that worker w of n owns: the w-th of n contiguous,
// nearly equal runs (for vertices whose workers must not share a row).
template <class F> ASPEN_HD inline void nnForWorkerRows(unsigned rows, unsigned w, unsigned n, F f) {
  const unsigned long long first = 1ull * rows * w / n, end = 1ull * rows * (w + 1) / n;
  for (unsigned long long r = first; r < end; ++r)
    f(static_cast<unsigned>(r));
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

// One row of T: out = outputScale * exp(in - m) / sum(exp(in - m)), m = max(in) when Stable,
// else 0. `in` and `out` may be the same row. Float rows keep the exponentials in `out` and scale
// them; half rows compute each exponential twice, because exp(in - m) alone can overflow half
// (unstable) or lose its precision to half subnormals before the scaling brings it back.
template <class T, bool Stable, class In, class Out>
ASPEN_HD inline void nnSoftmaxRow(const In &in, const Out &out, float outputScale) {
  const unsigned n = out.size();
  float shift = 0.0f;
  if (Stable && n != 0) {
    shift = float(in[0]);
    for (unsigned i = 1; i < n; ++i)
      shift = nnRanksAbove(float(in[i]), shift) ? float(in[i]) : shift;
  }
  float sum = 0.0f;
  if constexpr (NnIsFloat<T>::value) {
    for (unsigned i = 0; i < n; ++i) {
      out[i] = nnExp(float(in[i]) - shift);
      sum += out[i];
    }
    const float factor = outputScale / sum;
    for (unsigned i = 0; i < n; ++i)
      out[i] *= factor;
  } else {
    for (unsigned i = 0; i < n; ++i)
      sum += nnExp(float(in[i]) - shift);
    const float factor = outputScale / sum;
    for (unsigned i = 0; i < n; ++i)
      out[i] = nnExp(float(in[i]) - shift) * factor;
  }
}

// One row's softmax input gradient from its output y: inGrad = y * (g - sum(g * y)), the sum in
// float (SoftmaxGrad's rule, popnn's, for every softmax kind).
template <class T, class Out, class Grad, class InGrad>
ASPEN_HD inline void nnSoftmaxGradRow(const Out &out, const Grad &outGrad, const InGrad &inGrad) {
  const unsigned n = inGrad.size();
  float dot = 0.0f;
  for (unsigned i = 0; i < n; ++i)
    dot += float(outGrad[i]) * float(out[i]);
  for (unsigned i = 0; i < n; ++i)
    inGrad[i] = T(float(out[i]) * (float(outGrad[i]) - dot));
}

} // namespace aspen::nn
