// Misuse of engines and programs: each raises the aspen::error subclass for its rule, names the
// objects and values involved, and leaves the graph and engine usable.
#include "correctness/ProgramTestUtils.hpp"

#include <aspen/Error.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
using namespace aspen::program;
using namespace progtest;
using Catch::Contains;

TEST_CASE("an unmapped tensor used by a program is reported with its first unmapped element",
          "[error][engine]") {
  Graph g = makeGraph();
  Tensor a = g.addVariable(FLOAT, {6}, "alpha");
  Tensor b = g.addVariable(FLOAT, {6}, "beta");
  g.setTileMapping(a, 0);
  g.setTileMapping(b.slice(0, 3), 1);
  const Program p = Copy(a, b, false, "copyAB");
  REQUIRE_THROWS_AS(Engine(g, p), invalid_tile_mapping);
  REQUIRE_THROWS_WITH(Engine(g, p), Contains("'beta'") && Contains("element 3") &&
                                        Contains("copyAB") && Contains("not mapped"));
  g.setTileMapping(b.slice(3, 6), 2);
  REQUIRE_NOTHROW(Engine(g, p));
}

TEST_CASE("a vertex without a tile is reported with its compute set", "[error][engine]") {
  Graph g = makeGraph();
  Tensor x = scalar(g, INT, "x");
  ComputeSet cs = g.addComputeSet("incSet");
  VertexRef v = g.addVertex(cs, "Increment", {{"x", x}});
  REQUIRE_THROWS_AS(Engine(g, Execute(cs)), invalid_tile_mapping);
  REQUIRE_THROWS_WITH(Engine(g, Execute(cs)),
                      Contains("Increment") && Contains("'incSet'") && Contains("no tile"));
  g.setTileMapping(v, 0);
  REQUIRE_NOTHROW(Engine(g, Execute(cs)));
}

TEST_CASE("an unconnected edge field is reported with vertex, type and field", "[error][engine]") {
  Graph g = makeGraph();
  Tensor in = g.addVariable(FLOAT, {4}, "in");
  g.setTileMapping(in, 0);
  ComputeSet cs = g.addComputeSet("scaleSet");
  VertexRef v = g.addVertex(cs, "Scale", {{"in", in}});
  g.setTileMapping(v, 0);
  REQUIRE_THROWS_AS(Engine(g, Execute(cs)), graph_connection_error);
  REQUIRE_THROWS_WITH(Engine(g, Execute(cs)),
                      Contains("Scale") && Contains("'out'") && Contains("not connected"));
  Tensor out = g.addVariable(FLOAT, {4}, "out");
  g.setTileMapping(out, 0);
  g.connect(v["out"], out);
  REQUIRE_NOTHROW(Engine(g, Execute(cs)));
}

TEST_CASE("a vector-of-edges field whose size was never set is reported", "[error][engine]") {
  Graph g = makeGraph();
  Tensor sums = g.addVariable(FLOAT, {2}, "sums");
  g.setTileMapping(sums, 0);
  ComputeSet cs = g.addComputeSet("rowSet");
  VertexRef v = g.addVertex(cs, "SumRows", {{"sums", sums}});
  g.setTileMapping(v, 0);
  REQUIRE_THROWS_AS(Engine(g, Execute(cs)), graph_connection_error);
  REQUIRE_THROWS_WITH(Engine(g, Execute(cs)), Contains("'rows'") && Contains("size"));
  Tensor rows = g.addVariable(FLOAT, {2, 3}, "rows");
  g.setTileMapping(rows, 0);
  g.connect(v["rows"], {rows[0], rows[1]});
  REQUIRE_NOTHROW(Engine(g, Execute(cs)));
}

TEST_CASE("two vertices of one compute set writing one element are both named", "[error][engine]") {
  Graph g = makeGraph();
  Tensor in = g.addVariable(FLOAT, {8}, "in");
  Tensor out = g.addVariable(FLOAT, {8}, "result");
  g.setTileMapping(in, 0);
  g.setTileMapping(out, 0);
  ComputeSet cs = g.addComputeSet("overlapSet");
  g.setTileMapping(g.addVertex(cs, "Scale", {{"in", in.slice(0, 5)}, {"out", out.slice(0, 5)}}), 0);
  VertexRef second =
      g.addVertex(cs, "Scale", {{"in", in.slice(3, 8)}, {"out", out.slice(3, 8)}});
  g.setTileMapping(second, 1);
  REQUIRE_THROWS_AS(Engine(g, Execute(cs)), graph_connection_error);
  REQUIRE_THROWS_WITH(Engine(g, Execute(cs)),
                      Contains("vertex 0") && Contains("vertex 1") && Contains("'result'") &&
                          Contains("element 3") && Contains("'overlapSet'"));
  // A separate compute set for the second vertex is fine.
  ComputeSet a = g.addComputeSet("first"), b = g.addComputeSet("second");
  g.setTileMapping(g.addVertex(a, "Scale", {{"in", in.slice(0, 5)}, {"out", out.slice(0, 5)}}), 0);
  g.setTileMapping(g.addVertex(b, "Scale", {{"in", in.slice(3, 8)}, {"out", out.slice(3, 8)}}), 1);
  REQUIRE_NOTHROW(Engine(g, Sequence({Execute(a), Execute(b)})));
}

TEST_CASE("a vertex output connected to a constant is rejected", "[error][engine]") {
  Graph g = makeGraph();
  Tensor k = constant(g, INT, 3);
  ComputeSet cs = g.addComputeSet("constSet");
  g.setTileMapping(g.addVertex(cs, "Increment", {{"x", k}}), 0);
  REQUIRE_THROWS_AS(Engine(g, Execute(cs)), graph_connection_error);
  REQUIRE_THROWS_WITH(Engine(g, Execute(cs)), Contains("'x'") && Contains("constant"));
  REQUIRE_NOTHROW(Engine(g, Sequence())); // the graph still compiles other programs
}

TEST_CASE("a copy destination with aliased elements is rejected", "[error][engine]") {
  Graph g = makeGraph();
  Tensor src = g.addVariable(FLOAT, {4}, "src");
  Tensor one = g.addVariable(FLOAT, {1}, "one");
  g.setTileMapping(src, 0);
  g.setTileMapping(one, 0);
  const Program p = Copy(src, one.broadcast(4, 0), false, "toBroadcast");
  REQUIRE_THROWS_AS(Engine(g, p), control_program_error);
  REQUIRE_THROWS_WITH(Engine(g, p), Contains("toBroadcast") && Contains("aliased"));
  REQUIRE_NOTHROW(Engine(g, Copy(src.slice(0, 1), one)));
}

TEST_CASE("compute sets, functions and tensors of another graph are rejected", "[error][engine]") {
  Graph g = makeGraph();
  Graph other = makeGraph();
  Tensor x = scalar(other, INT, "x");
  ComputeSet cs = other.addComputeSet("elsewhere");
  other.setTileMapping(other.addVertex(cs, "Increment", {{"x", x}}), 0);
  Function f = other.addFunction(Execute(cs));
  REQUIRE_THROWS_AS(Engine(g, Execute(cs)), control_program_error);
  REQUIRE_THROWS_WITH(Engine(g, Execute(cs)), Contains("another graph"));
  REQUIRE_THROWS_WITH(Engine(g, Call(f, "callIt")), Contains("callIt") && Contains("another graph"));
  Tensor mine = scalar(g, INT, "mine");
  REQUIRE_THROWS_WITH(Engine(g, Copy(x, mine)), Contains("another graph"));
  REQUIRE_NOTHROW(Engine(other, Call(f)));
}

TEST_CASE("host handles: unknown names and wrong sizes", "[error][engine]") {
  Graph g = makeGraph();
  Tensor v = g.addVariable(FLOAT, {3}, "v");
  g.setTileMapping(v, 0);
  hostAccess(g, "v", v);
  Engine e(g, Sequence());
  e.load(deviceFor(g));
  std::vector<float> buf(3, 1), small(2);
  REQUIRE_THROWS_AS(e.writeTensor("w", buf.data(), buf.data() + 3), stream_connection_error);
  REQUIRE_THROWS_WITH(e.writeTensor("w", buf.data(), buf.data() + 3),
                      Contains("'w'") && Contains("'v'"));
  REQUIRE_THROWS_WITH(e.readTensor("v", buf.data(), buf.data() + 3), Contains("'v-read'"));
  REQUIRE_THROWS_AS(e.readTensor("v-read", small.data(), small.data() + 2), stream_connection_error);
  REQUIRE_THROWS_WITH(e.readTensor("v-read", small.data(), small.data() + 2),
                      Contains("8 bytes") && Contains("12"));
  e.writeTensor("v", buf.data(), buf.data() + 3);
  REQUIRE(readBack<float>(e, "v", 3) == buf);
}

TEST_CASE("running before loading, a bad program index and a missing device", "[error][engine]") {
  Graph g = makeGraph();
  Tensor x = scalar(g, INT, "x");
  Engine e(g, {Sequence(), Copy(constant(g, INT, 9), x)});
  REQUIRE_THROWS_AS(e.run(0), aspen::runtime_error);
  REQUIRE_THROWS_WITH(e.run(0), Contains("not loaded"));
  std::vector<int> host(1);
  REQUIRE_THROWS_WITH(e.readTensor("x-read", host.data(), host.data() + 1), Contains("not loaded"));
  REQUIRE_THROWS_AS(e.load(Device()), aspen::error);
  REQUIRE_THROWS_WITH(e.load(Device()), Contains("no device"));
  e.load(deviceFor(g));
  REQUIRE_THROWS_AS(e.run(2), control_program_error);
  REQUIRE_THROWS_WITH(e.run(2), Contains("2 programs"));
  e.run(1);
  REQUIRE(readBack<int>(e, "x", 1)[0] == 9);
}

TEST_CASE("a stream used with nothing connected is named", "[error][engine]") {
  Graph g = makeGraph();
  Tensor x = g.addVariable(FLOAT, {2}, "x");
  g.setTileMapping(x, 0);
  DataStream in = g.addHostToDeviceFIFO("feed", FLOAT, 2);
  Engine e(g, Copy(in, x));
  e.load(deviceFor(g));
  REQUIRE_THROWS_AS(e.run(), stream_connection_error);
  REQUIRE_THROWS_WITH(e.run(), Contains("'feed'") && Contains("nothing is connected"));
  REQUIRE_THROWS_WITH(e.connectStream("food", nullptr), Contains("'food'") && Contains("'feed'"));
  std::vector<float> data = {1, 2};
  e.connectStream("feed", data.data());
  REQUIRE_NOTHROW(e.run());
}

TEST_CASE("unknown Aspen options are errors naming the key", "[error][engine]") {
  Graph g = makeGraph();
  REQUIRE_THROWS_AS(Engine(g, Sequence(), {{"aspen.cpu.thread", "2"}}), invalid_option);
  REQUIRE_THROWS_WITH(Engine(g, Sequence(), {{"aspen.cpu.thread", "2"}}),
                      Contains("aspen.cpu.thread") && Contains("aspen.cpu.threads"));
  REQUIRE_THROWS_WITH(Engine(g, Sequence(), {{"aspen.cpu.threads", "zero"}}),
                      Contains("aspen.cpu.threads") && Contains("zero"));
  REQUIRE_NOTHROW(Engine(g, Sequence(), {{"aspen.cpu.threads", "2"}}));
}

TEST_CASE("too many bytes on one tile is an allocation error naming the tile", "[error][engine]") {
  Graph g(Target::createGeneric(4, 6, 4096));
  Tensor v = g.addVariable(FLOAT, {2000}, "v");
  g.setTileMapping(v.slice(0, 500), 0);     // 2000 bytes
  g.setTileMapping(v.slice(500, 2000), 3);  // then 1400 floats remain here: 5600 bytes
  g.setTileMapping(v.slice(1900, 2000), 2); // 400 bytes
  g.createHostRead("v", v);
  REQUIRE_THROWS_AS(Engine(g, Sequence()), graph_memory_allocation_error);
  REQUIRE_THROWS_WITH(Engine(g, Sequence()),
                      Contains("tile 3") && Contains("5600 bytes") && Contains("4096"));
  g.setTileMapping(v.slice(500, 1500), 1); // tile 1: 4000 bytes, tile 3: 1600
  REQUIRE_NOTHROW(Engine(g, Sequence()));
}

TEST_CASE("a Switch control must be integral and an If predicate a scalar", "[error][engine]") {
  Graph g = makeGraph();
  Tensor f = scalar(g, FLOAT, "f");
  Tensor pair = g.addVariable(INT, {2}, "pair");
  g.setTileMapping(pair, 0);
  REQUIRE_THROWS_AS(Switch(f, Sequence()), control_program_error);
  REQUIRE_THROWS_AS(If(pair, Sequence(), Sequence()), control_program_error);
  REQUIRE_NOTHROW(Engine(g, If(f, Sequence(), Sequence())));
}
