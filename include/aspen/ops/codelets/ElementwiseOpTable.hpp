// The one table of element-wise operations (popops' UnaryOpType, BinaryOpType, TernaryOpType).
//
// Everything about an operation is derived from its row: the enumerator, the expression node
// class (aspen::ops::expr), the builder names (aspen::ops::add, addInPlace, addWithOutput), the
// element types it accepts, the type of its result, the codelet function that computes it
// (aspen::ops::ew::<ENUMERATOR> in ElementwiseMath.hpp, used by the library codelets and by
// generated codelets for the CPU and the GPU), and the rows the tests iterate over.
//
//   X(ENUMERATOR, NodeClass, builderName, TYPES, RESULT)
//     TYPES  names a type set below (ASPEN_EW_TYPES_<TYPES>): the element types of the operands
//     RESULT SAME (the operand type) or BOOL
//
// This header is included by codelets (host and NVRTC): no standard library.
#pragma once

// --- type sets: M(arg, C++ type, aspen::Type constant) ----------------------------------------
#define ASPEN_EW_TYPES_FP(M, a) M(a, float, FLOAT) M(a, half, HALF)
#define ASPEN_EW_TYPES_INT32(M, a) M(a, int, INT) M(a, unsigned int, UNSIGNED_INT)
#define ASPEN_EW_TYPES_INT(M, a)                                                                \
  ASPEN_EW_TYPES_INT32(M, a)                                                                    \
  M(a, short, SHORT) M(a, unsigned short, UNSIGNED_SHORT) M(a, char, CHAR)                      \
  M(a, unsigned char, UNSIGNED_CHAR)
#define ASPEN_EW_TYPES_SIGNED(M, a)                                                             \
  ASPEN_EW_TYPES_FP(M, a) M(a, int, INT) M(a, short, SHORT) M(a, char, CHAR)
#define ASPEN_EW_TYPES_NUM(M, a) ASPEN_EW_TYPES_FP(M, a) ASPEN_EW_TYPES_INT(M, a)
#define ASPEN_EW_TYPES_BOOL(M, a) M(a, bool, BOOL)
#define ASPEN_EW_TYPES_ALL(M, a) ASPEN_EW_TYPES_NUM(M, a) ASPEN_EW_TYPES_BOOL(M, a)
// The element types beyond the nine of the operations: only casts convert to and from them.
#define ASPEN_EW_TYPES_CAST_ONLY(M, a)                                                          \
  M(a, signed char, SIGNED_CHAR) M(a, long long, LONGLONG)                                      \
  M(a, unsigned long long, UNSIGNED_LONGLONG)
// Every element type (all twelve of aspen::Type): the types of casts.
#define ASPEN_EW_TYPES_CAST(M, a) ASPEN_EW_TYPES_ALL(M, a) ASPEN_EW_TYPES_CAST_ONLY(M, a)

// --- unary operations (34, as popops) ------------------------------------------------------
#define ASPEN_EW_UNARY_OPS(X)                                                                   \
  X(ABSOLUTE, Abs, abs, SIGNED, SAME)                                                           \
  X(ASIN, Asin, asin, FP, SAME)                                                                 \
  X(BITWISE_NOT, BitwiseNot, bitwiseNot, INT, SAME)                                             \
  X(CBRT, Cbrt, cbrt, FP, SAME)                                                                 \
  X(CEIL, Ceil, ceil, FP, SAME)                                                                 \
  X(COS, Cos, cos, FP, SAME)                                                                    \
  X(COUNT_LEADING_ZEROS, Clz, countLeadingZeros, INT32, SAME)                                   \
  X(ERF, Erf, erf, FP, SAME)                                                                    \
  X(EXPONENT, Exp, exp, FP, SAME)                                                               \
  X(EXPONENT_MINUS_ONE, Expm1, expm1, FP, SAME)                                                 \
  X(EXPONENT2, Exp2, exp2, FP, SAME)                                                            \
  X(FLOOR, Floor, floor, FP, SAME)                                                              \
  X(GELU_ERF, GeluErf, geluErf, FP, SAME)                                                       \
  X(INVERSE, Inv, inv, FP, SAME)                                                                \
  X(IS_FINITE, IsFinite, isFinite, FP, BOOL)                                                    \
  X(IS_INF, IsInf, isInf, FP, BOOL)                                                             \
  X(IS_NAN, IsNaN, isNaN, FP, BOOL)                                                             \
  X(LOGARITHM, Log, log, FP, SAME)                                                              \
  X(LOGARITHM_ONE_PLUS, Log1p, log1p, FP, SAME)                                                 \
  X(LOGICAL_NOT, Not, logicalNot, BOOL, SAME)                                                   \
  X(NEARBY_INT, NearbyInt, nearbyint, FP, SAME)                                                 \
  X(NEGATE, Neg, neg, SIGNED, SAME)                                                             \
  X(POPCOUNT, Popcount, popcount, INT32, SAME)                                                  \
  X(RELU, Relu, relu, SIGNED, SAME)                                                             \
  X(ROUND, Round, round, FP, SAME)                                                              \
  X(SIGNUM, Signum, signum, SIGNED, SAME)                                                       \
  X(SIN, Sin, sin, FP, SAME)                                                                    \
  X(SQRT, Sqrt, sqrt, FP, SAME)                                                                 \
  X(SQUARE, Square, square, NUM, SAME)                                                          \
  X(TAN, Tan, tan, FP, SAME)                                                                    \
  X(TANH, Tanh, tanh, FP, SAME)                                                                 \
  X(TRUNC, Trunc, trunc, FP, SAME)                                                              \
  X(RSQRT, Rsqrt, rsqrt, FP, SAME)                                                              \
  X(SIGMOID, Sigmoid, sigmoid, FP, SAME)

// --- binary operations (26 of popops, then 4 of Aspen: the gradients of the non-linearities,
// (forward output or input, dL/dy) -> dL/dx, computed as aspen::nn computes them) -------------
#define ASPEN_EW_BINARY_OPS(X)                                                                  \
  X(ADD, Add, add, NUM, SAME)                                                                   \
  X(ATAN2, Atan2, atan2, FP, SAME)                                                              \
  X(BITWISE_AND, BitwiseAnd, bitwiseAnd, INT, SAME)                                             \
  X(BITWISE_OR, BitwiseOr, bitwiseOr, INT, SAME)                                                \
  X(BITWISE_XOR, BitwiseXor, bitwiseXor, INT, SAME)                                             \
  X(BITWISE_XNOR, BitwiseXnor, bitwiseXnor, INT, SAME)                                          \
  X(DIVIDE, Divide, div, NUM, SAME)                                                             \
  X(EQUAL, Equal, eq, ALL, BOOL)                                                                \
  X(GREATER_THAN_EQUAL, Gte, gteq, ALL, BOOL)                                                   \
  X(GREATER_THAN, Gt, gt, ALL, BOOL)                                                            \
  X(INV_STD_DEV_TO_VARIANCE, InvStdDevToVariance, invStdDevToVariance, FP, SAME)                \
  X(LESS_THAN_EQUAL, Lte, lteq, ALL, BOOL)                                                      \
  X(LOGICAL_AND, And, logicalAnd, BOOL, SAME)                                                   \
  X(LOGICAL_OR, Or, logicalOr, BOOL, SAME)                                                      \
  X(LESS_THAN, Lt, lt, ALL, BOOL)                                                               \
  X(MAXIMUM, Max, max, NUM, SAME)                                                               \
  X(MINIMUM, Min, min, NUM, SAME)                                                               \
  X(MULTIPLY, Mul, mul, NUM, SAME)                                                              \
  X(NOT_EQUAL, NotEqual, neq, ALL, BOOL)                                                        \
  X(POWER, Pow, pow, FP, SAME)                                                                  \
  X(REMAINDER, Rem, rem, NUM, SAME)                                                             \
  X(SHIFT_LEFT, Shl, shiftLeft, INT, SAME)                                                      \
  X(SHIFT_RIGHT, Shr, shiftRight, INT, SAME)                                                    \
  X(SHIFT_RIGHT_SIGN_EXTEND, ShrSE, shiftRightSignExtend, INT, SAME)                            \
  X(SUBTRACT, Sub, sub, NUM, SAME)                                                              \
  X(VARIANCE_TO_INV_STD_DEV, VarianceToInvStdDev, varianceToInvStdDev, FP, SAME)             \
  X(SIGMOID_GRAD, SigmoidGrad, sigmoidGrad, FP, SAME)                                           \
  X(TANH_GRAD, TanhGrad, tanhGrad, FP, SAME)                                                    \
  X(RELU_GRAD, ReluGrad, reluGrad, FP, SAME)                                                    \
  X(GELU_ERF_GRAD, GeluErfGrad, geluErfGrad, FP, SAME)

// --- ternary operations: CLAMP(x, lo, hi), SELECT(a, b, predicate: bool) ----------------------
#define ASPEN_EW_TERNARY_OPS(X)                                                                 \
  X(CLAMP, Clamp, clamp, NUM, SAME)                                                             \
  X(SELECT, Select, select, ALL, SAME)

namespace aspen::ops {

#define ASPEN_EW_ENUMERATOR(e, node, fn, types, result) e,
enum class UnaryOpType { ASPEN_EW_UNARY_OPS(ASPEN_EW_ENUMERATOR) };
enum class BinaryOpType { ASPEN_EW_BINARY_OPS(ASPEN_EW_ENUMERATOR) };
enum class TernaryOpType { ASPEN_EW_TERNARY_OPS(ASPEN_EW_ENUMERATOR) };
#undef ASPEN_EW_ENUMERATOR

#define ASPEN_EW_COUNT(e, node, fn, types, result) +1
inline constexpr unsigned kNumUnaryOps = 0 ASPEN_EW_UNARY_OPS(ASPEN_EW_COUNT);
inline constexpr unsigned kNumBinaryOps = 0 ASPEN_EW_BINARY_OPS(ASPEN_EW_COUNT);
inline constexpr unsigned kNumTernaryOps = 0 ASPEN_EW_TERNARY_OPS(ASPEN_EW_COUNT);
#undef ASPEN_EW_COUNT
static_assert(kNumUnaryOps == 34, "popops has 34 unary operations");
static_assert(kNumBinaryOps == 26 + 4, "popops has 26 binary operations; Aspen adds 4 gradients");
static_assert(kNumTernaryOps == 2, "popops has 2 ternary operations");

} // namespace aspen::ops

// ASPEN_EW_TYPES_CAST spelled a second time, for nesting inside an expansion of the first (cast
// instances: every source type times every destination type). Keep the two lists equal.
#define ASPEN_EW_TYPES_CAST_AGAIN(M, a)                                                         \
  M(a, float, FLOAT) M(a, half, HALF) M(a, int, INT) M(a, unsigned int, UNSIGNED_INT)           \
  M(a, short, SHORT) M(a, unsigned short, UNSIGNED_SHORT) M(a, char, CHAR)                      \
  M(a, unsigned char, UNSIGNED_CHAR) M(a, bool, BOOL) M(a, signed char, SIGNED_CHAR)            \
  M(a, long long, LONGLONG) M(a, unsigned long long, UNSIGNED_LONGLONG)
