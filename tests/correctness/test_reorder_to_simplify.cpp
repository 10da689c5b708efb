// Graph::reorderToSimplify (Poplar's, through the compat name): the reordered tensor's runs in
// variable order, the others permuted the same way -- against positions worked out by hand --
// and the misuses. And <poplar/CSRFunctions.hpp>: accepted, IEEE results unchanged.
#include "TestDevice.hpp"

#include <poplar/CSRFunctions.hpp>
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <popops/ElementWise.hpp>
#include <popops/codelets.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

using namespace poplar;

namespace {
// (variable, element) of each element of t, in order (float elements).
std::vector<std::pair<unsigned, long long>> elementsOf(const Tensor &t) {
  std::vector<std::pair<unsigned, long long>> out;
  for (const StridedVarRegion &r : t.getStridedVarRegions())
    for (std::size_t i = 0; i < r.count; ++i)
      out.emplace_back(r.var.id, (r.byteOffset + (long long)i * r.byteStride) / 4);
  return out;
}
} // namespace

TEST_CASE("reorderToSimplify orders runs as they lie and permutes the others alike",
          "[correctness][graph]") {
  Graph g(Target::createGeneric(2));
  Tensor v = g.addVariable(FLOAT, {12}, "v");
  Tensor w = g.addVariable(FLOAT, {3, 4}, "w");
  const unsigned vid = v.getVarRegions()[0].var.id, wid = w.getVarRegions()[0].var.id;
  // t: v[8..12), v[0..4), v[4..8) -- three regions; o goes with it element for element.
  Tensor t = concat({v.slice(8, 12), v.slice(0, 4), v.slice(4, 8)});
  Tensor o = w; // position p of o is w element p
  Tensor keep = t;
  g.reorderToSimplify(&t, {&o});
  REQUIRE(t.numRegions() == 1);
  REQUIRE(t.rank() == 1);
  std::vector<std::pair<unsigned, long long>> wantT, wantO;
  for (long long p = 0; p < 12; ++p)
    wantT.emplace_back(vid, p);
  // v element p was at position (p + 4) % 12 of the old t, so o's new element p is w's (p+4)%12.
  for (long long p = 0; p < 12; ++p)
    wantO.emplace_back(wid, (p + 4) % 12);
  REQUIRE(elementsOf(t) == wantT);
  REQUIRE(elementsOf(o) == wantO);
  // The pairs (t[i], o[i]) are the pairs of before, in another order.
  auto pairs = [](const Tensor &a, const Tensor &b) {
    std::vector<std::pair<std::pair<unsigned, long long>, std::pair<unsigned, long long>>> out;
    const auto ea = elementsOf(a), eb = elementsOf(b);
    for (std::size_t i = 0; i < ea.size(); ++i)
      out.emplace_back(ea[i], eb[i]);
    std::sort(out.begin(), out.end());
    return out;
  };
  REQUIRE(pairs(t, o) == pairs(keep, w.flatten()));

  // One run already (a reversed variable): as it is, flattened.
  Tensor r = v.reverse(0), ro = w.flatten();
  g.reorderToSimplify(&r, {&ro}, false);
  REQUIRE(elementsOf(r) == elementsOf(v.reverse(0)));
  REQUIRE(elementsOf(ro) == elementsOf(w.flatten()));

  // Misuses, leaving the tensors as they were.
  Tensor small = v.slice(0, 5);
  Tensor before = t;
  REQUIRE_THROWS_AS(g.reorderToSimplify(&t, {&small}), shape_error);
  REQUIRE(elementsOf(t) == elementsOf(before));
  REQUIRE_THROWS_AS(g.reorderToSimplify(nullptr, {}), poplar_error);
  REQUIRE_THROWS_AS(g.reorderToSimplify(&t, {nullptr}), poplar_error);
  Graph other(Target::createGeneric(2));
  REQUIRE_THROWS_AS(other.reorderToSimplify(&t, {}), poplar_error);
}

TEST_CASE("CSRFunctions are accepted and leave IEEE results as they are", "[correctness][compat]") {
  Graph g(Target::createGeneric(1));
  popops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {3}, "x");
  g.setTileMapping(x, 0);
  program::Sequence prog;
  // Trap everything, stochastic rounding and NaN-on-overflow on: none of it applies here.
  setFloatingPointBehaviour(g, prog, FloatingPointBehaviour(true, true, true, true, true));
  setStochasticRounding(g, prog, true);
  Tensor saved = getAndModifyFloatingPointBehaviour(g, prog, FloatingPointBehaviour(),
                                                    !FloatingPointBehaviour());
  Tensor q = popops::div(g, x, 0.0f, prog);
  Tensor big = popops::mul(g, x, 1e38f, prog);
  setFloatingPointBehaviour(g, prog, saved);
  REQUIRE_THROWS_AS(setFloatingPointBehaviour(g, prog, x), poplar_error);
  g.createHostWrite("x", x);
  g.createHostRead("q", q);
  g.createHostRead("big", big);
  Engine e(g, prog);
  e.load(aspen::test::deviceFor(g.getTarget()));
  const std::vector<float> xv{1, -4, 0};
  e.writeTensor("x", xv.data(), xv.data() + 3);
  e.run();
  std::vector<float> qv(3), bv(3);
  e.readTensor("q", qv.data(), qv.data() + 3);
  e.readTensor("big", bv.data(), bv.data() + 3);
  REQUIRE(qv[0] == INFINITY);
  REQUIRE(qv[1] == -INFINITY);
  REQUIRE(std::isnan(qv[2]));
  REQUIRE(bv[0] == 1e38f);
  REQUIRE(bv[1] == -INFINITY); // -4e38 overflows float: an infinity, not NaN
  REQUIRE(bv[2] == 0.0f);
}
