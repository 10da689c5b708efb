// Co-resident launches (LaunchShape::coResident) and the device-scope primitives of block
// codelets (Vertex.hpp): blocks that wait for each other complete on any number of host
// threads, gridSync orders every block's writes before every block's reads, the write-once
// sentinel protocol never mistakes a published zero for the sentinel, and a launch where every
// thread waits for something nobody provides fails with an error naming the launch and where
// each block waits, leaving the engine usable. Every expected value is computed here from the
// inputs (integer-valued sums are exact in float), so a wrong order or a lost write shows.
#include "TestDevice.hpp"
#include "TestPaths.hpp"

#include <aspen/BlockCodelets.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/HalfFloat.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace aspen;

namespace {

Graph makeGraph() {
  Graph g(Target::createGeneric(4));
  g.addCodelets(test::codelet("block_codelets.cpp"));
  return g;
}

Tensor variable(Graph &g, Type type, std::size_t n, const std::string &name) {
  Tensor t = g.addVariable(type, {n}, name);
  g.setTileMapping(t, 0);
  g.createHostWrite(name, t);
  g.createHostRead(name + "-read", t);
  return t;
}

// A compute set of one vertex of `type`, with `unsignedField` (if named) set to `value`.
ComputeSet blockSet(Graph &g, const std::string &type,
                    const std::vector<std::pair<std::string, Tensor>> &edges,
                    const std::string &unsignedField = {}, unsigned value = 0,
                    const std::string &name = {}) {
  ComputeSet cs = g.addComputeSet(name.empty() ? type : name);
  VertexRef v = g.addVertex(cs, "bc::" + type);
  for (const auto &[field, t] : edges)
    g.connect(v[field], t);
  if (!unsignedField.empty())
    g.setInitialValue(v[unsignedField], value);
  g.setTileMapping(v, 0);
  return cs;
}

// The CPU executor's host threads and fiber order; nothing on a GPU run.
OptionFlags hostOptions(unsigned threads, bool reverse) {
  if (test::gpuRequested())
    return {};
  return {{"aspen.cpu.threads", std::to_string(threads)},
          {"aspen.cpu.workerOrder", reverse ? "reverse" : "forward"}};
}

template <class T> void write(Engine &e, const std::string &name, const std::vector<T> &v) {
  e.writeTensor(name, v.data(), v.data() + v.size());
}
template <class T> std::vector<T> read(Engine &e, const std::string &name, std::size_t n) {
  std::vector<T> v(n);
  e.readTensor(name + "-read", v.data(), v.data() + n);
  return v;
}

unsigned bitsOf(float f) {
  unsigned u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

} // namespace

TEST_CASE("blocks of a co-resident launch pass a ring from block to block on any number of "
          "host threads",
          "[correctness][block][coresident]") {
  const unsigned blocks = 16, threads = 8, steps = 5, n = blocks * steps;
  for (unsigned hostThreads : {1u, 2u, 3u}) {
    for (bool reverse : {false, true}) {
      INFO(hostThreads << " host threads, " << (reverse ? "reverse" : "forward") << " order");
      Graph g = makeGraph();
      Tensor ring = variable(g, FLOAT, n, "ring");
      ComputeSet cs = blockSet(g, "BlockRing", {{"ring", ring}}, "steps", steps);
      LaunchShape shape{blocks, threads, 0};
      shape.coResident = true;
      Engine e(g, program::Launch(cs, shape, "ring"), hostOptions(hostThreads, reverse));
      e.load(test::deviceFor(g.getTarget()));
      for (int run = 0; run < 2; ++run) {
        write(e, "ring", std::vector<float>(n, -0.0f)); // unpublished
        e.run();
        const auto values = read<float>(e, "ring", n);
        for (unsigned i = 0; i < n; ++i)
          REQUIRE(values[i] == float(i + 1));
      }
    }
  }
}

TEST_CASE("gridSync orders every block's writes before every block's reads",
          "[correctness][block][coresident]") {
  const unsigned rounds = 4;
  for (auto [blocks, threads] : {std::pair{1u, 1u}, std::pair{3u, 32u}, std::pair{8u, 5u}}) {
    for (unsigned hostThreads : {1u, 2u}) {
      INFO(blocks << " blocks of " << threads << " threads on " << hostThreads
                  << " host threads");
      const unsigned n = blocks * threads;
      Graph g = makeGraph();
      Tensor in = variable(g, FLOAT, n, "in"), scratch = variable(g, FLOAT, n, "scratch");
      Tensor out = variable(g, FLOAT, rounds * blocks, "out");
      ComputeSet cs = blockSet(g, "GridSum", {{"in", in}, {"scratch", scratch}, {"out", out}},
                               "rounds", rounds);
      LaunchShape shape{blocks, threads, 0};
      shape.coResident = true;
      Engine e(g, program::Launch(cs, shape, "grid sum"), hostOptions(hostThreads, false));
      e.load(test::deviceFor(g.getTarget()));
      std::vector<float> values(n);
      double total = 0;
      for (unsigned i = 0; i < n; ++i) {
        values[i] = float(int(i * 7 % 23) - 11); // small integers: every sum is exact
        total += values[i];
      }
      write(e, "in", values);
      e.run();
      const auto sums = read<float>(e, "out", rounds * blocks);
      for (unsigned k = 0; k < rounds; ++k)
        for (unsigned b = 0; b < blocks; ++b) {
          INFO("round " << k << ", block " << b);
          REQUIRE(double(sums[k * blocks + b]) == double(k + 1) * total);
        }
    }
  }
}

TEST_CASE("gridSync over several blocks of a launch that is not co-resident is an error",
          "[correctness][block][coresident]") {
  if (test::skipOnGpuRun()) // on a GPU the same program waits for aspen.cuda.waitTimeout
    return;
  Graph g = makeGraph();
  Tensor in = variable(g, FLOAT, 12, "in"), scratch = variable(g, FLOAT, 12, "scratch");
  Tensor out = variable(g, FLOAT, 3, "out");
  ComputeSet cs = blockSet(g, "GridSum", {{"in", in}, {"scratch", scratch}, {"out", out}},
                           "rounds", 1);
  Engine e(g, {program::Launch(cs, {3, 4, 0}, "loose"), program::Launch(cs, {1, 12, 0})});
  e.load(test::deviceFor(g.getTarget()));
  write(e, "in", std::vector<float>(12, 2.0f));
  try {
    e.run(0);
    FAIL("no runtime_error");
  } catch (const runtime_error &error) {
    const std::string message = error.what();
    INFO(message);
    CHECK(message.find("Launch 'loose' is not co-resident") != std::string::npos);
    CHECK(message.find("block 0: thread 0 at gridSync, threads 1-3 at block.sync") !=
          std::string::npos);
    CHECK(message.find("LaunchShape::coResident") != std::string::npos);
  }
  // One block needs no other: the same codelet completes, and the engine still runs.
  e.run(1);
  CHECK(read<float>(e, "out", 3)[0] == 24.0f);
}

TEST_CASE("the sentinel protocol publishes computed and rounded negative zeros as +0",
          "[correctness][block][coresident]") {
  const unsigned blocks = 4, threads = 3;
  // -0.0 itself, a product that underflows to -0.0 in float (factor 1e-30 on -1e-20) or rounds
  // to -0.0 in half (-1e-9), a true zero, and ordinary values of both signs.
  const std::vector<float> values = {-0.0f, -1e-20f, -1e-9f, 0.0f, 1.5f, -2.25f, 3.0f, -1e-20f,
                                     7.0f, -0.0f, 1e-20f, -1e-9f, 65504.0f};
  const unsigned n = unsigned(values.size());
  for (float factor : {1.0f, 1e-30f}) {
    for (Type type : {FLOAT, HALF}) {
      INFO(type.toString() << " with factor " << factor);
      Graph g = makeGraph();
      Tensor in = variable(g, FLOAT, n, "values");
      Tensor buffer = variable(g, type, n, "buffer");
      Tensor received = variable(g, type, n * blocks, "received");
      const std::string name = type == FLOAT ? "SentinelExchange<float>" : "SentinelExchange<half>";
      ComputeSet cs = g.addComputeSet("exchange");
      VertexRef v = g.addVertex(cs, "bc::" + name,
                                {{"values", in}, {"buffer", buffer}, {"received", received}});
      g.setInitialValue(v["factor"], factor);
      g.setTileMapping(v, 0);
      LaunchShape shape{blocks, threads, 0};
      shape.coResident = true;
      Engine e(g, program::Launch(cs, shape), hostOptions(2, false));
      e.load(test::deviceFor(g.getTarget()));
      write(e, "values", values);
      std::vector<unsigned> expected(n);
      for (unsigned j = 0; j < n; ++j) {
        const float product = values[j] * factor;
        if (type == FLOAT)
          expected[j] = bitsOf(product) == 0x80000000u ? 0u : bitsOf(product);
        else
          expected[j] = half(product).bits() == 0x8000u ? 0u : half(product).bits();
      }
      if (type == FLOAT) {
        write(e, "buffer", std::vector<float>(n, -0.0f));
        e.run();
        const auto got = read<float>(e, "received", n * blocks);
        for (unsigned i = 0; i < n * blocks; ++i) {
          INFO("element " << i % n << " as block " << i / n << " read it");
          REQUIRE(bitsOf(got[i]) == expected[i % n]);
        }
      } else {
        write(e, "buffer", std::vector<half>(n, half::fromBits(0x8000)));
        e.run();
        const auto got = read<half>(e, "received", n * blocks);
        for (unsigned i = 0; i < n * blocks; ++i) {
          INFO("element " << i % n << " as block " << i / n << " read it");
          REQUIRE(got[i].bits() == expected[i % n]);
        }
      }
      // The cases the test is about happened: some published values are rounded zeros.
      CHECK(std::count(expected.begin(), expected.end(), 0u) >= 3);
    }
  }
}

TEST_CASE("a co-resident launch where every thread waits for nothing is an error naming where "
          "each block waits, and the engine stays usable",
          "[correctness][block][coresident]") {
  if (test::skipOnGpuRun()) // a GPU gives up after aspen.cuda.waitTimeout instead
    return;
  for (unsigned hostThreads : {1u, 2u}) {
    INFO(hostThreads << " host threads");
    Graph g = makeGraph();
    Tensor flag = variable(g, UNSIGNED_INT, 1, "flag");
    ComputeSet wait = blockSet(g, "NeverPublished", {{"flag", flag}}, "skipGridSync", 0, "wait");
    ComputeSet skip = blockSet(g, "NeverPublished", {{"flag", flag}}, "skipGridSync", 1, "skip");
    LaunchShape shape{3, 4, 0};
    shape.coResident = true;
    Engine e(g, {program::Launch(wait, shape, "stuck"), program::Launch(skip, shape, "skipper")},
             hostOptions(hostThreads, false));
    e.load(test::deviceFor(g.getTarget()));
    write(e, "flag", std::vector<unsigned>{0});
    try {
      e.run(0);
      FAIL("no runtime_error");
    } catch (const runtime_error &error) {
      const std::string message = error.what();
      INFO(message);
      CHECK(message.find("Launch 'stuck'") != std::string::npos);
      CHECK(message.find("every thread of its 3 blocks waits") != std::string::npos);
      for (const char *block : {"block 0: ", "block 1: ", "block 2: "})
        CHECK(message.find(std::string(block) + "thread 0 at waitUntil, threads 1-3 at block.sync") !=
              std::string::npos);
    }
    try {
      e.run(1);
      FAIL("no runtime_error");
    } catch (const runtime_error &error) {
      const std::string message = error.what();
      INFO(message);
      CHECK(message.find("Launch 'skipper'") != std::string::npos);
      CHECK(message.find("block 1: thread 0 at gridSync, threads 1-3 at block.sync; block 2:") !=
            std::string::npos);
      CHECK(message.find("block 0:") == std::string::npos); // it returned
    }
    // The flag set, the same launch completes: nothing was left broken.
    write(e, "flag", std::vector<unsigned>{1});
    e.run(0);
    SUCCEED();
  }
}

TEST_CASE("a codelet's declared maxThreadsPerBlock admits launches up to it",
          "[correctness][block]") {
  Graph g = makeGraph();
  Tensor out = variable(g, UNSIGNED_INT, 2 * 64, "out");
  ComputeSet cs = blockSet(g, "BoundedBlock", {{"out", out}});
  Engine e(g, program::Launch(cs, {2, 64, 0}));
  e.load(test::deviceFor(g.getTarget()));
  e.run();
  const auto got = read<unsigned>(e, "out", 2 * 64);
  for (unsigned i = 0; i < 2 * 64; ++i)
    REQUIRE(got[i] == i % 64 + 1);
}

// Block::mmaF16, the tensor-core product the persistent kernels' tensor variant runs: each full
// warp's 16 x 8 result against the product computed here in double (the halves' products are
// exact in float and their sums of small integers too, so the result is exact), on blocks of
// one warp, two, and two and a partial one (whose threads pass without a product).
TEST_CASE("Block::mmaF16 multiplies a warp's 16 x 16 and 16 x 8 half tiles into float as "
          "mma.sync's fragment layout says",
          "[correctness][block]") {
  for (unsigned threads : {32u, 64u, 72u}) {
    INFO(threads << " threads");
    const unsigned warps = threads / 32;
    Graph g = makeGraph();
    Tensor a = variable(g, HALF, 256, "a"), b = variable(g, HALF, warps * 128, "b");
    Tensor d = variable(g, FLOAT, warps * 128, "d");
    ComputeSet cs = g.addComputeSet("mma");
    VertexRef v = g.addVertex(cs, "bc::WarpMma", {{"a", a}, {"b", b}, {"d", d}});
    g.setInitialValue(v["init"], 0.5f);
    g.setTileMapping(v, 0);
    Engine e(g, program::Launch(cs, LaunchShape{1, threads, 0}, "mma"), hostOptions(2, false));
    e.load(test::deviceFor(g.getTarget()));
    std::vector<half> av(256), bv(warps * 128);
    for (unsigned i = 0; i < av.size(); ++i)
      av[i] = half(float(int(i * 5 % 17) - 8)); // every element distinct by position
    for (unsigned i = 0; i < bv.size(); ++i)
      bv[i] = half(float(int(i * 3 % 13) - 6));
    write(e, "a", av);
    write(e, "b", bv);
    e.run();
    const auto out = read<float>(e, "d", warps * 128);
    for (unsigned w = 0; w < warps; ++w)
      for (unsigned row = 0; row < 16; ++row)
        for (unsigned col = 0; col < 8; ++col) {
          double want = 0.5;
          for (unsigned k = 0; k < 16; ++k)
            want += double(float(av[row * 16 + k])) * double(float(bv[(w * 16 + k) * 8 + col]));
          INFO("warp " << w << ", row " << row << ", column " << col);
          REQUIRE(double(out[w * 128 + row * 8 + col]) == want);
        }
  }
}
