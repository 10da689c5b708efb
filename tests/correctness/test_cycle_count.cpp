// cycleStamp and cycleCount (Poplar's CycleCount.hpp): stamps come in program order, a count is
// the difference of the stamps around its body, and both are in the target's cycles, bounded by
// the host's own clock around the run (a bound, not a timing: the test holds on a busy machine).
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/CycleCount.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

using namespace aspen;
using namespace aspen::program;

namespace {
std::uint64_t read64(Engine &e, const std::string &handle) {
  std::vector<unsigned> halves(2);
  e.readTensor(handle, halves.data(), halves.data() + 2);
  return (std::uint64_t(halves[1]) << 32) | halves[0]; // low word first
}
} // namespace

TEST_CASE("cycle stamps and counts are ordered and bounded by the elapsed time",
          "[correctness][cyclecount]") {
  Graph g(Target::createGeneric(3));
  ops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {1 << 16}, VariableMappingMethod::LINEAR, "x");
  Sequence body;
  for (int i = 0; i < 4; ++i)
    ops::addInPlace(g, x, 1.0f, body);
  Sequence prog;
  Tensor before = ops::cycleStamp(g, prog, 0, SyncType::INTERNAL, "before");
  Sequence timed = body;
  Tensor count = ops::cycleCount(g, timed, 1, SyncType::INTERNAL, "count");
  prog.add(timed);
  std::vector<Tensor> after = ops::cycleStamp(g, prog, {2, 0}, SyncType::GLOBAL, "after");
  REQUIRE(count.elementType() == UNSIGNED_INT);
  REQUIRE(count.shape() == std::vector<std::size_t>{2});
  g.createHostRead("before", before);
  g.createHostRead("count", count);
  g.createHostRead("after2", after[0]);
  g.createHostRead("after0", after[1]);
  g.createHostWrite("x", x);
  g.createHostRead("x", x);
  Engine e(g, prog);
  e.load(test::deviceFor(g.getTarget()));
  const double cyclesPerNs = g.getTarget().getTileClockFrequency() / 1e9;
  std::uint64_t lastAfter = 0;
  for (int run = 0; run < 2; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    e.run();
    const auto t1 = std::chrono::steady_clock::now();
    const double wallNs = std::chrono::duration<double, std::nano>(t1 - t0).count();
    const std::uint64_t b = read64(e, "before"), c = read64(e, "count");
    const std::uint64_t a2 = read64(e, "after2"), a0 = read64(e, "after0");
    INFO("run " << run << ": before " << b << " count " << c << " after " << a2 << ", " << a0);
    REQUIRE(b > lastAfter); // a later run stamps later
    REQUIRE(a2 >= b);
    REQUIRE(a0 >= b);
    REQUIRE(c > 0);
    REQUIRE(c <= a2 - b); // the count's own stamps lie between before and after
    // Everything between the stamps happened inside run(): no more cycles than its wall time
    // (1 ns slack per stamp for the scaling's rounding).
    REQUIRE(double(a2 - b) <= wallNs * cyclesPerNs + 4);
    lastAfter = std::max(a2, a0);
  }
  // The body still ran inside the timed sequence: x gained 4 a run.
  std::vector<float> xs(1 << 16);
  e.readTensor("x", xs.data(), xs.data() + xs.size());
  REQUIRE(xs[0] == 8.0f);
  REQUIRE(xs.back() == 8.0f);
}

TEST_CASE("cycle counting refuses a tile outside the graph", "[correctness][cyclecount]") {
  Graph g(Target::createGeneric(2));
  ops::addCodelets(g);
  Sequence prog;
  REQUIRE_THROWS_AS(ops::cycleStamp(g, prog, 2), invalid_tile_mapping);
  REQUIRE_THROWS_AS(ops::cycleCount(g, prog, 5), invalid_tile_mapping);
  // prog is as it was: an engine of it runs and stamps nothing.
  Tensor ok = ops::cycleStamp(g, prog, 1);
  g.createHostRead("ok", ok);
  Engine e(g, prog);
  e.load(test::deviceFor(g.getTarget()));
  e.run();
  std::vector<unsigned> halves(2);
  e.readTensor("ok", halves.data(), halves.data() + 2);
  REQUIRE((halves[0] | halves[1]) != 0);
}
