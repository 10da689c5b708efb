// Memory planned from liveness gives the same results as a double-precision host model while
// sharing bytes: chains of element-wise temporaries (aspen::ops) in loops, in If branches and in
// two programs run alternately, with values that must persist between runs. The arena of a chain
// of 20 temporaries of 1 MB holds about two of them, not twenty.
#include "correctness/ProgramTestUtils.hpp"

#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include "compiler/CompiledGraph.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sstream>
#include <vector>

using namespace aspen;
using namespace aspen::program;

namespace {

std::vector<float> randomValues(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

// Step i of a chain: odd steps scale, even steps add, so values stay near their inputs.
float chainFactor(unsigned i) { return i % 2 ? 0.75f : 1.0f; }
float chainOffset(unsigned i) { return i % 2 ? 0.0f : 0.25f * float(i % 7) - 0.5f; }

// Appends `length` element-wise operations starting from `from`, each producing a new temporary;
// returns the last.
Tensor appendChain(Graph &g, Tensor from, unsigned length, Sequence &prog) {
  for (unsigned i = 0; i < length; ++i)
    from = i % 2 ? ops::mul(g, from, chainFactor(i), prog)
                 : ops::add(g, from, chainOffset(i), prog);
  return from;
}

void applyChain(std::vector<double> &values, unsigned length) {
  for (double &v : values)
    for (unsigned i = 0; i < length; ++i)
      v = i % 2 ? v * double(chainFactor(i)) : v + double(chainOffset(i));
}

// Checks the element with the largest error relative to the tolerance.
void requireClose(const std::vector<float> &got, const std::vector<double> &want) {
  REQUIRE(got.size() == want.size());
  std::size_t worst = 0;
  double worstRatio = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double ratio = std::abs(double(got[i]) - want[i]) / (1e-5 * (1.0 + std::abs(want[i])));
    if (!(ratio <= worstRatio)) {
      worst = i;
      worstRatio = ratio;
    }
  }
  INFO("element " << worst << ": got " << got[worst] << ", want " << want[worst]);
  REQUIRE(worstRatio <= 1.0);
}

Graph makeGraph(unsigned tiles) {
  Graph g(Target::createGeneric(tiles));
  ops::addCodelets(g);
  return g;
}

Tensor hostVariable(Graph &g, const std::string &name, std::size_t n) {
  Tensor t = g.addVariable(FLOAT, {n}, name);
  util::mapTensorLinearly(g, t);
  progtest::hostAccess(g, name, t);
  return t;
}

} // namespace

TEST_CASE("Memory reuse: a chain of 20 temporaries of 1 MB in a Repeat", "[correctness][memory]") {
  constexpr std::size_t n = 262144; // 1 MiB of floats
  constexpr std::uint64_t MiB = 1 << 20;
  constexpr unsigned length = 20, repeats = 3;
  Graph g = makeGraph(16); // three variables' quarters would not fit one of 4 tiles
  Tensor x = hostVariable(g, "x", n);
  Sequence body;
  body.add(Copy(appendChain(g, x, length, body), x));
  const Executable exe = compileGraph(g, {Repeat(repeats, body)});
  INFO("arena " << exe.compiled().arenaBytes << " bytes of " << exe.compiled().bufferBytes);
  const detail::CompiledGraph &compiled = exe.compiled();
  // x has its own bytes; the temporaries take turns in two slots.
  REQUIRE(compiled.bufferBytes >= (length + 1) * MiB);
  REQUIRE(compiled.arenaBytes >= 3 * MiB);
  REQUIRE(compiled.arenaBytes < 3 * MiB + 64 * 1024);

  std::stringstream stream;
  exe.serialize(stream);
  Engine e(Executable::deserialize(stream));
  e.load(progtest::deviceFor(g));
  const std::vector<float> in = randomValues(n, 7);
  std::vector<double> want(in.begin(), in.end());
  progtest::writeIn(e, "x", in);
  for (int run = 0; run < 2; ++run) { // x keeps its value between runs
    e.run();
    for (unsigned repeat = 0; repeat < repeats; ++repeat)
      applyChain(want, length);
    requireClose(progtest::readBack<float>(e, "x", n), want);
  }
  std::ostringstream profile;
  e.printProfileSummary(profile);
  REQUIRE_THAT(profile.str(), Catch::Contains("Arena bytes (peak):         " +
                                              std::to_string(compiled.arenaBytes)));
  REQUIRE_THAT(profile.str(), Catch::Contains("1048576 bytes at 0 (always live)"));
  REQUIRE_THAT(profile.str(), Catch::Contains("(reused)"));
}

TEST_CASE("Memory reuse: temporaries in If branches and in two programs",
          "[correctness][memory]") {
  constexpr std::size_t n = 4096;
  Graph g = makeGraph(4);
  Tensor x = hostVariable(g, "x", n), y = hostVariable(g, "y", n);
  Tensor pred = progtest::scalar(g, BOOL, "pred");
  // Program 0: x <- chain of 5 (true) or 8 (false), twice. Program 1: y <- y + chain of 6 of x.
  Sequence longer, shorter, accumulate;
  shorter.add(Copy(appendChain(g, x, 5, shorter), x));
  longer.add(Copy(appendChain(g, x, 8, longer), x));
  ops::addInPlace(g, y, appendChain(g, x, 6, accumulate), accumulate);
  Executable exe = compileGraph(g, {Repeat(2, If(pred, shorter, longer)), accumulate});
  REQUIRE(exe.compiled().arenaBytes < exe.compiled().bufferBytes / 2);

  Engine e(std::move(exe));
  e.load(progtest::deviceFor(g));
  const std::vector<float> xIn = randomValues(n, 11), yIn = randomValues(n, 12);
  std::vector<double> wantX(xIn.begin(), xIn.end()), wantY(yIn.begin(), yIn.end());
  progtest::writeIn(e, "x", xIn);
  progtest::writeIn(e, "y", yIn);
  for (bool truth : {true, false, false, true}) {
    progtest::writeIn<std::uint8_t>(e, "pred", {truth});
    e.run(0);
    for (int repeat = 0; repeat < 2; ++repeat)
      applyChain(wantX, truth ? 5 : 8);
    e.run(1);
    std::vector<double> chained = wantX;
    applyChain(chained, 6);
    for (std::size_t i = 0; i < n; ++i)
      wantY[i] += chained[i];
    INFO("predicate " << truth);
    requireClose(progtest::readBack<float>(e, "x", n), wantX);
    requireClose(progtest::readBack<float>(e, "y", n), wantY);
  }
}

TEST_CASE("Memory reuse: a value carried around a loop keeps its bytes", "[correctness][memory]") {
  // acc is the program's own (written before any read) and last touched in the middle of the
  // loop body; the temporaries after that point must not take its bytes, or the next iteration
  // reads them.
  constexpr std::size_t n = 4096;
  constexpr unsigned repeats = 3;
  Graph g = makeGraph(4);
  Tensor x = hostVariable(g, "x", n);
  Tensor acc = g.addVariable(FLOAT, {n}, "acc");
  util::mapTensorLinearly(g, acc);
  Sequence body;
  const Tensor a = appendChain(g, acc, 5, body);
  body.add(Copy(a, acc));
  body.add(Copy(appendChain(g, a, 4, body), x));
  Engine e(g, Sequence({Copy(x, acc), Repeat(repeats, body)}));
  e.load(progtest::deviceFor(g));
  const std::vector<float> in = randomValues(n, 5);
  progtest::writeIn(e, "x", in);
  e.run();
  std::vector<double> want(in.begin(), in.end());
  for (unsigned repeat = 0; repeat < repeats; ++repeat)
    applyChain(want, 5);
  applyChain(want, 4);
  requireClose(progtest::readBack<float>(e, "x", n), want);
}
