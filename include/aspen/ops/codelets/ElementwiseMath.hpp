// The computation of every element-wise operation of ElementwiseOpTable.hpp, for codelets: the
// library family (codelets/ops/elementwise.cpp) and generated expression codelets, on the host
// and with NVRTC. No standard library.
//
// A value of element type T is computed as Compute<T> (float for half, T otherwise); ew::load
// turns a stored element into it and ew::store<T> back. ew::<OP><T>(args...) computes one
// operation on operands of type T. Semantics that C++ leaves undefined are defined here:
//   integers   +, -, *, neg, abs, square wrap modulo 2^bits; x / 0 == 0 and x % 0 == 0;
//              MIN / -1 == MIN (wraps) and MIN % -1 == 0; shift counts are taken modulo 32;
//              SHIFT_RIGHT is logical (on the bits of T), SHIFT_RIGHT_SIGN_EXTEND arithmetic
//   MAXIMUM / MINIMUM  propagate NaN (as NumPy's maximum/minimum); RELU keeps NaN (and gives +0
//              for -0 on floats, as aspen::nn)
//   SIGNUM     -1, 0 or 1; for floats ±0 and NaN are returned unchanged
//   cast       between all twelve element types (the nine above and signed char, long long,
//              unsigned long long): float/half -> integer: truncation toward zero, saturating
//              to the range of the integer type, NaN -> 0; integer -> integer: modulo 2^bits
//              (C++20 static_cast); anything -> bool: x != 0; -> float: round to nearest even
//              (one rounding, also from 64-bit integers); -> half: round to nearest even once
//              (aspen::half; see ew::cast for why integers may pass through float)
#pragma once

#include <aspen/HalfFloat.hpp>
#include <aspen/detail/ActivationMath.hpp>
#include <aspen/ops/codelets/ElementwiseOpTable.hpp>

#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
#define ASPEN_EW_LIBM(f) f
#define ASPEN_EW_POPC(x) __popc(x)
#define ASPEN_EW_CLZ(x) __clz(static_cast<int>(x))
#else
#define ASPEN_EW_LIBM(f) __builtin_##f
#define ASPEN_EW_POPC(x) __builtin_popcount(x)
#define ASPEN_EW_CLZ(x) ((x) == 0u ? 32 : __builtin_clz(x))
#endif

namespace aspen::ops::ew {

template <class T> struct ComputeOf { typedef T type; };
template <> struct ComputeOf<half> { typedef float type; };
template <class T> using Compute = typename ComputeOf<T>::type;

// Integer helpers: the unsigned type of the same width, and the range of T.
template <class T> struct Bits;
#define ASPEN_EW_BITS(T, U, lo, hi)                                                             \
  template <> struct Bits<T> {                                                                  \
    typedef U Unsigned;                                                                         \
    static constexpr T min = lo;                                                                \
    static constexpr T max = hi;                                                                \
  };
ASPEN_EW_BITS(int, unsigned int, -2147483647 - 1, 2147483647)
ASPEN_EW_BITS(unsigned int, unsigned int, 0u, 4294967295u)
ASPEN_EW_BITS(short, unsigned short, -32768, 32767)
ASPEN_EW_BITS(unsigned short, unsigned short, 0, 65535)
ASPEN_EW_BITS(char, unsigned char, static_cast<char>(static_cast<char>(-1) < 0 ? -128 : 0),
              static_cast<char>(static_cast<char>(-1) < 0 ? 127 : 255))
ASPEN_EW_BITS(unsigned char, unsigned char, 0, 255)
ASPEN_EW_BITS(signed char, unsigned char, -128, 127)
ASPEN_EW_BITS(long long, unsigned long long, -9223372036854775807ll - 1, 9223372036854775807ll)
ASPEN_EW_BITS(unsigned long long, unsigned long long, 0ull, 18446744073709551615ull)
#undef ASPEN_EW_BITS

template <class T> struct IsFloat { static constexpr bool value = false; };
template <> struct IsFloat<float> { static constexpr bool value = true; };
template <> struct IsFloat<half> { static constexpr bool value = true; };
template <class T> struct IsBool { static constexpr bool value = false; };
template <> struct IsBool<bool> { static constexpr bool value = true; };
template <class T> ASPEN_HD constexpr bool isSigned() { return static_cast<T>(-1) < static_cast<T>(0); }

ASPEN_HD inline float load(half h) { return static_cast<float>(h); }
template <class T> ASPEN_HD inline T load(T x) { return x; }
template <class T> ASPEN_HD inline T store(Compute<T> x) { return T(x); }
// The value a Compute<T> holds once stored as T (rounds to half; identity otherwise).
template <class T> ASPEN_HD inline Compute<T> narrow(Compute<T> x) { return x; }
template <> ASPEN_HD inline float narrow<half>(float x) { return static_cast<float>(half(x)); }

ASPEN_HD inline bool finite(float x) { return (detail::floatBits(x) & 0x7f800000u) != 0x7f800000u; }
ASPEN_HD inline bool infinite(float x) { return (detail::floatBits(x) & 0x7fffffffu) == 0x7f800000u; }

// Integer arithmetic through unsigned int, where it wraps instead of being undefined.
template <class T> ASPEN_HD inline T wrap(unsigned int x) { return static_cast<T>(x); }
#define ASPEN_EW_U(x) static_cast<unsigned int>(x)

// --- unary --------------------------------------------------------------------------------
template <class T> ASPEN_HD inline Compute<T> ABSOLUTE(Compute<T> x) {
  if constexpr (IsFloat<T>::value)
    return ASPEN_EW_LIBM(fabsf)(x);
  else
    return x < 0 ? wrap<T>(0u - ASPEN_EW_U(x)) : x;
}
template <class T> ASPEN_HD inline float ASIN(float x) { return ASPEN_EW_LIBM(asinf)(x); }
template <class T> ASPEN_HD inline T BITWISE_NOT(T x) { return static_cast<T>(~x); }
template <class T> ASPEN_HD inline float CBRT(float x) { return ASPEN_EW_LIBM(cbrtf)(x); }
template <class T> ASPEN_HD inline float CEIL(float x) { return ASPEN_EW_LIBM(ceilf)(x); }
template <class T> ASPEN_HD inline float COS(float x) { return ASPEN_EW_LIBM(cosf)(x); }
template <class T> ASPEN_HD inline T COUNT_LEADING_ZEROS(T x) {
  return static_cast<T>(ASPEN_EW_CLZ(ASPEN_EW_U(x)));
}
template <class T> ASPEN_HD inline float ERF(float x) { return ASPEN_EW_LIBM(erff)(x); }
template <class T> ASPEN_HD inline float EXPONENT(float x) { return ASPEN_EW_LIBM(expf)(x); }
template <class T> ASPEN_HD inline float EXPONENT_MINUS_ONE(float x) { return ASPEN_EW_LIBM(expm1f)(x); }
template <class T> ASPEN_HD inline float EXPONENT2(float x) { return ASPEN_EW_LIBM(exp2f)(x); }
template <class T> ASPEN_HD inline float FLOOR(float x) { return ASPEN_EW_LIBM(floorf)(x); }
// The non-linearities are aspen::nn's (ActivationMath.hpp): the same bits from ops and nn.
template <class T> ASPEN_HD inline float GELU_ERF(float x) { return detail::actGeluErf(x); }
template <class T> ASPEN_HD inline float INVERSE(float x) { return 1.0f / x; }
template <class T> ASPEN_HD inline bool IS_FINITE(float x) { return finite(x); }
template <class T> ASPEN_HD inline bool IS_INF(float x) { return infinite(x); }
template <class T> ASPEN_HD inline bool IS_NAN(float x) { return x != x; }
template <class T> ASPEN_HD inline float LOGARITHM(float x) { return ASPEN_EW_LIBM(logf)(x); }
template <class T> ASPEN_HD inline float LOGARITHM_ONE_PLUS(float x) { return ASPEN_EW_LIBM(log1pf)(x); }
template <class T> ASPEN_HD inline bool LOGICAL_NOT(bool x) { return !x; }
template <class T> ASPEN_HD inline float NEARBY_INT(float x) { return ASPEN_EW_LIBM(nearbyintf)(x); }
template <class T> ASPEN_HD inline Compute<T> NEGATE(Compute<T> x) {
  if constexpr (IsFloat<T>::value)
    return -x;
  else
    return wrap<T>(0u - ASPEN_EW_U(x));
}
template <class T> ASPEN_HD inline T POPCOUNT(T x) { return static_cast<T>(ASPEN_EW_POPC(ASPEN_EW_U(x))); }
template <class T> ASPEN_HD inline Compute<T> RELU(Compute<T> x) {
  if constexpr (IsFloat<T>::value)
    return detail::actRelu(x);
  else
    return x < 0 ? Compute<T>(0) : x;
}
template <class T> ASPEN_HD inline float ROUND(float x) { return ASPEN_EW_LIBM(roundf)(x); }
template <class T> ASPEN_HD inline Compute<T> SIGNUM(Compute<T> x) {
  return x > 0 ? Compute<T>(1) : x < 0 ? Compute<T>(-1) : x;
}
template <class T> ASPEN_HD inline float SIN(float x) { return ASPEN_EW_LIBM(sinf)(x); }
template <class T> ASPEN_HD inline float SQRT(float x) { return ASPEN_EW_LIBM(sqrtf)(x); }
template <class T> ASPEN_HD inline Compute<T> SQUARE(Compute<T> x) {
  if constexpr (IsFloat<T>::value)
    return x * x;
  else
    return wrap<T>(ASPEN_EW_U(x) * ASPEN_EW_U(x));
}
template <class T> ASPEN_HD inline float TAN(float x) { return ASPEN_EW_LIBM(tanf)(x); }
template <class T> ASPEN_HD inline float TANH(float x) { return detail::actTanh(x); }
template <class T> ASPEN_HD inline float TRUNC(float x) { return ASPEN_EW_LIBM(truncf)(x); }
template <class T> ASPEN_HD inline float RSQRT(float x) { return 1.0f / ASPEN_EW_LIBM(sqrtf)(x); }
template <class T> ASPEN_HD inline float SIGMOID(float x) { return detail::actSigmoid(x); }

// --- binary -------------------------------------------------------------------------------
#define ASPEN_EW_WRAPPING(NAME, op)                                                             \
  template <class T> ASPEN_HD inline Compute<T> NAME(Compute<T> a, Compute<T> b) {              \
    if constexpr (IsFloat<T>::value)                                                            \
      return a op b;                                                                            \
    else                                                                                        \
      return wrap<T>(ASPEN_EW_U(a) op ASPEN_EW_U(b));                                           \
  }
ASPEN_EW_WRAPPING(ADD, +)
ASPEN_EW_WRAPPING(SUBTRACT, -)
ASPEN_EW_WRAPPING(MULTIPLY, *)
#undef ASPEN_EW_WRAPPING
template <class T> ASPEN_HD inline float ATAN2(float a, float b) { return ASPEN_EW_LIBM(atan2f)(a, b); }
template <class T> ASPEN_HD inline T BITWISE_AND(T a, T b) { return static_cast<T>(a & b); }
template <class T> ASPEN_HD inline T BITWISE_OR(T a, T b) { return static_cast<T>(a | b); }
template <class T> ASPEN_HD inline T BITWISE_XOR(T a, T b) { return static_cast<T>(a ^ b); }
template <class T> ASPEN_HD inline T BITWISE_XNOR(T a, T b) { return static_cast<T>(~(a ^ b)); }
template <class T> ASPEN_HD inline Compute<T> DIVIDE(Compute<T> a, Compute<T> b) {
  if constexpr (IsFloat<T>::value)
    return a / b;
  else if (b == 0)
    return 0;
  else if (isSigned<T>() && b == static_cast<T>(-1))
    return NEGATE<T>(a);
  else
    return static_cast<T>(a / b);
}
template <class T> ASPEN_HD inline bool EQUAL(Compute<T> a, Compute<T> b) { return a == b; }
template <class T> ASPEN_HD inline bool GREATER_THAN_EQUAL(Compute<T> a, Compute<T> b) { return a >= b; }
template <class T> ASPEN_HD inline bool GREATER_THAN(Compute<T> a, Compute<T> b) { return a > b; }
template <class T> ASPEN_HD inline float INV_STD_DEV_TO_VARIANCE(float a, float b) { return 1.0f / (a * a) - b; }
template <class T> ASPEN_HD inline bool LESS_THAN_EQUAL(Compute<T> a, Compute<T> b) { return a <= b; }
template <class T> ASPEN_HD inline bool LOGICAL_AND(bool a, bool b) { return a && b; }
template <class T> ASPEN_HD inline bool LOGICAL_OR(bool a, bool b) { return a || b; }
template <class T> ASPEN_HD inline bool LESS_THAN(Compute<T> a, Compute<T> b) { return a < b; }
template <class T> ASPEN_HD inline Compute<T> MAXIMUM(Compute<T> a, Compute<T> b) {
  return (a != a || a > b) ? a : b;
}
template <class T> ASPEN_HD inline Compute<T> MINIMUM(Compute<T> a, Compute<T> b) {
  return (a != a || a < b) ? a : b;
}
template <class T> ASPEN_HD inline bool NOT_EQUAL(Compute<T> a, Compute<T> b) { return a != b; }
template <class T> ASPEN_HD inline float POWER(float a, float b) { return ASPEN_EW_LIBM(powf)(a, b); }
template <class T> ASPEN_HD inline Compute<T> REMAINDER(Compute<T> a, Compute<T> b) {
  if constexpr (IsFloat<T>::value)
    return ASPEN_EW_LIBM(fmodf)(a, b);
  else if (b == 0 || (isSigned<T>() && b == static_cast<T>(-1)))
    return 0;
  else
    return static_cast<T>(a % b);
}
template <class T> ASPEN_HD inline T SHIFT_LEFT(T a, T b) {
  return wrap<T>(ASPEN_EW_U(a) << (ASPEN_EW_U(b) & 31u));
}
template <class T> ASPEN_HD inline T SHIFT_RIGHT(T a, T b) {
  const unsigned int bits = static_cast<typename Bits<T>::Unsigned>(a);
  return wrap<T>(bits >> (ASPEN_EW_U(b) & 31u));
}
template <class T> ASPEN_HD inline T SHIFT_RIGHT_SIGN_EXTEND(T a, T b) {
  if constexpr (isSigned<T>())
    return static_cast<T>(static_cast<int>(a) >> (ASPEN_EW_U(b) & 31u));
  else
    return SHIFT_RIGHT<T>(a, b);
}
template <class T> ASPEN_HD inline float VARIANCE_TO_INV_STD_DEV(float a, float b) {
  return 1.0f / ASPEN_EW_LIBM(sqrtf)(a + b);
}
// Gradients of the non-linearities (Aspen's, beyond popops): a = the forward output (SIGMOID,
// TANH, RELU) or input (GELU_ERF), b = dL/dy; the result is dL/dx, as aspen::nn computes it.
template <class T> ASPEN_HD inline float SIGMOID_GRAD(float a, float b) { return detail::actSigmoidGrad(a, b); }
template <class T> ASPEN_HD inline float TANH_GRAD(float a, float b) { return detail::actTanhGrad(a, b); }
template <class T> ASPEN_HD inline float RELU_GRAD(float a, float b) { return detail::actReluGrad(a, b); }
template <class T> ASPEN_HD inline float GELU_ERF_GRAD(float a, float b) { return detail::actGeluErfGrad(a, b); }

// --- ternary ------------------------------------------------------------------------------
template <class T> ASPEN_HD inline Compute<T> CLAMP(Compute<T> x, Compute<T> lo, Compute<T> hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}
template <class T> ASPEN_HD inline Compute<T> SELECT(Compute<T> a, Compute<T> b, bool predicate) {
  return predicate ? a : b;
}

// --- cast: Compute<Src> -> Compute<Dst> ------------------------------------------------------
// Integer -> half rounds once although it passes through float: an integer below 65520 in
// magnitude is exact in float (< 2^24), and a larger one rounds in float (monotonically) to a
// float of magnitude >= 65520, which half turns into ±inf, as rounding the integer directly does.
template <class Dst, class Src> ASPEN_HD inline Compute<Dst> cast(Compute<Src> x) {
  if constexpr (IsFloat<Dst>::value)
    return narrow<Dst>(static_cast<float>(x));
  else if constexpr (IsBool<Dst>::value)
    return x != 0;
  else if constexpr (IsFloat<Src>::value) {
    // Compared in float: min and max + 1 are 0 or powers of two (up to 2^64), exact in float.
    const float lo = static_cast<float>(Bits<Dst>::min);
    const float hiExclusive = 2.0f * static_cast<float>(Bits<Dst>::max / 2 + 1);
    if (x != x)
      return 0;
    if (x <= lo)
      return Bits<Dst>::min;
    if (x >= hiExclusive)
      return Bits<Dst>::max;
    return static_cast<Dst>(x);
  } else
    return static_cast<Dst>(x);
}

#undef ASPEN_EW_U

} // namespace aspen::ops::ew

// --- dispatch from an enumerator to its function, and result types ------------------------------
namespace aspen::ops::ew {

template <UnaryOpType op> struct Unary;
template <BinaryOpType op> struct Binary;
template <TernaryOpType op> struct Ternary;
#define ASPEN_EW_DISPATCH_1(e, node, fn, types, result)                                         \
  template <> struct Unary<UnaryOpType::e> {                                                    \
    template <class T> ASPEN_HD static auto apply(Compute<T> a) { return e<T>(a); }             \
  };
#define ASPEN_EW_DISPATCH_2(e, node, fn, types, result)                                         \
  template <> struct Binary<BinaryOpType::e> {                                                  \
    template <class T> ASPEN_HD static auto apply(Compute<T> a, Compute<T> b) {                 \
      return e<T>(a, b);                                                                        \
    }                                                                                           \
  };
ASPEN_EW_UNARY_OPS(ASPEN_EW_DISPATCH_1)
ASPEN_EW_BINARY_OPS(ASPEN_EW_DISPATCH_2)
#undef ASPEN_EW_DISPATCH_1
#undef ASPEN_EW_DISPATCH_2

// The stored type of a result: T, or bool for the rows whose RESULT is BOOL.
template <class T, bool toBool> struct ResultIf { typedef T type; };
template <class T> struct ResultIf<T, true> { typedef bool type; };
#define ASPEN_EW_IS_BOOL_SAME false
#define ASPEN_EW_IS_BOOL_BOOL true
#define ASPEN_EW_IS_BOOL(e, node, fn, types, result) ASPEN_EW_IS_BOOL_##result,
inline constexpr bool kUnaryGivesBool[] = {ASPEN_EW_UNARY_OPS(ASPEN_EW_IS_BOOL)};
inline constexpr bool kBinaryGivesBool[] = {ASPEN_EW_BINARY_OPS(ASPEN_EW_IS_BOOL)};
#undef ASPEN_EW_IS_BOOL
template <UnaryOpType op, class T>
using UnaryResult = typename ResultIf<T, kUnaryGivesBool[static_cast<int>(op)]>::type;
template <BinaryOpType op, class T>
using BinaryResult = typename ResultIf<T, kBinaryGivesBool[static_cast<int>(op)]>::type;
// The third operand of a ternary operation: T for CLAMP's hi, bool for SELECT's predicate.
template <TernaryOpType op, class T>
using TernaryThird = typename ResultIf<T, op == TernaryOpType::SELECT>::type;

} // namespace aspen::ops::ew
