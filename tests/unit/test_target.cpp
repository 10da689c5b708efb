// Targets, devices, option flags, tile maps and the linear mapping.
#include "support/LinearMapping.hpp"
#include "support/OptionParsing.hpp"
#include "core/TileMap.hpp"

#include <aspen/Device.hpp>
#include <aspen/Error.hpp>
#include <aspen/Target.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <random>

using namespace aspen;

TEST_CASE("named targets report Poplar's and the GPUs' numbers", "[unit][target]") {
  const Target ipu2 = Target::createModel("ipu2");
  REQUIRE(ipu2.getNumTiles() == 1472);
  REQUIRE(ipu2.getNumWorkerContexts() == 6);
  REQUIRE(ipu2.getBytesPerTile() == 624 * 1024);
  REQUIRE(ipu2.getExchangeBytesPerCycle() == 4);
  REQUIRE(ipu2.getVectorWidth(FLOAT) == 2);
  REQUIRE(ipu2.getVectorWidth(HALF) == 4);
  REQUIRE(Target::createModel("ipu1").getNumTiles() == 1216);
  REQUIRE(Target::createIPUTarget(2, "ipu2").getNumTiles() == 2944);
  REQUIRE(Target::createIPUTarget(1, 16, "ipu2").getNumTiles() == 16);
  REQUIRE(Target::createIPUTarget(1, "ipu2").getTargetType() == TargetType::IPU);
  REQUIRE(Target::createIPUModelTarget(2, 4, "ipu1").getTargetType() == TargetType::IPU_MODEL);
  REQUIRE(Target::createIPUModelTarget(2, 4, "ipu1").getNumIPUs() == 2);
  const Target h200 = Target::createModel("h200");
  REQUIRE(h200.getNumTiles() == 132);
  REQUIRE(h200.isGpu());
  REQUIRE(h200.getGpuProperties().computeCapabilityMajor == 9);
  REQUIRE(h200.getVectorWidth(FLOAT) == 4);
  REQUIRE(Target::createGeneric(7).getNumTiles() == 7);
  REQUIRE_THROWS_WITH(Target::createModel("ipu9"), Catch::Contains("ipu9") && Catch::Contains("h200"));
  REQUIRE_THROWS_AS(Target::createGeneric(0), invalid_option);
}

TEST_CASE("devices: CPU, models and virtual devices", "[unit][device]") {
  Device cpu = Device::createCPUDevice();
  REQUIRE(cpu.getTarget().getNumTiles() == 1);
  REQUIRE(cpu.attach());
  Device model = Device::createModelDevice(Target::createModel("ipu2"));
  Device small = model.createVirtualDevice(4);
  REQUIRE(small.getTarget().getNumTiles() == 4);
  REQUIRE(small.getKind() == DeviceKind::Model);
  REQUIRE_THROWS_AS(model.createVirtualDevice(5000), invalid_option);
  Device none;
  REQUIRE_FALSE(none.attach());
  REQUIRE_THROWS_AS(none.getTarget(), aspen::error);
  Device moved = std::move(model);
  REQUIRE(moved.getTarget().getName() == "ipu2");
}

TEST_CASE("option flags keep insertion order and replace on set", "[unit][options]") {
  OptionFlags flags{{"a", "1"}, {"b", "2"}};
  flags.set("a", "3");
  std::vector<std::pair<std::string, std::string>> seen(flags.begin(), flags.end());
  REQUIRE(seen == std::vector<std::pair<std::string, std::string>>{{"a", "3"}, {"b", "2"}});
  REQUIRE(flags.at("b") == "2");
  REQUIRE_THROWS_AS(flags.at("c"), invalid_option);

  bool flag = false;
  unsigned count = 0;
  enum class Mode { Fast, Slow } mode = Mode::Fast;
  detail::OptionSpec spec("test");
  spec.boolean("flag", flag).unsignedInteger("count", count, 1, 8).enumeration(
      "mode", mode, {{"fast", Mode::Fast}, {"slow", Mode::Slow}});
  spec.parse({{"flag", "true"}, {"count", "8"}, {"mode", "slow"}});
  REQUIRE(flag);
  REQUIRE(count == 8);
  REQUIRE(mode == Mode::Slow);
  REQUIRE_THROWS_WITH(spec.parse({{"count", "9"}}), Catch::Contains("count") && Catch::Contains("[1, 8]"));
  REQUIRE_THROWS_WITH(spec.parse({{"mode", "medium"}}), Catch::Contains("fast, slow"));
  REQUIRE_THROWS_WITH(spec.parse({{"colour", "red"}}), Catch::Contains("'colour' is not known"));
  REQUIRE_NOTHROW(spec.parse({{"colour", "red"}}, false));
}

TEST_CASE("tile maps agree with a per-element model under random assignments", "[unit][mapping]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const std::size_t n = 1 + rng() % 200;
    detail::TileMap map;
    std::vector<unsigned> model(n, kInvalidId);
    for (int k = 0; k < 20; ++k) {
      std::size_t b = rng() % n, e = rng() % (n + 1);
      if (b > e)
        std::swap(b, e);
      const unsigned tile = rng() % 5;
      map.assign(b, e, tile);
      for (std::size_t i = b; i < e; ++i)
        model[i] = tile;
    }
    std::size_t firstUnmapped = n;
    for (std::size_t i = 0; i < n; ++i) {
      REQUIRE(map.tileOf(i) == model[i]);
      if (model[i] == kInvalidId && firstUnmapped == n)
        firstUnmapped = i;
    }
    REQUIRE(map.firstUnmapped(n) == firstUnmapped);
    // forEachRun over a random range gives consecutive pieces that agree with the model.
    std::size_t from = rng() % n, to = rng() % (n + 1);
    if (from > to)
      std::swap(from, to);
    std::size_t next = from;
    map.forEachRun(from, to, [&](std::size_t b, std::size_t e, unsigned tile) {
      REQUIRE(b == next);
      REQUIRE(b < e);
      for (std::size_t i = b; i < e; ++i)
        REQUIRE(model[i] == tile);
      next = e;
    });
    REQUIRE(next == to);
    std::size_t covered = 0;
    for (const auto &run : map.runs())
      for (std::size_t i = run.begin; i < run.end; ++i, ++covered)
        REQUIRE(model[i] == run.tile);
    REQUIRE(covered == static_cast<std::size_t>(std::count_if(model.begin(), model.end(), [](unsigned t) {
              return t != kInvalidId;
            })));
  }
}

TEST_CASE("linear mapping follows PopLibs: equal whole-grain shares, the last tile short",
          "[unit][mapping]") {
  struct Case {
    unsigned tiles;
    std::size_t n, grain, minElements, share;
  };
  // share = max(ceil(n / tiles), minElements) rounded up to the grain, worked out by hand.
  for (const Case c : {Case{1472, 100, 2, 32, 32}, Case{16, 1000, 2, 32, 64},
                       Case{16, 100003, 2, 32, 6252}, Case{4, 7, 1, 0, 2}, Case{3, 1, 4, 0, 4}}) {
    const auto ranges = detail::linearMapping(c.tiles, c.n, c.grain, c.minElements);
    REQUIRE(ranges.size() == (c.n + c.share - 1) / c.share);
    REQUIRE(ranges.size() <= c.tiles);
    std::size_t next = 0;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      REQUIRE(ranges[i].tile == i);
      REQUIRE(ranges[i].begin == next);
      REQUIRE(ranges[i].end == std::min(c.n, next + c.share));
      next = ranges[i].end;
    }
    REQUIRE(next == c.n);
  }
}
