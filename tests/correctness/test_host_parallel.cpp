// Engine::setHostParallelFor: the CPU executor's parallel loops on a caller's loop (here one that
// runs the iterations in reverse order on the calling thread, counting them). Results are those
// by hand and the same bits as on the executor's own threads; the loop takes the compute sets'
// tiles and large host transfers, survives a reload, and an empty function gives the executor's
// threads back; compute sets under aspen.timeLimit keep the executor's threads.
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

using namespace aspen;
namespace ex = aspen::ops::expr;

namespace {

// y = 2 x + 1 over 4 tiles, from x of n floats (1.2 MB: its transfers split over the threads).
struct Program {
  static constexpr std::size_t n = 300000;
  Graph graph{Target::createGeneric(4)};
  program::Sequence prog;
  Program() {
    ops::addCodelets(graph);
    Tensor x = graph.addVariable(FLOAT, {n}, "x");
    util::mapTensorLinearly(graph, x);
    const Tensor y = ops::map(graph, ex::_1 * 2.0f + 1.0f, {x}, prog, "y");
    graph.createHostWrite("x", x);
    graph.createHostRead("y", y);
  }
};

// A host loop that runs task(n - 1) .. task(0) on the calling thread, counting loops and
// iterations.
struct CountingLoop {
  std::size_t loops = 0, iterations = 0;
  HostParallelFor function() {
    return [this](std::size_t n, const std::function<void(std::size_t)> &task) {
      ++loops;
      for (std::size_t i = n; i-- > 0;) {
        ++iterations;
        task(i);
      }
    };
  }
};

std::vector<float> run(Engine &e) {
  std::vector<float> x(Program::n), y(Program::n);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = float(i % 1000) - 500.0f;
  e.writeTensor("x", x.data(), x.data() + x.size());
  e.run(0);
  e.readTensor("y", y.data(), y.data() + y.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    REQUIRE(y[i] == 2.0f * x[i] + 1.0f); // exact: small whole numbers
  return y;
}

} // namespace

TEST_CASE("a caller's host loop runs the executor's loops, with the same results",
          "[correctness][engine][hostparallel]") {
  if (test::skipOnGpuRun())
    return;
  Program p;
  Engine own(p.graph, p.prog);
  own.load(test::deviceFor(p.graph.getTarget()));
  const std::vector<float> want = run(own);

  CountingLoop loop;
  Engine e(p.graph, p.prog);
  e.setHostParallelFor(loop.function()); // before the load: it applies from the load on
  e.load(test::deviceFor(p.graph.getTarget()));
  const std::vector<float> got = run(e);
  CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  // The compute set's 4 tiles and the two transfers of 1.2 MB, at least.
  CHECK(loop.loops >= 3);
  CHECK(loop.iterations >= 4 + 2 * 2);

  // A reload keeps the loop.
  const std::size_t before = loop.loops;
  e.load(test::deviceFor(p.graph.getTarget()));
  run(e);
  CHECK(loop.loops > before);

  // An empty function gives the executor's own threads back.
  e.setHostParallelFor({});
  const std::size_t after = loop.loops;
  const std::vector<float> again = run(e);
  CHECK(loop.loops == after);
  CHECK(std::memcmp(again.data(), want.data(), again.size() * sizeof(float)) == 0);
}

TEST_CASE("under a time limit the compute sets keep the executor's threads",
          "[correctness][engine][hostparallel]") {
  if (test::skipOnGpuRun())
    return;
  Program p;
  CountingLoop loop;
  Engine e(p.graph, p.prog, OptionFlags{{"aspen.timeLimit", "60"}});
  e.load(test::deviceFor(p.graph.getTarget()));
  std::vector<float> x(Program::n, 3.0f);
  e.writeTensor("x", x.data(), x.data() + x.size()); // before the loop is set
  e.setHostParallelFor(loop.function());
  e.run(0);
  CHECK(loop.loops == 0); // the watchdog signals the executor's threads
  std::vector<float> y(Program::n);
  e.readTensor("y", y.data(), y.data() + y.size()); // a transfer: on the caller's loop
  CHECK(loop.loops == 1);
  CHECK(y.front() == 7.0f);
  CHECK(y.back() == 7.0f);
}
