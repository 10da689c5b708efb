// Test harness for the element-wise tests: host buffers of any element type held as doubles,
// graphs built on a chosen target, run with a chosen thread count, and an independent
// double-precision reference for every operation of the table with per-type tolerances.
#pragma once

#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace ewtest {

using namespace aspen;
using ops::BinaryOpType;
using ops::TernaryOpType;
using ops::UnaryOpType;

// Calls f(T{}) with the host type of an element-wise type.
template <class F> void withType(Type t, F &&f) {
#define EWTEST_DISPATCH(unused, cpp, C)                                                         \
  if (t == C)                                                                                   \
    return f(static_cast<cpp>(0));
  ASPEN_EW_TYPES_ALL(EWTEST_DISPATCH, _)
#undef EWTEST_DISPATCH
}

inline std::vector<Type> allTypes() {
  return {FLOAT, HALF, INT, UNSIGNED_INT, SHORT, UNSIGNED_SHORT, CHAR, UNSIGNED_CHAR, BOOL};
}

// The value v as stored in type t (half rounding, integer conversion of in-range values).
inline double representable(Type t, double v) {
  double r = 0;
  withType(t, [&](auto x) {
    using T = decltype(x);
    if constexpr (std::is_same_v<T, half>)
      r = static_cast<float>(half(static_cast<float>(v)));
    else if constexpr (std::is_same_v<T, bool>)
      r = v != 0;
    else
      r = static_cast<double>(static_cast<T>(v));
  });
  return r;
}

inline std::vector<unsigned char> toBytes(Type t, const std::vector<double> &v) {
  std::vector<unsigned char> bytes(v.size() * t.size());
  withType(t, [&](auto x) {
    using T = decltype(x);
    for (std::size_t i = 0; i < v.size(); ++i) {
      T value;
      if constexpr (std::is_same_v<T, half>)
        value = half(static_cast<float>(v[i]));
      else
        value = static_cast<T>(v[i]);
      std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
    }
  });
  return bytes;
}

inline std::vector<double> fromBytes(Type t, const std::vector<unsigned char> &bytes) {
  std::vector<double> v(bytes.size() / t.size());
  withType(t, [&](auto x) {
    using T = decltype(x);
    for (std::size_t i = 0; i < v.size(); ++i) {
      T value;
      std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
      v[i] = static_cast<double>(static_cast<std::conditional_t<std::is_same_v<T, half>, float, T>>(value));
    }
  });
  return v;
}

struct HostTensor {
  Type type;
  std::vector<std::size_t> shape;
  std::vector<double> values;
};

using Builder = std::function<std::vector<Tensor>(Graph &, const std::vector<Tensor> &,
                                                  program::Sequence &)>;

// Builds inputs (mapped linearly) and the outputs `build` returns on `target`, runs once with
// `threads` CPU threads and returns each output's values.
inline std::vector<std::vector<double>> run(const Target &target, const std::vector<HostTensor> &inputs,
                                            const Builder &build, unsigned threads = 4) {
  Graph g(target);
  ops::addCodelets(g);
  std::vector<Tensor> ts;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor t = g.addVariable(inputs[i].type, inputs[i].shape, "in" + std::to_string(i));
    util::mapTensorLinearly(g, t);
    g.createHostWrite("w" + std::to_string(i), t);
    ts.push_back(t);
  }
  program::Sequence prog;
  std::vector<Tensor> outs = build(g, ts, prog);
  for (std::size_t i = 0; i < outs.size(); ++i)
    g.createHostRead("r" + std::to_string(i), outs[i]);
  Engine e(g, prog, {{"aspen.cpu.threads", std::to_string(threads)},
                     {"aspen.cpu.inlineElements", "0"}});
  e.load(aspen::test::deviceFor(target));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto bytes = toBytes(inputs[i].type, inputs[i].values);
    e.writeTensor("w" + std::to_string(i), bytes.data(), bytes.data() + bytes.size());
  }
  e.run();
  std::vector<std::vector<double>> results;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    std::vector<unsigned char> bytes(outs[i].numElements() * outs[i].elementType().size());
    e.readTensor("r" + std::to_string(i), bytes.data(), bytes.data() + bytes.size());
    results.push_back(fromBytes(outs[i].elementType(), bytes));
  }
  return results;
}

// Seeded random values of type t, with the type's edge values first.
inline std::vector<double> sample(Type t, std::size_t n, unsigned seed, double lo = -8, double hi = 8) {
  std::vector<double> v;
  const double inf = std::numeric_limits<double>::infinity();
  if (t == FLOAT)
    v = {0.0, -0.0, 1, -1, 0.5, 2.5, -2.5, 1e-40, -1e-40, inf, -inf, NAN, 3e38, 70000, 1e-8};
  else if (t == HALF)
    v = {0.0, -0.0, 1, -1, 0.5, 2.5, -2.5, 6e-8, inf, -inf, NAN, 65504, -65504, 1e-4};
  else if (t == BOOL)
    v = {0, 1, 1, 0};
  else
    withType(t, [&](auto x) {
      using T = decltype(x);
      v = {0, 1, static_cast<double>(std::numeric_limits<T>::min()),
           static_cast<double>(std::numeric_limits<T>::max())};
      if (std::numeric_limits<T>::is_signed)
        v.push_back(-1);
      lo = std::max(lo * 16, static_cast<double>(std::numeric_limits<T>::min()));
      hi = std::min(hi * 16, static_cast<double>(std::numeric_limits<T>::max()));
    });
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  while (v.size() < n)
    v.push_back(t == BOOL ? static_cast<double>(rng() & 1) : dist(rng));
  v.resize(n);
  for (double &x : v)
    x = t.isFloatingPoint() ? representable(t, x) : representable(t, std::trunc(x));
  return v;
}

// --- reference ----------------------------------------------------------------------------------
// Integers wrap to the type's width.
inline double wrapTo(Type t, long long v) {
  if (t == BOOL)
    return v != 0;
  const unsigned bits = static_cast<unsigned>(t.size() * 8);
  const unsigned long long u = static_cast<unsigned long long>(v) & ((bits == 64 ? 0 : (1ull << bits)) - 1);
  if (t.isSigned() && (u >> (bits - 1)))
    return static_cast<double>(static_cast<long long>(u) - (1ll << bits));
  return static_cast<double>(u);
}

static_assert(ops::kNumUnaryOps == 34 && ops::kNumBinaryOps == 30 && ops::kNumTernaryOps == 2,
              "add the new operation to the reference below");

inline double refUnary(UnaryOpType op, Type t, double x) {
  const bool fp = t.isFloatingPoint();
  const long long i = fp ? 0 : static_cast<long long>(x);
  switch (op) {
  case UnaryOpType::ABSOLUTE: return fp ? std::fabs(x) : wrapTo(t, std::llabs(i));
  case UnaryOpType::ASIN: return std::asin(x);
  case UnaryOpType::BITWISE_NOT: return wrapTo(t, ~i);
  case UnaryOpType::CBRT: return std::cbrt(x);
  case UnaryOpType::CEIL: return std::ceil(x);
  case UnaryOpType::COS: return std::cos(x);
  case UnaryOpType::COUNT_LEADING_ZEROS: {
    const auto u = static_cast<std::uint32_t>(i);
    int n = 0;
    for (int b = 31; b >= 0 && !((u >> b) & 1); --b) ++n;
    return n;
  }
  case UnaryOpType::ERF: return std::erf(x);
  case UnaryOpType::EXPONENT: return std::exp(x);
  case UnaryOpType::EXPONENT_MINUS_ONE: return std::expm1(x);
  case UnaryOpType::EXPONENT2: return std::exp2(x);
  case UnaryOpType::FLOOR: return std::floor(x);
  // Its limit at -inf, as aspen::nn defines it (the closed form gives -inf * 0).
  case UnaryOpType::GELU_ERF: return std::isinf(x) && x < 0 ? 0 : 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case UnaryOpType::INVERSE: return 1 / x;
  case UnaryOpType::IS_FINITE: return std::isfinite(x);
  case UnaryOpType::IS_INF: return std::isinf(x);
  case UnaryOpType::IS_NAN: return std::isnan(x);
  case UnaryOpType::LOGARITHM: return std::log(x);
  case UnaryOpType::LOGARITHM_ONE_PLUS: return std::log1p(x);
  case UnaryOpType::LOGICAL_NOT: return x == 0;
  case UnaryOpType::NEARBY_INT: return std::nearbyint(x);
  case UnaryOpType::NEGATE: return fp ? -x : wrapTo(t, -i);
  case UnaryOpType::POPCOUNT: return __builtin_popcount(static_cast<std::uint32_t>(i));
  case UnaryOpType::RELU: return x < 0 ? 0 : x;
  case UnaryOpType::ROUND: return std::round(x);
  case UnaryOpType::SIGNUM: return x > 0 ? 1 : x < 0 ? -1 : x;
  case UnaryOpType::SIN: return std::sin(x);
  case UnaryOpType::SQRT: return std::sqrt(x);
  case UnaryOpType::SQUARE: return fp ? x * x : wrapTo(t, static_cast<long long>(static_cast<unsigned long long>(i) * static_cast<unsigned long long>(i)));
  case UnaryOpType::TAN: return std::tan(x);
  case UnaryOpType::TANH: return std::tanh(x);
  case UnaryOpType::TRUNC: return std::trunc(x);
  case UnaryOpType::RSQRT: return 1 / std::sqrt(x);
  case UnaryOpType::SIGMOID: return 1 / (1 + std::exp(-x));
  }
  return NAN;
}

inline double refBinary(BinaryOpType op, Type t, double a, double b) {
  const bool fp = t.isFloatingPoint();
  const long long i = fp ? 0 : static_cast<long long>(a), j = fp ? 0 : static_cast<long long>(b);
  const unsigned bits = static_cast<unsigned>(t.size() * 8);
  const long long mn = t.isSigned() ? -(1ll << (bits - 1)) : 0;
  switch (op) {
  case BinaryOpType::ADD: return fp ? a + b : wrapTo(t, i + j);
  case BinaryOpType::ATAN2: return std::atan2(a, b);
  case BinaryOpType::BITWISE_AND: return wrapTo(t, i & j);
  case BinaryOpType::BITWISE_OR: return wrapTo(t, i | j);
  case BinaryOpType::BITWISE_XOR: return wrapTo(t, i ^ j);
  case BinaryOpType::BITWISE_XNOR: return wrapTo(t, ~(i ^ j));
  case BinaryOpType::DIVIDE:
    if (fp) return a / b;
    if (j == 0) return 0;
    if (i == mn && j == -1) return wrapTo(t, -i);
    return static_cast<double>(i / j);
  case BinaryOpType::EQUAL: return a == b;
  case BinaryOpType::GREATER_THAN_EQUAL: return a >= b;
  case BinaryOpType::GREATER_THAN: return a > b;
  case BinaryOpType::INV_STD_DEV_TO_VARIANCE: return 1 / (a * a) - b;
  case BinaryOpType::LESS_THAN_EQUAL: return a <= b;
  case BinaryOpType::LOGICAL_AND: return a != 0 && b != 0;
  case BinaryOpType::LOGICAL_OR: return a != 0 || b != 0;
  case BinaryOpType::LESS_THAN: return a < b;
  case BinaryOpType::MAXIMUM: return std::isnan(a) || std::isnan(b) ? NAN : a > b ? a : b;
  case BinaryOpType::MINIMUM: return std::isnan(a) || std::isnan(b) ? NAN : a < b ? a : b;
  case BinaryOpType::MULTIPLY: return fp ? a * b : wrapTo(t, static_cast<long long>(static_cast<unsigned long long>(i) * static_cast<unsigned long long>(j)));
  case BinaryOpType::NOT_EQUAL: return a != b;
  case BinaryOpType::POWER: return std::pow(a, b);
  case BinaryOpType::REMAINDER:
    if (fp) return std::fmod(a, b);
    return j == 0 || j == -1 ? 0 : static_cast<double>(i % j);
  case BinaryOpType::SHIFT_LEFT: return wrapTo(t, static_cast<long long>(static_cast<std::uint32_t>(i) << (j & 31)));
  case BinaryOpType::SHIFT_RIGHT: {
    const unsigned long long u = static_cast<unsigned long long>(i) & ((1ull << bits) - 1);
    return wrapTo(t, static_cast<long long>(u >> (j & 31)));
  }
  case BinaryOpType::SHIFT_RIGHT_SIGN_EXTEND:
    return t.isSigned() ? static_cast<double>(i >> (j & 31)) : refBinary(BinaryOpType::SHIFT_RIGHT, t, a, b);
  case BinaryOpType::SUBTRACT: return fp ? a - b : wrapTo(t, i - j);
  case BinaryOpType::VARIANCE_TO_INV_STD_DEV: return 1 / std::sqrt(a + b);
  // a: the forward output (input for GELU_ERF), b: dL/dy.
  case BinaryOpType::SIGMOID_GRAD: return b * a * (1 - a);
  case BinaryOpType::TANH_GRAD: return b * (1 - a * a);
  case BinaryOpType::RELU_GRAD: return std::isnan(a) ? a : a > 0 ? b : 0 * b;
  case BinaryOpType::GELU_ERF_GRAD:
    if (std::isinf(a)) return a > 0 ? b : 0 * b;
    return b * (0.5 * (1 + std::erf(a / std::sqrt(2.0))) +
                a * std::exp(-0.5 * a * a) / std::sqrt(2 * 3.14159265358979323846));
  }
  return NAN;
}

// Operations whose float result is the correctly rounded exact result (exact compare for float).
inline bool correctlyRounded(UnaryOpType op) {
  switch (op) {
  case UnaryOpType::ABSOLUTE: case UnaryOpType::CEIL: case UnaryOpType::FLOOR:
  case UnaryOpType::INVERSE: case UnaryOpType::NEARBY_INT: case UnaryOpType::NEGATE:
  case UnaryOpType::RELU: case UnaryOpType::ROUND: case UnaryOpType::SIGNUM:
  case UnaryOpType::SQRT: case UnaryOpType::SQUARE: case UnaryOpType::TRUNC:
    return true;
  default:
    return false;
  }
}
inline bool correctlyRounded(BinaryOpType op) {
  return op == BinaryOpType::ADD || op == BinaryOpType::SUBTRACT || op == BinaryOpType::MULTIPLY ||
         op == BinaryOpType::DIVIDE || op == BinaryOpType::MAXIMUM || op == BinaryOpType::MINIMUM ||
         op == BinaryOpType::REMAINDER;
}

// got (read from a tensor of type t) against the double reference: exact for integers and bool;
// for float the reference rounded to float, within `ulps` float ulps plus absTol; for half the
// reference rounded to half, within one half ulp plus absTol.
inline bool matches(Type t, double got, double ref, unsigned ulps, double absTol) {
  if (!t.isFloatingPoint())
    return got == ref;
  const double r = representable(t, ref);
  if (std::isnan(r) || std::isnan(got))
    return std::isnan(r) && std::isnan(got);
  if (std::isinf(r) || std::isinf(got))
    return got == r || std::fabs(got - ref) <= absTol;
  const double ulp = t == HALF ? std::ldexp(1.0, std::max(std::ilogb(r == 0 ? 6e-8 : r), -14) - 10)
                               : std::ldexp(1.0, std::max(std::ilogb(r == 0 ? 1e-45 : r), -126) - 23);
  return std::fabs(got - r) <= (t == HALF ? std::max(ulps, 1u) : ulps) * ulp + absTol;
}

} // namespace ewtest
