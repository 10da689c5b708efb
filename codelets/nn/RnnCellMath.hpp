// What the recurrent cells' element loops share (codelets/nn/rnn.cpp, gru.cpp): activation
// functors fixed at compile time or dispatched at run time, the chunk size of the vectorised
// loops, and the split of a vertex's rows between its workers. No standard library (NVRTC).
#pragma once

#include "NnCodeletMath.hpp"

namespace aspen::nn::cell {

// The activation functors of the element-wise paths: a kind fixed at compile time (the default
// sigmoid / tanh pair, with no dispatch in the loop) or chosen at run time. Both call the same
// functions of NnCodeletMath.hpp, so results do not depend on the path.
template <NonLinearityType K> struct Fixed {
  ASPEN_HD ASPEN_ACT_INLINE float forward(float x) const { return nnForward<K>(x); }
  ASPEN_HD float gradient(float act, float g) const { return nnGradient<K>(act, g); }
  ASPEN_HD bool takesInput() const { return nnGradientTakesInput(K); }
};
// popnnHardSigmoid: HARD_SIGMOID's gradient is popnn's rule (nnHardSigmoidGradPopnn) rather than
// the true derivative; the backward cells' hardSigmoidGradient option.
struct Dynamic {
  NonLinearityType kind;
  bool popnnHardSigmoid = false;
  ASPEN_HD float forward(float x) const { return nnForwardOf(kind, x); }
  ASPEN_HD float gradient(float act, float g) const {
    if (popnnHardSigmoid && kind == NonLinearityType::HARD_SIGMOID)
      return nnHardSigmoidGradPopnn(act, g);
    return nnGradientOf(kind, act, g);
  }
  ASPEN_HD bool takesInput() const { return nnGradientTakesInput(kind); }
};

// Whether a functor dispatches at run time (the fused steps build only the fixed default pair
// for the host's vector extensions).
template <class Functor> constexpr bool kIsDynamic = false;
template <> constexpr bool kIsDynamic<Dynamic> = true;

// An LSTM's cell-state clip (LstmParams::cellClip), as its vertices' fields cellClipMode,
// cellClipMin and cellClipMax give it: mode 0 none; 1 c clipped to [lo, hi] with a NaN kept;
// 2 the same with a NaN made lo. The bounds are the data type's values (the builder rounds
// them), so a clipped c is stored as the bound itself.
struct CellClip {
  unsigned mode;
  float lo, hi;
  ASPEN_HD float apply(float c) const {
    if (mode == 0)
      return c;
    if (c != c)
      return mode == 2 ? lo : c;
    return c < lo ? lo : (c > hi ? hi : c);
  }
  // Whether the gradient reaches f c_{t-1} + i g through the clip, from the clipped c_t:
  // strictly inside the bounds (at a bound it was clipped, or sat there, where the clip's
  // derivative is taken as 0).
  ASPEN_HD bool passes(float c) const { return mode == 0 || (c > lo && c < hi); }
};

// ONNX's clip of an activation's input (LstmParams::activationClip, the vertices' field
// activationClip: t > 0, or 0 for none): x clipped to [-t, t], a NaN kept; and whether the
// gradient passes it, strictly inside (at a bound the derivative is taken as 0).
struct ActClip {
  float t;
  ASPEN_HD float apply(float x) const {
    if (t <= 0.0f)
      return x;
    return x < -t ? -t : (x > t ? t : x);
  }
  ASPEN_HD bool passes(float x) const { return t <= 0.0f || (x > -t && x < t); }
};

// Elements are processed in chunks through local arrays: the loops over a chunk touch no
// memory that could alias, so the host compiler vectorises them (one element per chunk on the
// GPU, where a thread's arrays would live in slow local memory).
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
constexpr unsigned kChunk = 1;
#else
constexpr unsigned kChunk = 64;
#endif

// Runs body(r, lo, hi) over this worker's share of the rows of `rows`, with (rho, phi) fixed at
// compile time for sigmoid / tanh and dispatched at run time otherwise (popnnHardSigmoid: as
// Dynamic's; only gradients read it).
template <class Rows, class Body>
ASPEN_HD inline void forElementShare(const Rows &rows, unsigned w, unsigned n, unsigned rec,
                                     unsigned act, Body body, bool popnnHardSigmoid = false) {
  const bool fixed = rec == unsigned(NonLinearityType::SIGMOID) &&
                     act == unsigned(NonLinearityType::TANH);
  ::aspen::detail::forWorkerShareOfRegions(rows, w, n, [&](unsigned r, unsigned long long lo,
                                                           unsigned long long hi) {
    if (fixed)
      body(r, unsigned(lo), unsigned(hi), Fixed<NonLinearityType::SIGMOID>(),
           Fixed<NonLinearityType::TANH>());
    else
      body(r, unsigned(lo), unsigned(hi), Dynamic{NonLinearityType(rec), popnnHardSigmoid},
           Dynamic{NonLinearityType(act), popnnHardSigmoid});
  });
}

// The softmax kinds (over a gate's H units, per row): the row's statistics, and the forward and
// gradient of any kind given them (element-wise kinds ignore them).
ASPEN_HD inline bool isSoftmaxKind(unsigned k) {
  return k == unsigned(NonLinearityType::SOFTMAX) ||
         k == unsigned(NonLinearityType::SOFTMAX_STABLE);
}

// Softmax statistics of one row: y_k = exp(x_k - shift) / sum.
struct RowStats {
  float shift = 0.0f;
  float sum = 1.0f;
};

template <class Value> ASPEN_HD inline RowStats softmaxStats(unsigned n, const Value &value) {
  RowStats s;
  if (n == 0)
    return s;
  s.shift = value(0);
  for (unsigned k = 1; k < n; ++k) {
    const float v = value(k);
    s.shift = nnRanksAbove(v, s.shift) ? v : s.shift;
  }
  s.sum = 0.0f;
  for (unsigned k = 0; k < n; ++k)
    s.sum += nnExp(value(k) - s.shift);
  return s;
}

ASPEN_HD inline float activate(unsigned kind, float x, const RowStats &s) {
  if (isSoftmaxKind(kind))
    return nnExp(x - s.shift) / s.sum;
  return nnForwardOf(NonLinearityType(kind), x);
}

// dL/dx from act (output, or input for the kinds that take it), upstream g and, for softmax,
// dot = sum over the row of g * y; popnnHardSigmoid as Dynamic's.
ASPEN_HD inline float gradient(unsigned kind, float act, float g, float dot,
                               bool popnnHardSigmoid) {
  if (isSoftmaxKind(kind))
    return act * (g - dot);
  return Dynamic{NonLinearityType(kind), popnnHardSigmoid}.gradient(act, g);
}

// The vanilla RNN's step, one element, as popnn's separate add, add and non-linearity vertices
// would round it (to T after each): the input of the non-linearity from the recurrent product
// (already rounded to T), x_t and b; and, backward, delta_t = nl'(y_t) * (dhMM + dy_t) with the
// sum rounded to T. RnnFusedFwd/Bwd and RnnCellFwd/Bwd (rnn.cpp) all use these, so the fused
// and unfused loops give the same bits.
template <class T> ASPEN_HD inline float vanillaSum(T product, T x, T bias) {
  return float(T(float(T(float(product) + float(x))) + float(bias)));
}
template <class T>
ASPEN_HD inline T vanillaDelta(NonLinearityType nl, T y, T product, T dy) {
  return T(nnGradientOf(nl, float(y), float(T(float(product) + float(dy)))));
}

} // namespace aspen::nn::cell
