// Graph::setInitialValue on variables (Poplar's): the values an engine starts with, through
// views, types and runs, against values worked out by hand; and every misuse, leaving the
// graph as it was.
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <vector>

using namespace aspen;
using namespace aspen::program;

TEST_CASE("setInitialValue gives variables their values at load, through views and types",
          "[correctness][graph]") {
  Graph g(Target::createGeneric(3));
  ops::addCodelets(g);
  Tensor f = g.addVariable(FLOAT, {4}, "f");
  Tensor m = g.addVariable(INT, {2, 3}, "m");
  Tensor h = g.addVariable(HALF, {3}, "h");
  Tensor part = g.addVariable(UNSIGNED_INT, {5}, "part");
  for (const Tensor &t : {f, m, h, part})
    util::mapTensorLinearly(g, t);
  g.setInitialValue(f, 2.5f);
  // In the transpose's row-major order: m^T = [[1, 2], [3, 4], [5, 6]], so m = [[1, 3, 5],
  // [2, 4, 6]].
  g.setInitialValue(m.transpose(), std::vector<int>{1, 2, 3, 4, 5, 6});
  g.setInitialValue(h, std::vector<double>{0.5, -2, 65504});
  // Elements 1..3 set, then 3 overwritten; 0 and 4 never set: 0.
  g.setInitialValue(part.slice(1, 4), ArrayRef<unsigned>(std::vector<unsigned>{7, 8, 9}));
  g.setInitialValue(part.slice(3, 4), 10u);
  for (const auto &[name, t] : std::vector<std::pair<std::string, Tensor>>{
           {"f", f}, {"m", m}, {"h", h}, {"part", part}})
    g.createHostRead(name, t);
  // Each run adds 1 to f: the initial value is where the first run starts, not every run.
  Sequence prog;
  ops::addInPlace(g, f, 1.0f, prog);

  Engine e(g, prog);
  e.load(test::deviceFor(g.getTarget()));
  std::vector<float> fv(4);
  std::vector<int> mv(6);
  std::vector<half> hv(3);
  std::vector<unsigned> pv(5);
  e.readTensor("f", fv.data(), fv.data() + 4);
  e.readTensor("m", mv.data(), mv.data() + 6);
  e.readTensor("h", hv.data(), hv.data() + 3);
  e.readTensor("part", pv.data(), pv.data() + 5);
  REQUIRE(fv == std::vector<float>(4, 2.5f));
  REQUIRE(mv == std::vector<int>{1, 3, 5, 2, 4, 6});
  REQUIRE(float(hv[0]) == 0.5f);
  REQUIRE(float(hv[1]) == -2.0f);
  REQUIRE(float(hv[2]) == 65504.0f);
  REQUIRE(pv == std::vector<unsigned>{0, 7, 8, 10, 0});
  e.run();
  e.run();
  e.readTensor("f", fv.data(), fv.data() + 4);
  REQUIRE(fv == std::vector<float>(4, 4.5f));
}

TEST_CASE("setInitialValue refuses constants, broadcasts, wrong counts and unrepresentable values",
          "[correctness][graph]") {
  Graph g(Target::createGeneric(2));
  Tensor v = g.addVariable(UNSIGNED_CHAR, {4}, "v");
  util::mapTensorLinearly(g, v);
  Tensor c = g.addConstant(FLOAT, {2}, 1.0f, "c");
  g.setTileMapping(c, 0);
  REQUIRE_THROWS_AS(g.setInitialValue(c, 2.0f), graph_connection_error);
  REQUIRE_THROWS_AS(g.setInitialValue(v.slice(0, 1).broadcast(3, 0), 1), graph_connection_error);
  REQUIRE_THROWS_AS(g.setInitialValue(v, std::vector<int>{1, 2, 3}), shape_error);
  REQUIRE_THROWS_WITH(g.setInitialValue(v, std::vector<int>{1, 2, 3}),
                      Catch::Contains("3 values were given"));
  // 300 does not fit an unsigned char: nothing is set, not even the first three values.
  REQUIRE_THROWS_AS(g.setInitialValue(v, std::vector<int>{1, 2, 3, 300}), type_error);
  Graph other(Target::createGeneric(2));
  REQUIRE_THROWS_AS(other.setInitialValue(v, 1), aspen::error);

  g.createHostRead("v", v);
  Engine e(g, Sequence{});
  e.load(test::deviceFor(g.getTarget()));
  std::vector<unsigned char> got(4, 99);
  e.readTensor("v", got.data(), got.data() + 4);
  REQUIRE(got == std::vector<unsigned char>{0, 0, 0, 0});
}
