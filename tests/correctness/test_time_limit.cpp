// The engine option aspen.timeLimit: a run that passes it stops with an aspen::runtime_error
// naming the limit and where the run was, whether a codelet never returns (on any of the
// executor's threads, also a block codelet's fibers) or the program itself loops for ever; the
// engine is usable afterwards (other programs run and give the right values, and a later run is
// not hit by a late stop of the earlier one). Bounds, not timings: a stop must come within
// several seconds of a 0.3 s limit however busy the machine is.
#include "TestDevice.hpp"
#include "TestPaths.hpp"

#include <aspen/BlockCodelets.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

using namespace aspen;
using namespace aspen::program;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs `program` of `e`, which must stop on the time limit; returns the message.
std::string stoppedRun(Engine &e, unsigned program, double limit) {
  const auto start = Clock::now();
  std::string message;
  try {
    e.run(program);
  } catch (const aspen::runtime_error &error) {
    message = error.what();
  }
  const double seconds = secondsSince(start);
  INFO(message);
  CHECK(seconds >= limit);
  CHECK(seconds < limit + 10);
  REQUIRE(!message.empty());
  return message;
}

struct SpinGraph {
  Graph g{Target::createGeneric(8)};
  Tensor counters, x;
  std::vector<Program> programs;

  // Program 0: compute set 'spin', `spinners` Spin vertices on tiles 0.. plus AddOne vertices on
  // the others; program 1: x += 1 on every tile (one compute set, no spinning).
  explicit SpinGraph(unsigned spinners) {
    g.addCodelets(test::codelet("time_limit.cpp"));
    counters = g.addVariable(UNSIGNED_INT, {8}, "counters");
    x = g.addVariable(UNSIGNED_INT, {8}, "x");
    ComputeSet spin = g.addComputeSet("spin"), add = g.addComputeSet("add");
    for (unsigned t = 0; t < 8; ++t) {
      g.setTileMapping(counters[t], t);
      g.setTileMapping(x[t], t);
      VertexRef v = g.addVertex(spin, t < spinners ? "Spin" : "AddOne");
      g.connect(v[t < spinners ? "counter" : "x"], t < spinners ? counters[t] : x[t]);
      g.setTileMapping(v, t);
      VertexRef a = g.addVertex(add, "AddOne", {{"x", x[t]}});
      g.setTileMapping(a, t);
    }
    g.createHostWrite("x", x);
    g.createHostRead("x", x);
    programs = {Execute(spin), Execute(add)};
  }
};

std::vector<unsigned> readX(Engine &e) {
  std::vector<unsigned> v(8);
  e.readTensor("x", v.data(), v.data() + v.size());
  return v;
}

} // namespace

TEST_CASE("a codelet that never returns is stopped at the time limit", "[correctness][timelimit]") {
  if (aspen::test::skipOnGpuRun())
    return;
  for (unsigned threads : {1u, 4u}) {
    INFO("threads " << threads);
    SpinGraph s(1);
    Engine e(s.g, s.programs,
             {{"aspen.timeLimit", "0.3"}, {"aspen.cpu.threads", std::to_string(threads)}});
    e.load(Device::createCPUDevice());
    const std::string message = stoppedRun(e, 0, 0.3);
    CHECK_THAT(message, Catch::Contains("Engine::run(0)"));
    CHECK_THAT(message, Catch::Contains("time limit of 0.3 s"));
    CHECK_THAT(message, Catch::Contains("aspen.timeLimit"));
    CHECK_THAT(message, Catch::Contains("(Spin) on tile 0 in compute set 'spin'"));
    CHECK_THAT(message, Catch::Contains("had not returned"));

    // The engine still works: program 1 adds one to every x, many times, and no late stop of
    // the first run interrupts these.
    const std::vector<unsigned> start{10, 20, 30, 40, 50, 60, 70, 80};
    e.writeTensor("x", start.data(), start.data() + start.size());
    for (int i = 0; i < 50; ++i)
      e.run(1);
    std::vector<unsigned> expected = start;
    for (unsigned &v : expected)
      v += 50;
    CHECK(readX(e) == expected);
    // And the spinning program stops again.
    CHECK_THAT(stoppedRun(e, 0, 0.3), Catch::Contains("had not returned"));
  }
}

TEST_CASE("codelets spinning on every thread are all stopped", "[correctness][timelimit]") {
  if (aspen::test::skipOnGpuRun())
    return;
  SpinGraph s(8);
  Engine e(s.g, s.programs, {{"aspen.timeLimit", "0.3"}, {"aspen.cpu.threads", "4"}});
  e.load(Device::createCPUDevice());
  // The lowest stopped vertex is named, whichever threads ran which tiles.
  CHECK_THAT(stoppedRun(e, 0, 0.3), Catch::Contains("on tile 0 in compute set 'spin'"));
  e.run(1);
  CHECK(readX(e) == std::vector<unsigned>(8, 1));
}

TEST_CASE("a block codelet that never returns is stopped", "[correctness][timelimit]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Graph g(Target::createGeneric(2));
  g.addCodelets(test::codelet("time_limit.cpp"));
  Tensor c = g.addVariable(UNSIGNED_INT, {4}, "c");
  g.setTileMapping(c, 0);
  ComputeSet cs = g.addComputeSet("blockSpin");
  VertexRef v = g.addVertex(cs, "BlockSpin", {{"counters", c}});
  g.setTileMapping(v, 0);
  Engine e(g, {Launch(cs, {3, 4, 0})}, {{"aspen.timeLimit", "0.3"}, {"aspen.cpu.threads", "2"}});
  e.load(Device::createCPUDevice());
  const std::string message = stoppedRun(e, 0, 0.3);
  CHECK_THAT(message, Catch::Contains("(BlockSpin)"));
  CHECK_THAT(message, Catch::Contains("had not returned"));
  CHECK_THAT(stoppedRun(e, 0, 0.3), Catch::Contains("had not returned"));
}

TEST_CASE("a program that loops for ever is stopped between its steps",
          "[correctness][timelimit]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Graph g(Target::createGeneric(2));
  g.addCodelets(test::codelet("time_limit.cpp"));
  Tensor flag = g.addVariable(BOOL, {}, "flag"), x = g.addVariable(UNSIGNED_INT, {1}, "x");
  g.setTileMapping(flag, 0);
  g.setTileMapping(x, 1);
  g.createHostWrite("flag", flag);
  g.createHostRead("x", x);
  ComputeSet add = g.addComputeSet("add");
  VertexRef v = g.addVertex(add, "AddOne", {{"x", x[0]}});
  g.setTileMapping(v, 1);
  // While flag: x += 1. The host sets flag; nothing in the loop clears it.
  Engine e(g, {RepeatWhileTrue(Sequence{}, flag, Execute(add))}, {{"aspen.timeLimit", "0.3"}});
  e.load(Device::createCPUDevice());
  const bool on = true;
  e.writeTensor("flag", &on, &on + 1);
  const std::string message = stoppedRun(e, 0, 0.3);
  CHECK_THAT(message, Catch::Contains("time limit of 0.3 s"));
  // Stopped between steps, or in the compute set running when the deadline came.
  CHECK_THAT(message, Catch::Contains("between steps of the program") ||
                          Catch::Contains("compute set 'add' was stopped"));
  unsigned count = 0;
  e.readTensor("x", &count, &count + 1);
  CHECK(count > 0); // the loop ran until it was stopped
  // The engine carries on: with the flag cleared the loop ends at once, x unchanged.
  const bool off = false;
  e.writeTensor("flag", &off, &off + 1);
  e.run(0);
  unsigned after = 0;
  e.readTensor("x", &after, &after + 1);
  CHECK(after == count);
}

TEST_CASE("aspen.timeLimit values", "[correctness][timelimit]") {
  if (aspen::test::skipOnGpuRun())
    return;
  SpinGraph s(0);
  for (const char *bad : {"-1", "abc", "nan", "inf", "1e10"}) {
    INFO(bad);
    CHECK_THROWS_AS(Engine(s.g, s.programs, {{"aspen.timeLimit", bad}}), invalid_option);
  }
  // 0 is no limit; a generous limit does not disturb runs that finish.
  for (const char *ok : {"0", "30"}) {
    Engine e(s.g, s.programs, {{"aspen.timeLimit", ok}});
    e.load(Device::createCPUDevice());
    for (int i = 0; i < 20; ++i)
      e.run(0); // no vertex spins: every one adds one
    CHECK(readX(e) == std::vector<unsigned>(8, 20));
  }
}
