// Block codelets (BlockCodelets.hpp) run by program::Launch: shared memory and barriers give the
// right answers (a block-wide tree reduction and a Hillis-Steele scan, checked against double
// host sums), every thread sees its place in the launch, inputs that are not contiguous are
// gathered, launches repeat in loops and survive serialisation, and a failing thread is reported
// naming the vertex. On ASPEN_TEST_DEVICE=gpu the same programs run as CUDA kernels.
#include "TestDevice.hpp"
#include "TestRandom.hpp"
#include "codelets/ContentHash.hpp"
#include "TestPaths.hpp"

#include <aspen/BlockCodelets.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sstream>
#include <string_view>
#include <vector>

using namespace aspen;

namespace {

const std::string kCodelets = test::codelet("block_codelets.cpp");

Graph makeGraph() {
  Graph g(Target::createGeneric(4));
  g.addCodelets(kCodelets);
  return g;
}

Tensor variable(Graph &g, Type type, std::vector<std::size_t> shape, const std::string &name) {
  Tensor t = g.addVariable(type, shape, name);
  g.setTileMapping(t, 0);
  g.createHostWrite(name, t);
  g.createHostRead(name + "-read", t);
  return t;
}

// A compute set holding one vertex of `type` connected as given.
ComputeSet blockComputeSet(Graph &g, const std::string &type,
                           const std::vector<std::pair<std::string, Tensor>> &connections) {
  ComputeSet cs = g.addComputeSet(type);
  VertexRef v = g.addVertex(cs, "bc::" + type);
  for (const auto &[field, t] : connections)
    g.connect(v[field], t);
  g.setTileMapping(v, 0);
  return cs;
}

template <class T> void write(Engine &e, const std::string &name, const std::vector<T> &v) {
  e.writeTensor(name, v.data(), v.data() + v.size());
}
template <class T> std::vector<T> read(Engine &e, const std::string &name, std::size_t n) {
  std::vector<T> v(n);
  e.readTensor(name + "-read", v.data(), v.data() + n);
  return v;
}

} // namespace

TEST_CASE("a block reduction through shared memory and barriers sums each block's chunk",
          "[correctness][block]") {
  for (auto [blocks, threads, n] : {std::tuple{1u, 32u, 1000u}, std::tuple{5u, 64u, 4099u},
                                    std::tuple{3u, 100u, 7u}, std::tuple{16u, 256u, 65536u}}) {
    INFO(blocks << " blocks of " << threads << " threads over " << n << " elements");
    Graph g = makeGraph();
    Tensor in = variable(g, FLOAT, {n}, "in"), out = variable(g, FLOAT, {blocks}, "out");
    ComputeSet cs = blockComputeSet(g, "BlockSum", {{"in", in}, {"out", out}});
    Engine e(g, program::Launch(cs, {blocks, threads, threads * sizeof(float)}));
    e.load(test::deviceFor(g.getTarget()));
    const auto values = test::randomFloats(n, blocks + threads);
    write(e, "in", values);
    e.run();
    const auto sums = read<float>(e, "out", blocks);
    const std::size_t chunk = (n + blocks - 1) / blocks;
    for (unsigned b = 0; b < blocks; ++b) {
      double expected = 0, magnitude = 0;
      for (std::size_t i = b * chunk; i < std::min<std::size_t>(n, (b + 1) * chunk); ++i)
        expected += values[i], magnitude += std::fabs(values[i]);
      CHECK(std::fabs(sums[b] - expected) <= 1e-6 * (1 + magnitude));
    }
  }
}

TEST_CASE("a Hillis-Steele scan reads what other threads wrote before each barrier",
          "[correctness][block]") {
  const unsigned threads = 128, n = 100;
  Graph g = makeGraph();
  Tensor in = variable(g, FLOAT, {n}, "in"), out = variable(g, FLOAT, {n}, "out");
  ComputeSet cs = blockComputeSet(g, "BlockScan", {{"in", in}, {"out", out}});
  Engine e(g, program::Launch(cs, {1, threads, 2 * threads * sizeof(float)}));
  e.load(test::deviceFor(g.getTarget()));
  const auto values = test::randomFloats(n, 3);
  write(e, "in", values);
  e.run();
  const auto scan = read<float>(e, "out", n);
  double running = 0, magnitude = 0;
  for (unsigned i = 0; i < n; ++i) {
    running += values[i];
    magnitude += std::fabs(values[i]);
    INFO("element " << i);
    CHECK(std::fabs(scan[i] - running) <= 1e-6 * (1 + magnitude));
  }
}

TEST_CASE("every thread of a launch sees its block, thread and the launch's shape",
          "[correctness][block]") {
  const unsigned blocks = 3, threads = 40;
  Graph g = makeGraph();
  Tensor out = variable(g, UNSIGNED_INT, {blocks * threads}, "out");
  Tensor shape = variable(g, UNSIGNED_INT, {3}, "shape");
  ComputeSet cs = blockComputeSet(g, "BlockShape", {{"out", out}, {"shape", shape}});
  // threadsPerBlock 0: the target's workers (6 on the generic target).
  Engine e(g, {program::Launch(cs, {blocks, threads, 96}), program::Launch(cs, {2, 0, 0})});
  e.load(test::deviceFor(g.getTarget()));
  e.run(0);
  const auto seen = read<unsigned>(e, "out", blocks * threads);
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < threads; ++t)
      REQUIRE(seen[b * threads + t] == b * 1000 + t);
  CHECK(read<unsigned>(e, "shape", 3) == std::vector<unsigned>{threads, blocks, 96});
  e.run(1);
  CHECK(read<unsigned>(e, "shape", 3) == std::vector<unsigned>{6, 2, 0});
}

TEST_CASE("a launch gathers a strided input, repeats in a loop and survives serialisation",
          "[correctness][block][executable]") {
  const unsigned n = 300, threads = 64;
  std::stringstream bytes;
  {
    Graph g = makeGraph();
    Tensor wide = variable(g, FLOAT, {2 * n}, "wide");
    Tensor out = variable(g, FLOAT, {1}, "out");
    Tensor total = variable(g, FLOAT, {1}, "total");
    // `in` is every other element: not one contiguous run, so the compute set gathers it.
    ComputeSet cs = blockComputeSet(g, "BlockSum", {{"in", wide.subSample(2, 0)}, {"out", out}});
    program::Sequence body{program::Launch(cs, {1, threads, threads * sizeof(float)}),
                           program::Copy(out, total)};
    compileGraph(g, {program::Repeat(3, body)}).serialize(bytes);
  }
  Engine e(Executable::deserialize(bytes));
  e.load(test::deviceFor(Target::createGeneric(4)));
  const auto values = test::randomFloats(2 * n, 9);
  write(e, "wide", values);
  e.run();
  double expected = 0;
  for (unsigned i = 0; i < 2 * n; i += 2)
    expected += values[i];
  CHECK(std::fabs(read<float>(e, "total", 1)[0] - expected) <= 1e-5);
}

TEST_CASE("a block codelet thread returning false fails the run naming the vertex",
          "[correctness][block]") {
  Graph g = makeGraph();
  Tensor fail = variable(g, INT, {}, "fail");
  ComputeSet cs = blockComputeSet(g, "BlockFail", {{"fail", fail}});
  Engine e(g, program::Launch(cs, {2, 8, 0}, "failing"));
  e.load(test::deviceFor(g.getTarget()));
  write(e, "fail", std::vector<int>{0});
  e.run(); // nothing fails
  write(e, "fail", std::vector<int>{1});
  REQUIRE_THROWS_WITH(e.run(), Catch::Contains("bc::BlockFail") &&
                                   Catch::Contains("returned false"));
  write(e, "fail", std::vector<int>{0});
  e.run(); // and the engine is still usable
}

TEST_CASE("a deserialised launch beyond any GPU's block limits is refused before it runs",
          "[correctness][block][executable]") {
  // A stream whose checksum is right but whose launch asks for 5000 threads a block: the reader
  // must refuse it rather than give an executor 5000 fibers (or a GPU an impossible launch).
  Graph g = makeGraph();
  Tensor in = variable(g, FLOAT, {64}, "in"), out = variable(g, FLOAT, {3}, "out");
  ComputeSet cs = blockComputeSet(g, "BlockSum", {{"in", in}, {"out", out}});
  std::ostringstream written;
  compileGraph(g, {program::Launch(cs, {3, 37, 37 * sizeof(float)})}).serialize(written);
  std::string bytes = written.str();
  // The BlockLaunch as written: computeSet 0, blocks 3, threads 37, sharedBytes 148.
  auto field = [](auto v) { return std::string(reinterpret_cast<const char *>(&v), sizeof v); };
  const std::string launch = field(std::uint32_t(0)) + field(std::uint32_t(3)) +
                             field(std::uint32_t(37)) + field(std::uint64_t(148));
  const std::size_t at = bytes.find(launch);
  REQUIRE(at != std::string::npos);
  REQUIRE(bytes.find(launch, at + 1) == std::string::npos);
  bytes.replace(at + 8, 4, field(std::uint32_t(5000)));
  // The checksum (FNV-1a of the body, between the 12-byte header and the 8-byte trailer) made
  // right again.
  const std::string_view body(bytes.data() + 12, bytes.size() - 20);
  const std::uint64_t checksum = detail::ContentHash().add(body).value();
  bytes.replace(bytes.size() - 8, 8, field(checksum));
  std::istringstream in1(bytes);
  REQUIRE_THROWS_WITH(Executable::deserialize(in1),
                      Catch::Contains("corrupt stream") && Catch::Contains("block kernel"));
  // With threads back at 37 the same stream loads: the check is on the value, not the edit.
  bytes.replace(at + 8, 4, field(std::uint32_t(37)));
  const std::string_view body2(bytes.data() + 12, bytes.size() - 20);
  bytes.replace(bytes.size() - 8, 8, field(detail::ContentHash().add(body2).value()));
  std::istringstream in2(bytes);
  REQUIRE_NOTHROW(Executable::deserialize(in2));
}
