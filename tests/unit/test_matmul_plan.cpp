// The matmul planner: plans are valid (partitions within dimensions and tiles, blocks that
// tile every dimension), in memory (the working set recomputed here from the block sizes never
// exceeds the budget), split serially exactly when no one-step plan fits (decided here by
// brute force over every partition), deterministic, cached, pinned by constraints and
// reproduced by their own constraintsJson(); plus the JSON reader they are written in.
#include "linalg/MatMulPlanner.hpp"
#include "support/Json.hpp"

#include <aspen/Error.hpp>
#include <aspen/linalg/MatMul.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace aspen;
using namespace aspen::linalg;
namespace json = aspen::support::json;

namespace {

std::uint64_t ceilDiv(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

struct Shape3 {
  std::size_t G, M, K, N;
};

MatMulParams params(Shape3 s, Type in = FLOAT, Type out = FLOAT) {
  if (s.G == 1)
    return {in, out, {s.M, s.K}, {s.K, s.N}};
  return {in, out, {s.G, s.M, s.K}, {s.G, s.K, s.N}};
}

std::uint64_t budgetOf(const Target &t, double proportion = 0.6) {
  return static_cast<std::uint64_t>(std::floor(double(t.getBytesPerTile()) * proportion));
}

// Working set of one tile per step, from block sizes (the formula of MatMulPlan.hpp).
std::uint64_t workingSet(std::uint64_t g, std::uint64_t m, std::uint64_t k, std::uint64_t n,
                         Type in, Type partials, Type out) {
  std::uint64_t bytes = in.size() * g * (m * k + k * n) + partials.size() * g * m * n;
  if (partials != out)
    bytes += out.size() * g * m * n;
  return bytes;
}

// Whether any one-step partition of the tiles fits the budget (brute force, every count).
bool oneStepFits(const Target &t, Shape3 s, Type in, Type partials, Type out,
                 std::uint64_t budget) {
  const std::uint64_t T = t.getNumTiles();
  for (std::uint64_t pg = 1; pg <= std::min<std::uint64_t>(s.G, T); ++pg)
    for (std::uint64_t pm = 1; pm <= std::min<std::uint64_t>(s.M, T / pg); ++pm)
      for (std::uint64_t pk = 1; pk <= std::min<std::uint64_t>(s.K, T / (pg * pm)); ++pk) {
        // The largest pn is the best for memory.
        const std::uint64_t pn = std::min<std::uint64_t>(s.N, T / (pg * pm * pk));
        if (workingSet(ceilDiv(s.G, pg), ceilDiv(s.M, pm), ceilDiv(s.K, pk), ceilDiv(s.N, pn), in,
                       partials, out) <= budget)
          return true;
      }
  return false;
}

// Every check that holds for any plan of s on t.
void checkPlan(const Target &t, Shape3 s, Type in, Type out, Type partials,
               const MatMulPlan &plan) {
  INFO(t.toString() << ": " << s.G << "x" << s.M << "x" << s.K << "x" << s.N << " " << in << "->"
                    << out << " partials " << partials << "\n" << plan.toString());
  CHECK(plan.G == s.G);
  CHECK(plan.M == s.M);
  CHECK(plan.K == s.K);
  CHECK(plan.N == s.N);
  CHECK(plan.partialsType == partials);
  const auto &p = plan.partition;
  const auto &q = plan.serial;
  CHECK(q.groups == 1);
  CHECK(p.groups >= 1);
  CHECK(p.groups <= s.G);
  CHECK(p.m * q.m <= s.M);
  CHECK(p.k * q.k <= s.K);
  CHECK(p.n * q.n <= s.N);
  CHECK(plan.tilesUsed == p.groups * p.m * p.k * p.n);
  CHECK(plan.tilesUsed <= t.getNumTiles());

  // Blocks: chunks of ceil(D / (p * q)) rows cover the dimension, none empty.
  for (auto [D, parts, steps] : {std::tuple{s.M, p.m, q.m}, std::tuple{s.K, p.k, q.k},
                                 std::tuple{s.N, p.n, q.n}}) {
    std::size_t next = 0;
    for (std::size_t step = 0; step < steps; ++step)
      for (std::size_t part = 0; part < parts; ++part) {
        const Interval b = linalg::detail::matMulBlock(D, parts, steps, step, part);
        CHECK(b.begin() == next);
        CHECK(b.size() >= 1);
        CHECK(b.size() <= ceilDiv(D, parts * steps));
        next = b.end();
      }
    CHECK(next == D);
  }

  const std::uint64_t budget = budgetOf(t);
  const std::uint64_t ws = workingSet(ceilDiv(s.G, p.groups), ceilDiv(s.M, p.m * q.m),
                                      ceilDiv(s.K, p.k * q.k), ceilDiv(s.N, p.n * q.n), in,
                                      partials, out);
  CHECK(plan.maxTileBytes == ws);
  CHECK(plan.maxTileBytes <= budget);
  CHECK(plan.meanTileBytes <= double(plan.maxTileBytes));
  CHECK(plan.meanTileBytes > 0);
  CHECK((plan.serialSteps() > 1) == !oneStepFits(t, s, in, partials, out, budget));
  CHECK(plan.estimatedCycles > 0);
  if (plan.tilesUsed == 1)
    CHECK(plan.exchangeBytes == 0);
}

const std::vector<Shape3> shapes2d = {
    {1, 1, 1, 1},       {1, 1, 1, 8192},     {1, 8192, 1, 1},      {1, 1, 8192, 1},
    {1, 7, 13, 5},      {1, 101, 103, 107},  {1, 1023, 1025, 1023}, {1, 1025, 1, 1023},
    {1, 1, 1024, 8192}, {1, 16, 1024, 2048}, {1, 1024, 1024, 1024}, {1, 2048, 2048, 2048},
    {1, 8192, 1, 8192}, {1, 4096, 8192, 4096}, {1, 8192, 8192, 8192}};

const std::vector<Shape3> shapesGrouped = {{2, 64, 64, 64},  {3, 17, 19, 23}, {7, 1, 1024, 1},
                                           {16, 256, 512, 128}, {64, 64, 64, 64},
                                           {64, 1024, 1024, 1024}};

void checkTarget(const Target &t) {
  struct Types {
    Type in, out, partials;
  };
  const Types types[] = {
      {FLOAT, FLOAT, FLOAT}, {HALF, HALF, FLOAT}, {HALF, HALF, HALF}, {HALF, FLOAT, FLOAT}};
  for (const auto &shapes : {shapes2d, shapesGrouped})
    for (const Shape3 &s : shapes)
      for (const Types &ty : types) {
        const MatMulPlan plan =
            planMatMul(t, params(s, ty.in, ty.out),
                       {{"partialsType", ty.partials.toString()},
                        {"planConstraints", R"({"method": "vertices"})"}});
        checkPlan(t, s, ty.in, ty.out, ty.partials, plan);
      }
}

} // namespace

TEST_CASE("matmul plans on ipu2 are valid and in memory", "[matmul][plan]") {
  checkTarget(Target::createModel("ipu2"));
}

TEST_CASE("matmul plans on h200 are valid and in memory", "[matmul][plan]") {
  checkTarget(Target::createModel("h200"));
}

TEST_CASE("matmul plans on ipu1 are valid and in memory", "[matmul][plan]") {
  checkTarget(Target::createModel("ipu1"));
}

TEST_CASE("matmul plans on 4 and 16 tiles are valid and in memory", "[matmul][plan]") {
  checkTarget(Target::createGeneric(4));
  checkTarget(Target::createGeneric(16));
}

TEST_CASE("matmul plans on the cpu target use one tile in one step", "[matmul][plan]") {
  const Target cpu = Target::createCPUTarget();
  for (const Shape3 &s : shapes2d) {
    const MatMulPlan plan = planMatMul(cpu, params(s));
    CHECK(plan.tilesUsed == 1);
    CHECK(plan.serialSteps() == 1);
    CHECK(plan.exchangeBytes == 0);
  }
}

TEST_CASE("matmul plan numbers match a hand computation", "[matmul][plan]") {
  // One tile of 6 workers, 64-bit data path: 2 float MACs per worker and cycle.
  SECTION("2x2x2 float fits in one step") {
    const MatMulPlan plan = planMatMul(Target::createGeneric(1, 6, 100), params({1, 2, 2, 2}));
    CHECK(plan.serialSteps() == 1);
    CHECK(plan.maxTileBytes == 4 * (4 + 4) + 4 * 4);
    CHECK(plan.exchangeBytes == 0);
    CHECK(plan.estimatedCycles == 1 + 100); // ceil(8 MACs / 12) + sync
  }
  SECTION("4x4x4 float on 60 bytes needs 8 steps") {
    // Blocks must satisfy 4 * (mk + kn + mn) <= 60: the fewest steps are 8, with several
    // block shapes of equal cost; the tie goes to the lexicographically smallest serial split.
    const MatMulPlan plan = planMatMul(Target::createGeneric(1, 6, 100), params({1, 4, 4, 4}));
    CHECK(plan.serialSteps() == 8);
    CHECK(plan.serial == MatMulSplit{1, 1, 2, 4});
    CHECK(plan.maxTileBytes == 4 * (4 * 2 + 2 * 1 + 4 * 1));
    CHECK(plan.meanTileBytes == Approx(56.0));
    CHECK(plan.estimatedCycles == 8 * (1 + 100));
  }
}

TEST_CASE("matmul plan exchange and reduction costs match a hand computation",
          "[matmul][plan]") {
  const Target t = Target::createGeneric(4);
  SECTION("m and n split: each tile receives one A and one B block") {
    const MatMulPlan plan = planMatMul(
        t, params({1, 8, 8, 8}),
        {{"planConstraints", R"({"partition": {"m": 2, "k": 1, "n": 2}})"}});
    CHECK(plan.serialSteps() == 1);
    CHECK(plan.tilesUsed == 4);
    // Blocks 4x8 . 8x4: every A element is read by 2 tiles, one of which holds it; same for B.
    CHECK(plan.exchangeBytes == 4 * (64 * 1 + 64 * 1));
    CHECK(plan.maxTileBytes == 4 * (32 + 32) + 4 * 16);
    CHECK(plan.meanTileBytes == Approx(320.0));
    // ceil(128 MACs / 12) + (32 + 32 elements * 4 bytes) / 4 bytes per cycle + sync.
    CHECK(plan.estimatedCycles == 11 + 64 + 100);
  }
  SECTION("k split: a reduction of the partials follows") {
    const MatMulPlan plan = planMatMul(
        t, params({1, 8, 8, 8}),
        {{"planConstraints", R"({"partition": {"m": 1, "k": 2, "n": 1}})"}});
    CHECK(plan.tilesUsed == 2);
    CHECK(plan.exchangeBytes == 4 * 64); // one 8x8 partials block moves
    CHECK(plan.maxTileBytes == 4 * (32 + 32) + 4 * 64);
    // Products: ceil(256 / 12) + sync. Reduction: each tile receives half a block (32 floats,
    // 128 bytes at 4 per cycle), adds it (ceil(32 / 12)), sync.
    CHECK(plan.estimatedCycles == (22 + 100) + (32 + 3 + 100));
  }
}

TEST_CASE("matmul plans fit a smaller availableMemoryProportion", "[matmul][plan]") {
  const Target t = Target::createModel("ipu2");
  const Shape3 s{1, 2048, 2048, 2048};
  const OptionFlags vertices{{"planConstraints", R"({"method": "vertices"})"}};
  const MatMulPlan full = planMatMul(t, params(s), vertices);
  const MatMulPlan tight = planMatMul(
      t, params(s), {{"availableMemoryProportion", "0.05"}, *vertices.begin()});
  CHECK(tight.maxTileBytes <= budgetOf(t, 0.05));
  CHECK(full.maxTileBytes > budgetOf(t, 0.05));
  CHECK(tight.serialSteps() > full.serialSteps());
}

TEST_CASE("matmul planning is deterministic and cached", "[matmul][plan]") {
  const Target ipu2 = Target::createModel("ipu2");
  const Target h200 = Target::createModel("h200");
  const MatMulParams p = params({1, 1023, 1025, 1023});
  const MatMulPlan a = planMatMul(ipu2, p);
  CHECK(a == planMatMul(ipu2, p));

  PlanningCache cache;
  CHECK(cache.size() == 0);
  CHECK(planMatMul(ipu2, p, {}, &cache) == a);
  CHECK(cache.size() == 1);
  CHECK(planMatMul(ipu2, p, {}, &cache) == a);
  CHECK(cache.size() == 1);
  planMatMul(h200, p, {}, &cache);
  CHECK(cache.size() == 2);
  // Options that change plans are part of the key; the others are not.
  planMatMul(ipu2, p, {{"availableMemoryProportion", "0.3"}}, &cache);
  CHECK(cache.size() == 3);
  planMatMul(ipu2, p, {{"fullyConnectedPass", "TRAINING_FWD"}}, &cache);
  CHECK(cache.size() == 3);
  planMatMul(ipu2, params({1, 1023, 1025, 1023}, HALF, HALF), {}, &cache);
  CHECK(cache.size() == 4);

  std::set<MatMulPlanParams> list;
  const OptionFlags none;
  list.insert({&ipu2, params({1, 16, 1024, 2048}), &none});
  list.insert({&ipu2, params({1, 16, 1024, 2048}), &none});
  list.insert({&h200, params({1, 16, 1024, 2048}), &none});
  preplanMatMuls(list, cache);
  CHECK(cache.size() == 6);
  cache.clear();
  CHECK(cache.size() == 0);
}

TEST_CASE("a planning cache shared by threads gives every thread the same plans",
          "[matmul][plan]") {
  const Target t = Target::createModel("ipu2");
  const std::vector<MatMulParams> list = {params({1, 16, 1024, 2048}), params({1, 100, 200, 300}),
                                          params({4, 64, 64, 64}), params({1, 7, 13, 5})};
  std::vector<MatMulPlan> expected;
  for (const auto &p : list)
    expected.push_back(planMatMul(t, p));
  PlanningCache cache;
  std::vector<std::vector<MatMulPlan>> got(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      for (int round = 0; round < 3; ++round)
        for (std::size_t j = 0; j < list.size(); ++j)
          got[i].push_back(planMatMul(t, list[(i + j) % list.size()], {}, &cache));
    });
  for (auto &th : threads)
    th.join();
  CHECK(cache.size() == list.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    for (std::size_t j = 0; j < got[i].size(); ++j)
      CHECK(got[i][j] == expected[(i + j) % list.size()]);
}

TEST_CASE("matmul plans on more tiles are estimated faster for a big problem",
          "[matmul][plan]") {
  std::uint64_t previous = ~std::uint64_t(0);
  for (unsigned tiles : {1u, 4u, 16u, 64u, 256u, 1024u}) {
    const MatMulPlan plan = planMatMul(Target::createGeneric(tiles), params({1, 1024, 1024, 1024}));
    INFO(tiles << " tiles\n" << plan.toString());
    CHECK(plan.estimatedCycles < previous);
    previous = plan.estimatedCycles;
  }
}

TEST_CASE("matmul plan constraints pin each part", "[matmul][plan]") {
  const Target t = Target::createModel("ipu2");
  const MatMulParams p = params({1, 1024, 1024, 1024});
  auto planWith = [&](const std::string &c, const MatMulParams &q) {
    return planMatMul(t, q, {{"planConstraints", c}});
  };
  CHECK(planWith(R"({"partition": {"m": 3}})", p).partition.m == 3);
  CHECK(planWith(R"({"partition": {"k": 4}})", p).partition.k == 4);
  CHECK(planWith(R"({"partition": {"n": 5, "m": 2}})", p).partition ==
        MatMulSplit{1, 2, planWith(R"({"partition": {"n": 5, "m": 2}})", p).partition.k, 5});
  CHECK(planWith(R"({"serial": {"k": 2}})", p).serial.k == 2);
  CHECK(planWith(R"({"serial": {"m": 2, "n": 3}})", p).serial == MatMulSplit{1, 2, 1, 3});
  CHECK(planWith(R"({"partialsType": "half"})", params({1, 64, 64, 64}, HALF, HALF))
            .partialsType == HALF);
  const MatMulParams grouped = params({16, 64, 64, 64});
  CHECK(planWith(R"({"partition": {"groups": 4}})", grouped).partition.groups == 4);
  const MatMulPlan all = planWith(
      R"({"partition": {"groups": 1, "m": 8, "k": 2, "n": 8}, "serial": {"m": 1, "k": 2, "n": 1}})",
      p);
  CHECK(all.partition == MatMulSplit{1, 8, 2, 8});
  CHECK(all.serial == MatMulSplit{1, 1, 2, 1});
  CHECK(all.estimatedCycles >= planMatMul(t, p).estimatedCycles);
}

TEST_CASE("matmul plans round-trip through constraintsJson", "[matmul][plan]") {
  for (const Target &t : {Target::createModel("ipu2"), Target::createModel("h200"),
                          Target::createGeneric(4)})
    for (const Shape3 &s : {Shape3{1, 16, 1024, 2048}, Shape3{1, 1023, 1025, 1023},
                            Shape3{8, 100, 200, 300}, Shape3{1, 8192, 8192, 8192}}) {
      const MatMulPlan plan = planMatMul(t, params(s));
      const MatMulPlan again = planMatMul(t, params(s), {{"planConstraints",
                                                          plan.constraintsJson()}});
      INFO(plan.constraintsJson());
      CHECK(again == plan);
      const json::Value full = json::parse(plan.toJson(), "toJson");
      CHECK(full.find("tilesUsed")->asUnsigned() == plan.tilesUsed);
      CHECK(full.find("estimatedCycles")->asUnsigned() == plan.estimatedCycles);
      CHECK(full.find("method")->asString() == toString(plan.method));
      if (plan.method == MatMulMethod::Vertices)
        CHECK(full.find("partition")->find("m")->asUnsigned() == plan.partition.m);
      CHECK(full.find("params")->find("K")->asUnsigned() == s.K);
    }
}

TEST_CASE("matmul library plans cost the target's peak rate plus a call", "[matmul][plan]") {
  const Target h200 = Target::createModel("h200"), ipu2 = Target::createModel("ipu2");
  const OptionFlags library{{"planConstraints", R"({"method": "library"})"}};
  // H200: 128 FP32 MACs an SM and cycle, 2048 half (tensor cores); 132 SMs; 400 cycles a call.
  const MatMulPlan f = planMatMul(h200, params({1, 4096, 4096, 4096}), library);
  CHECK(f.method == MatMulMethod::Library);
  CHECK(f.estimatedCycles == ceilDiv(4096ull * 4096 * 4096, 128 * 132) + 400);
  CHECK(f.tilesUsed == 132);
  CHECK(f.exchangeBytes == 0);
  CHECK(f.partition == MatMulSplit{});
  CHECK(f.serialSteps() == 1);
  CHECK(f.meanTileBytes == Approx(3.0 * 4 * 4096 * 4096 / 132));
  const MatMulPlan h = planMatMul(h200, params({2, 512, 256, 128}, HALF, FLOAT), library);
  CHECK(h.estimatedCycles == ceilDiv(2ull * 512 * 256 * 128, 2048 * 132) + 400);
  // ipu2: the AMP's 16 float MACs a tile and cycle on 1472 tiles.
  const MatMulPlan i = planMatMul(ipu2, params({1, 1024, 1024, 1024}), library);
  CHECK(i.estimatedCycles == ceilDiv(1024ull * 1024 * 1024, 16 * 1472) + 400);
}

TEST_CASE("the planner picks the method with fewer estimated cycles", "[matmul][plan]") {
  const OptionFlags library{{"planConstraints", R"({"method": "library"})"}};
  const OptionFlags vertices{{"planConstraints", R"({"method": "vertices"})"}};
  for (const Target &t : {Target::createModel("ipu2"), Target::createModel("h200"),
                          Target::createModel("ipu1"), Target::createGeneric(16)})
    for (const Shape3 &s : {Shape3{1, 1, 1, 1}, Shape3{1, 7, 13, 5}, Shape3{1, 64, 64, 64},
                            Shape3{1, 16, 1024, 2048}, Shape3{1, 1024, 1024, 1024},
                            Shape3{1, 64, 2048, 4096}, Shape3{8, 100, 200, 300}}) {
      const MatMulPlan chosen = planMatMul(t, params(s));
      const MatMulPlan vtx = planMatMul(t, params(s), vertices);
      INFO(t.getName() << " " << s.G << "x" << s.M << "x" << s.K << "x" << s.N << ": vertices "
                       << vtx.estimatedCycles);
      if (std::ceil(4.0 * s.G * (s.M * s.K + s.K * s.N + s.M * s.N) / t.getNumTiles()) >
          double(budgetOf(t))) { // the operands spread over all tiles do not fit: no library plan
        CHECK_THROWS_AS(planMatMul(t, params(s), library), graph_memory_allocation_error);
        CHECK(chosen == vtx);
        continue;
      }
      const MatMulPlan lib = planMatMul(t, params(s), library);
      INFO("library " << lib.estimatedCycles);
      CHECK(chosen == (lib.estimatedCycles < vtx.estimatedCycles ? lib : vtx));
    }
  // The ends: a 1x1x1 product is not worth a call; the benchmark shapes are.
  for (const Target &t : {Target::createModel("ipu2"), Target::createModel("h200")}) {
    CHECK(planMatMul(t, params({1, 1, 1, 1})).method == MatMulMethod::Vertices);
    for (const Shape3 &s : {Shape3{1, 1024, 1024, 1024}, Shape3{1, 16, 1024, 2048},
                            Shape3{1, 64, 2048, 4096}})
      CHECK(planMatMul(t, params(s)).method == MatMulMethod::Library);
  }
  // float inputs and a half output: no library takes them.
  CHECK(planMatMul(Target::createModel("h200"), params({1, 4096, 4096, 4096}, FLOAT, HALF))
            .method == MatMulMethod::Vertices);
}

TEST_CASE("matmul graph queries report the target's plan", "[matmul][plan]") {
  Graph graph(Target::createModel("ipu2"));
  const MatMulPlan plan = getMatMulPlan(graph, FLOAT, FLOAT, {8192, 8192}, {8192, 8192});
  CHECK(plan == planMatMul(graph.getTarget(), params({1, 8192, 8192, 8192})));
  CHECK(getMatMulSerialSplits(graph, FLOAT, FLOAT, {8192, 8192}, {8192, 8192}) ==
        plan.serialSteps());
  std::ostringstream report;
  matMulReportPlan(report, graph, FLOAT, FLOAT, {8192, 8192}, {8192, 8192});
  CHECK(report.str() == plan.toString());
  CHECK(report.str().find("partition") != std::string::npos);
}

TEST_CASE("json reader reads valid documents", "[json]") {
  const json::Value v = json::parse(
      " {\"a\": [1, -2.5e3, 0, true, false, null], \"s\": \"q\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9"
      "\\ud83d\\ude00\", \"o\": {}, \"e\": []}\n",
      "test");
  REQUIRE(v.isObject());
  const auto &a = v.find("a")->asArray();
  REQUIRE(a.size() == 6);
  CHECK(a[0].asUnsigned() == 1u);
  CHECK(a[1].asDouble() == -2500.0);
  CHECK(!a[1].asUnsigned());
  CHECK(a[2].asUnsigned() == 0u);
  CHECK(a[3].asBool());
  CHECK(!a[4].asBool());
  CHECK(a[5].isNull());
  CHECK(v.find("s")->asString() == "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(v.find("o")->asObject().empty());
  CHECK(v.find("e")->asArray().empty());
  CHECK(v.find("missing") == nullptr);
  CHECK(!json::parse("4.0", "t").asUnsigned());
  CHECK(json::parse("18446744073709551615", "t").asUnsigned() == ~std::uint64_t(0));
  CHECK(!json::parse("18446744073709551616", "t").asUnsigned());
  // Writing and reading again gives the same value.
  CHECK(json::parse(v.write(), "again") == v);
  CHECK(json::quote("a\"\n\x01") == "\"a\\\"\\n\\u0001\"");
}

TEST_CASE("json reader rejects invalid documents with their position", "[json]") {
  struct Bad {
    const char *text;
    const char *offset;
  };
  const Bad bad[] = {{"", "offset 0"},
                     {"{", "offset 1"},
                     {"{\"a\": 1,}", "offset 8"},
                     {"[1, 2,]", "offset 6"},
                     {"{'a': 1}", "offset 1"},
                     {"{\"a\" 1}", "offset 5"},
                     {"{\"a\": 1, \"a\": 2}", "offset 9"},
                     {"01", "offset 1"},
                     {"1.", "offset 2"},
                     {"-", "offset 1"},
                     {"1e", "offset 2"},
                     {"tru", "offset 0"},
                     {"\"abc", "offset 4"},
                     {"\"a\\x\"", "offset 3"},
                     {"\"\\u12g4\"", "offset 5"},
                     {"\"\\ude00\"", "offset 7"},
                     {"\"a\nb\"", "offset 2"},
                     {"{} x", "offset 3"},
                     {"[1] // comment", "offset 4"}};
  for (const Bad &b : bad) {
    INFO(b.text);
    try {
      json::parse(b.text, "option test");
      FAIL("accepted");
    } catch (const invalid_option &e) {
      const std::string what = e.what();
      CHECK(what.find("option test") != std::string::npos);
      CHECK(what.find(b.offset) != std::string::npos);
      CHECK(what.find("expected") != std::string::npos);
    }
  }
  const std::string deep(300, '[');
  CHECK_THROWS_AS(json::parse(deep, "deep"), invalid_option);
}
