// aspen::util: linear mappings, region splitting, template names, broadcasting.
#include "core/TensorRegions.hpp"

#include <aspen/Graph.hpp>
#include <aspen/util/Broadcast.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <catch2/catch.hpp>

#include <random>

using namespace aspen;
using Shape = std::vector<std::size_t>;

TEST_CASE("splitRegions covers each element once, cuts on grains and balances", "[unit][util]") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<Interval> regions;
    std::size_t at = 0, total = 0;
    for (int r = 0, n = 1 + rng() % 5; r < n; ++r) {
      at += rng() % 4;
      const std::size_t size = rng() % 40;
      regions.emplace_back(at, at + size);
      at += size;
      total += size;
    }
    const unsigned grain = 1 + rng() % 4, parts = 1 + rng() % 7, minPer = rng() % 10;
    const auto split = util::splitRegions(regions, grain, parts, minPer);
    REQUIRE(split.size() <= parts);
    std::vector<Interval> flat;
    std::size_t largest = 0, smallest = total;
    for (const auto &p : split) {
      std::size_t n = 0;
      for (const Interval &i : p) {
        flat.push_back(i);
        n += i.size();
      }
      largest = std::max(largest, n);
      smallest = std::min(smallest, n);
    }
    // In order, every element exactly once, and each cut a whole number of grains from the
    // start of its region.
    std::size_t r = 0, pos = regions.empty() ? 0 : regions[0].begin();
    for (const Interval &i : flat) {
      while (r < regions.size() && pos == regions[r].end()) {
        ++r;
        if (r < regions.size())
          pos = regions[r].begin();
      }
      REQUIRE(r < regions.size());
      REQUIRE(i.begin() == pos);
      REQUIRE(i.end() <= regions[r].end());
      REQUIRE(((i.end() - regions[r].begin()) % grain == 0 || i.end() == regions[r].end()));
      pos = i.end();
    }
    std::size_t covered = 0;
    for (const Interval &i : flat)
      covered += i.size();
    REQUIRE(covered == total);
    if (!split.empty() && total > 0)
      REQUIRE(largest - smallest <= 2 * grain * regions.size()); // equal to within grains
  }
}

TEST_CASE("linear mappings with offsets and order", "[unit][util]") {
  Graph g(Target::createGeneric(4));
  Tensor t = g.addVariable(FLOAT, {64}, "t");
  util::mapTensorLinearlyWithOffset(g, t, 16, 1, 1, true);
  auto m = g.getTileMapping(t);
  REQUIRE(m[1] == std::vector<Interval>{Interval(0, 16)});
  REQUIRE(m[0] == std::vector<Interval>{Interval(48, 64)});
  util::mapTensorLinearlyWithOffset(g, t, 16, 1, 0, false);
  m = g.getTileMapping(t);
  REQUIRE(m[3] == std::vector<Interval>{Interval(0, 16)});
  REQUIRE(m[0] == std::vector<Interval>{Interval(48, 64)});
  util::mapTensorLinearly(g, t);
  REQUIRE(g.getTileMapping(t) == util::calcLinearTileMapping(g, t));
}

TEST_CASE("contiguous regions per tile cut where the variable is not consecutive", "[unit][util]") {
  Graph g(Target::createGeneric(2));
  Tensor m = g.addVariable(FLOAT, {2, 3}, "m");
  g.setTileMapping(m[0], 0);
  g.setTileMapping(m[1], 1);
  // Transposed: flat order m00 m10 m01 m11 m02 m12; every element is its own run.
  const auto regions = util::getTileContiguousRegions(g, m.transpose());
  REQUIRE(regions[0] == std::vector<Interval>{Interval(0, 1), Interval(2, 3), Interval(4, 5)});
  REQUIRE(regions[1] == std::vector<Interval>{Interval(1, 2), Interval(3, 4), Interval(5, 6)});
  const auto rows = util::getTileContiguousRegions(g, m);
  REQUIRE(rows[0] == std::vector<Interval>{Interval(0, 3)});
  // A concatenation of two variables breaks at the join even on one tile.
  Tensor a = g.addVariable(FLOAT, {2}, "a"), b = g.addVariable(FLOAT, {2}, "b");
  g.setTileMapping(a, 0);
  g.setTileMapping(b, 0);
  REQUIRE(util::getTileContiguousRegions(g, concat(a, b))[0] ==
          std::vector<Interval>{Interval(0, 2), Interval(2, 4)});
}

TEST_CASE("templateVertex spells names as codelet instantiations are named", "[unit][util]") {
  REQUIRE(util::templateVertex("ns::V", FLOAT, true) == "ns::V<float,true>");
  REQUIRE(util::templateVertex("V", UNSIGNED_INT, 3u, "x") == "V<unsigned int,3,x>");
}

TEST_CASE("broadcasting follows NumPy's rules", "[unit][util]") {
  REQUIRE(util::broadcastShape({{3, 1}, {4}}) == Shape{3, 4});
  REQUIRE(util::broadcastShape({{}, {2, 5}}) == Shape{2, 5});
  REQUIRE_THROWS_AS(util::broadcastShape({{3}, {4}}), shape_error);
  Graph g(Target::createGeneric(1));
  Tensor a = g.addVariable(FLOAT, {3, 1}, "a"), b = g.addVariable(FLOAT, {4}, "b");
  Tensor ab = a, bb = b;
  util::broadcastToMatch(ab, bb);
  REQUIRE(ab.shape() == Shape{3, 4});
  REQUIRE(bb.shape() == Shape{3, 4});
  // Element (i, j) of the broadcast a is a[i][0]; of the broadcast b, b[j].
  for (unsigned i = 0; i < 3; ++i)
    for (unsigned j = 0; j < 4; ++j) {
      REQUIRE(ab[i][j] == a[i][0]);
      REQUIRE(bb[i][j] == b[j]);
    }
  Tensor c = g.addVariable(FLOAT, {2}, "c");
  REQUIRE_THROWS_WITH(util::broadcastToMatch(c, Shape{3, 4}),
                      Catch::Contains("{2}") && Catch::Contains("{3,4}") && Catch::Contains("broadcast"));
}

TEST_CASE("cloneN stacks clones mapped like the original", "[unit][util]") {
  Graph g(Target::createGeneric(3));
  Tensor t = g.addVariable(FLOAT, {2, 2}, "t");
  g.setTileMapping(t[0], 1);
  g.setTileMapping(t[1], 2);
  Tensor n = util::cloneN(g, t, 3, "n");
  REQUIRE(n.shape() == Shape{3, 2, 2});
  for (unsigned i = 0; i < 3; ++i)
    REQUIRE(g.getTileMapping(n[i]) == g.getTileMapping(t));
  REQUIRE_FALSE(n.containsAliases());
  REQUIRE(detail::variablesOf(n).size() == 3);
}
