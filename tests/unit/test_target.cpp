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

TEST_CASE("an IPU model's tile settings replace the model's numbers and are checked",
          "[unit][target]") {
  Target::IPUModelSettings settings;
  settings.tileClockFrequency = 1.33e9;
  const Target plain = Target::createIPUModelTarget(1, 4, "ipu2", settings);
  // Unset: the model's own numbers.
  REQUIRE(plain.getNumWorkerContexts() == 6);
  REQUIRE(plain.getDataPathWidth() == 64);
  REQUIRE(plain.getNumConvUnits(HALF, FLOAT) == 16);
  REQUIRE(plain.getConvUnitMaxPipelineDepth(HALF) == 16);
  REQUIRE(plain.getConvUnitMaxPipelineDepth(FLOAT) == 8);
  REQUIRE(plain == Target::createIPUModelTarget(1, 4, "ipu2", settings));

  settings.numWorkerContexts = 3;
  settings.memoryBytesPerTile = 4096;
  settings.dataPathWidth = 256;
  settings.exchangeBytesPerCycle = 16;
  const Target wide = Target::createIPUModelTarget(1, 4, "ipu2", settings);
  REQUIRE(wide.getNumWorkerContexts() == 3);
  REQUIRE(wide.getBytesPerTile() == 4096);
  REQUIRE(wide.getExchangeBytesPerCycle() == 16);
  REQUIRE(wide.getVectorWidth(FLOAT) == 8); // 256 bits of 32
  // Derived conv-unit numbers follow the wider path: 8 floats a cycle, 16 MACs / 8 = 2 units.
  REQUIRE(wide.getConvUnitInputLoadElemsPerCycle(FLOAT) == 8);
  REQUIRE(wide.getNumConvUnits(FLOAT, FLOAT) == 2);
  REQUIRE(wide != plain);

  settings.fp16InFp32OutConvUnitsPerTile = 5;
  settings.fp32ConvUnitInputLoadElemsPerCycle = 3;
  settings.fp32ConvUnitMaxPipelineDepth = 2;
  const Target set = Target::createIPUModelTarget(1, 4, "ipu2", settings);
  REQUIRE(set.getNumConvUnits(HALF, FLOAT) == 5);
  REQUIRE(set.getNumConvUnits(HALF, HALF) == wide.getNumConvUnits(HALF, HALF));
  REQUIRE(set.getConvUnitInputLoadElemsPerCycle(FLOAT) == 3);
  REQUIRE(set.getConvUnitMaxPipelineDepth(FLOAT) == 2);
  REQUIRE(set != wide);
  REQUIRE_THROWS_WITH(set.getConvUnitMaxPipelineDepth(INT),
                      Catch::Contains("getConvUnitMaxPipelineDepth") && Catch::Contains("int"));

  Target::IPUModelSettings bad = settings;
  bad.dataPathWidth = 100;
  REQUIRE_THROWS_WITH(Target::createIPUModelTarget(1, 4, "ipu2", bad),
                      Catch::Contains("dataPathWidth 100") && Catch::Contains("multiple of 32"));
  bad = settings;
  bad.fp16InFp16OutConvUnitsPerTile = 0;
  REQUIRE_THROWS_AS(Target::createIPUModelTarget(1, 4, "ipu2", bad), invalid_option);
  REQUIRE_THROWS_WITH(Target::createIPUModelTarget(1, 4, "ipu2", bad),
                      Catch::Contains("fp16InFp16OutConvUnitsPerTile is 0"));

  REQUIRE(plain.getTargetArchString() == "ipu2");
  REQUIRE(Target::createModel("h100").getTargetArchString() == "sm_90");
  REQUIRE(Target::createModel("h100").getTargetSystemString() == "h100");
  REQUIRE(Target().getTargetArchString() == "cpu");
  REQUIRE(Target::createGeneric(2).getTargetArchString() == "generic");
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
