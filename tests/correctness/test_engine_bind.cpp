// Engine::bindTensor: a host handle's tensor in the caller's memory. Runs read and write the
// bound buffers in place (results by hand, inputs untouched), follow a rebinding, reach the
// gathers of non-contiguous views, and leave the engine's own memory as it was; what cannot be
// bound is refused with false, and misuse with stream_connection_error.
#include "TestDevice.hpp"

#include <algorithm>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <memory>
#include <vector>

using namespace aspen;
namespace ex = aspen::ops::expr;

namespace {

struct FreeDeleter {
  void operator()(float *p) const { std::free(p); }
};
// n floats, 64-byte aligned, set to first, first + 1, ...
std::unique_ptr<float[], FreeDeleter> aligned(std::size_t n, float first) {
  auto *p = static_cast<float *>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64));
  for (std::size_t i = 0; i < n; ++i)
    p[i] = first + float(i);
  return std::unique_ptr<float[], FreeDeleter>(p);
}

// y = 2 x + 1 and t = x^T + 1 (read through a gathered view) from x [R, C] over several tiles.
struct Program {
  static constexpr std::size_t R = 6, C = 40, n = R * C;
  Graph graph{Target::createGeneric(4)};
  program::Sequence prog;
  Program() {
    ops::addCodelets(graph);
    Tensor x = graph.addVariable(FLOAT, {R, C}, "x");
    util::mapTensorLinearly(graph, x);
    const Tensor y = ops::map(graph, ex::_1 * 2.0f + 1.0f, {x}, prog, "y");
    const Tensor t = ops::map(graph, ex::_1 + 1.0f, {x.transpose()}, prog, "t");
    graph.createHostWrite("x", x);
    graph.createHostRead("y", y);
    graph.createHostRead("t", t);
    graph.createHostWrite("x-transposed", x.transpose());
  }
};

} // namespace

TEST_CASE("bound tensors are read and written in the caller's memory, run after run",
          "[correctness][engine][bind]") {
  Program p;
  Engine e(p.graph, p.prog);
  e.load(test::deviceFor(p.graph.getTarget()));
  constexpr std::size_t n = Program::n, R = Program::R, C = Program::C;
  // The engine's own values first: x = 100, 101, ...
  const auto before = aligned(n, 100.0f);
  e.writeTensor("x", before.get(), before.get() + n);
  e.run();
  auto x = aligned(n, 0.0f), y = aligned(n, -1.0f), t = aligned(n, -1.0f);
  REQUIRE(e.bindTensor("x", static_cast<const void *>(x.get()), x.get() + n));
  REQUIRE(e.bindTensor("y", y.get(), y.get() + n));
  REQUIRE(e.bindTensor("t", t.get(), t.get() + n));
  for (float shift : {0.0f, 50.0f}) {
    for (std::size_t i = 0; i < n; ++i)
      x[i] = float(i) + shift;
    e.run();
    for (std::size_t i = 0; i < n; ++i) {
      INFO("shift " << shift << ", element " << i);
      REQUIRE(x[i] == float(i) + shift); // the const input untouched
      REQUIRE(y[i] == 2 * (float(i) + shift) + 1);
      const std::size_t r = i % R, c = i / R; // t [C, R]: t[c][r] = x[r][c] + 1
      REQUIRE(t[i] == x[r * C + c] + 1);
    }
  }
  // A rebinding moves the next run to the new buffers; readTensor reads the bound memory.
  auto y2 = aligned(n, -1.0f);
  REQUIRE(e.bindTensor("y", y2.get(), y2.get() + n));
  e.run();
  std::vector<float> read(n);
  e.readTensor("y", read.data(), read.data() + n);
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE(y2[i] == 2 * x[i] + 1);
    REQUIRE(read[i] == y2[i]);
  }
  // Unbound, the tensors hold what the engine's memory held: the first run's values.
  for (const char *handle : {"x", "y", "t"})
    e.unbindTensor(handle);
  e.readTensor("y", read.data(), read.data() + n);
  for (std::size_t i = 0; i < n; ++i)
    REQUIRE(read[i] == 2 * (100.0f + float(i)) + 1);
  e.run();
  e.readTensor("y", read.data(), read.data() + n);
  CHECK(read[n - 1] == 2 * (100.0f + float(n - 1)) + 1);
  // Bound again where it was, and moved away and back between runs: each run writes the memory
  // bound at its start (the executor re-points a compute set's fields only where they moved).
  auto y3 = aligned(n, -1.0f);
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    // Round 2 moves y away from where round 1 left it and back: nothing to re-point.
    auto *target = round == 0 ? y2.get() : y3.get(), *other = round == 0 ? y3.get() : y2.get();
    std::fill(y2.get(), y2.get() + n, -1.0f);
    std::fill(y3.get(), y3.get() + n, -1.0f);
    REQUIRE(e.bindTensor("y", other, other + n));
    REQUIRE(e.bindTensor("y", target, target + n));
    e.run();
    for (std::size_t i = 0; i < n; ++i) {
      REQUIRE(target[i] == 2 * (100.0f + float(i)) + 1);
      REQUIRE(other[i] == -1.0f);
    }
  }
  e.unbindTensor("y");
  std::fill(y2.get(), y2.get() + n, -1.0f);
  e.run();
  CHECK(y2[0] == -1.0f);
}

TEST_CASE("what cannot be bound is refused with false and misuse is an error",
          "[correctness][engine][bind]") {
  Program p;
  // x2 is written in place by the program: it cannot be bound const, but can be bound mutable.
  Tensor x2 = p.graph.addVariable(FLOAT, {Program::n}, "x2");
  util::mapTensorLinearly(p.graph, x2);
  ops::mapInPlace(p.graph, ex::_1 * 3.0f, {x2}, p.prog, "triple");
  p.graph.createHostWrite("x2", x2);
  Engine e(p.graph, p.prog);
  e.load(test::deviceFor(p.graph.getTarget()));
  constexpr std::size_t n = Program::n;
  auto buffer = aligned(n + 16, 1.0f);
  const float *constant = buffer.get();
  // Misaligned memory, a view out of element order, a written tensor bound const.
  CHECK_FALSE(e.bindTensor("x", constant + 1, constant + 1 + n));
  CHECK_FALSE(e.bindTensor("x-transposed", constant, constant + n));
  CHECK_FALSE(e.bindTensor("x2", constant, constant + n));
  // 16-byte alignment is enough (malloc's): the codelets and library calls assume no more.
  REQUIRE(e.bindTensor("x2", buffer.get() + 4, buffer.get() + 4 + n));
  e.run();
  CHECK(buffer[4 + 5] == 3 * 10.0f); // tripled in place in the caller's memory
  CHECK(buffer[3] == 4.0f);           // before the bound range: untouched
  for (std::size_t i = 0; i < n + 16; ++i)
    buffer[i] = 1.0f + float(i);
  REQUIRE(e.bindTensor("x2", buffer.get(), buffer.get() + n));
  e.run();
  CHECK(buffer[5] == 3 * 6.0f);
  e.unbindTensor("x2");
  for (std::size_t i = 0; i < n; ++i)
    buffer[i] = 1.0f + float(i);
  // Unknown handles and wrong sizes.
  CHECK_THROWS_AS(e.bindTensor("nope", buffer.get(), buffer.get() + n), stream_connection_error);
  CHECK_THROWS_AS(e.bindTensor("x", buffer.get(), buffer.get() + n - 1), stream_connection_error);
  CHECK_THROWS_AS(e.unbindTensor("nope"), stream_connection_error);
  // writeTensor into a tensor bound const is refused, and the engine stays usable.
  REQUIRE(e.bindTensor("x", constant, constant + n));
  std::vector<float> values(n, 7.0f);
  CHECK_THROWS_AS(e.writeTensor("x", values.data(), values.data() + n), stream_connection_error);
  CHECK_THROWS_AS(e.writeTensor("x-transposed", values.data(), values.data() + n),
                  stream_connection_error);
  CHECK(buffer[0] == 1.0f);
  e.unbindTensor("x");
  e.writeTensor("x", values.data(), values.data() + n);
  e.run();
  std::vector<float> y(n);
  e.readTensor("y", y.data(), y.data() + n);
  CHECK(y[3] == 15.0f);
}
