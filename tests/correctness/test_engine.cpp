// Engine and Executable: several programs, compiled executables and their serialised form,
// the profile summary, and engine options.
#include "correctness/ProgramTestUtils.hpp"

#include <aspen/Error.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>

using namespace aspen;
using namespace aspen::program;
using namespace progtest;

namespace {
// x (4 floats) = c * 2 + 0.5 from a constant; program 1 adds a stream write; program 2 prints.
struct SmallGraph {
  Graph g = makeGraph();
  Tensor c = g.addConstant<float>(FLOAT, {4}, {1, 2, 3, 4}, "c");
  Tensor x = g.addVariable(FLOAT, {4}, "x");
  Tensor n = scalar(g, INT, "n");
  DataStream out = g.addDeviceToHostFIFO("out", FLOAT, 4);
  ComputeSet cs = g.addComputeSet("scale");
  ComputeSet inc = g.addComputeSet("inc");
  std::vector<Program> programs;
  SmallGraph() {
    g.setTileMapping(c, 0);
    g.setTileMapping(x, 1);
    g.createHostRead("x-read", x);
    VertexRef v = g.addVertex(cs, "Scale", {{"in", c}, {"out", x}});
    g.setInitialValue(v["factor"], 2.0f);
    g.setInitialValue(v["offset"], 0.5f);
    g.setTileMapping(v, 1);
    g.setTileMapping(g.addVertex(inc, "Increment", {{"x", n}}), 0);
    programs = {Execute(cs), Sequence({Execute(cs), Copy(x.reverse(0), out), Execute(inc)}),
                PrintTensor("x", x)};
  }
};
} // namespace

TEST_CASE("an engine runs each of several programs by index", "[correctness][engine]") {
  SmallGraph sg;
  int steps = 0, total = 0;
  Engine e(sg.g, sg.programs, {}, [&](int step, int t) {
    ++steps;
    total = t;
    REQUIRE(step <= t);
  });
  REQUIRE(steps == total);
  REQUIRE(total > 0);
  e.loadAndRun(deviceFor(sg.g), 0);
  REQUIRE(readBack<float>(e, "x", 4) == std::vector<float>{2.5f, 4.5f, 6.5f, 8.5f});
  std::vector<float> out(4);
  e.connectStream("out", out.data());
  e.run(1);
  e.run(1);
  REQUIRE(out == std::vector<float>{8.5f, 6.5f, 4.5f, 2.5f});
  REQUIRE(readBack<int>(e, "n", 1)[0] == 2);
}

TEST_CASE("an Executable survives serialisation with codelets and constants",
          "[correctness][engine][executable]") {
  std::stringstream bytes;
  {
    SmallGraph sg;
    Executable exe = compileGraph(sg.g, sg.programs);
    exe.serialize(bytes);
  } // the graph and its codelet library handles are gone
  Executable loaded = Executable::deserialize(bytes);
  Engine e(std::move(loaded));
  e.load(aspen::test::deviceFor(Target::createGeneric(4)));
  std::ostringstream printed;
  e.setPrintStream(printed);
  std::vector<float> out(4);
  e.connectStream("out", out.data());
  writeIn<int>(e, "n", {40});
  e.run(1);
  e.run(2);
  REQUIRE(out == std::vector<float>{8.5f, 6.5f, 4.5f, 2.5f});
  REQUIRE(readBack<float>(e, "x", 4) == std::vector<float>{2.5f, 4.5f, 6.5f, 8.5f});
  REQUIRE(readBack<int>(e, "n", 1)[0] == 41);
  REQUIRE(printed.str() == "x: [2.5000000 4.5000000 6.5000000 8.5000000]\n");
}

TEST_CASE("a damaged executable stream raises serialization_error", "[correctness][engine][executable]") {
  SmallGraph sg;
  std::stringstream bytes;
  compileGraph(sg.g, sg.programs).serialize(bytes);
  const std::string whole = bytes.str();
  std::stringstream truncated(whole.substr(0, whole.size() / 2));
  REQUIRE_THROWS_AS(Executable::deserialize(truncated), serialization_error);
  std::string badMagic = whole;
  badMagic[0] = 'X';
  std::stringstream bad(badMagic);
  REQUIRE_THROWS_WITH(Executable::deserialize(bad), Catch::Contains("magic"));
  std::string newer = whole;
  newer[8] = 99; // format version
  std::stringstream future(newer);
  REQUIRE_THROWS_WITH(Executable::deserialize(future), Catch::Contains("version 99"));

  // Bytes after the executable, under a checksum that matches them (as a file written by a
  // careless tool would have): refused, not ignored. The checksum is 64-bit FNV-1a of the body's
  // length (8 bytes, little-endian) and then the body.
  const auto fnv1a = [](const std::string &body) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned i = 0; i < 8; ++i)
      h = (h ^ ((std::uint64_t(body.size()) >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    for (unsigned char c : body)
      h = (h ^ c) * 0x100000001b3ull;
    return h;
  };
  const std::size_t header = 12, trailer = 8;
  REQUIRE(fnv1a(whole.substr(header, whole.size() - header - trailer)) ==
          [&] {
            std::uint64_t stored = 0;
            std::memcpy(&stored, whole.data() + whole.size() - trailer, trailer);
            return stored;
          }());
  std::string padded = whole.substr(0, whole.size() - trailer) + std::string(5, '\0');
  const std::uint64_t checksum = fnv1a(padded.substr(header));
  padded.append(reinterpret_cast<const char *>(&checksum), trailer);
  std::stringstream extra(padded);
  REQUIRE_THROWS_WITH(Executable::deserialize(extra),
                      Catch::Contains("5 bytes follow the executable"));
}

TEST_CASE("the profile summary reports memory, compute sets, vertices and execution",
          "[correctness][engine][profile]") {
  SmallGraph sg;
  Engine e(sg.g, sg.programs);
  e.load(deviceFor(sg.g));
  std::vector<float> out(4);
  e.connectStream("out", out.data());
  e.run(0);
  e.run(1);
  std::ostringstream summary;
  e.printProfileSummary(summary, {{"showExecutionSteps", "true"}});
  const std::string s = summary.str();
  // Variables: c (16 bytes), x (16), n (4); tile 0 holds c and n, tile 1 holds x.
  REQUIRE_THAT(s, Catch::Contains("Memory Usage:"));
  REQUIRE_THAT(s, Catch::Contains("Total variable bytes:       36"));
  REQUIRE_THAT(s, Catch::Contains("max 20 bytes (tile 0), mean 9.0 bytes over 4 tiles"));
  REQUIRE_THAT(s, Catch::Contains("Compute sets: 2"));
  REQUIRE_THAT(s, Catch::Contains("Vertices: 2"));
  REQUIRE_THAT(s, Catch::Contains("Scale: 1"));
  REQUIRE_THAT(s, Catch::Contains("Execution:"));
  REQUIRE_THAT(s, Catch::Contains("Program runs: 2"));
  REQUIRE_THAT(s, Catch::Contains("Total cycles:"));
  REQUIRE_THAT(s, Catch::Contains("Stream transfers: 1 calls, 16 bytes"));
  REQUIRE_THAT(s, Catch::Contains("Rearrangement bytes moved: 0"));
  REQUIRE_THAT(s, Catch::Matches("(.|\n)*scale: [0-9.]+ s, 2 calls(.|\n)*"));
  REQUIRE_THAT(s, Catch::Contains("Execution steps"));
  REQUIRE_THAT(s, Catch::Contains("TensorToStream 'out'"));

  e.resetExecutionProfile();
  std::ostringstream after;
  e.printProfileSummary(after);
  REQUIRE_THAT(after.str(), Catch::Contains("Program runs: 0"));
  REQUIRE_THAT(after.str(), !Catch::Contains("Execution steps"));
}

TEST_CASE("engine options: Poplar keys accepted, unknown ones refused, environment defaults",
          "[correctness][engine][options]") {
  SmallGraph sg;
  REQUIRE_NOTHROW(Engine(sg.g, sg.programs,
                         {{"debug.instrument", "true"}, {"autoReport.all", "true"},
                          {"exchange.streamBufferOverlap", "none"}, {"debug.trace", "false"},
                          {"target.deterministicWorkers", "portable"},
                          {"opt.internalExchangeOptimisationTarget", "cycles"},
                          {"streamCallbacks.numWorkerThreads", "auto"},
                          {"aspen.cpu.threads", "3"}}));
  // A key Poplar does not define either is an error naming it, as in Poplar (a typo must not
  // silently do nothing), also through the environment.
  REQUIRE_THROWS_AS(Engine(sg.g, sg.programs, {{"target.somethingElse", "1"}}), invalid_option);
  REQUIRE_THROWS_WITH(Engine(sg.g, sg.programs, {{"debug.instrumnt", "true"}}),
                      Catch::Contains("'debug.instrumnt'") &&
                          Catch::Contains("debug.allowOutOfMemory"));
  ::setenv("POPLAR_ENGINE_OPTIONS", R"({"autoReport.al": "true"})", 1);
  REQUIRE_THROWS_WITH(Engine(sg.g, sg.programs), Catch::Contains("'autoReport.al'"));
  ::unsetenv("POPLAR_ENGINE_OPTIONS");
  ::setenv("ASPEN_ENGINE_OPTIONS", R"({"aspen.cpu.workerOrder": "reverse", "debug.instrument": true})", 1);
  REQUIRE_NOTHROW(Engine(sg.g, sg.programs));
  ::setenv("ASPEN_ENGINE_OPTIONS", R"({"aspen.cpu.workerOrder": "sideways"})", 1);
  REQUIRE_THROWS_AS(Engine(sg.g, sg.programs), invalid_option);
  ::setenv("ASPEN_ENGINE_OPTIONS", "{not json", 1);
  REQUIRE_THROWS_WITH(Engine(sg.g, sg.programs), Catch::Contains("ASPEN_ENGINE_OPTIONS"));
  // The strict JSON reader: numbers are their text, structures and trailing commas are errors.
  ::setenv("ASPEN_ENGINE_OPTIONS", R"({"aspen.cpu.threads": 2})", 1);
  REQUIRE_NOTHROW(Engine(sg.g, sg.programs));
  ::setenv("ASPEN_ENGINE_OPTIONS", R"({"aspen.cpu.threads": [2]})", 1);
  REQUIRE_THROWS_WITH(Engine(sg.g, sg.programs),
                      Catch::Contains("ASPEN_ENGINE_OPTIONS") &&
                          Catch::Contains("'aspen.cpu.threads'") &&
                          Catch::Contains("a string, a number or a boolean"));
  ::setenv("ASPEN_ENGINE_OPTIONS", R"({"aspen.cpu.threads": "2",})", 1);
  REQUIRE_THROWS_WITH(Engine(sg.g, sg.programs), Catch::Contains("ASPEN_ENGINE_OPTIONS"));
  ::setenv("ASPEN_ENGINE_OPTIONS", R"(["aspen.cpu.threads"])", 1);
  REQUIRE_THROWS_WITH(Engine(sg.g, sg.programs), Catch::Contains("a JSON object of options"));
  ::unsetenv("ASPEN_ENGINE_OPTIONS");
}

TEST_CASE("debug.allowOutOfMemory lets an over-full tile compile", "[correctness][engine][options]") {
  Graph g(Target::createGeneric(2, 6, 1024));
  Tensor big = g.addVariable(FLOAT, {300}, "big");
  g.setTileMapping(big, 1);
  g.createHostRead("big", big);
  REQUIRE_THROWS_AS(Engine(g, Sequence()), graph_memory_allocation_error);
  Engine e(g, Sequence(), {{"debug.allowOutOfMemory", "true"}});
  e.load(aspen::test::deviceFor(g.getTarget()));
  std::vector<float> v(300, 1);
  e.readTensor("big", v.data(), v.data() + v.size());
  REQUIRE(v == std::vector<float>(300, 0)); // memory reads as zero before the first write
}
