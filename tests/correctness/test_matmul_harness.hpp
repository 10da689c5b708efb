// Shared by the matmul tests: one matmul case built through the public API on a small generic
// target, run on the CPU executor, and checked against a double-precision host model.
//
// Operands live in storage variables mapped linearly; A may be read through a transpose, or be
// two variables joined along its rows (rows that are not evenly spaced), and B may be read
// through a stride-2 column view. Outputs of the WithOutput / Acc forms are the interior of a
// storage variable one element larger on every side, whose border holds a sentinel that must
// survive.
#pragma once

#include "correctness/test_reduce_harness.hpp" // encode / decode / rounded

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace matmultest {

using namespace aspen;
using Shape = std::vector<std::size_t>;

enum class Form { Plain, WithOutput, AccFloat, AccTensor };

struct Case {
  Type inType = FLOAT, outType = FLOAT;
  bool grouped = false;
  std::size_t G = 1, M = 1, K = 1, N = 1;
  bool transposeA = false, strideB = false, splitA = false;
  bool transposeOut = false; // the WithOutput / Acc output is a transposed view of its storage
  Form form = Form::Plain;
  float k = 1.0f;
  OptionFlags options;
  unsigned tiles = 8;
  unsigned workers = 6; // a tile's workers (on a GPU, the threads of its block)
};

constexpr double kSentinel = -12345.0;

struct Values {
  std::vector<double> a, b, c0; // [G,M,K], [G,K,N], [G,M,N] (c0: Acc and WithOutput)
};

inline Values makeValues(const Case &c, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Values v;
  for (std::size_t i = 0; i < c.G * c.M * c.K; ++i)
    v.a.push_back(u(rng));
  for (std::size_t i = 0; i < c.G * c.K * c.N; ++i)
    v.b.push_back(u(rng));
  for (std::size_t i = 0; i < c.G * c.M * c.N; ++i)
    v.c0.push_back(u(rng));
  v.a = reducetest::rounded(c.inType, v.a);
  v.b = reducetest::rounded(c.inType, v.b);
  v.c0 = reducetest::rounded(c.outType, v.c0);
  return v;
}

struct Result {
  std::vector<double> out;        // [G,M,N]
  std::vector<unsigned char> raw; // the output storage as bytes
  bool sentinelsIntact = true;
  std::string profile;
};

inline Shape shapeOf(const Case &c, std::size_t rows, std::size_t cols) {
  return c.grouped ? Shape{c.G, rows, cols} : Shape{rows, cols};
}

// The 2-D or 3-D transpose of the last two dimensions.
inline Tensor transposed(const Tensor &t) {
  return t.rank() == 2 ? t.transpose() : t.dimShuffle({0, 2, 1});
}

// Runs c on the CPU executor. `addCodelets` adds the linalg codelets (the precompiled ones by
// default); engineOptions add to the thread count and memory switch.
inline Result run(const Case &c, const Values &v, const OptionFlags &engineOptions = {},
                  void (*addCodelets)(Graph &) = linalg::addCodelets) {
  const Target target = Target::createGeneric(c.tiles, c.workers);
  Graph g(target);
  ops::addCodelets(g);
  addCodelets(g);
  const unsigned rank = c.grouped ? 3 : 2;
  auto variable = [&](Type type, const Shape &shape, const char *name) {
    Tensor t = g.addVariable(type, shape, name);
    util::mapTensorLinearly(g, t);
    return t;
  };
  // A's storage is [.., K, M] when read transposed; B's has 2N columns when strided.
  Tensor aStore = c.transposeA ? variable(c.inType, shapeOf(c, c.K, c.M), "aStore")
                  : c.splitA
                      ? concat({variable(c.inType, shapeOf(c, c.M / 2, c.K), "aTop"),
                                variable(c.inType, shapeOf(c, c.M - c.M / 2, c.K), "aBottom")},
                               rank - 2)
                      : variable(c.inType, shapeOf(c, c.M, c.K), "aStore");
  Tensor bStore = variable(c.inType, shapeOf(c, c.K, c.strideB ? 2 * c.N : c.N), "bStore");
  Tensor outStore = variable(
      c.outType, c.transposeOut ? shapeOf(c, c.N + 2, c.M + 2) : shapeOf(c, c.M + 2, c.N + 2),
      "outStore");
  const Tensor A = c.transposeA ? transposed(aStore) : aStore;
  const Tensor B = c.strideB ? bStore.subSample(2, rank - 1) : bStore;
  const Tensor border = c.transposeOut ? transposed(outStore) : outStore; // [.., M+2, N+2]
  const Tensor interior = border.slice(1, c.M + 1, rank - 2).slice(1, c.N + 1, rank - 1);
  program::Sequence prog;
  Tensor out = interior;
  switch (c.form) {
  case Form::Plain:
    out = c.grouped ? linalg::matMulGrouped(g, A, B, prog, c.outType, "mm", c.options)
                    : linalg::matMul(g, A, B, prog, c.outType, "mm", c.options);
    break;
  case Form::WithOutput:
    c.grouped ? linalg::matMulGroupedWithOutput(g, A, B, interior, prog, "mm", c.options)
              : linalg::matMulWithOutput(g, A, B, interior, prog, "mm", c.options);
    break;
  case Form::AccFloat:
    c.grouped ? linalg::matMulGroupedAcc(g, interior, c.k, A, B, prog, "mm", c.options)
              : linalg::matMulAcc(g, interior, c.k, A, B, prog, "mm", c.options);
    break;
  case Form::AccTensor: {
    Tensor k = g.addVariable(FLOAT, {1}, "k");
    g.setTileMapping(k, c.tiles - 1);
    g.createHostWrite("k", k);
    c.grouped ? linalg::matMulGroupedAcc(g, interior, k, A, B, prog, "mm", c.options)
              : linalg::matMulAcc(g, interior, k, A, B, prog, "mm", c.options);
    break;
  }
  }
  const bool plain = c.form == Form::Plain;
  g.createHostWrite("a", aStore);
  g.createHostWrite("b", bStore);
  g.createHostWrite("outStore", outStore);
  g.createHostRead("outStore-read", outStore);
  if (plain)
    g.createHostRead("out-read", out);
  OptionFlags options = engineOptions;
  options.set("debug.allowOutOfMemory", "true");
  Engine e(g, prog, options);
  e.load(aspen::test::deviceFor(target));
  // Storage in storage order: transpose A's values back when it is read transposed.
  std::vector<double> aStoreValues = v.a;
  if (c.transposeA)
    for (std::size_t gi = 0; gi < c.G; ++gi)
      for (std::size_t i = 0; i < c.M; ++i)
        for (std::size_t kk = 0; kk < c.K; ++kk)
          aStoreValues[(gi * c.K + kk) * c.M + i] = v.a[(gi * c.M + i) * c.K + kk];
  std::vector<double> bStoreValues(c.G * c.K * (c.strideB ? 2 * c.N : c.N), kSentinel);
  for (std::size_t r = 0; r < c.G * c.K; ++r)
    for (std::size_t j = 0; j < c.N; ++j)
      bStoreValues[r * (c.strideB ? 2 * c.N : c.N) + (c.strideB ? 2 * j : j)] = v.b[r * c.N + j];
  // Where element (g, i, j) of the bordered [G, M+2, N+2] output lies in its storage.
  auto stored = [&](std::size_t gi, std::size_t i, std::size_t j) {
    return c.transposeOut ? (gi * (c.N + 2) + j) * (c.M + 2) + i
                          : (gi * (c.M + 2) + i) * (c.N + 2) + j;
  };
  std::vector<double> outValues(c.G * (c.M + 2) * (c.N + 2), kSentinel);
  for (std::size_t gi = 0; gi < c.G; ++gi)
    for (std::size_t i = 0; i < c.M; ++i)
      for (std::size_t j = 0; j < c.N; ++j)
        outValues[stored(gi, i + 1, j + 1)] = v.c0[(gi * c.M + i) * c.N + j];
  auto write = [&](const std::string &handle, Type t, const std::vector<double> &x) {
    const auto bytes = reducetest::encode(t, x);
    e.writeTensor(handle, bytes.data(), bytes.data() + bytes.size());
  };
  write("a", c.inType, aStoreValues);
  write("b", c.inType, bStoreValues);
  write("outStore", c.outType, outValues);
  if (c.form == Form::AccTensor)
    write("k", FLOAT, {c.k});
  e.run(0);
  Result r;
  r.raw.resize(outValues.size() * c.outType.size());
  e.readTensor("outStore-read", r.raw.data(), r.raw.data() + r.raw.size());
  const std::vector<double> store = reducetest::decode(c.outType, r.raw);
  for (std::size_t gi = 0; gi < c.G; ++gi)
    for (std::size_t i = 0; i < c.M + 2; ++i)
      for (std::size_t j = 0; j < c.N + 2; ++j) {
        const double x = store[stored(gi, i, j)];
        if (i == 0 || j == 0 || i == c.M + 1 || j == c.N + 1)
          r.sentinelsIntact &= x == double(float(kSentinel)) || (c.outType == HALF && x == -12344);
        else if (!plain)
          r.out.push_back(x);
      }
  if (plain) {
    std::vector<unsigned char> bytes(c.G * c.M * c.N * c.outType.size());
    e.readTensor("out-read", bytes.data(), bytes.data() + bytes.size());
    r.out = reducetest::decode(c.outType, bytes);
    r.raw = bytes;
  }
  std::ostringstream profile;
  e.printProfileSummary(profile);
  r.profile = profile.str();
  return r;
}

// Number of elements outside the tolerance of the double-precision model (the first few are
// printed). Float accumulation: 1e-5 of sum |a||b|; half partials: K * 2^-11 of it; a half
// output adds half's rounding of the value.
inline std::size_t mismatches(const Case &c, const Values &v, const std::vector<double> &got,
                              bool halfPartials = false) {
  const bool acc = c.form == Form::AccFloat || c.form == Form::AccTensor;
  std::size_t bad = 0;
  REQUIRE(got.size() == c.G * c.M * c.N);
  for (std::size_t gi = 0; gi < c.G; ++gi)
    for (std::size_t i = 0; i < c.M; ++i)
      for (std::size_t j = 0; j < c.N; ++j) {
        double sum = 0, magnitude = 0;
        for (std::size_t kk = 0; kk < c.K; ++kk) {
          const double x = v.a[(gi * c.M + i) * c.K + kk] * v.b[(gi * c.K + kk) * c.N + j];
          sum += x;
          magnitude += std::fabs(x);
        }
        const std::size_t o = (gi * c.M + i) * c.N + j;
        const double ref = acc ? v.c0[o] + double(c.k) * sum : sum;
        const double scale = acc ? std::fabs(double(c.k)) : 1.0;
        double tol =
            (halfPartials ? double(c.K) * std::ldexp(1.0, -11) : 1e-5) * magnitude * scale +
            1e-6 * std::fabs(ref);
        if (c.outType == HALF)
          tol += std::fabs(ref) * std::ldexp(1.0, -11) + 1e-7;
        if (!(std::fabs(got[o] - ref) <= tol) && bad++ < 5)
          UNSCOPED_INFO("element [" << gi << "," << i << "," << j << "] = " << got[o]
                                    << ", expected " << ref << " (tolerance " << tol << ")");
      }
  return bad;
}

} // namespace matmultest
