// Host transfers between an arena's byte runs and contiguous memory: any element range of a
// transfer moves exactly its elements (what lets the CPU executor move a large transfer in parts
// on several threads), and an engine's writes and reads of large strided tensors through those
// parts give back every element in order.
#include "executors/cpu/RegionCopy.hpp"

#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

using aspen::detail::ArenaView;
using aspen::detail::Buffer;
using aspen::detail::ByteRun;
using aspen::detail::RegionList;

TEST_CASE("any element range of a gather or scatter moves exactly those elements",
          "[unit][executor][cpu]") {
  // Two buffers of 64 ints; runs: contiguous, strided, backwards and broadcast (stride 0).
  std::vector<Buffer> buffers(2);
  buffers[0].offset = 0;
  buffers[1].offset = 64 * 4;
  std::vector<std::uint8_t> arena(128 * 4);
  const auto value = [&](std::uint32_t buffer, std::int64_t index) {
    std::int32_t v;
    std::memcpy(&v, arena.data() + buffer * 256 + index * 4, 4);
    return v;
  };
  RegionList regions;
  regions.elementBytes = 4;
  regions.runs = {ByteRun{0, 4 * 3, 4, 10}, ByteRun{1, 4 * 2, 12, 5}, ByteRun{1, 4 * 60, -8, 7},
                  ByteRun{0, 4 * 40, 4, 1}};
  for (const ByteRun &r : regions.runs)
    regions.numElements += r.count;
  // The arena element each host element maps to.
  std::vector<std::pair<std::uint32_t, std::int64_t>> where;
  for (const ByteRun &r : regions.runs)
    for (std::uint64_t i = 0; i < r.count; ++i)
      where.emplace_back(r.buffer, (r.offset + r.stride * std::int64_t(i)) / 4);
  REQUIRE(where.size() == regions.numElements);
  const ArenaView view(arena.data(), buffers);
  const std::uint64_t n = regions.numElements;
  for (std::uint64_t first = 0; first <= n; first += 3)
    for (std::uint64_t last = first; last <= n; last += 5) {
      INFO("elements [" << first << ", " << last << ")");
      std::iota(reinterpret_cast<std::int32_t *>(arena.data()),
                reinterpret_cast<std::int32_t *>(arena.data()) + 128, 1000);
      std::vector<std::int32_t> host(n, -1);
      aspen::detail::gatherRegions(view, regions, host.data(), first, last);
      for (std::uint64_t i = 0; i < n; ++i)
        REQUIRE(host[i] == (i >= first && i < last
                                ? value(where[i].first, where[i].second)
                                : -1));
      std::iota(host.begin(), host.end(), 0);
      aspen::detail::scatterRegions(view, regions, host.data(), first, last);
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::int32_t before = std::int32_t(1000 + where[i].first * 64 + where[i].second);
        REQUIRE(value(where[i].first, where[i].second) ==
                (i >= first && i < last ? std::int32_t(i) : before));
      }
    }
}

TEST_CASE("large strided host transfers move in parts and keep every element in order",
          "[unit][executor][cpu]") {
  using namespace aspen;
  // 2^20 + 3 floats (over the 1 MiB a part) seen through a transposed view, written and read
  // by an engine on 1 and 3 threads.
  const std::size_t rows = 1031, cols = 1017;
  for (const unsigned threads : {1u, 3u}) {
    Graph g(Target::createGeneric(8));
    Tensor t = g.addVariable(FLOAT, {rows, cols}, "t");
    util::mapTensorLinearly(g, t);
    g.createHostWrite("in", t.transpose());
    g.createHostRead("out", t);
    g.createHostRead("out-t", t.transpose());
    Engine e(g, program::Sequence{}, {{"aspen.cpu.threads", std::to_string(threads)}});
    e.load(aspen::test::deviceFor(g.getTarget()));
    std::vector<float> in(rows * cols), out(rows * cols), outT(rows * cols);
    std::iota(in.begin(), in.end(), 0.0f);
    e.writeTensor("in", in.data(), in.data() + in.size());
    e.readTensor("out", out.data(), out.data() + out.size());
    e.readTensor("out-t", outT.data(), outT.data() + outT.size());
    INFO(threads << " threads");
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c)
        REQUIRE(out[r * cols + c] == in[c * rows + r]);
    REQUIRE(outT == in);
  }
}
