// Reductions, fast checks: the index geometry, the plan's bookkeeping (every input element
// reduced once, every partial slot merged once into the right output, the same order of
// accumulation for any mapping and worker count) and one small run of each
// operation and type against the host model.
#include "correctness/test_reduce_harness.hpp"
#include "ops/ReducePlan.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <random>

using namespace reducetest;

namespace {

// A random shape of rank 0..4 (dimensions 1..5, sometimes 0) and a random subset of its dims.
void randomCase(std::mt19937 &rng, Shape &shape, std::vector<std::size_t> &dims, bool allowEmpty) {
  shape.assign(rng() % 5, 0);
  for (auto &d : shape)
    d = allowEmpty && rng() % 12 == 0 ? 0 : 1 + rng() % 5;
  dims.clear();
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (rng() % 2)
      dims.push_back(d);
  std::shuffle(dims.begin(), dims.end(), rng);
}

} // namespace

TEST_CASE("reduce geometry maps input indices to output indices", "[unit][reduce]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    Case c;
    randomCase(rng, c.shape, c.dims, true);
    const ops::detail::ReduceGeometry geometry(c.shape, c.dims);
    REQUIRE(geometry.numOutputs() == count(outShape(c)));
    // The host model's grouping, with each element's value its own index.
    c.in.resize(count(c.shape));
    std::vector<std::size_t> index(c.shape.size(), 0);
    for (std::size_t i = 0; i < c.in.size(); ++i) {
      std::size_t o = 0;
      for (std::size_t d = 0; d < c.shape.size(); ++d)
        if (std::find(c.dims.begin(), c.dims.end(), d) == c.dims.end())
          o = o * c.shape[d] + index[d];
      REQUIRE(geometry.outIndex(i) == o);
      for (std::size_t d = c.shape.size(); d-- > 0;)
        if (++index[d] < c.shape[d])
          break;
        else
          index[d] = 0;
    }
  }
}

namespace {

// What a plan computes, independent of where: per partial slot, the runs of input elements it
// accumulates in order (a group-1 segment adds single elements); per output, the partial slots
// it merges in order. Checks the bookkeeping on the way.
struct PlanOrder {
  std::map<std::size_t, std::vector<std::pair<std::size_t, std::size_t>>> slotRuns;
  std::vector<std::vector<std::size_t>> outputSlots;
  bool operator==(const PlanOrder &) const = default;
};

PlanOrder planOrder(const Case &c, unsigned tiles, unsigned workers, unsigned offsetTile,
                    bool ascending, unsigned grain, unsigned minElements) {
  Graph g(Target::createGeneric(tiles, workers));
  Tensor in = g.addVariable(FLOAT, c.shape, "in");
  util::mapTensorLinearlyWithOffset(g, in, grain, 1, offsetTile, ascending);
  Tensor out = g.addVariable(FLOAT, outShape(c), "out");
  util::mapTensorLinearlyWithOffset(g, out, 1, 1, 0, !ascending);
  const ops::detail::ReduceGeometry geometry(c.shape, c.dims);
  const auto plan = ops::detail::planReduction(g, in, out, geometry, minElements);

  PlanOrder order;
  std::vector<int> seen(in.numElements(), 0);
  std::map<std::size_t, std::size_t> slotOutput; // global partial slot -> output
  std::vector<int> slotOwners(plan.numPartialSlots, 0);
  for (const auto &tile : plan.partials) {
    REQUIRE(tile.partitionSegments.size() == tile.partitionSlots.size() + 1);
    for (std::size_t p = 0; p < tile.partitionSlots.size(); ++p) {
      const Interval slots = tile.partitionSlots[p];
      for (std::size_t slot = slots.begin(); slot < slots.end(); ++slot)
        ++slotOwners.at(slot);
      for (unsigned k = tile.partitionSegments[p]; k < tile.partitionSegments[p + 1]; ++k) {
        const auto &s = tile.segments[k];
        REQUIRE(s.begin < s.end);
        for (std::size_t i = s.begin; i < s.end; ++i) {
          ++seen[i];
          const std::size_t slot = slots.begin() + s.slot + (i - s.begin) / s.group;
          REQUIRE(slot < slots.end());
          const auto [it, added] = slotOutput.emplace(slot, geometry.outIndex(i));
          REQUIRE(it->second == geometry.outIndex(i));
          const std::size_t runEnd =
              s.group == 1 ? i + 1 : std::min<std::size_t>(s.end, i + s.group);
          if (s.group == 1 || (i - s.begin) % s.group == 0)
            order.slotRuns[slot].emplace_back(i, runEnd);
        }
      }
    }
  }
  REQUIRE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  REQUIRE(std::all_of(slotOwners.begin(), slotOwners.end(), [](int n) { return n == 1; }));
  REQUIRE(slotOutput.size() == plan.numPartialSlots);

  order.outputSlots.resize(out.numElements());
  std::vector<int> written(out.numElements(), 0);
  for (const auto &tile : plan.finals) {
    std::vector<std::size_t> slotToOut;
    for (const Interval &r : tile.outRegions)
      for (std::size_t o = r.begin(); o < r.end(); ++o) {
        slotToOut.push_back(o);
        ++written[o];
      }
    REQUIRE(slotToOut.size() == tile.partitionSlots.back());
    for (std::size_t p = 0; p + 1 < tile.partitionRuns.size(); ++p)
      for (unsigned r = tile.partitionRuns[p]; r < tile.partitionRuns[p + 1]; ++r) {
        const auto &run = tile.runs[r];
        REQUIRE(run.count % run.group == 0);
        REQUIRE(run.localSlot >= tile.partitionSlots[p]);
        REQUIRE(run.localSlot + run.count / run.group <= tile.partitionSlots[p + 1]);
        for (std::size_t k = 0; k < run.count; ++k) {
          const std::size_t o = slotToOut[run.localSlot + k / run.group];
          REQUIRE(slotOutput.at(run.slot + k) == o);
          order.outputSlots[o].push_back(run.slot + k);
        }
      }
  }
  REQUIRE(std::all_of(written.begin(), written.end(), [](int n) { return n == 1; }));
  std::size_t merged = 0;
  for (auto slots : order.outputSlots) {
    merged += slots.size();
    std::sort(slots.begin(), slots.end());
    REQUIRE(std::adjacent_find(slots.begin(), slots.end()) == slots.end());
  }
  REQUIRE(merged == slotOutput.size());
  return order;
}

} // namespace

TEST_CASE("reduce plans reduce each input element once, merge each slot once and fix the "
          "order of accumulation whatever the mapping",
          "[unit][reduce]") {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 120; ++trial) {
    Case c;
    randomCase(rng, c.shape, c.dims, true);
    for (auto &d : c.shape)
      d *= 1 + rng() % 4;
    const PlanOrder one = planOrder(c, 1, 1, 0, true, 1, 1);
    const unsigned tiles = 1 + rng() % 9;
    const PlanOrder other =
        planOrder(c, tiles, 1 + rng() % 6, rng() % tiles, rng() % 2, 1 + rng() % 3, 1 + rng() % 20);
    INFO("trial " << trial);
    REQUIRE(one == other);
  }
}

TEST_CASE("each reduce operation and type matches the host model on a small tensor",
          "[unit][reduce]") {
  std::mt19937 rng(3);
  const Target target = Target::createGeneric(3);
  for (Operation op : kAllOperations)
    for (Type type : inputTypes(op)) {
      Case c;
      c.op = op;
      c.inType = c.outType = type;
      c.shape = {5, 7};
      c.dims = {1};
      for (std::size_t i = 0; i < 35; ++i) {
        if (type == BOOL)
          c.in.push_back(op == Operation::LOGICAL_AND ? rng() % 8 != 0 : rng() % 8 == 0);
        else if (op == Operation::MUL)
          c.in.push_back(1 + int(rng() % 3) - (type == UNSIGNED_INT ? 0 : int(rng() % 2) * 2));
        else if (type == UNSIGNED_INT)
          c.in.push_back(rng() % 100);
        else if (type == INT)
          c.in.push_back(int(rng() % 200) - 100);
        else
          c.in.push_back(std::uniform_real_distribution<double>(-2, 2)(rng));
      }
      INFO(ops::toString(op) << " " << type);
      REQUIRE(mismatches(c, run(target, c)) == 0);
    }
}
