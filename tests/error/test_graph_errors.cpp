// Misuse of the Graph and programs: each case raises the specific aspen::error subclass, with a
// message naming the object and the rule, and leaves the graph usable.
#include "TestPaths.hpp"
#include "core/GraphState.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
using namespace aspen::program;
using Catch::Contains;

namespace {

struct Fixture {
  Graph graph{Target::createGeneric(4)};
  Tensor f4 = graph.addVariable(FLOAT, {4}, "f4");
  Tensor i4 = graph.addVariable(INT, {4}, "i4");
  Tensor scalar = graph.addVariable(FLOAT, {}, "scalar");
  ComputeSet cs = graph.addComputeSet("cs");
  Fixture() { graph.addCodelets(aspen::test::codelet("graph_fields.cpp")); }
  VertexRef vertex() { return graph.addVertex(cs, "FieldKinds"); }
};

} // namespace

TEST_CASE("vertex types and fields must exist", "[error][graph]") {
  Fixture f;
  REQUIRE_THROWS_AS(f.graph.addVertex(f.cs, "NoSuchVertex"), unknown_vertex_type);
  REQUIRE_THROWS_WITH(f.graph.addVertex(f.cs, "NoSuchVertex"),
                      Contains("NoSuchVertex") && Contains("addCodelets"));
  VertexRef v = f.vertex();
  REQUIRE_THROWS_AS(f.graph.connect(v["nope"], f.f4), unknown_field);
  REQUIRE_THROWS_WITH(f.graph.connect(v["nope"], f.f4),
                      Contains("'nope'") && Contains("in, out, rows, small, scale"));
}

TEST_CASE("connections must fit the field", "[error][graph]") {
  Fixture f;
  VertexRef v = f.vertex();
  REQUIRE_THROWS_AS(f.graph.connect(v["in"], f.i4), type_error);
  REQUIRE_THROWS_WITH(f.graph.connect(v["in"], f.i4), Contains("float") && Contains("int") && Contains("'in'"));
  REQUIRE_THROWS_AS(f.graph.connect(v["out"], f.f4), shape_error);
  REQUIRE_THROWS_WITH(f.graph.connect(v["out"], f.f4), Contains("scalar") && Contains("4 elements"));
  REQUIRE_THROWS_AS(f.graph.connect(v["scale"], f.scalar), graph_connection_error);
  REQUIRE_THROWS_WITH(f.graph.connect(v["scale"], f.scalar), Contains("setInitialValue"));
  f.graph.connect(v["in"], f.f4);
  REQUIRE_THROWS_WITH(f.graph.connect(v["in"], f.f4), Contains("already connected"));
  REQUIRE_THROWS_AS(f.graph.connect(v["rows"], f.f4), graph_connection_error);
  REQUIRE_THROWS_WITH(f.graph.connect(v["rows"], f.f4), Contains("vector of vectors"));
  REQUIRE_THROWS_AS(f.graph.connect(v["in"][0], f.f4), graph_connection_error);
}

TEST_CASE("2-D fields: sizes and lists", "[error][graph]") {
  Fixture f;
  VertexRef v = f.vertex();
  REQUIRE_THROWS_AS(f.graph.setFieldSize(v["in"], 2), graph_connection_error);
  f.graph.setFieldSize(v["rows"], 2);
  REQUIRE_THROWS_AS(f.graph.connect(v["rows"], {f.f4}), shape_error);
  REQUIRE_THROWS_WITH(f.graph.connect(v["rows"], {f.f4}), Contains("1 tensors") && Contains("size is 2"));
  REQUIRE_THROWS_AS(f.graph.connect(v["rows"][2], f.f4), index_error);
  REQUIRE_NOTHROW(f.graph.connect(v["rows"][1], f.f4));
  REQUIRE_THROWS_AS(f.graph.connect(v["rows"], {f.i4, f.i4}), type_error);
}

TEST_CASE("initial values must fit the member", "[error][graph]") {
  Fixture f;
  VertexRef v = f.vertex();
  REQUIRE_THROWS_AS(f.graph.setInitialValue(v["small"], 300), type_error);
  REQUIRE_THROWS_WITH(f.graph.setInitialValue(v["small"], 300),
                      Contains("300") && Contains("unsigned char") && Contains("'small'"));
  REQUIRE_THROWS_AS(f.graph.setInitialValue(v["small"], -1), type_error);
  REQUIRE_THROWS_AS(f.graph.setInitialValue(v["in"], 1.0f), graph_connection_error);
  REQUIRE_THROWS_AS(f.graph.setInitialValue(v["scale"], std::vector<float>{1, 2}), graph_connection_error);
  REQUIRE_NOTHROW(f.graph.setInitialValue(v["small"], 255));
  REQUIRE_NOTHROW(f.graph.setInitialValue(v["scale"], 0.5)); // double into float
}

TEST_CASE("tile mappings must name existing tiles and elements", "[error][graph]") {
  Fixture f;
  REQUIRE_THROWS_AS(f.graph.setTileMapping(f.f4, 9), invalid_tile_mapping);
  REQUIRE_THROWS_WITH(f.graph.setTileMapping(f.f4, 9), Contains("tile 9") && Contains("'f4'"));
  REQUIRE_THROWS_AS(f.graph.setTileMapping(f.vertex(), 4), invalid_tile_mapping);
  REQUIRE_THROWS_AS(f.graph.setTileMapping(f.f4, TileToTensorMapping{{Interval(0, 5)}}), invalid_tile_mapping);
  REQUIRE_THROWS_AS(f.graph.setTileMapping(f.f4, TileToTensorMapping(5)), invalid_tile_mapping);
  f.graph.setTileMapping(f.f4.slice(0, 2), 1);
  REQUIRE_THROWS_AS(f.graph.getTileMapping(f.f4), invalid_tile_mapping);
  REQUIRE_THROWS_WITH(f.graph.getTileMapping(f.f4), Contains("element 2") && Contains("not mapped"));
  const auto partial = f.graph.getTileMapping(f.f4, false);
  REQUIRE(partial[1] == std::vector<Interval>{Interval(0, 2)});
}

TEST_CASE("tensors and handles from another graph are rejected", "[error][graph]") {
  Fixture f;
  Graph other(Target::createGeneric(4));
  Tensor foreign = other.addVariable(FLOAT, {4}, "foreign");
  VertexRef v = f.vertex();
  REQUIRE_THROWS_AS(f.graph.connect(v["in"], foreign), graph_connection_error);
  REQUIRE_THROWS_WITH(f.graph.connect(v["in"], foreign), Contains("another graph"));
  REQUIRE_THROWS_AS(f.graph.setTileMapping(foreign, 0), graph_connection_error);
  REQUIRE_THROWS_AS(f.graph.addVertex(other.addComputeSet("x"), "FieldKinds"), graph_connection_error);
  REQUIRE_THROWS_AS(f.graph.createHostRead("r", foreign), graph_connection_error);
}

TEST_CASE("constants must have one value or one per element, each representable", "[error][graph]") {
  Fixture f;
  const std::size_t before = f.graph.state().variables.size();
  REQUIRE_THROWS_AS(f.graph.addConstant<float>(FLOAT, {4}, {1, 2, 3}, "c"), tensor_creation_error);
  REQUIRE_THROWS_WITH(f.graph.addConstant<float>(FLOAT, {4}, {1, 2, 3}, "c"), Contains("3 values"));
  REQUIRE_THROWS_AS(f.graph.addConstant(UNSIGNED_INT, {2}, -1, "neg"), type_error);
  REQUIRE_THROWS_AS(f.graph.addVariable(Type(), {2}, "bad"), tensor_creation_error);
  REQUIRE(f.graph.state().variables.size() == before); // nothing half-made was left behind
}

TEST_CASE("host handles are unique and writable", "[error][graph]") {
  Fixture f;
  f.graph.createHostWrite("h", f.f4);
  REQUIRE_NOTHROW(f.graph.createHostRead("h", f.f4)); // a write and a read may share a name
  REQUIRE_THROWS_AS(f.graph.createHostWrite("h", f.i4), stream_connection_error);
  REQUIRE_THROWS_WITH(f.graph.createHostWrite("h", f.i4), Contains("'h'") && Contains("already"));
  REQUIRE_THROWS_AS(f.graph.createHostWrite("b", f.scalar.expand({0}).broadcast(3, 0)), stream_connection_error);
  REQUIRE_THROWS_AS(f.graph.addHostToDeviceFIFO("h", FLOAT, 4), stream_connection_error);
}

TEST_CASE("programs check their operands when built", "[error][program]") {
  Fixture f;
  REQUIRE_THROWS_AS(Copy(f.f4, f.i4), type_error);
  REQUIRE_THROWS_AS(Copy(f.f4, f.f4.slice(0, 3)), shape_error);
  REQUIRE_THROWS_WITH(Copy(f.f4, f.f4.slice(0, 3)), Contains("4 elements") && Contains("3 elements"));
  DataStream in = f.graph.addHostToDeviceFIFO("in", FLOAT, 3);
  REQUIRE_THROWS_AS(Copy(in, f.f4), shape_error);
  REQUIRE_THROWS_AS(Copy(f.f4.slice(0, 3), in), control_program_error);
  REQUIRE_THROWS_AS(If(f.f4, Sequence(), Sequence()), control_program_error);
  REQUIRE_THROWS_WITH(If(f.f4, Sequence(), Sequence()), Contains("scalar") && Contains("'f4'"));
  REQUIRE_THROWS_AS(Switch(f.scalar), control_program_error);
  Tensor control = f.graph.addVariable(INT, {}, "control");
  Switch sw(control);
  sw.add(1, Sequence());
  REQUIRE_THROWS_WITH(sw.add(1, Sequence()), Contains("case 1 already"));
  REQUIRE_THROWS_AS(Execute(ComputeSet()), control_program_error);
  REQUIRE_THROWS_AS(Call(Function()), control_program_error);
  REQUIRE_THROWS_AS(Copy(Tensor(), f.f4), control_program_error);
}

TEST_CASE("a failed addVertex with connections leaves no vertex behind", "[error][graph]") {
  Fixture f;
  const std::size_t before = f.graph.state().vertices.size();
  REQUIRE_THROWS_AS(f.graph.addVertex(f.cs, "FieldKinds", {{"in", f.f4}, {"out", f.f4}}), shape_error);
  REQUIRE(f.graph.state().vertices.size() == before);
  REQUIRE(f.graph.state().computeSets[f.cs.getId()].vertices.size() == before);
  REQUIRE_NOTHROW(f.graph.addVertex(f.cs, "FieldKinds", {{"in", f.f4}, {"out", f.scalar}}));
}
