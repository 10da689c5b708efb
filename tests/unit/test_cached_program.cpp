// program::Cached: the body runs on the first run after load and again only after something
// else wrote what it reads or writes (a host write, another program's step, a step of the same
// program, a loop iteration), checked by the results and by the compute set's measured calls in
// the profile; the rule survives serialisation; a body with host work or one that writes what
// it reads is refused by name, and the graph stays usable.
#include "TestDevice.hpp"
#include "TestPaths.hpp"

#include "support/Json.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Executable.hpp>
#include <aspen/Graph.hpp>

#include <catch2/catch.hpp>

#include <sstream>
#include <vector>

using namespace aspen;
namespace json = aspen::support::json;

namespace {

// w [8] (host write) --pack: x2--> packed [8] --use: x3--> out [8] (host read); x [8] (host
// write) and y [8] are other variables the programs copy from.
//   program 0: packOnce = Cached(Execute pack), Execute use
//   program 1: Copy x -> w            (another program writes what the body reads)
//   program 2: Copy y -> packed       (another program writes what the body writes)
//   program 3: Repeat(3, {packOnce, Execute use})
//   program 4: Repeat(3, {Copy x -> w, Execute double (y = 2 x), Copy y -> x, packOnce,
//                         Execute use})
struct Fixture {
  Target target = Target::createGeneric(2, 6, 1 << 16);
  Graph graph{target};
  Tensor w, packed, out, x, y;
  ComputeSet pack, use;
  std::vector<program::Program> programs;

  Fixture() {
    graph.addCodelets(aspen::test::codelet("prog_basic.cpp"));
    w = variable("w", 0);
    packed = variable("packed", 1);
    out = variable("out", 0);
    x = variable("x", 1);
    y = variable("y", 1);
    graph.createHostWrite("w", w);
    graph.createHostWrite("x", x);
    graph.createHostWrite("y", y);
    graph.createHostRead("out", out);
    graph.createHostRead("packed", packed);
    graph.createHostWrite("packedIn", packed);
    pack = scale("pack", w, packed, 2.0f);
    use = scale("use", packed, out, 3.0f);
    const ComputeSet twice = scale("double", x, y, 2.0f);
    // One Cached program in three places: one step, one cache.
    const program::Cached packOnce(program::Execute(pack), "packOnce");
    programs.push_back(program::Sequence({packOnce, program::Execute(use)}));
    programs.push_back(program::Copy(x, w));
    programs.push_back(program::Copy(y, packed));
    programs.push_back(program::Repeat(
        3, program::Sequence({packOnce, program::Execute(use)})));
    programs.push_back(program::Repeat(
        3, program::Sequence({program::Copy(x, w), program::Execute(twice), program::Copy(y, x),
                              packOnce, program::Execute(use)})));
  }

  Tensor variable(const std::string &name, unsigned tile) {
    Tensor t = graph.addVariable(FLOAT, {8}, name);
    graph.setTileMapping(t, tile);
    return t;
  }

  ComputeSet scale(const std::string &name, Tensor in, Tensor result, float factor) {
    ComputeSet cs = graph.addComputeSet(name);
    VertexRef v = graph.addVertex(cs, "Scale", {{"in", in}, {"out", result}});
    graph.setInitialValue(v["factor"], factor);
    graph.setInitialValue(v["offset"], 0.0f);
    graph.setTileMapping(v, 0);
    return cs;
  }
};

// The measured calls of compute set `name` since load (the JSON profile report).
std::uint64_t callsOf(const Engine &engine, const std::string &name) {
  OptionFlags options;
  options.set("aspen.format", "json");
  std::ostringstream text;
  engine.printProfileSummary(text, options);
  const json::Value report = json::parse(text.str(), "the profile report");
  const json::Value *sets = report.find("computeSets");
  REQUIRE(sets);
  for (const json::Value &cs : sets->asArray())
    if (const json::Value *n = cs.find("name"); n && n->asString() == name) {
      const json::Value *calls = cs.find("calls");
      REQUIRE(calls);
      REQUIRE(calls->asUnsigned());
      return *calls->asUnsigned();
    }
  FAIL("no compute set " << name);
  return 0;
}

std::vector<float> values(float first, float step) {
  std::vector<float> v(8);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = first + step * float(i);
  return v;
}

void write(Engine &engine, const std::string &handle, const std::vector<float> &v) {
  engine.writeTensor(handle, v.data(), v.data() + v.size());
}

std::vector<float> read(Engine &engine, const std::string &handle) {
  std::vector<float> v(8);
  engine.readTensor(handle, v.data(), v.data() + v.size());
  return v;
}

std::vector<float> times(const std::vector<float> &v, float factor) {
  std::vector<float> r(v);
  for (float &e : r)
    e *= factor;
  return r;
}

} // namespace

TEST_CASE("a Cached body runs once until what it reads or writes is written",
          "[unit][cached]") {
  Fixture f;
  Engine engine(f.graph, f.programs);
  engine.load(aspen::test::deviceFor(f.target));
  const std::vector<float> w0 = values(1, 1), x0 = values(-4, 0.5f), y0 = values(100, 3);
  write(engine, "w", w0);
  write(engine, "x", x0);
  write(engine, "y", y0);

  engine.run(0);
  CHECK(read(engine, "out") == times(w0, 6));
  engine.run(0);
  engine.run(0);
  CHECK(read(engine, "out") == times(w0, 6));
  CHECK(callsOf(engine, "pack") == 1);
  CHECK(callsOf(engine, "use") == 3);

  SECTION("a host write of another variable, or a read, keeps it fresh") {
    write(engine, "x", values(7, 7));
    (void)read(engine, "packed");
    engine.run(0);
    CHECK(callsOf(engine, "pack") == 1);
    CHECK(read(engine, "out") == times(w0, 6));
  }
  SECTION("a host write of the bytes it already holds keeps it fresh") {
    write(engine, "w", w0);
    engine.run(0);
    CHECK(callsOf(engine, "pack") == 1);
    std::vector<float> changed = w0;
    changed[3] = -changed[3]; // one bit of one element
    write(engine, "w", changed);
    engine.run(0);
    CHECK(callsOf(engine, "pack") == 2);
    CHECK(read(engine, "out") == times(changed, 6));
  }
  SECTION("a host write of what it reads makes it stale") {
    const std::vector<float> w1 = values(-2, 0.25f);
    write(engine, "w", w1);
    engine.run(0);
    CHECK(read(engine, "out") == times(w1, 6));
    CHECK(callsOf(engine, "pack") == 2);
    engine.run(0);
    CHECK(callsOf(engine, "pack") == 2);
  }
  SECTION("a host write of what it writes makes it stale") {
    std::vector<float> junk(8, -1.0f);
    engine.writeTensor("packedIn", junk.data(), junk.data() + junk.size());
    engine.run(0);
    CHECK(read(engine, "out") == times(w0, 6));
    CHECK(callsOf(engine, "pack") == 2);
  }
  SECTION("another program's step writing what it reads makes it stale") {
    engine.run(1); // w = x
    engine.run(0);
    CHECK(read(engine, "out") == times(x0, 6));
    CHECK(callsOf(engine, "pack") == 2);
  }
  SECTION("another program's step writing what it writes makes it stale") {
    engine.run(2); // packed = y
    CHECK(read(engine, "packed") == y0);
    engine.run(0);
    CHECK(read(engine, "out") == times(w0, 6));
    CHECK(callsOf(engine, "pack") == 2);
  }
  SECTION("a fresh cache in a loop stays fresh") {
    engine.run(3);
    CHECK(callsOf(engine, "pack") == 1);
    CHECK(callsOf(engine, "use") == 6);
    CHECK(read(engine, "out") == times(w0, 6));
  }
  SECTION("a loop that writes its input each iteration recomputes it each iteration") {
    engine.run(4); // each iteration: w = x, x = 2 x, out = 6 w
    CHECK(callsOf(engine, "pack") == 4);
    CHECK(read(engine, "out") == times(x0, 4 * 6));
  }
}

TEST_CASE("a Cached body runs on the first run of every load", "[unit][cached]") {
  Fixture f;
  Engine engine(f.graph, f.programs);
  const std::vector<float> w0 = values(3, -1);
  for (std::uint64_t load = 1; load <= 2; ++load) {
    engine.load(aspen::test::deviceFor(f.target));
    write(engine, "w", w0);
    engine.run(3);
    engine.run(0);
    CHECK(read(engine, "out") == times(w0, 6));
    CHECK(callsOf(engine, "pack") == load); // the profile counts across loads
  }
}

TEST_CASE("engine option aspen.cachedSteps false runs a Cached body every time",
          "[unit][cached]") {
  Fixture f;
  Engine engine(f.graph, f.programs, {{"aspen.cachedSteps", "false"}});
  engine.load(aspen::test::deviceFor(f.target));
  const std::vector<float> w0 = values(1, 3);
  write(engine, "w", w0);
  engine.run(0);
  engine.run(3);
  CHECK(read(engine, "out") == times(w0, 6));
  CHECK(callsOf(engine, "pack") == 4);
  CHECK_THROWS_AS(Engine(f.graph, f.programs, {{"aspen.cachedSteps", "sometimes"}}),
                  invalid_option);
}

TEST_CASE("a serialised executable keeps what makes a Cached step stale", "[unit][cached]") {
  Fixture f;
  std::stringstream bytes;
  compileGraph(f.graph, f.programs).serialize(bytes);
  Engine engine(Executable::deserialize(bytes));
  engine.load(aspen::test::deviceFor(f.target));
  const std::vector<float> w0 = values(1, 2), x0 = values(5, -1);
  write(engine, "w", w0);
  write(engine, "x", x0);
  engine.run(0);
  engine.run(0);
  CHECK(callsOf(engine, "pack") == 1);
  engine.run(1); // w = x
  engine.run(0);
  CHECK(read(engine, "out") == times(x0, 6));
  CHECK(callsOf(engine, "pack") == 2);
  write(engine, "w", w0);
  engine.run(0);
  CHECK(read(engine, "out") == times(w0, 6));
  CHECK(callsOf(engine, "pack") == 3);
}

TEST_CASE("a Cached body with host work or one that writes what it reads is refused",
          "[unit][cached][error]") {
  Fixture f;
  const auto refused = [&](const program::Program &body, const std::string &what) {
    try {
      Engine engine(f.graph, program::Sequence({program::Cached(body, "badCache"),
                                                program::Execute(f.use)}));
      FAIL("compiled");
    } catch (const control_program_error &e) {
      const std::string message = e.what();
      INFO(message);
      CHECK(message.find("Cached 'badCache'") != std::string::npos);
      CHECK(message.find(what) != std::string::npos);
    }
  };
  DataStream in = f.graph.addHostToDeviceFIFO("in", FLOAT, 8);
  refused(program::Sequence({program::Copy(in, f.w), program::Execute(f.pack)}), "host");
  refused(program::Sequence({program::Execute(f.pack), program::PrintTensor("w", f.w)}),
          "host");
  Tensor counter = f.graph.addVariable(INT, {}, "counter");
  f.graph.setTileMapping(counter, 0);
  ComputeSet inc = f.graph.addComputeSet("increment");
  VertexRef v = f.graph.addVertex(inc, "Increment", {{"x", counter}});
  f.graph.setTileMapping(v, 0);
  refused(program::Execute(inc), "variable 'counter'");
  refused(program::Sequence({program::Execute(f.pack), program::Copy(f.packed, f.w)}),
          "variable 'w'");

  // The graph is still usable: a good program compiles and runs.
  Engine engine(f.graph, f.programs);
  engine.load(aspen::test::deviceFor(f.target));
  const std::vector<float> w0 = values(2, 2);
  write(engine, "w", w0);
  engine.run(0);
  CHECK(read(engine, "out") == times(w0, 6));
}
