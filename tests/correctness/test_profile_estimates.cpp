// The profile reports each compute set's estimated cycles from Graph::setPerfEstimate: tiles run
// in parallel, so the estimate is the largest per-tile sum.
#include "TestDevice.hpp"
#include "TestPaths.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>

#include <catch2/catch.hpp>

#include <sstream>

using namespace aspen;

TEST_CASE("compute-set estimates are the slowest tile's sum of vertex estimates", "[correctness][profile]") {
  const Target target = Target::createGeneric(2);
  Graph g(target);
  g.addCodelets(aspen::test::codelet("graph_fields.cpp"));
  ComputeSet cs = g.addComputeSet("estimated");
  Tensor in = g.addVariable(FLOAT, {3, 2}, "in");
  Tensor out = g.addVariable(FLOAT, {3}, "out");
  // Vertex i on tile (i == 2 ? 1 : 0); estimates 100, 50 on tile 0 and 120 on tile 1: max(150, 120).
  const unsigned tiles[3] = {0, 0, 1};
  const unsigned cycles[3] = {100, 50, 120};
  for (unsigned i = 0; i < 3; ++i) {
    g.setTileMapping(in[i], tiles[i]);
    g.setTileMapping(out[i], tiles[i]);
    VertexRef v = g.addVertex(cs, "FieldKinds", {{"in", in[i]}, {"out", out[i]}});
    g.setFieldSize(v["rows"], 0);
    g.setInitialValue(v["small"], 0);
    g.setInitialValue(v["scale"], 1.0f);
    g.setTileMapping(v, tiles[i]);
    g.setPerfEstimate(v, cycles[i]);
  }
  ComputeSet partial = g.addComputeSet("partial");
  Tensor lone = g.addVariable(FLOAT, {}, "lone");
  g.setTileMapping(lone, 1);
  VertexRef w = g.addVertex(partial, "FieldKinds", {{"in", in[2]}, {"out", lone}});
  g.setFieldSize(w["rows"], 0);
  g.setInitialValue(w["small"], 0);
  g.setInitialValue(w["scale"], 1.0f);
  g.setTileMapping(w, 1);

  Engine engine(g, program::Sequence({program::Execute(cs), program::Execute(partial)}));
  engine.load(aspen::test::deviceFor(target));
  engine.run();
  std::ostringstream summary;
  engine.printProfileSummary(summary);
  INFO(summary.str());
  REQUIRE_THAT(summary.str(), Catch::Contains("estimated: ") && Catch::Contains("estimated 150 cycles"));
  REQUIRE_THAT(summary.str(), Catch::Contains("estimated 0 cycles, 0 flops (1 of 1 vertices without an estimate)"));
}

TEST_CASE("a registered estimator computes estimates from the vertex's fields", "[correctness][profile]") {
  const Target target = Target::createGeneric(1);
  Graph g(target);
  g.addCodelets(aspen::test::codelet("graph_fields.cpp"));
  REQUIRE_THROWS_AS(g.registerPerfEstimator("Unknown", [](const VertexIntrospector &, const Target &) {
                      return VertexPerfEstimate(1);
                    }),
                    unknown_vertex_type);
  // cycles = 10 per input element + 3 per element of each row + the `small` member; flops = inputs.
  g.registerPerfEstimator("FieldKinds", [](const VertexIntrospector &v, const Target &t) {
    const FieldData rows = v.getFieldInfo("rows");
    std::uint64_t cycles = 10 * v.getFieldInfo("in").size() + v.getFieldInfo("small").getInitialValue<unsigned>(t);
    for (std::size_t r = 0; r < rows.size(); ++r)
      cycles += 3 * rows[r].size();
    return VertexPerfEstimate(cycles, v.getFieldInfo("in").size());
  });
  Tensor in = g.addVariable(FLOAT, {5}, "in");
  Tensor row = g.addVariable(FLOAT, {4}, "row");
  Tensor out = g.addVariable(FLOAT, {}, "out");
  for (const Tensor &t : {in, row, out})
    g.setTileMapping(t, 0);
  ComputeSet cs = g.addComputeSet("introspected");
  VertexRef v = g.addVertex(cs, "FieldKinds", {{"in", in}, {"out", out}});
  g.connect(v["rows"], {row, row.slice(0, 2)});
  g.setInitialValue(v["small"], 7);
  g.setInitialValue(v["scale"], 1.0f);
  g.setTileMapping(v, 0);
  Engine engine(g, program::Execute(cs));
  std::ostringstream summary;
  engine.printProfileSummary(summary);
  INFO(summary.str());
  // 10 * 5 + 7 + 3 * (4 + 2) = 75 cycles, worked out by hand; 5 flops.
  REQUIRE_THAT(summary.str(), Catch::Contains("introspected: ") && Catch::Contains("estimated 75 cycles, 5 flops"));
}
