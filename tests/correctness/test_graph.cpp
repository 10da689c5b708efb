// Graph construction: tile mappings through views, clones, constants and vertex state.
#include "TestPaths.hpp"
#include "core/GraphState.hpp"

#include <aspen/Graph.hpp>

#include <catch2/catch.hpp>

#include <cstring>

using namespace aspen;

namespace {
// The tile of each flattened element, from a TileToTensorMapping.
std::vector<unsigned> tilesPerElement(const TileToTensorMapping &m, std::size_t n) {
  std::vector<unsigned> tiles(n, kInvalidId);
  for (unsigned t = 0; t < m.size(); ++t)
    for (const Interval &i : m[t])
      for (std::size_t e = i.begin(); e < i.end(); ++e) {
        REQUIRE(tiles[e] == kInvalidId); // each element on one tile
        tiles[e] = t;
      }
  return tiles;
}
} // namespace

TEST_CASE("tile mappings follow elements through views", "[correctness][graph]") {
  Graph g(Target::createGeneric(8));
  Tensor m = g.addVariable(FLOAT, {4, 6}, "m");
  for (unsigned r = 0; r < 4; ++r)
    g.setTileMapping(m[r], r);
  // Transposed: element (j, i) of the view is m[i][j], on tile i.
  const auto tiles = tilesPerElement(g.getTileMapping(m.transpose()), 24);
  for (unsigned j = 0; j < 6; ++j)
    for (unsigned i = 0; i < 4; ++i)
      REQUIRE(tiles[j * 4 + i] == i);
  // Mapping through a reversed column view writes the variable's elements.
  g.setTileMapping(m.slice(2, 3, 1).reverse(0), 7);
  const auto after = tilesPerElement(g.getTileMapping(m), 24);
  for (unsigned i = 0; i < 4; ++i)
    for (unsigned j = 0; j < 6; ++j)
      REQUIRE(after[i * 6 + j] == (j == 2 ? 7u : i));
  // Interval mapping of a view: flattened view indices [0, 3) to tile 5 on the transpose.
  g.setTileMapping(m.transpose(), TileToTensorMapping{{}, {}, {}, {}, {}, {Interval(0, 3)}});
  const auto last = tilesPerElement(g.getTileMapping(m), 24);
  REQUIRE(last[0 * 6] == 5);
  REQUIRE(last[1 * 6] == 5);
  REQUIRE(last[2 * 6] == 5);
  REQUIRE(last[3 * 6] == 3);
}

TEST_CASE("clone keeps the shape, type and mapping", "[correctness][graph]") {
  Graph g(Target::createGeneric(4));
  Tensor m = g.addVariable(FLOAT, {3, 2}, "m");
  for (unsigned r = 0; r < 3; ++r)
    g.setTileMapping(m[r], r + 1);
  Tensor c = g.clone(HALF, m.transpose(), "c");
  REQUIRE(c.shape() == std::vector<std::size_t>{2, 3});
  REQUIRE(c.elementType() == HALF);
  REQUIRE(g.getTileMapping(c) == g.getTileMapping(m.transpose()));
  REQUIRE(g.state().variables.back().name == "c");
}

TEST_CASE("linear variables are mapped completely", "[correctness][graph]") {
  Graph g(Target::createGeneric(16));
  Tensor v = g.addVariable(FLOAT, {1000}, VariableMappingMethod::LINEAR, "v");
  const auto tiles = tilesPerElement(g.getTileMapping(v), 1000);
  for (std::size_t i = 1; i < tiles.size(); ++i)
    REQUIRE(tiles[i] >= tiles[i - 1]); // in order over tiles
  REQUIRE(tiles.back() == 15);
}

TEST_CASE("constants convert host values to the device type", "[correctness][graph]") {
  Graph g(Target::createGeneric(1));
  g.addConstant<int>(HALF, {3}, {1, -2, 2049}, "h");
  const auto &bytes = g.state().variables.back().constantData;
  REQUIRE(bytes.size() == 6);
  unsigned short h[3];
  std::memcpy(h, bytes.data(), 6);
  REQUIRE(h[0] == half(1.0f).bits());
  REQUIRE(h[1] == half(-2.0f).bits());
  REQUIRE(float(half::fromBits(h[2])) == 2048.0f); // 2049 is a tie between halves; even wins
  g.addConstant(UNSIGNED_INT, {4}, 7, "fill");
  const auto &fill = g.state().variables.back();
  REQUIRE(fill.isConstant);
  for (unsigned i = 0; i < 4; ++i) {
    unsigned x;
    std::memcpy(&x, fill.constantData.data() + 4 * i, 4);
    REQUIRE(x == 7u);
  }
}

TEST_CASE("sorted contiguous regions group elements by memory order", "[correctness][graph]") {
  Graph g(Target::createGeneric(1));
  Tensor m = g.addVariable(FLOAT, {2, 3}, "m");
  // Transposed flat order m00 m10 m01 m11 m02 m12 sits at addresses 0 3 1 4 2 5: one run in
  // memory, visited as flat elements 0 2 4 1 3 5.
  const auto groups = g.getSortedContiguousRegions(m.transpose(), {Interval(0, 6)});
  REQUIRE(groups.size() == 1);
  REQUIRE(groups[0] == std::vector<Interval>{Interval(0, 1), Interval(2, 3), Interval(4, 5),
                                             Interval(1, 2), Interval(3, 4), Interval(5, 6)});
  Tensor a = g.addVariable(FLOAT, {2}, "a");
  const auto two = g.getSortedContiguousRegions(concat(a, m[0]), {Interval(0, 5)});
  REQUIRE(two.size() == 2); // m was created first, so its group sorts first
  REQUIRE(two[0] == std::vector<Interval>{Interval(2, 5)});
  REQUIRE(two[1] == std::vector<Interval>{Interval(0, 2)});
  std::vector<std::size_t> aliases;
  const auto once = g.getSortedContiguousRegions(m[1][2].expand({0}).broadcast(3, 0), {Interval(0, 3)},
                                                 true, &aliases);
  REQUIRE(once == std::vector<std::vector<Interval>>{{Interval(0, 1)}});
  REQUIRE(aliases == std::vector<std::size_t>{1, 2});
  REQUIRE_THROWS_AS(g.getSortedContiguousRegions(m, {Interval(4, 7)}), index_error);
}

TEST_CASE("variables and unbroadcast tensors are found again", "[correctness][graph]") {
  Graph g(Target::createGeneric(1));
  Tensor v = g.addVariable(FLOAT, {3, 1}, "v");
  REQUIRE(g.getVariable(v.getVarRegions()[0].var) == v);
  REQUIRE_THROWS_AS(g.getVariable(VariableRef{99}), index_error);
  Tensor wide = v.broadcast(4, 1);
  REQUIRE(g.findUnbroadcastTensor(wide) == v);
  Tensor scalarBroadcast = v[2][0].expand({0, 0}).broadcast(5, 1);
  REQUIRE(g.findUnbroadcastTensor(scalarBroadcast).shape() == std::vector<std::size_t>{1, 1});
  REQUIRE(g.findUnbroadcastTensor(v.transpose()) == v.transpose());
}

TEST_CASE("field limits come from the vertex type", "[correctness][graph]") {
  Graph g(Target::createGeneric(1));
  g.addCodelets(aspen::test::codelet("graph_fields.cpp"));
  REQUIRE(g.getMaxVertexFieldValue("FieldKinds", "small") == 255.0);
  REQUIRE(g.getMaxFieldDim("FieldKinds", "rows", 1) >= 4294967295.0);
  REQUIRE_THROWS_AS(g.getMaxFieldDim("FieldKinds", "in", 1), index_error);
  REQUIRE_THROWS_AS(g.getMaxVertexFieldValue("FieldKinds", "in"), graph_connection_error);
  REQUIRE_THROWS_AS(g.getMaxFieldDim("Nope", "in", 0), unknown_vertex_type);
}

TEST_CASE("a virtual graph numbers its own tiles from 0 and shares everything else", "[correctness][graph]") {
  Graph whole(Target::createGeneric(8));
  Graph upper = whole.createVirtualGraph(4, 8);
  REQUIRE(upper.getTarget().getNumTiles() == 4);
  Tensor t = upper.addVariable(FLOAT, {4}, "t");
  upper.setTileMapping(t.slice(0, 2), 0);
  upper.setTileMapping(t.slice(2, 4), TileToTensorMapping{{}, {}, {}, {Interval(0, 2)}});
  // In the whole graph's numbering the tiles are 4 and 7.
  const auto mapping = whole.getTileMapping(t);
  REQUIRE(mapping[4] == std::vector<Interval>{Interval(0, 2)});
  REQUIRE(mapping[7] == std::vector<Interval>{Interval(2, 4)});
  REQUIRE(upper.getTileMapping(t)[3] == std::vector<Interval>{Interval(2, 4)});
  REQUIRE_THROWS_AS(upper.setTileMapping(t, 4), invalid_tile_mapping);
  // Nested virtual graphs offset again; tensors mapped outside a virtual graph are reported.
  Graph last = upper.createVirtualGraph(3, 4);
  last.setTileMapping(t.slice(0, 1), 0);
  REQUIRE(whole.getTileMapping(t)[7] == std::vector<Interval>{Interval(0, 1), Interval(2, 4)});
  REQUIRE_THROWS_WITH(last.getTileMapping(t), Catch::Contains("outside this virtual graph"));
  REQUIRE_THROWS_AS(whole.createVirtualGraph(6, 9), invalid_tile_mapping);
  // A tensor of the virtual graph is a tensor of the whole graph.
  REQUIRE_NOTHROW(whole.setTileMapping(t, 0));
}
