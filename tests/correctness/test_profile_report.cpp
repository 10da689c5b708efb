// The profile report (printProfileSummary with aspen.format = json, trace, html; engine option
// autoReport.*): every number checked against what the graph was built to have, worked out by
// hand below, and the out-of-memory error's list of live tensors.
#include "TestDevice.hpp"
#include "TestPaths.hpp"

#include "support/Json.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

using namespace aspen;
namespace json = aspen::support::json;

namespace {

// Two tiles, 6 workers, 4 KiB a tile.
//   a   float[8]: a[0:6] on tile 0, a[6:8] on tile 1; host write (always live)
//   tmp float[8]: tile 1; written by 'scale', read by 'scale2' (reusable, live between them)
//   out float[8]: out[0:4] on tile 0, out[4:8] on tile 1; host read (always live)
// Program 0: Repeat(3, {Execute 'scale' (tmp = a*2, estimate 1000 cycles, 16 flops),
//                       Execute 'scale2' (out = tmp*2, estimate 400 cycles, 8 flops)}),
//            Copy out -> a.
struct Fixture {
  Target target = Target::createGeneric(2, 6, 4096);
  Graph graph{target};
  program::Sequence program;

  explicit Fixture(const std::string &secondName = "scale2") {
    graph.addCodelets(aspen::test::codelet("prog_basic.cpp"));
    Tensor a = graph.addVariable(FLOAT, {8}, "a");
    Tensor tmp = graph.addVariable(FLOAT, {8}, "tmp");
    Tensor out = graph.addVariable(FLOAT, {8}, "out");
    graph.setTileMapping(a.slice(0, 6), 0);
    graph.setTileMapping(a.slice(6, 8), 1);
    graph.setTileMapping(tmp, 1);
    graph.setTileMapping(out.slice(0, 4), 0);
    graph.setTileMapping(out.slice(4, 8), 1);
    graph.createHostWrite("a", a);
    graph.createHostRead("out", out);
    const auto scale = [&](const std::string &name, Tensor in, Tensor result, unsigned tile,
                           std::uint64_t cycles, std::uint64_t flops) {
      ComputeSet cs = graph.addComputeSet(name);
      VertexRef v = graph.addVertex(cs, "Scale", {{"in", in}, {"out", result}});
      graph.setInitialValue(v["factor"], 2.0f);
      graph.setInitialValue(v["offset"], 0.0f);
      graph.setTileMapping(v, tile);
      graph.setPerfEstimate(v, cycles, flops);
      return cs;
    };
    ComputeSet first = scale("scale", a, tmp, 1, 1000, 16);
    ComputeSet second = scale(secondName, tmp, out, 0, 400, 8);
    program.add(program::Repeat(3, program::Sequence({program::Execute(first),
                                                      program::Execute(second)})));
    program.add(program::Copy(out, a));
  }
};

json::Value reportOf(const Engine &engine, OptionFlags options = {}) {
  options.set("aspen.format", "json");
  std::ostringstream out;
  engine.printProfileSummary(out, options);
  return json::parse(out.str(), "the profile report");
}

const json::Value &at(const json::Value &v, const char *key) {
  const json::Value *member = v.find(key);
  INFO("member " << key);
  REQUIRE(member);
  return *member;
}
std::uint64_t unsignedAt(const json::Value &v, const char *key) {
  const auto n = at(v, key).asUnsigned();
  REQUIRE(n);
  return *n;
}
double doubleAt(const json::Value &v, const char *key) { return at(v, key).asDouble(); }

const json::Value &computeSetNamed(const json::Value &report, const std::string &name) {
  for (const json::Value &cs : at(report, "computeSets").asArray())
    if (at(cs, "name").asString() == name)
      return cs;
  FAIL("no compute set " << name);
  throw;
}

} // namespace

TEST_CASE("the JSON profile report has the graph's memory, estimates and measured runs",
          "[correctness][profile]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Fixture f;
  Engine engine(f.graph, f.program, {{"autoReport.executionProfileProgramRunCount", "2"}});
  {
    const json::Value before = reportOf(engine);
    CHECK(at(before, "load").isNull());
    CHECK(unsignedAt(at(before, "execution"), "runs") == 0);
    CHECK(at(at(before, "timeline"), "events").asArray().empty());
  }
  engine.load(aspen::test::deviceFor(f.target));
  const std::vector<float> a(8, 1.0f);
  engine.writeTensor("a", a.data(), a.data() + a.size());
  for (int run = 0; run < 3; ++run)
    engine.run(0);
  const json::Value report = reportOf(engine);
  CHECK(at(report, "schema").asString() == "aspen.profile/1");

  const json::Value &target = at(report, "target");
  CHECK(unsignedAt(target, "tiles") == 2);
  CHECK(unsignedAt(target, "bytesPerTile") == 4096);
  const double clock = doubleAt(target, "clockHz");
  CHECK(clock == f.target.getTileClockFrequency());

  // Tile 0: a[0:6] 24 + out[0:4] 16 = 40 bytes; tile 1: a[6:8] 8 + tmp 32 + out[4:8] 16 = 56.
  const json::Value &memory = at(report, "memory");
  CHECK(unsignedAt(memory, "variableBytes") == 96);
  CHECK(unsignedAt(memory, "tilesUsed") == 2);
  const json::Value &perTile = at(memory, "perTile");
  CHECK(unsignedAt(perTile, "min") == 40);
  CHECK(unsignedAt(perTile, "max") == 56);
  CHECK(unsignedAt(perTile, "maxTile") == 1);
  CHECK(unsignedAt(perTile, "total") == 96);
  CHECK(doubleAt(perTile, "mean") == 48.0);
  const auto &tileBytes = at(memory, "tileBytes").asArray();
  REQUIRE(tileBytes.size() == 2);
  CHECK(tileBytes[0].asUnsigned() == 40u);
  CHECK(tileBytes[1].asUnsigned() == 56u);
  // tmp is the only variable that is not always live, and it holds a value at tile 1's peak.
  const auto &peaks = at(memory, "tilePeakBytes").asArray();
  CHECK(peaks[0].asUnsigned() == 40u);
  CHECK(peaks[1].asUnsigned() == 56u);

  // Liveness: the arena holds tmp's 32 bytes from 'scale' to 'scale2' and not at the copy.
  const auto &liveness = at(memory, "liveness").asArray();
  REQUIRE(liveness.size() == 1);
  const auto &steps = at(liveness[0], "steps").asArray();
  std::optional<std::uint64_t> atScale, atScale2, atCopy;
  for (const json::Value &s : steps) {
    const std::string &name = at(s, "step").asString();
    if (name == "Execute 'scale'")
      atScale = unsignedAt(s, "bytes");
    else if (name == "Execute 'scale2'")
      atScale2 = unsignedAt(s, "bytes");
    else if (name.rfind("Copy", 0) == 0)
      atCopy = unsignedAt(s, "bytes");
  }
  REQUIRE(atScale);
  REQUIRE(atScale2);
  REQUIRE(atCopy);
  CHECK(*atScale == *atCopy + 32);
  CHECK(*atScale2 == *atCopy + 32);
  CHECK(*atCopy >= 64); // a and out, always live

  // Estimates: 1000 and 400 cycles at the tile clock; the copy moves out's 32 bytes at the
  // exchange rate of both tiles; the program runs the loop body 3 times.
  const json::Value &scale = computeSetNamed(report, "scale");
  CHECK(doubleAt(scale, "estimatedSeconds") == Approx(1000 / clock).epsilon(1e-12));
  CHECK(unsignedAt(scale, "flops") == 16);
  CHECK(unsignedAt(scale, "calls") == 9);
  CHECK(unsignedAt(scale, "vertices") == 1);
  CHECK(unsignedAt(scale, "tiles") == 1);
  const double copySeconds = 32.0 / (f.target.getExchangeBytesPerCycle() * 2 * clock);
  CHECK(doubleAt(at(report, "copies"), "estimatedSeconds") == Approx(copySeconds).epsilon(1e-12));
  CHECK(unsignedAt(at(report, "copies"), "calls") == 3);
  const auto &programs = at(report, "programs").asArray();
  REQUIRE(programs.size() == 1);
  CHECK(doubleAt(programs[0], "estimatedSeconds") ==
        Approx(3 * 1400 / clock + copySeconds).epsilon(1e-12));
  CHECK(unsignedAt(programs[0], "flops") == 3 * 24);
  CHECK(at(programs[0], "exactEstimate").asBool());
  CHECK(unsignedAt(programs[0], "runs") == 3);
  CHECK(unsignedAt(at(report, "vertices"), "total") == 2);
  CHECK(unsignedAt(at(at(report, "vertices"), "byType"), "Scale") == 2);

  // The timeline keeps the first 2 runs: each a program event holding 6 compute sets and a copy.
  const json::Value &timeline = at(report, "timeline");
  CHECK(unsignedAt(timeline, "recordedRuns") == 2);
  CHECK(unsignedAt(timeline, "droppedEvents") == 0);
  const auto &events = at(timeline, "events").asArray();
  REQUIRE(events.size() == 16);
  std::vector<std::pair<double, double>> runs;
  for (const json::Value &e : events)
    if (at(e, "kind").asString() == "program")
      runs.emplace_back(doubleAt(e, "start"), doubleAt(e, "start") + doubleAt(e, "duration"));
  REQUIRE(runs.size() == 2);
  const double loaded = doubleAt(at(report, "load"), "start");
  const double compiled = doubleAt(at(report, "compile"), "seconds");
  CHECK(loaded >= compiled);
  CHECK(runs[0].first >= loaded);
  int inside = 0;
  for (const json::Value &e : events) {
    if (at(e, "kind").asString() == "program")
      continue;
    const double start = doubleAt(e, "start"), end = start + doubleAt(e, "duration");
    for (const auto &[runStart, runEnd] : runs)
      inside += start >= runStart && end <= runEnd;
  }
  CHECK(inside == 14);

  // The compile passes, one after the other from time 0.
  const auto &passes = at(at(report, "compile"), "passes").asArray();
  REQUIRE(passes.size() == 10);
  CHECK(at(passes[0], "name").asString() == "verify");
  for (std::size_t i = 1; i < passes.size(); ++i)
    CHECK(doubleAt(passes[i], "start") >= doubleAt(passes[i - 1], "start"));

  // The context option lands in the report; a context that is not an object is refused.
  const json::Value withContext = reportOf(engine, {{"aspen.reportContext", R"({"run": "x"})"}});
  CHECK(at(at(withContext, "context"), "run").asString() == "x");
  std::ostringstream sink;
  CHECK_THROWS_AS(engine.printProfileSummary(sink, {{"aspen.format", "json"},
                                                    {"aspen.reportContext", "[1]"}}),
                  invalid_option);
  CHECK_THROWS_AS(engine.printProfileSummary(sink, {{"aspen.format", "json"},
                                                    {"aspen.reportContext", "{"}}),
                  invalid_option);
  CHECK_THROWS_WITH(engine.printProfileSummary(sink, {{"aspen.format", "pdf"}}),
                    Catch::Contains("aspen.format") && Catch::Contains("json"));
  CHECK_THROWS_WITH(engine.printProfileSummary(sink, {{"aspen.colour", "red"}}),
                    Catch::Contains("aspen.colour"));

  // The text summary gives the same numbers.
  std::ostringstream text;
  engine.printProfileSummary(text);
  CHECK_THAT(text.str(), Catch::Contains("Tiles used:                 2 of 2") &&
                             Catch::Contains("min 40") && Catch::Contains("72 flops a run"));
}

TEST_CASE("the Chrome trace and the HTML page are made from the report",
          "[correctness][profile]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Fixture f("<b>&'scale2'");
  Engine engine(f.graph, f.program);
  engine.load(aspen::test::deviceFor(f.target));
  engine.run(0);

  std::ostringstream traceText;
  engine.printProfileSummary(traceText, {{"aspen.format", "trace"}});
  const json::Value trace = json::parse(traceText.str(), "the trace");
  const auto &events = at(trace, "traceEvents").asArray();
  std::size_t complete = 0;
  for (const json::Value &e : events) {
    const std::string &ph = at(e, "ph").asString();
    CHECK(at(e, "pid").isNumber());
    CHECK(at(e, "tid").isNumber());
    CHECK(at(e, "name").isString());
    if (ph == "X") {
      ++complete;
      CHECK(doubleAt(e, "ts") >= 0);
      CHECK(doubleAt(e, "dur") >= 0);
    } else {
      CHECK(ph == "M");
    }
  }
  // 10 compile passes, the load, and one run: the program, 6 compute sets and the copy.
  CHECK(complete == 10 + 1 + 8);

  std::ostringstream html;
  engine.printProfileSummary(html, {{"aspen.format", "html"}});
  const std::string page = html.str();
  CHECK(page.find("__ASPEN_REPORT_JSON__") == std::string::npos);
  CHECK(page.find("<b>&'scale2'") == std::string::npos); // escaped inside the script element
  CHECK(page.find("\\u003cb\\u003e\\u0026'scale2'") != std::string::npos);
  CHECK(page.find("src=\"http") == std::string::npos); // nothing fetched
}

TEST_CASE("autoReport options write the reports into their folder", "[correctness][profile]") {
  if (aspen::test::skipOnGpuRun())
    return;
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(aspen::test::binaryDir()) / "profile-report-test";
  fs::remove_all(dir);
  const auto readJson = [](const fs::path &path) {
    std::ifstream in(path);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str(), path.string());
  };
  Fixture f;
  {
    Engine engine(f.graph, f.program,
                  {{"autoReport.all", "true"}, {"autoReport.directory", dir.string()}});
    // The graph profile exists once the engine is made.
    CHECK(unsignedAt(at(readJson(dir / "profile.json"), "execution"), "runs") == 0);
    CHECK(fs::exists(dir / "report.html"));
    engine.load(aspen::test::deviceFor(f.target));
    engine.run(0);
    engine.run(0);
  }
  // The execution profile is written when the engine goes.
  const json::Value report = readJson(dir / "profile.json");
  CHECK(unsignedAt(at(report, "execution"), "runs") == 2);
  CHECK(at(readJson(dir / "trace.json"), "traceEvents").asArray().size() > 8);
  CHECK(fs::file_size(dir / "report.html") > 1000);

  // outputGraphProfile=false keeps only the execution profile (written at the end).
  fs::remove_all(dir);
  {
    Engine engine(f.graph, f.program,
                  {{"autoReport.all", "true"}, {"autoReport.outputGraphProfile", "false"},
                   {"autoReport.directory", dir.string()}});
    CHECK_FALSE(fs::exists(dir / "profile.json"));
  }
  CHECK(fs::exists(dir / "profile.json"));

  // A folder that cannot be made is an invalid_option naming the option.
  const fs::path file = dir / "a-file";
  std::ofstream(file) << "x";
  CHECK_THROWS_WITH(Engine(f.graph, f.program,
                           {{"autoReport.outputGraphProfile", "true"},
                            {"autoReport.directory", (file / "sub").string()}}),
                    Catch::Contains("autoReport.directory"));
  CHECK_THROWS_AS(Engine(f.graph, f.program, {{"autoReport.outputGraphProfile", "maybe"}}),
                  invalid_option);
  fs::remove_all(dir);
}

TEST_CASE("out of tile memory: the error lists the largest live tensors and where they live",
          "[correctness][profile]") {
  // 256 bytes a tile. 'weights' (float [40], 160 bytes, host write: always live) and 'tmp'
  // (float [32], 128 bytes, from 'produce' to 'consume') need 288 bytes at once on tile 0.
  const Target target = Target::createGeneric(2, 6, 256);
  Graph g(target);
  g.addCodelets(aspen::test::codelet("prog_basic.cpp"));
  Tensor weights = g.addVariable(FLOAT, {40}, "weights");
  Tensor tmp = g.addVariable(FLOAT, {32}, "tmp");
  Tensor small = g.addVariable(FLOAT, {4}, "small");
  g.setTileMapping(weights, 0);
  g.setTileMapping(tmp, 0);
  g.setTileMapping(small, 1);
  g.createHostWrite("weights", weights);
  g.createHostRead("small", small);
  const auto scale = [&](const std::string &name, Tensor in, Tensor out) {
    ComputeSet cs = g.addComputeSet(name);
    VertexRef v = g.addVertex(cs, "Scale", {{"in", in}, {"out", out}});
    g.setInitialValue(v["factor"], 1.0f);
    g.setInitialValue(v["offset"], 0.0f);
    g.setTileMapping(v, 0);
    return cs;
  };
  program::Sequence prog({program::Execute(scale("produce", weights.slice(0, 32), tmp)),
                          program::Execute(scale("consume", tmp, weights.slice(0, 32)))});
  try {
    Engine engine(g, prog);
    FAIL("the graph compiled although tile 0 needs 288 of 256 bytes");
  } catch (const graph_memory_allocation_error &e) {
    const std::string message = e.what();
    INFO(message);
    CHECK_THAT(message, Catch::Contains("tile 0 needs 288 bytes"));
    CHECK_THAT(message, Catch::Contains("Its peak is at position 0 of program 0 (Execute 'produce')"));
    CHECK_THAT(message, Catch::Contains("'weights' float [40]: 160 bytes on tile 0, always live"));
    CHECK_THAT(message, Catch::Contains("'tmp' float [32]: 128 bytes on tile 0, live from position "
                                        "0 of program 0 (Execute 'produce') to position 1 of "
                                        "program 0 (Execute 'consume')"));
    CHECK(message.find("'small'") == std::string::npos); // on tile 1
    // Largest first.
    CHECK(message.find("'weights'") < message.find("'tmp'"));
  }
  // The graph is still usable: with the option it compiles.
  Engine allowed(g, prog, {{"debug.allowOutOfMemory", "true"}});
}

TEST_CASE("an engine made from an executable reports its graph without compile-time estimates",
          "[correctness][profile]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Fixture f;
  const std::vector<program::Program> programs = {f.program};
  Engine engine(compileGraph(f.graph, programs));
  const json::Value report = reportOf(engine);
  CHECK(at(report, "compile").isNull());
  CHECK(at(at(report, "programs").asArray()[0], "estimatedSeconds").isNull());
  CHECK(at(at(report, "memory"), "liveness").asArray().empty());
  // What the executable itself holds is all there.
  const auto &tileBytes = at(at(report, "memory"), "tileBytes").asArray();
  REQUIRE(tileBytes.size() == 2);
  CHECK(tileBytes[0].asUnsigned() == 40u);
  CHECK(tileBytes[1].asUnsigned() == 56u);
  CHECK(unsignedAt(computeSetNamed(report, "scale"), "estimatedCycles") == 1000);
}

TEST_CASE("POPLAR_ENGINE_OPTIONS turns the reports on as the engine options do",
          "[correctness][profile]") {
  if (aspen::test::skipOnGpuRun())
    return;
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(aspen::test::binaryDir()) / "profile-report-env-test";
  fs::remove_all(dir);
  // Sets the variable for this test and puts back what was there.
  struct ScopedEnvironment {
    std::optional<std::string> old;
    explicit ScopedEnvironment(const std::string &value) {
      if (const char *v = std::getenv("POPLAR_ENGINE_OPTIONS"))
        old = v;
      setenv("POPLAR_ENGINE_OPTIONS", value.c_str(), 1);
    }
    ~ScopedEnvironment() {
      if (old)
        setenv("POPLAR_ENGINE_OPTIONS", old->c_str(), 1);
      else
        unsetenv("POPLAR_ENGINE_OPTIONS");
    }
  } environment(R"({"autoReport.all": true, "autoReport.directory": ")" + dir.string() + "\"}");
  Fixture f;
  {
    Engine engine(f.graph, f.program);
    engine.load(aspen::test::deviceFor(f.target));
    engine.run(0);
  }
  std::ifstream in(dir / "profile.json");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const json::Value report = json::parse(text.str(), "profile.json");
  CHECK(unsignedAt(at(report, "execution"), "runs") == 1);
  CHECK(fs::exists(dir / "trace.json"));
  CHECK(fs::exists(dir / "report.html"));
  fs::remove_all(dir);
}
