// Shared by the reduce tests: a double-precision host model of popops reductions (driven by the
// operation table) and a runner that builds one reduction, runs it and reads the result.
#pragma once

#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace reducetest {

using namespace aspen;
using aspen::ops::Operation;
using Shape = std::vector<std::size_t>;

inline const std::vector<Operation> kAllOperations = {
#define REDUCETEST_OP(name, identity, types, compensated) Operation::name,
    ASPEN_FOR_EACH_REDUCE_OPERATION(REDUCETEST_OP)
#undef REDUCETEST_OP
};

enum class TypeRule { Numeric, Logical, Floating };
inline TypeRule typeRule(Operation op) {
  switch (op) {
#define REDUCETEST_RULE(name, identity, types, compensated)                                        \
  case Operation::name:                                                                            \
    return TypeRule::types;
    ASPEN_FOR_EACH_REDUCE_OPERATION(REDUCETEST_RULE)
#undef REDUCETEST_RULE
  }
  return TypeRule::Numeric;
}
inline std::vector<Type> inputTypes(Operation op) {
  switch (typeRule(op)) {
  case TypeRule::Numeric:
    return {FLOAT, HALF, INT, UNSIGNED_INT};
  case TypeRule::Floating:
    return {FLOAT, HALF};
  case TypeRule::Logical:
    return {BOOL};
  }
  return {};
}

inline double highest(Type t) {
  if (t == INT)
    return std::numeric_limits<int>::max();
  if (t == UNSIGNED_INT)
    return std::numeric_limits<unsigned>::max();
  if (t == BOOL)
    return 1;
  return INFINITY;
}
inline double lowest(Type t) {
  if (t == INT)
    return std::numeric_limits<int>::min();
  if (t == UNSIGNED_INT || t == BOOL)
    return 0;
  return -INFINITY;
}

// The identity of op for values of type t (the table's identity column).
inline double identity(Operation op, Type t) {
  struct Kinds {
    Type t;
    double Zero() const { return 0; }
    double One() const { return 1; }
    double Highest() const { return highest(t); }
    double Lowest() const { return lowest(t); }
    double True() const { return 1; }
    double False() const { return 0; }
  } kinds{t};
  switch (op) {
#define REDUCETEST_IDENTITY(name, identity, types, compensated)                                    \
  case Operation::name:                                                                            \
    return kinds.identity();
    ASPEN_FOR_EACH_REDUCE_OPERATION(REDUCETEST_IDENTITY)
#undef REDUCETEST_IDENTITY
  }
  return 0;
}

inline double logAdd(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return NAN;
  if (a == -INFINITY)
    return b;
  if (b == -INFINITY)
    return a;
  if (std::isinf(a) || std::isinf(b))
    return INFINITY;
  const double m = std::max(a, b);
  return m + std::log(std::exp(a - m) + std::exp(b - m));
}

// op(a, b) on final values; MIN and MAX propagate NaN.
inline double combine(Operation op, double a, double b) {
  switch (op) {
  case Operation::ADD:
  case Operation::SQUARE_ADD:
    return a + b;
  case Operation::MUL:
    return a * b;
  case Operation::MIN:
    return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  case Operation::MAX:
    return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case Operation::LOGICAL_AND:
    return a != 0 && b != 0;
  case Operation::LOGICAL_OR:
    return a != 0 || b != 0;
  case Operation::LOG_ADD:
    return logAdd(a, b);
  }
  return NAN;
}

inline double reduceValues(Operation op, Type t, const std::vector<double> &xs) {
  double acc = identity(op, t);
  for (double x : xs)
    acc = combine(op, acc, op == Operation::SQUARE_ADD ? x * x : x);
  return acc;
}

struct Case {
  Operation op = Operation::ADD;
  Type inType = FLOAT, outType = FLOAT;
  Shape shape;
  std::vector<std::size_t> dims;
  std::vector<double> in;
  bool update = false;
  std::optional<float> scale;
  std::vector<double> initialOut; // read when update
};

inline Shape outShape(const Case &c) {
  Shape s;
  for (std::size_t d = 0; d < c.shape.size(); ++d)
    if (std::find(c.dims.begin(), c.dims.end(), d) == c.dims.end())
      s.push_back(c.shape[d]);
  return s;
}
inline std::size_t count(const Shape &s) {
  std::size_t n = 1;
  for (std::size_t d : s)
    n *= d;
  return n;
}

// The host model: gather each output's elements by multi-index, fold them, scale, update.
inline std::vector<double> reference(const Case &c) {
  const Shape os = outShape(c);
  std::vector<std::vector<double>> groups(count(os));
  std::vector<std::size_t> index(c.shape.size(), 0);
  for (std::size_t i = 0; i < c.in.size(); ++i) {
    std::size_t o = 0;
    for (std::size_t d = 0; d < c.shape.size(); ++d)
      if (std::find(c.dims.begin(), c.dims.end(), d) == c.dims.end())
        o = o * c.shape[d] + index[d];
    groups[o].push_back(c.in[i]);
    for (std::size_t d = c.shape.size(); d-- > 0;)
      if (++index[d] < c.shape[d])
        break;
      else
        index[d] = 0;
  }
  std::vector<double> out;
  const Type acc = c.inType == HALF ? FLOAT : c.inType;
  for (std::size_t o = 0; o < groups.size(); ++o) {
    double v = reduceValues(c.op, acc, groups[o]);
    if (c.scale)
      v = c.op == Operation::LOG_ADD ? v + double(*c.scale) : v * *c.scale;
    if (c.update)
      v = combine(c.op, c.initialOut[o], v);
    out.push_back(v);
  }
  return out;
}

inline std::vector<unsigned char> encode(Type t, const std::vector<double> &v) {
  std::vector<unsigned char> bytes(v.size() * t.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    unsigned char *p = bytes.data() + i * t.size();
    if (t == FLOAT) {
      const float f = float(v[i]);
      std::memcpy(p, &f, 4);
    } else if (t == HALF) {
      const unsigned short h = half(float(v[i])).bits();
      std::memcpy(p, &h, 2);
    } else if (t == INT) {
      const int x = int(v[i]);
      std::memcpy(p, &x, 4);
    } else if (t == UNSIGNED_INT) {
      const unsigned x = unsigned(v[i]);
      std::memcpy(p, &x, 4);
    } else {
      *p = v[i] != 0;
    }
  }
  return bytes;
}
inline std::vector<double> decode(Type t, const std::vector<unsigned char> &bytes) {
  std::vector<double> v(bytes.size() / t.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const unsigned char *p = bytes.data() + i * t.size();
    if (t == FLOAT) {
      float f;
      std::memcpy(&f, p, 4);
      v[i] = f;
    } else if (t == HALF) {
      unsigned short h;
      std::memcpy(&h, p, 2);
      v[i] = float(half::fromBits(h));
    } else if (t == INT) {
      int x;
      std::memcpy(&x, p, 4);
      v[i] = x;
    } else if (t == UNSIGNED_INT) {
      unsigned x;
      std::memcpy(&x, p, 4);
      v[i] = x;
    } else {
      v[i] = *p;
    }
  }
  return v;
}

// The input values as the device holds them (rounded to the input type).
inline std::vector<double> rounded(Type t, const std::vector<double> &v) {
  return decode(t, encode(t, v));
}

// How run() maps in and out over the tiles: linearly; in reversed (last elements on tile 0);
// one element per tile, in and out cycling over the tiles in opposite directions; intervals of
// 1..97 elements on random tiles (a fixed seed per tensor).
enum class Mapping { Linear, Reversed, PerElement, Intervals };
inline constexpr Mapping kAllMappings[] = {Mapping::Linear, Mapping::Reversed, Mapping::PerElement,
                                           Mapping::Intervals};

inline void mapTensor(Graph &g, const Tensor &t, Mapping m, bool isOut) {
  if (m == Mapping::Linear || (m == Mapping::Reversed && isOut))
    return util::mapTensorLinearly(g, t);
  if (m == Mapping::Reversed)
    return util::mapTensorLinearlyWithOffset(g, t, 0, false);
  const unsigned tiles = g.getTarget().getNumTiles();
  std::mt19937 rng(isOut ? 11 : 7);
  TileToTensorMapping mapping(tiles);
  for (std::size_t at = 0, n = t.numElements(); at < n;) {
    const bool perElement = m == Mapping::PerElement;
    const std::size_t end = std::min(n, at + (perElement ? 1 : 1 + rng() % 97));
    const unsigned tile = !perElement ? rng() % tiles : isOut ? tiles - 1 - at % tiles : at % tiles;
    mapping[tile].emplace_back(at, end);
    at = end;
  }
  g.setTileMapping(t, mapping);
}

// Builds c on `target` (in and out mapped per `mapping`), runs it with `threads` CPU threads and
// returns out.
inline std::vector<double> run(const Target &target, const Case &c,
                               const std::string &threads = "4", Mapping mapping = Mapping::Linear,
                               const OptionFlags &options = {}) {
  Graph g(target);
  ops::addCodelets(g);
  Tensor in = g.addVariable(c.inType, c.shape, "in");
  mapTensor(g, in, mapping, false);
  Tensor out = g.addVariable(c.outType, outShape(c), "out");
  mapTensor(g, out, mapping, true);
  program::Sequence prog;
  ops::ReduceParams params(c.op, c.update);
  if (c.scale) {
    Tensor s = g.addConstant(FLOAT, {}, *c.scale, "scale");
    g.setTileMapping(s, 0);
    params = ops::ReduceParams(c.op, c.update, s);
  }
  ops::reduceWithOutput(g, in, out, c.dims, params, prog, "r", options);
  g.createHostWrite("in", in);
  g.createHostWrite("out", out);
  g.createHostRead("out-read", out);
  // Large cases exceed a model tile's memory; the values are what is tested here.
  Engine e(g, prog, {{"aspen.cpu.threads", threads},
                     {"aspen.cpu.inlineElements", "0"},
                     {"debug.allowOutOfMemory", "true"}});
  e.load(aspen::test::deviceFor(target));
  const auto inBytes = encode(c.inType, c.in);
  e.writeTensor("in", inBytes.data(), inBytes.data() + inBytes.size());
  const std::size_t n = count(outShape(c));
  const auto outInit = encode(c.outType, c.update ? c.initialOut : std::vector<double>(n, 0.0));
  e.writeTensor("out", outInit.data(), outInit.data() + outInit.size());
  e.run(0);
  std::vector<unsigned char> bytes(n * c.outType.size());
  e.readTensor("out-read", bytes.data(), bytes.data() + bytes.size());
  return decode(c.outType, bytes);
}

// Same value, NaN equal to NaN.
inline bool sameValue(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Checks got against the host model of c: exact for integers, bool, MIN and MAX; for float
// accumulation within 1e-6 of the sum of magnitudes (ADD, SQUARE_ADD), 1e-5 relative (MUL,
// LOG_ADD), plus half's rounding (2^-11 relative) when the output is half. Returns the number of
// mismatches (and prints the first few).
inline std::size_t mismatches(const Case &c, const std::vector<double> &got) {
  Case device = c;
  device.in = rounded(c.inType, c.in);
  device.initialOut = rounded(c.outType, c.initialOut);
  const std::vector<double> ref = reference(device);
  Case magnitude = device;
  for (double &x : magnitude.in)
    x = std::fabs(x);
  if (c.op == Operation::ADD || c.op == Operation::SQUARE_ADD)
    for (double &x : magnitude.initialOut)
      x = std::fabs(x);
  const std::vector<double> mag = reference(magnitude);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double r =
        c.outType == HALF || c.outType == FLOAT ? rounded(c.outType, {ref[i]})[0] : ref[i];
    double tol = 0;
    if (c.inType == FLOAT || c.inType == HALF) {
      if (c.op == Operation::ADD || c.op == Operation::SQUARE_ADD)
        tol = 1e-6 * std::fabs(mag[i]) + 1e-37;
      else if (c.op == Operation::MUL || c.op == Operation::LOG_ADD)
        tol = 1e-5 * std::max(1.0, std::fabs(r));
      if (c.outType == HALF)
        tol += std::fabs(r) / 1024 + 6e-8; // float result rounded to half: one half ulp
    }
    const bool ok = sameValue(got[i], r) || std::fabs(got[i] - r) <= tol;
    if (!ok && bad++ < 5)
      UNSCOPED_INFO("output " << i << ": got " << got[i] << ", expected " << r << " (tolerance "
                              << tol << ")");
  }
  return bad;
}

} // namespace reducetest
