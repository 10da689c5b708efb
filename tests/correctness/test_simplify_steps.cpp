// The step mutator (rewriteSteps) and the pass built on it (simplifySteps): on hand-built step
// graphs whose result is worked out by hand, and end to end: a program full of nested sequences,
// syncs, undefs and calls runs to the same values with a flat root.
#include "ProgramTestUtils.hpp"
#include "compiler/Compiler.hpp"
#include "compiler/SimplifySteps.hpp"
#include "compiler/StepWalk.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

#include <catch2/catch.hpp>

#include <vector>

using namespace aspen;
using namespace aspen::detail;
using namespace aspen::program;

namespace {
Step step(StepKind kind, std::vector<std::uint32_t> children = {}) {
  Step s;
  s.kind = kind;
  s.children = std::move(children);
  return s;
}

std::vector<std::uint32_t> reachable(const CompiledGraph &g) {
  std::vector<std::uint32_t> order;
  forEachStep(g, g.programs, [&](std::uint32_t i, const Step &) { order.push_back(i); });
  return order;
}
} // namespace

TEST_CASE("rewriteSteps visits parents first and follows the children a rewrite leaves",
          "[correctness][steps]") {
  CompiledGraph g;
  g.steps = {step(StepKind::Sequence, {1, 2}), step(StepKind::Sequence, {3}),
             step(StepKind::Execute), step(StepKind::Execute)};
  g.programs = {0};
  std::vector<std::uint32_t> visited;
  rewriteSteps(g, g.programs, [&](std::uint32_t i, Step &s) {
    visited.push_back(i);
    if (i == 0)
      s.children = {2, 1, 2}; // reordered, 2 twice: visited once, in the new order
  });
  REQUIRE(visited == std::vector<std::uint32_t>{0, 2, 1, 3});
  visited.clear();
  rewriteSteps(g, g.programs, [&](std::uint32_t i, Step &s) {
    visited.push_back(i);
    if (i == 0)
      s.children = {2}; // 1 and 3 are no longer reached
  });
  REQUIRE(visited == std::vector<std::uint32_t>{0, 2});
  REQUIRE(g.steps.size() == 4);
}

TEST_CASE("simplifySteps splices sequences used once, drops nops and keeps shared steps",
          "[correctness][steps]") {
  CompiledGraph g;
  //  0 Sequence [1, 4, 5]     root
  //  1 Sequence [2, 3]        used once: spliced
  //  2 Execute, 3 Nop         the nop is dropped
  //  4 Repeat [6]             not a sequence: kept, its body simplified
  //  5 Sequence [7, 8]        used by 0 and by 6: kept whole
  //  6 Sequence [5, 9]        the repeat's body: 9 (a nop) dropped
  //  7 Execute, 8 Copy, 9 Nop
  g.steps = {step(StepKind::Sequence, {1, 4, 5}), step(StepKind::Sequence, {2, 3}),
             step(StepKind::Execute),             step(StepKind::Nop),
             step(StepKind::Repeat, {6}),         step(StepKind::Sequence, {7, 8}),
             step(StepKind::Sequence, {5, 9}),    step(StepKind::Execute),
             step(StepKind::Copy),                step(StepKind::Nop)};
  g.programs = {0};
  REQUIRE(simplifySteps(g) == 3); // 1, 3 and 9
  REQUIRE(g.steps[0].children == std::vector<std::uint32_t>{2, 4, 5});
  REQUIRE(g.steps[4].children == std::vector<std::uint32_t>{6});
  REQUIRE(g.steps[6].children == std::vector<std::uint32_t>{5});
  REQUIRE(g.steps[5].children == std::vector<std::uint32_t>{7, 8});
  REQUIRE(reachable(g) == std::vector<std::uint32_t>{0, 2, 4, 6, 5, 7, 8});
  REQUIRE(simplifySteps(g) == 0); // a second run changes nothing

  // A program that calls itself: 0 -> 1 -> 0. Step 0 is used twice (root and 1), so it stays.
  CompiledGraph cycle;
  cycle.steps = {step(StepKind::Sequence, {1}), step(StepKind::Sequence, {0})};
  cycle.programs = {0};
  REQUIRE(simplifySteps(cycle) == 1);
  REQUIRE(cycle.steps[0].children == std::vector<std::uint32_t>{0});
}

TEST_CASE("A program of nested sequences, syncs, undefs and calls runs the same with a flat root",
          "[correctness][steps]") {
  Graph g = progtest::makeGraph(2);
  const std::vector<std::string> names = {"a", "b", "c", "d", "e"};
  std::vector<Tensor> v;
  for (const std::string &n : names) {
    v.push_back(g.addVariable(FLOAT, {4}, n));
    g.setTileMapping(v.back().slice(0, 2), 0);
    g.setTileMapping(v.back().slice(2, 4), 1);
    progtest::hostAccess(g, n, v.back());
  }
  const Tensor &a = v[0], &b = v[1], &c = v[2], &d = v[3], &e = v[4];
  // f: d = c reversed, then e = d + nothing (a copy): each call writes the same values.
  Function f = g.addFunction(Sequence{Copy(c.reverse(0), d), Sequence{Sync(), Copy(d, e)}});
  Sequence prog{Sequence{Copy(a, b), Sync()},
                Sequence{Sequence{Copy(b.reverse(0), c)}, Sequence{}},
                WriteUndef(d),
                Call(f),
                Sequence{Call(f), Sync(SyncType::GLOBAL)},
                Sequence{}};

  const auto compiled = compile(g.state(), ArrayRef<Program>(&prog, 1), {});
  const Step &root = compiled->steps[compiled->programs[0]];
  // a->b, b->c, then f's body twice (one step, shared by both calls).
  REQUIRE(root.kind == StepKind::Sequence);
  REQUIRE(root.children.size() == 4);
  REQUIRE(compiled->steps[root.children[0]].kind == StepKind::Copy);
  REQUIRE(compiled->steps[root.children[1]].kind == StepKind::Copy);
  REQUIRE(root.children[2] == root.children[3]);
  const Step &body = compiled->steps[root.children[2]];
  REQUIRE(body.kind == StepKind::Sequence);
  REQUIRE(body.children.size() == 2); // its inner sequence spliced, the sync dropped
  for (std::uint32_t child : body.children)
    REQUIRE(compiled->steps[child].kind == StepKind::Copy);
  forEachStep(*compiled, compiled->programs, [&](std::uint32_t, const Step &s) {
    REQUIRE(s.kind != StepKind::Nop);
  });

  Device device = progtest::deviceFor(g);
  Engine engine(g, prog);
  engine.load(device);
  progtest::writeIn(engine, "a", std::vector<float>{1, 2, 3, 4});
  engine.run(0);
  // b = a, c = reverse(b), d = reverse(c) = a, e = d.
  REQUIRE(progtest::readBack<float>(engine, "b", 4) == std::vector<float>{1, 2, 3, 4});
  REQUIRE(progtest::readBack<float>(engine, "c", 4) == std::vector<float>{4, 3, 2, 1});
  REQUIRE(progtest::readBack<float>(engine, "d", 4) == std::vector<float>{1, 2, 3, 4});
  REQUIRE(progtest::readBack<float>(engine, "e", 4) == std::vector<float>{1, 2, 3, 4});
}
