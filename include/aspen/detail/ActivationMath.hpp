// The one implementation of the non-linearities and their gradients, in float, shared by
// aspen::ops (SIGMOID, TANH, RELU, GELU_ERF and the *_GRAD operations, in library and fused
// codelets) and aspen::nn (nonLinearity, the recurrent cells). Everything that computes one of
// these calls the function here, so an expression built with ops::map and an nn builder give
// the same bits. Included by codelets (host and NVRTC): no standard library.
//
// exp, sigmoid and tanh are computed without library calls and without branches, so that loops
// over them vectorise on the host and stay uniform in a warp on the GPU:
//   actExp      e^x = 2^n e^r, n = round(x / ln 2), |r| <= ln2 / 2, e^r by a degree-7
//               polynomial; within 1 ulp of e^x for x in [-87.33, 88.72] (FLT_MIN to FLT_MAX);
//               +inf above, 0 below, NaN for NaN
//   actSigmoid  1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below (no overflow); within 2 ulp
//   actTanh     x + x^3 P(x^2) for |x| < 0.625 (P fitted to tanh on that range), else
//               (1 - e^-2|x|) / (1 + e^-2|x|) with the sign of x; within 2 ulp
// Gradients take the forward output where it determines the derivative (sigmoid, tanh, relu,
// hard sigmoid) and the forward input otherwise (gelu, gelu_erf, swish); g is dL/dy.
#pragma once

#include <aspen/HalfFloat.hpp>

#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
#define ASPEN_ACT_LIBM(f) f
#define ASPEN_ACT_INLINE inline
#else
#define ASPEN_ACT_LIBM(f) __builtin_##f
// exp, sigmoid and tanh are always inlined on the host: a loop vectorises only with them inside
// it, and GCC's heuristics stop inlining them in large loop bodies (the fused LSTM step's).
#define ASPEN_ACT_INLINE __attribute__((always_inline)) inline
#endif

namespace aspen::detail {

ASPEN_HD inline float actAbs(float x) { return ASPEN_ACT_LIBM(fabsf)(x); }
ASPEN_HD inline float actCopySign(float magnitude, float sign) {
  return ASPEN_ACT_LIBM(copysignf)(magnitude, sign);
}

ASPEN_HD ASPEN_ACT_INLINE float actExp(float x) {
  const float hi = 88.72283935546875f;  // ln(FLT_MAX)
  const float lo = -87.33654022216797f; // ln(FLT_MIN)
  // Clamp (NaN becomes 0 here and is restored at the end) so that n stays in [-126, 128].
  float c = x < hi ? x : hi;
  c = c > lo ? c : lo;
  c = x == x ? c : 0.0f;
  // Round to nearest by adding and subtracting 1.5 * 2^23 (exact for |t| < 2^22): no library
  // call, so the loop vectorises.
  const float t = c * 1.44269504088896341f;
  const float n = (t + 12582912.0f) - 12582912.0f;
  // ln 2 in two parts; the first has 15 significant bits, so n * it is exact.
  const float r = (c - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  float q = 1.98992755e-4f;
  q = q * r + 1.39336463e-3f;
  q = q * r + 8.33329838e-3f;
  q = q * r + 4.16664667e-2f;
  q = q * r + 1.66666672e-1f;
  q = q * r + 0.5f;
  const float y = 1.0f + r + r * r * q;
  // 2^n as 2^n1 * 2^n2 with both halves in [-63, 64], so each is a normal float.
  const int ni = static_cast<int>(n);
  const int n1 = ni >> 1, n2 = ni - n1;
  float result = y * bitsFloat(static_cast<unsigned>(n1 + 127) << 23) *
                 bitsFloat(static_cast<unsigned>(n2 + 127) << 23);
  result = x > hi ? bitsFloat(0x7f800000u) : result;
  result = x < lo ? 0.0f : result;
  return x == x ? result : x;
}

ASPEN_HD ASPEN_ACT_INLINE float actSigmoid(float x) {
  const float e = actExp(-actAbs(x));
  const float s = 1.0f / (1.0f + e);
  return x >= 0.0f ? s : (x == x ? e * s : x);
}

ASPEN_HD ASPEN_ACT_INLINE float actTanh(float x) {
  const float a = actAbs(x);
  const float u = a * a;
  float p = 2.13822629e-3f;
  p = p * u - 8.17178842e-3f;
  p = p * u + 2.16982104e-2f;
  p = p * u - 5.39462529e-2f;
  p = p * u + 1.33332014e-1f;
  p = p * u - 3.33333313e-1f;
  const float small = a + a * u * p;
  const float e = actExp(-2.0f * a);
  const float large = (1.0f - e) / (1.0f + e);
  const float t = a < 0.625f ? small : large;
  return x == x ? actCopySign(t, x) : x;
}

ASPEN_HD inline float actErf(float x) { return ASPEN_ACT_LIBM(erff)(x); }

// Beyond this magnitude a float is infinite: the limits at +-inf where closed forms give inf*0.
constexpr float kActFloatMax = 3.40282347e38f;
constexpr float kActSqrt2OverPi = 0.7978845608028654f;
constexpr float kActGeluCubic = 0.044715f;
constexpr float kActInvSqrt2 = 0.7071067811865476f;
constexpr float kActInvSqrt2Pi = 0.3989422804014327f;

ASPEN_HD inline float actHardSigmoid(float x) {
  const float y = 0.2f * x + 0.5f;
  return y != y ? y : (y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y));
}
ASPEN_HD inline float actRelu(float x) { return x > 0.0f ? x : (x != x ? x : 0.0f); }
ASPEN_HD inline float actGelu(float x) {
  if (x < -kActFloatMax)
    return 0.0f;
  return 0.5f * x * (1.0f + actTanh(kActSqrt2OverPi * (x + kActGeluCubic * x * x * x)));
}
ASPEN_HD inline float actGeluErf(float x) {
  if (x < -kActFloatMax)
    return 0.0f;
  return 0.5f * x * (1.0f + actErf(x * kActInvSqrt2));
}
ASPEN_HD inline float actSwish(float x) {
  if (x < -kActFloatMax)
    return 0.0f;
  return x * actSigmoid(x);
}

// --- gradients: dL/dx from the forward output y (or input x) and g = dL/dy ------------------
ASPEN_HD inline float actSigmoidGrad(float y, float g) { return g * y * (1.0f - y); }
ASPEN_HD inline float actTanhGrad(float y, float g) { return g * (1.0f - y * y); }
ASPEN_HD inline float actReluGrad(float y, float g) {
  return y > 0.0f ? g : (y != y ? y : 0.0f * g);
}
// The true derivative: 0.2 where the output is strictly inside (0, 1), i.e. x in (-2.5, 2.5).
ASPEN_HD inline float actHardSigmoidGrad(float y, float g) {
  return y > 0.0f && y < 1.0f ? 0.2f * g : (y != y ? y : 0.0f * g);
}
ASPEN_HD inline float actGeluGrad(float x, float g) {
  // Beyond |x| = 10 the derivative is 1 or 0 to float precision, and x^3 may overflow.
  if (x > 10.0f || x < -10.0f)
    return x > 0.0f ? g : 0.0f * g;
  const float x2 = x * x;
  const float t = actTanh(kActSqrt2OverPi * (x + kActGeluCubic * x2 * x));
  const float dInner = kActSqrt2OverPi * (1.0f + 3.0f * kActGeluCubic * x2);
  return g * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dInner);
}
ASPEN_HD inline float actGeluErfGrad(float x, float g) {
  if (x > kActFloatMax || x < -kActFloatMax)
    return x > 0.0f ? g : 0.0f * g;
  const float cdf = 0.5f * (1.0f + actErf(x * kActInvSqrt2));
  const float pdf = kActInvSqrt2Pi * actExp(-0.5f * x * x);
  return g * (cdf + x * pdf);
}
ASPEN_HD inline float actSwishGrad(float x, float g) {
  if (x > kActFloatMax || x < -kActFloatMax)
    return x > 0.0f ? g : 0.0f * g;
  const float s = actSigmoid(x);
  return g * s * (1.0f + x * (1.0f - s));
}

} // namespace aspen::detail

#undef ASPEN_ACT_LIBM
