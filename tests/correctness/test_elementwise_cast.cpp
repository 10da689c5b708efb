// Casts between all twelve element types (144 pairs), through ops::cast / castWithOutput (the
// library Cast<Src, Dst> codelets) and expr::Cast inside fused expressions (generated codelets),
// against an exact host reference: every value of every type is held exactly in a long double
// (64-bit significand), float and half rounding is computed from first principles (scale to an
// integer significand, round to nearest even, overflow beyond the largest finite value), and
// integer results by exact modular or saturating arithmetic. Edge values: ±0, ±1, the min/max of
// every type, NaN, ±inf, 2^24+1, 2^53+1, 2^60+1, rounding ties of float and half, values just
// inside and outside every integer range; plus seeded random bit patterns. Every result is the
// same on 1, 7 and 1472 tiles and with 1 or 4 threads.
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/ops/Cast.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace aspen;
namespace ex = aspen::ops::expr;

namespace {

using Value = long double; // holds every value of every element type exactly
static_assert(std::numeric_limits<Value>::digits >= 64, "the reference needs 64-bit significands");
// The other two, QUARTER and QUARTER_METADATA, cast through metadata (test_quarter.cpp).
static_assert(kNumTypes == 14, "cast covers every element type");

const std::vector<Type> kTypes = {FLOAT, HALF,          INT,  UNSIGNED_INT, SHORT,    UNSIGNED_SHORT,
                                  CHAR,  UNSIGNED_CHAR, BOOL, SIGNED_CHAR,  LONGLONG, UNSIGNED_LONGLONG};
const Value kInf = std::numeric_limits<Value>::infinity();
const Value kNaN = std::numeric_limits<Value>::quiet_NaN();

Value pow2(int e) { return std::ldexp(Value(1), e); }

// --- reference ----------------------------------------------------------------------------------
// v rounded to a binary format with `precision` significand bits, smallest normal exponent
// minExponent (below it: subnormals of that exponent's spacing) and largest finite value
// maxFinite; beyond it +-inf. Round to nearest, ties to even (nearbyint in the default mode).
Value roundToFormat(Value v, int precision, int minExponent, Value maxFinite) {
  if (std::isnan(v) || std::isinf(v) || v == 0)
    return v;
  const int e = std::max(std::ilogb(v), minExponent);
  const Value r = std::ldexp(std::nearbyint(std::ldexp(v, precision - 1 - e)), e - (precision - 1));
  if (std::fabs(r) > maxFinite)
    return std::copysign(kInf, v);
  return r == 0 ? std::copysign(Value(0), v) : r;
}
Value roundToFloat(Value v) { return roundToFormat(v, 24, -126, (2 - pow2(-23)) * pow2(127)); }
Value roundToHalf(Value v) { return roundToFormat(v, 11, -14, 65504); }

struct Range {
  Value lo, hi;
};
Range integerRange(Type t) {
  if (t == BOOL)
    return {0, 1};
  const int bits = static_cast<int>(t.size() * 8);
  return t.isSigned() ? Range{-pow2(bits - 1), pow2(bits - 1) - 1} : Range{0, pow2(bits) - 1};
}

// The documented cast of v (a value of type src) to dst.
Value reference(Type src, Type dst, Value v) {
  if (dst == BOOL)
    return v != 0 ? 1 : 0; // NaN != 0
  if (dst == FLOAT)
    return roundToFloat(v);
  if (dst == HALF)
    return roundToHalf(v);
  const Range r = integerRange(dst);
  if (src.isFloatingPoint()) { // truncate, saturate, NaN -> 0
    if (std::isnan(v))
      return 0;
    const Value t = std::trunc(v);
    return t < r.lo ? r.lo : t > r.hi ? r.hi : (t == 0 ? 0 : t);
  }
  const Value m = pow2(static_cast<int>(dst.size() * 8)); // integers wrap modulo 2^bits
  Value w = std::fmod(v, m); // exact; -0 when m divides a negative v
  if (w < 0)
    w += m;
  return w > r.hi ? w - m : w + 0; // + 0 turns -0 into 0
}

// got equals want, the sign of zero included; any NaN matches NaN.
bool same(Value got, Value want) {
  if (std::isnan(want))
    return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

// --- host buffers -----------------------------------------------------------------------------------
// A half bit pattern's value from the IEEE 754 definition.
Value decodeHalf(unsigned short h) {
  const int exponent = (h >> 10) & 0x1f;
  const Value mantissa = h & 0x3ff;
  const Value magnitude = exponent == 0x1f ? (mantissa == 0 ? kInf : kNaN)
                          : exponent == 0  ? std::ldexp(mantissa, -24)
                                           : std::ldexp(1024 + mantissa, exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

template <class F> void withHostType(Type t, F &&f) {
#define CASTTEST_DISPATCH(unused, cpp, C)                                                       \
  if (t == C)                                                                                   \
    return f(static_cast<cpp>(0));
  ASPEN_EW_TYPES_CAST(CASTTEST_DISPATCH, _)
#undef CASTTEST_DISPATCH
  FAIL("no host type for " << t);
}

std::vector<Value> decode(Type t, const std::vector<unsigned char> &bytes) {
  std::vector<Value> v(bytes.size() / t.size());
  withHostType(t, [&](auto zero) {
    using T = decltype(zero);
    for (std::size_t i = 0; i < v.size(); ++i) {
      T x;
      std::memcpy(&x, bytes.data() + i * sizeof(T), sizeof(T));
      if constexpr (std::is_same_v<T, half>)
        v[i] = decodeHalf(x.bits());
      else
        v[i] = static_cast<Value>(x);
    }
  });
  return v;
}

// Values are representable in t; a half is encoded by aspen::half and checked by decodeHalf.
std::vector<unsigned char> encode(Type t, const std::vector<Value> &v) {
  std::vector<unsigned char> bytes(v.size() * t.size());
  withHostType(t, [&](auto zero) {
    using T = decltype(zero);
    for (std::size_t i = 0; i < v.size(); ++i) {
      T x;
      if constexpr (std::is_same_v<T, half>)
        x = half(static_cast<float>(v[i]));
      else
        x = static_cast<T>(v[i]);
      std::memcpy(bytes.data() + i * sizeof(T), &x, sizeof(T));
    }
  });
  const std::vector<Value> back = decode(t, bytes);
  for (std::size_t i = 0; i < v.size(); ++i)
    REQUIRE(same(back[i], v[i]));
  return bytes;
}

// Edge values of every type, kept where representable in t, then seeded random bit patterns.
std::vector<Value> samples(Type t, unsigned seed) {
  std::vector<Value> candidates = {
      0, -Value(0), 1, -1, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 2.5, -2.5, kNaN, kInf, -kInf,
      127, 128, 255, 256, -128, -129, 32767, 32768, 65535, 65536, -32768, -32769, 1e30, -1e30,
      // half rounding: ties and neighbours around 2048, 4096, 1 + 2^-11, the subnormals, 65520
      2049, 2050, 2051, -2049, -2051, 4097, 4098, 4099, 1 + pow2(-11), 1 + 3 * pow2(-11),
      pow2(-24), pow2(-25), 3 * pow2(-25), -pow2(-25), pow2(-26), 65504, 65519, 65520, -65520,
      // float rounding and the 32- and 64-bit ranges
      pow2(24), pow2(24) + 1, pow2(24) + 2, pow2(24) + 3, -(pow2(24) + 1), pow2(-149), -pow2(-149),
      pow2(-140), (2 - pow2(-23)) * pow2(127), -(2 - pow2(-23)) * pow2(127), pow2(31) - 128,
      pow2(31) - 1, pow2(31), -pow2(31), -pow2(31) - 1, pow2(32) - 256, pow2(32) - 1, pow2(32),
      pow2(32) + 5, pow2(53) + 1, -(pow2(53) + 1), pow2(60) + 1, pow2(60) + pow2(36),
      pow2(60) + pow2(36) + 1, -(pow2(60) + pow2(36) + 1), pow2(63) - pow2(39), pow2(63) - 1,
      pow2(63), -pow2(63), -pow2(63) - pow2(40), pow2(64) - pow2(40), pow2(64) - 1, pow2(64)};
  if (!t.isFloatingPoint()) {
    const Range r = integerRange(t);
    for (Value x : {r.lo, r.lo + 1, r.hi - 1, r.hi})
      candidates.push_back(x);
  }
  std::vector<Value> v;
  for (Value c : candidates)
    if (t.isFloatingPoint() ? (std::isnan(c) || (t == FLOAT ? roundToFloat(c) : roundToHalf(c)) == c)
                            : (std::isfinite(c) && std::trunc(c) == c && c >= integerRange(t).lo &&
                               c <= integerRange(t).hi && !(c == 0 && std::signbit(c))))
      v.push_back(c);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 40; ++i) {
    const unsigned long long bits = rng();
    if (t == FLOAT) { // random sign and significand, exponent spanning every integer range
      const Value significand = 1 + std::ldexp(static_cast<Value>(bits >> 41), -23);
      v.push_back((bits & 1 ? -1 : 1) * std::ldexp(significand, static_cast<int>((bits >> 1) % 100) - 30));
    } else if (t == HALF) {
      v.push_back(decodeHalf(static_cast<unsigned short>(bits)));
    } else { // bits modulo 2^width, or a small value
      v.push_back(i % 2 ? reference(UNSIGNED_LONGLONG, t, static_cast<Value>(bits))
                        : reference(INT, t, static_cast<Value>(static_cast<long long>(bits % 601) - 300)));
    }
  }
  return v;
}

struct Config {
  Target target;
  unsigned threads;
};

// Runs `build` on inputs (one tensor per type, mapped linearly) and returns each output's bytes.
std::vector<std::vector<unsigned char>>
run(const Config &config, const std::vector<std::vector<Value>> &inputs,
    const std::function<std::vector<Tensor>(Graph &, const std::vector<Tensor> &, program::Sequence &)> &build) {
  Graph g(config.target);
  ops::addCodelets(g);
  std::vector<Tensor> ts;
  for (std::size_t i = 0; i < kTypes.size(); ++i) {
    Tensor t = g.addVariable(kTypes[i], {inputs[i].size()}, "in_" + kTypes[i].toString());
    util::mapTensorLinearly(g, t);
    g.createHostWrite("w" + std::to_string(i), t);
    ts.push_back(t);
  }
  program::Sequence prog;
  const std::vector<Tensor> outs = build(g, ts, prog);
  for (std::size_t i = 0; i < outs.size(); ++i)
    g.createHostRead("r" + std::to_string(i), outs[i]);
  Engine e(g, prog, {{"aspen.cpu.threads", std::to_string(config.threads)},
                     {"aspen.cpu.inlineElements", "0"}});
  e.load(aspen::test::deviceFor(config.target));
  for (std::size_t i = 0; i < kTypes.size(); ++i) {
    const auto bytes = encode(kTypes[i], inputs[i]);
    e.writeTensor("w" + std::to_string(i), bytes.data(), bytes.data() + bytes.size());
  }
  e.run();
  std::vector<std::vector<unsigned char>> results;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    std::vector<unsigned char> bytes(outs[i].numElements() * outs[i].elementType().size());
    e.readTensor("r" + std::to_string(i), bytes.data(), bytes.data() + bytes.size());
    results.push_back(std::move(bytes));
  }
  return results;
}

std::vector<std::vector<Value>> allSamples() {
  std::vector<std::vector<Value>> inputs;
  for (std::size_t i = 0; i < kTypes.size(); ++i)
    inputs.push_back(samples(kTypes[i], 11 + static_cast<unsigned>(i)));
  return inputs;
}

// Checks got (bytes of type dst) against reference(chain...) of the inputs of type src.
void checkCast(const std::vector<Type> &chain, const std::vector<Value> &in,
               const std::vector<unsigned char> &got, const std::string &how) {
  const std::vector<Value> values = decode(chain.back(), got);
  REQUIRE(values.size() == in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    Value want = in[i];
    std::string path = chain[0].toString();
    for (std::size_t k = 1; k < chain.size(); ++k) {
      want = reference(chain[k - 1], chain[k], want);
      path += " -> " + chain[k].toString();
    }
    INFO(fmt::format("{} {}: element {}: {} gives {}, reference {}", how, path, i,
                     static_cast<double>(in[i]), static_cast<double>(values[i]),
                     static_cast<double>(want)));
    CHECK(same(values[i], want));
  }
}

} // namespace

TEST_CASE("the cast reference rounds as the hardware does and gives the documented values",
          "[correctness][elementwise][cast]") {
  // float rounding from first principles agrees with the host's double -> float conversion.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) {
    const unsigned long long bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (std::isnan(d) || std::fabs(d) > 1e39 || std::fabs(d) < 1e-46)
      d = std::ldexp(static_cast<double>(bits >> 11), static_cast<int>(bits % 200) - 150);
    REQUIRE(same(roundToFloat(d), static_cast<float>(d)));
  }
  // half: the documented examples.
  CHECK(roundToHalf(2049) == 2048);
  CHECK(roundToHalf(2051) == 2052);
  CHECK(roundToHalf(4098) == 4096);
  CHECK(roundToHalf(65519) == 65504);
  CHECK(std::isinf(roundToHalf(65520)));
  CHECK(roundToHalf(pow2(-25)) == 0);
  CHECK(roundToHalf(3 * pow2(-25)) == pow2(-23));
  CHECK(roundToFloat(pow2(60) + pow2(36)) == pow2(60));
  CHECK(roundToFloat(pow2(60) + pow2(36) + 1) == pow2(60) + pow2(37)); // not via double
  CHECK(roundToFloat(pow2(24) + 1) == pow2(24));
  CHECK(reference(FLOAT, LONGLONG, 1e30) == pow2(63) - 1);
  CHECK(reference(FLOAT, UNSIGNED_LONGLONG, -1e30) == 0);
  CHECK(reference(HALF, LONGLONG, kNaN) == 0);
  CHECK(reference(LONGLONG, SIGNED_CHAR, -129) == 127);
  CHECK(reference(LONGLONG, UNSIGNED_LONGLONG, -1) == pow2(64) - 1);
  CHECK(reference(UNSIGNED_LONGLONG, LONGLONG, pow2(64) - 1) == -1);
}

TEST_CASE("cast converts every type to every type (144 pairs) as the reference, on any tiles "
          "and threads",
          "[correctness][elementwise][cast]") {
  const auto inputs = allSamples();
  const auto build = [](Graph &g, const std::vector<Tensor> &in, program::Sequence &p) {
    std::vector<Tensor> outs;
    for (std::size_t s = 0; s < kTypes.size(); ++s)
      for (std::size_t d = 0; d < kTypes.size(); ++d) {
        if ((s + d) % 2 == 0) {
          outs.push_back(ops::cast(g, in[s], kTypes[d], p));
        } else { // castWithOutput into a tensor mapped like the source
          Tensor out = g.clone(kTypes[d], in[s], "out");
          ops::castWithOutput(g, in[s], out, p);
          outs.push_back(out);
        }
      }
    return outs;
  };
  std::vector<std::vector<unsigned char>> first;
  for (const Config &config : {Config{Target::createGeneric(7), 4}, Config{Target::createModel("ipu2"), 1},
                               Config{Target::createCPUTarget(), 4}}) {
    const auto results = run(config, inputs, build);
    REQUIRE(results.size() == kTypes.size() * kTypes.size());
    for (std::size_t s = 0; s < kTypes.size(); ++s)
      for (std::size_t d = 0; d < kTypes.size(); ++d)
        checkCast({kTypes[s], kTypes[d]}, inputs[s], results[s * kTypes.size() + d],
                  fmt::format("{} tiles, {} threads:", config.target.getNumTiles(), config.threads));
    if (first.empty())
      first = results;
    else
      CHECK(results == first); // bit for bit, NaN payloads included
  }
}

TEST_CASE("expr::Cast to and from signed char, long long and unsigned long long works in fused "
          "expressions",
          "[correctness][elementwise][cast]") {
  // Chains type -> extra type -> type: every type is a source and a destination of the three
  // extra types, in generated codelets (two operations) and operation by operation.
  const std::vector<Type> extra = {SIGNED_CHAR, LONGLONG, UNSIGNED_LONGLONG};
  const auto inputs = allSamples();
  const auto chain = [&](std::size_t i) {
    return std::vector<Type>{kTypes[i], extra[i % 3], kTypes[kTypes.size() - 1 - i]};
  };
  const auto results = run(Config{Target::createGeneric(7), 4}, inputs,
                           [&](Graph &g, const std::vector<Tensor> &in, program::Sequence &p) {
                             std::vector<Tensor> outs;
                             for (const char *generate : {"true", "false"})
                               for (std::size_t i = 0; i < kTypes.size(); ++i) {
                                 const auto c = chain(i);
                                 outs.push_back(ops::map(g, ex::Cast(ex::Cast(ex::_1, c[1]), c[2]),
                                                         {in[i]}, p, "fused",
                                                         {{"enableGenerateCodelet", generate}}));
                               }
                             // A scalar operand of a 64-bit type, broadcast against a vector.
                             outs.push_back(ops::map(g, ex::Cast(ex::_1, FLOAT) + ex::Cast(ex::_2, FLOAT),
                                                     {in[10].slice(3, 4), in[0]}, p));
                             return outs;
                           });
  for (std::size_t k = 0; k < 2 * kTypes.size(); ++k)
    checkCast(chain(k % kTypes.size()), inputs[k % kTypes.size()], results[k],
              k < kTypes.size() ? "generated" : "library");
  const std::vector<Value> sum = decode(FLOAT, results.back());
  for (std::size_t i = 0; i < inputs[0].size(); ++i) {
    const float want = static_cast<float>(roundToFloat(inputs[10][3])) + static_cast<float>(inputs[0][i]);
    INFO(fmt::format("element {}", i));
    CHECK(same(sum[i], want));
  }
}
