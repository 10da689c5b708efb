// Per-operation arithmetic of the reduce codelets (codelets/ops/reduce.cpp).
//
// A reduction accumulates into a State of W accumulator values per slot, stored in W planes
// (value w of slot i at planes[w][i]):
//   W = 1  plain operations: the running value
//   W = 2  ADD / SQUARE_ADD on float: sum and compensation (value = sum + comp)
//   W = 2  LOG_ADD: running maximum m and sum of exp(x - m) (value = m + log(sum))
// States are stored in partial tensors between the two stages, so the second stage keeps the
// first stage's compensation. NaN rules: MIN and MAX propagate NaN (a NaN anywhere in the
// reduced elements gives NaN); ADD, MUL, SQUARE_ADD and LOG_ADD follow IEEE arithmetic.
// No standard library: compiled by NVRTC as well.
#pragma once

#include <aspen/HalfFloat.hpp>
#include <aspen/Vertex.hpp>
#include <aspen/ops/Operation.hpp>

namespace aspen::ops::reduce_codelets {

// Element counts and indices: 64-bit, as a tile's memory on a GPU target can exceed 2^32 bytes.
using ::aspen::detail::SizeType;

// expf and logf: the host's builtins, CUDA's device functions under NVRTC and nvcc.
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
ASPEN_HD inline float reduceExp(float x) { return expf(x); }
ASPEN_HD inline float reduceLog(float x) { return logf(x); }
#else
inline float reduceExp(float x) { return __builtin_expf(x); }
inline float reduceLog(float x) { return __builtin_logf(x); }
#endif

template <class A> struct Bounds;
template <> struct Bounds<float> {
  // +-infinity from its bits: NVRTC has no __builtin_huge_valf.
  static ASPEN_HD float highest() { return aspen::detail::bitsFloat(0x7f800000u); }
  static ASPEN_HD float lowest() { return aspen::detail::bitsFloat(0xff800000u); }
};
template <> struct Bounds<int> {
  static ASPEN_HD int highest() { return 0x7fffffff; }
  static ASPEN_HD int lowest() { return -0x7fffffff - 1; }
};
template <> struct Bounds<unsigned> {
  static ASPEN_HD unsigned highest() { return 0xffffffffu; }
  static ASPEN_HD unsigned lowest() { return 0u; }
};
template <> struct Bounds<bool> {
  static ASPEN_HD bool highest() { return true; }
  static ASPEN_HD bool lowest() { return false; }
};

// The identity of each operation, from the table's identity column.
template <class A> struct IdentityKinds {
  static ASPEN_HD A Zero() { return A(0); }
  static ASPEN_HD A One() { return A(1); }
  static ASPEN_HD A Highest() { return Bounds<A>::highest(); }
  static ASPEN_HD A Lowest() { return Bounds<A>::lowest(); }
  static ASPEN_HD A True() { return A(1); }
  static ASPEN_HD A False() { return A(0); }
};
template <Operation Op> struct Identity;
#define ASPEN_REDUCE_IDENTITY(name, identity, types, compensated)                                  \
  template <> struct Identity<Operation::name> {                                                   \
    template <class A> static ASPEN_HD A get() { return IdentityKinds<A>::identity(); }            \
  };
ASPEN_FOR_EACH_REDUCE_OPERATION(ASPEN_REDUCE_IDENTITY)
#undef ASPEN_REDUCE_IDENTITY

template <class A> ASPEN_HD inline bool isNan(A x) { return x != x; }
ASPEN_HD inline bool isFinite(float x) { return x - x == 0.0f; }

// What one input element contributes (SQUARE_ADD squares it; half is widened to float).
template <Operation Op, class A, class In> ASPEN_HD inline A mapInput(In x) {
  const A a = static_cast<A>(x);
  if constexpr (Op == Operation::SQUARE_ADD)
    return a * a;
  else
    return a;
}

// sum += x, with the rounding error of the addition added to comp: Knuth's TwoSum gives the
// error exactly whichever operand is larger (as Neumaier's test would), without a branch, so
// loops of it vectorise.
ASPEN_HD inline void compensatedAdd(float &sum, float &comp, float x) {
  const float t = sum + x;
  const float xPart = t - sum;
  comp += (sum - (t - xPart)) + (x - xPart);
  sum = t;
}

// log(exp(m1) * s1 + exp(m2) * s2) as a new (m, s) pair in (m1, s1); -inf means no mass.
ASPEN_HD inline void logAddMerge(float &m1, float &s1, float m2, float s2) {
  if (isNan(m1) || isNan(m2)) {
    m1 = m1 + m2;
    s1 = 1.0f;
  } else if (m2 == Bounds<float>::lowest()) {
  } else if (m1 == Bounds<float>::lowest()) {
    m1 = m2;
    s1 = s2;
  } else if (!isFinite(m1) || !isFinite(m2)) {
    m1 = Bounds<float>::highest();
    s1 = 1.0f;
  } else if (m2 > m1) {
    s1 = s1 * reduceExp(m1 - m2) + s2;
    m1 = m2;
  } else {
    s1 = s1 + s2 * reduceExp(m2 - m1);
  }
}

// The binary operation on final values (also out = op(out, result) for update).
template <Operation Op, class A> ASPEN_HD inline A combine(A a, A b) {
  if constexpr (Op == Operation::ADD || Op == Operation::SQUARE_ADD)
    return a + b;
  else if constexpr (Op == Operation::MUL)
    return a * b;
  else if constexpr (Op == Operation::MIN)
    return (b < a || isNan(b)) ? b : a;
  else if constexpr (Op == Operation::MAX)
    return (b > a || isNan(b)) ? b : a;
  else if constexpr (Op == Operation::LOGICAL_AND)
    return a && b;
  else if constexpr (Op == Operation::LOGICAL_OR)
    return a || b;
  else {
    static_assert(Op == Operation::LOG_ADD, "an operation without a combine rule");
    float s = 1.0f;
    logAddMerge(a, s, b, 1.0f);
    return a + reduceLog(s);
  }
}

// Width of a slot's state.
template <class A> struct IsFloat { static constexpr bool value = false; };
template <> struct IsFloat<float> { static constexpr bool value = true; };
template <Operation Op, class A> struct StateWidth {
  static constexpr unsigned value =
      (Op == Operation::ADD || Op == Operation::SQUARE_ADD || Op == Operation::LOG_ADD) &&
              IsFloat<A>::value
          ? 2
          : 1;
};

inline constexpr unsigned kLanes = 8; // independent accumulators per run (they vectorise)

// The state of one slot. Slots are planar: value w of slot i is p[w][i] (p: W plane pointers).
//   init, load(p, i), store(p, i)   the identity; from / to memory
//   merge(q, j)                     merges the state q[.][j] into this one
//   addRun(x, n)                    n input elements that all feed this slot, in order
//   addElementwise(p, i, x, n)      element k of x feeds slot i + k (k < n)
//   mergeElementwise(p, i, q, n)    state q[.][k] merges into slot i + k
//   value()                         the result
// Every function is a fixed sequence of operations on its arguments, so a slot's result depends
// only on the elements fed to it and on their order.
template <Operation Op, class A, unsigned W = StateWidth<Op, A>::value> struct State {
  A v;
  ASPEN_HD void init() { v = Identity<Op>::template get<A>(); }
  ASPEN_HD void load(A *const *p, SizeType i) { v = p[0][i]; }
  ASPEN_HD void store(A *const *p, SizeType i) const { p[0][i] = v; }
  ASPEN_HD void merge(const A *const *q, SizeType j) { v = combine<Op, A>(v, q[0][j]); }
  template <class In>
  static ASPEN_HD void addElementwise(A *const *p, SizeType i, const In *__restrict__ x,
                                      SizeType n) {
    A *__restrict__ d = p[0] + i;
    for (SizeType k = 0; k < n; ++k)
      d[k] = combine<Op, A>(d[k], mapInput<Op, A>(x[k]));
  }
  static ASPEN_HD void mergeElementwise(A *const *p, SizeType i, const A *const *q, SizeType n) {
    A *__restrict__ d = p[0] + i;
    const A *__restrict__ v = q[0];
    for (SizeType k = 0; k < n; ++k)
      d[k] = combine<Op, A>(d[k], v[k]);
  }
  template <class In> ASPEN_HD void addRun(const In *x, SizeType n) {
    A lane[kLanes];
    for (unsigned l = 0; l < kLanes; ++l)
      lane[l] = Identity<Op>::template get<A>();
    SizeType i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (unsigned l = 0; l < kLanes; ++l)
        lane[l] = combine<Op, A>(lane[l], mapInput<Op, A>(x[i + l]));
    for (unsigned l = 0; l < kLanes; ++l)
      v = combine<Op, A>(v, lane[l]);
    for (; i < n; ++i)
      v = combine<Op, A>(v, mapInput<Op, A>(x[i]));
  }
  ASPEN_HD A value() const { return v; }
};

// Compensated float sums (ADD, SQUARE_ADD).
template <Operation Op> struct State<Op, float, 2> {
  float sum, comp;
  ASPEN_HD void init() { sum = comp = 0.0f; }
  ASPEN_HD void load(float *const *p, SizeType i) { sum = p[0][i], comp = p[1][i]; }
  ASPEN_HD void store(float *const *p, SizeType i) const { p[0][i] = sum, p[1][i] = comp; }
  ASPEN_HD void merge(const float *const *q, SizeType j) {
    compensatedAdd(sum, comp, q[0][j]);
    comp += q[1][j];
  }
  template <class In>
  static ASPEN_HD void addElementwise(float *const *p, SizeType i, const In *__restrict__ x,
                                      SizeType n) {
    float *__restrict__ sums = p[0] + i;
    float *__restrict__ comps = p[1] + i;
    for (SizeType k = 0; k < n; ++k) {
      float s = sums[k], c = comps[k];
      compensatedAdd(s, c, mapInput<Op, float>(x[k]));
      sums[k] = s, comps[k] = c;
    }
  }
  static ASPEN_HD void mergeElementwise(float *const *p, SizeType i, const float *const *q,
                                        SizeType n) {
    float *__restrict__ sums = p[0] + i;
    float *__restrict__ comps = p[1] + i;
    const float *__restrict__ otherSums = q[0];
    const float *__restrict__ otherComps = q[1];
    for (SizeType k = 0; k < n; ++k) {
      float s = sums[k], c = comps[k];
      compensatedAdd(s, c, otherSums[k]);
      sums[k] = s, comps[k] = c + otherComps[k];
    }
  }
  // Blocks of kLanes x kBlockSteps elements are summed in independent lanes (which vectorise),
  // the lanes pairwise; each block sum is then added with compensation. The error is that of a
  // 64-element sum relative to each block, not of an n-element one.
  template <class In> ASPEN_HD void addRun(const In *x, SizeType n) {
    constexpr unsigned kBlockSteps = 8;
    SizeType i = 0;
    while (n - i >= kLanes) {
      float lane[kLanes];
      for (unsigned l = 0; l < kLanes; ++l)
        lane[l] = 0.0f;
      const unsigned steps =
          (n - i) / kLanes < kBlockSteps ? unsigned((n - i) / kLanes) : kBlockSteps;
      for (unsigned step = 0; step < steps; ++step, i += kLanes)
        for (unsigned l = 0; l < kLanes; ++l)
          lane[l] += mapInput<Op, float>(x[i + l]);
      for (unsigned width = kLanes / 2; width > 0; width /= 2)
        for (unsigned l = 0; l < width; ++l)
          lane[l] += lane[l + width];
      compensatedAdd(sum, comp, lane[0]);
    }
    for (; i < n; ++i)
      compensatedAdd(sum, comp, mapInput<Op, float>(x[i]));
  }
  // Once the sum is infinite or NaN the compensation means nothing (it is NaN).
  ASPEN_HD float value() const { return isFinite(sum) ? sum + comp : sum; }
};

// LOG_ADD: maximum and sum of exponentials relative to it.
template <> struct State<Operation::LOG_ADD, float, 2> {
  float max, sum;
  ASPEN_HD void init() { max = Bounds<float>::lowest(), sum = 0.0f; }
  ASPEN_HD void load(float *const *p, SizeType i) { max = p[0][i], sum = p[1][i]; }
  ASPEN_HD void store(float *const *p, SizeType i) const { p[0][i] = max, p[1][i] = sum; }
  ASPEN_HD void merge(const float *const *q, SizeType j) {
    logAddMerge(max, sum, q[0][j], q[1][j]);
  }
  template <class In>
  static ASPEN_HD void addElementwise(float *const *p, SizeType i, const In *x, SizeType n) {
    for (SizeType k = 0; k < n; ++k)
      logAddMerge(p[0][i + k], p[1][i + k], static_cast<float>(x[k]), 1.0f);
  }
  static ASPEN_HD void mergeElementwise(float *const *p, SizeType i, const float *const *q,
                                        SizeType n) {
    for (SizeType k = 0; k < n; ++k)
      logAddMerge(p[0][i + k], p[1][i + k], q[0][k], q[1][k]);
  }
  template <class In> ASPEN_HD void addRun(const In *x, SizeType n) {
    State<Operation::MAX, float, 1> runMax;
    runMax.init();
    runMax.addRun(x, n);
    const float m = runMax.value();
    if (!isFinite(m)) {
      logAddMerge(max, sum, m, m == Bounds<float>::lowest() ? 0.0f : 1.0f);
      return;
    }
    float s = 0.0f, c = 0.0f;
    for (SizeType i = 0; i < n; ++i)
      compensatedAdd(s, c, reduceExp(static_cast<float>(x[i]) - m));
    logAddMerge(max, sum, m, s + c);
  }
  ASPEN_HD float value() const { return max + reduceLog(sum); }
};

} // namespace aspen::ops::reduce_codelets
