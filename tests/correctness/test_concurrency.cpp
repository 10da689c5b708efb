// The thread contract of Engine.hpp: graphs built and engines run in parallel threads on one
// device give the results one thread gets alone (bit for bit), sharing a matMul planning cache;
// one engine called from two threads serialises the calls, so no update is lost.
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace aspen;
using namespace aspen::program;
namespace ex = aspen::ops::expr;

namespace {

// Builds and runs a small graph (matMul, a fused map, a reduction) on its own; returns its
// outputs. `variant` changes the sizes and data, so parallel graphs differ from each other.
std::vector<float> buildAndRun(const Device &device, unsigned variant,
                               linalg::PlanningCache *cache) {
  Graph g(device.getTarget());
  ops::addCodelets(g);
  linalg::addCodelets(g);
  const std::size_t m = 8 + variant, k = 12, n = 10 + 2 * variant;
  Tensor a = linalg::createMatMulInputLHS(g, FLOAT, {m, k}, {k, n}, "a", {}, cache);
  Tensor b = linalg::createMatMulInputRHS(g, FLOAT, {m, k}, {k, n}, "b", {}, cache);
  Sequence prog;
  Tensor c = linalg::matMul(g, a, b, prog, "c", {}, cache);
  Tensor d = ops::map(g, ex::Add(ex::Tanh(ex::_1), ex::Mul(ex::_1, ex::_1)), {c}, prog, "d");
  Tensor r = ops::reduce(g, d, {0}, {ops::Operation::ADD}, prog, "r");
  g.createHostWrite("a", a);
  g.createHostWrite("b", b);
  g.createHostRead("r", r);
  Engine e(g, prog);
  e.load(device);
  std::mt19937 rng(variant);
  std::normal_distribution<float> normal;
  std::vector<float> av(m * k), bv(k * n), rv(n);
  for (float &x : av)
    x = normal(rng);
  for (float &x : bv)
    x = normal(rng);
  e.writeTensor("a", av.data(), av.data() + av.size());
  e.writeTensor("b", bv.data(), bv.data() + bv.size());
  e.run();
  e.readTensor("r", rv.data(), rv.data() + rv.size());
  return rv;
}

} // namespace

TEST_CASE("graphs built and engines run in parallel threads match the results of one thread",
          "[correctness][concurrency]") {
  const Device device = test::deviceFor(Target::createGeneric(4));
  const unsigned threads = 6;
  std::vector<std::vector<float>> alone(threads);
  for (unsigned v = 0; v < threads; ++v)
    alone[v] = buildAndRun(device, v, nullptr);
  linalg::PlanningCache shared;
  std::vector<std::vector<float>> together(threads);
  std::vector<std::string> errors(threads);
  std::vector<std::thread> pool;
  for (unsigned v = 0; v < threads; ++v)
    pool.emplace_back([&, v] {
      try {
        for (int repeat = 0; repeat < 3; ++repeat)
          together[v] = buildAndRun(device, v, &shared);
      } catch (const std::exception &e) {
        errors[v] = e.what();
      }
    });
  for (std::thread &t : pool)
    t.join();
  for (unsigned v = 0; v < threads; ++v) {
    INFO("thread " << v);
    REQUIRE(errors[v].empty());
    REQUIRE(together[v] == alone[v]);
  }
}

TEST_CASE("one engine called from two threads runs the calls one at a time",
          "[correctness][concurrency]") {
  Graph g(Target::createGeneric(3));
  ops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {300}, VariableMappingMethod::LINEAR, "x");
  g.createHostRead("x", x);
  Sequence prog;
  ops::addInPlace(g, x, 1.0f, prog); // each run adds 1 to every element
  Engine e(g, prog);
  e.load(test::deviceFor(g.getTarget()));
  const int runsPerThread = 40;
  std::atomic<bool> torn{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < 2; ++t)
    pool.emplace_back([&] {
      std::vector<float> seen(300);
      for (int i = 0; i < runsPerThread; ++i) {
        e.run();
        // A read between runs sees one whole run's result: every element the same integer.
        e.readTensor("x", seen.data(), seen.data() + seen.size());
        for (float v : seen)
          if (v != seen[0] || v != std::floor(v))
            torn = true;
      }
    });
  for (std::thread &t : pool)
    t.join();
  REQUIRE(!torn);
  std::vector<float> final(300);
  e.readTensor("x", final.data(), final.data() + final.size());
  REQUIRE(final == std::vector<float>(300, float(2 * runsPerThread))); // no run lost
}
