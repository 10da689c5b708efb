// Tensor::getStridedVarRegions, the exact byte description of a view that the layers
// use (public API), against offsets worked out by hand for a float [3, 4] variable v (element
// (r, c) at byte 16r + 4c) and a half [6] variable w.
#include <aspen/Device.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Target.hpp>

#include <catch2/catch.hpp>

#include <thread>
#include <unordered_set>
#include <vector>

using namespace aspen;

namespace {
struct Run {
  VariableRef var;
  long long offset, stride;
  std::size_t count;
};

void requireRuns(const Tensor &t, const std::vector<Run> &expected) {
  INFO(t.shapeToString());
  const std::vector<StridedVarRegion> got = t.getStridedVarRegions();
  REQUIRE(got.size() == expected.size());
  REQUIRE(t.numRegions() == expected.size());
  std::size_t elements = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("region " << i);
    CHECK(got[i].var == expected[i].var);
    CHECK(got[i].byteOffset == expected[i].offset);
    CHECK(got[i].byteStride == expected[i].stride);
    CHECK(got[i].count == expected[i].count);
    elements += got[i].count;
  }
  REQUIRE(elements == t.numElements());
}
} // namespace

TEST_CASE("getStridedVarRegions gives each view's bytes exactly", "[unit][tensor]") {
  Device device = Device::createCPUDevice();
  Graph g(device.getTarget());
  Tensor v = g.addVariable(FLOAT, {3, 4}, "v");
  Tensor w = g.addVariable(HALF, {6}, "w");
  const VariableRef vr = v.getVarRegions()[0].var;
  const VariableRef wr = w.getVarRegions()[0].var;
  REQUIRE(vr != wr);

  requireRuns(v, {{vr, 0, 4, 12}});
  // Column 1..2 of each row: three runs of two, 16 bytes apart (one run cannot describe them).
  requireRuns(v.slice(1, 3, 1), {{vr, 4, 4, 2}, {vr, 20, 4, 2}, {vr, 36, 4, 2}});
  // The transpose: row c of it is column c of v, every 16 bytes.
  requireRuns(v.transpose(), {{vr, 0, 16, 3}, {vr, 4, 16, 3}, {vr, 8, 16, 3}, {vr, 12, 16, 3}});
  // Row 2 reversed.
  requireRuns(v[2].reverse(0), {{vr, 44, -4, 4}});
  // Column 3 on its own is one strided run.
  requireRuns(v.slice(3, 4, 1).flatten(), {{vr, 12, 16, 3}});
  // Element (1, 2) broadcast five times: the same bytes five times.
  requireRuns(v[1][2].expand({0}).broadcast(5, 0), {{vr, 24, 0, 5}});
  // The same bytes as halves: twice as many elements of two bytes.
  requireRuns(v.reinterpret(HALF), {{vr, 0, 2, 24}});
  // Two variables, concatenated.
  requireRuns(concat(w.slice(4, 6), w.slice(0, 1)), {{wr, 8, 2, 2}, {wr, 0, 2, 1}});
  requireRuns(concat(v[0].reinterpret(HALF), w),
              {{vr, 0, 2, 8}, {wr, 0, 2, 6}});
  // No elements, no regions.
  requireRuns(v.slice(2, 2, 1), {});

  // Views of the same elements have the same regions; views of others do not.
  REQUIRE(v.transpose().transpose().getStridedVarRegions() == v.getStridedVarRegions());
  REQUIRE(v[1].getStridedVarRegions() != v[2].getStridedVarRegions());

  // VariableRefs key unordered containers (std::hash<VariableRef>, as Poplar declares).
  std::unordered_set<VariableRef> vars;
  for (const Tensor &t : {v, w, v.transpose(), concat(w, w)})
    for (const VariableInterval &r : t.getVarRegions())
      vars.insert(r.var);
  REQUIRE(vars == std::unordered_set<VariableRef>{vr, wr});
}

namespace {
// Every element of t as (variable, element), in t's row-major order.
std::vector<std::pair<unsigned, std::size_t>> elementsOf(const Tensor &t) {
  std::vector<std::pair<unsigned, std::size_t>> out;
  for (const StridedVarRegion &r : t.getStridedVarRegions())
    for (std::size_t i = 0; i < r.count; ++i)
      out.emplace_back(r.var.id, std::size_t(r.byteOffset + std::int64_t(i) * r.byteStride) / 4);
  return out;
}
} // namespace

TEST_CASE("slices of tensors of many pieces are the elements a by-hand model says",
          "[unit][tensor]") {
  // 1200 floats of v cut into 300 chunks of 4, concatenated in a shuffled order: slicing takes
  // the indexed path (many pieces). Position p of t is element 4 perm[p / 4] + p % 4 of v.
  Device device = Device::createCPUDevice();
  Graph g(device.getTarget());
  Tensor v = g.addVariable(FLOAT, {1200}, "v");
  const unsigned id = v.getVarRegions()[0].var.id;
  std::vector<std::size_t> perm(300);
  for (std::size_t c = 0; c < perm.size(); ++c)
    perm[c] = (c * 7919) % perm.size(); // 7919 is prime to 300: a permutation
  std::vector<Tensor> chunks;
  for (std::size_t c : perm)
    chunks.push_back(v.slice(4 * c, 4 * c + 4));
  const Tensor t = concat(chunks);
  REQUIRE(t.numRegions() > 100);
  const auto expected = [&](std::size_t p) { return std::pair{id, 4 * perm[p / 4] + p % 4}; };
  for (const auto &[b, e] : std::vector<std::pair<std::size_t, std::size_t>>{
           {0, 1200}, {0, 0}, {5, 6}, {3, 9}, {598, 1031}, {1196, 1200}, {400, 404}, {1199, 1200}}) {
    INFO("[" << b << ", " << e << ")");
    std::vector<std::pair<unsigned, std::size_t>> want;
    for (std::size_t p = b; p < e; ++p)
      want.push_back(expected(p));
    REQUIRE(elementsOf(t.slice(b, e)) == want);
  }
  // Two dimensions: t as [40, 30]; columns 7..19 of rows 3..11, sliced in either order.
  const Tensor m = t.reshape({40, 30});
  std::vector<std::pair<unsigned, std::size_t>> want;
  for (std::size_t r = 3; r < 11; ++r)
    for (std::size_t c = 7; c < 19; ++c)
      want.push_back(expected(30 * r + c));
  REQUIRE(elementsOf(m.slice(3, 11, 0).slice(7, 19, 1)) == want);
  REQUIRE(elementsOf(m.slice(7, 19, 1).slice(3, 11, 0)) == want);
  // The same tensor sliced from several threads at once (the index is built once, locked).
  const Tensor fresh = concat(chunks);
  std::vector<std::thread> threads;
  std::vector<char> ok(4, 0);
  for (unsigned k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      const std::size_t b = 100 * k, e = b + 333;
      std::vector<std::pair<unsigned, std::size_t>> w;
      for (std::size_t p = b; p < e; ++p)
        w.push_back(expected(p));
      ok[k] = elementsOf(fresh.slice(b, e)) == w;
    });
  for (std::thread &th : threads)
    th.join();
  REQUIRE(ok == std::vector<char>(4, 1));
}
