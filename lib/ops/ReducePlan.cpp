#include "ReducePlan.hpp"

#include <aspen/util/TileMapping.hpp>

#include <algorithm>

namespace aspen::ops::detail {

ReduceGeometry::ReduceGeometry(const std::vector<std::size_t> &inShape,
                               const std::vector<std::size_t> &dims) {
  for (std::size_t d = 0; d < inShape.size(); ++d) {
    if (inShape[d] == 1)
      continue; // feeds index 0 whether reduced or kept
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!groups_.empty() && groups_.back().reduced == reduced)
      groups_.back().size *= inShape[d];
    else
      groups_.push_back({inShape[d], 0, 0, reduced});
  }
  if (groups_.empty())
    groups_.push_back({1, 0, 0, false});
  std::size_t inStride = 1;
  for (auto g = groups_.rbegin(); g != groups_.rend(); ++g) {
    g->inStride = inStride;
    inStride *= g->size;
    g->outStride = numOutputs_;
    if (!g->reduced)
      numOutputs_ *= g->size;
  }
}

std::size_t ReduceGeometry::outIndex(std::size_t inIndex) const {
  std::size_t out = 0;
  for (const Group &g : groups_)
    if (!g.reduced)
      out += (inIndex / g.inStride) % g.size * g.outStride;
  return out;
}

std::size_t ReduceGeometry::consecutiveRowsSpan() const {
  if (groups_.size() < 2)
    return innerSize();
  return innerSize() * groups_[groups_.size() - 2].size;
}

namespace {

std::size_t roundDown(std::size_t x, std::size_t m) { return x / m * m; }

// Cuts [begin, end) into segments whose elements feed consecutive outputs; `emit(begin, end,
// firstOutput, group)`.
template <class Emit>
void cutSegments(const ReduceGeometry &geometry, std::size_t begin, std::size_t end, Emit emit) {
  const std::size_t inner = geometry.innerSize();
  if (!geometry.innerReduced()) {
    for (std::size_t at = begin; at < end;) {
      const std::size_t stop = std::min(end, roundDown(at, inner) + inner);
      emit(at, stop, geometry.outIndex(at), std::size_t{1});
      at = stop;
    }
    return;
  }
  const std::size_t span = geometry.consecutiveRowsSpan();
  for (std::size_t at = begin; at < end;) {
    const std::size_t blockEnd = std::min(end, roundDown(at, span) + span);
    std::size_t stop;
    if (at % inner != 0 || blockEnd - at < inner) // a part of one row
      stop = std::min(blockEnd, roundDown(at, inner) + inner);
    else // whole rows
      stop = at + roundDown(blockEnd - at, inner);
    emit(at, stop, geometry.outIndex(at), at % inner != 0 || stop - at < inner ? stop - at : inner);
    at = stop;
  }
}

// Output interval [begin, end) whose first element is in partials slot `slot`, touched by
// stage-1 partition `order`.
struct SlotEntry {
  std::size_t begin, end, slot;
};

// A stage-2 query: output interval [begin, end) of final tile `tile`, partition `partition`,
// whose first element is the tile's slot `localSlot`.
struct OutputQuery {
  std::size_t begin, end;
  unsigned localSlot;
  std::size_t tile;
  unsigned partition;
};

PartialsTile planPartialsTile(const Graph &graph, unsigned tile,
                              const std::vector<Interval> &regions, const ReduceGeometry &geometry,
                              unsigned minElementsPerWorker, std::size_t slotBase,
                              std::vector<SlotEntry> &entries) {
  PartialsTile planned{tile, {}, {0}, {0}, slotBase};
  unsigned tileSlots = 0;
  for (const auto &share :
       util::splitRegionsBetweenWorkers(graph.getTarget(), regions, 8, minElementsPerWorker)) {
    struct Piece {
      std::size_t begin, end, firstOutput, group;
    };
    std::vector<Piece> pieces;
    for (const Interval &region : share)
      cutSegments(geometry, region.begin(), region.end(),
                  [&](std::size_t b, std::size_t e, std::size_t o, std::size_t g) {
                    pieces.push_back({b, e, o, g});
                  });
    // The distinct outputs of this share, as sorted merged intervals, numbered in order.
    std::vector<Interval> outputs;
    for (const Piece &p : pieces)
      outputs.emplace_back(p.firstOutput,
                           p.firstOutput + (p.end - p.begin + p.group - 1) / p.group);
    std::sort(outputs.begin(), outputs.end());
    std::vector<Interval> merged;
    for (const Interval &o : outputs)
      if (!merged.empty() && o.begin() <= merged.back().end())
        merged.back() = Interval(merged.back().begin(), std::max(merged.back().end(), o.end()));
      else
        merged.push_back(o);
    std::vector<unsigned> firstSlot;
    for (const Interval &m : merged) {
      firstSlot.push_back(tileSlots);
      entries.push_back({m.begin(), m.end(), slotBase + tileSlots});
      tileSlots += static_cast<unsigned>(m.size());
    }
    for (const Piece &p : pieces) {
      const auto it =
          std::upper_bound(merged.begin(), merged.end(), p.firstOutput,
                           [](std::size_t o, const Interval &m) { return o < m.begin(); });
      const std::size_t k = static_cast<std::size_t>(it - merged.begin()) - 1;
      planned.segments.push_back(
          {p.begin, p.end, firstSlot[k] + static_cast<unsigned>(p.firstOutput - merged[k].begin()),
           static_cast<unsigned>(p.group)});
    }
    planned.partitionSegments.push_back(static_cast<unsigned>(planned.segments.size()));
    planned.partitionSlots.push_back(tileSlots);
  }
  return planned;
}

} // namespace

ReducePlan planReduction(const Graph &graph, const Tensor &in, const Tensor &out,
                         const ReduceGeometry &geometry, unsigned minElementsPerWorker) {
  ReducePlan plan;
  std::vector<SlotEntry> entries; // in partition order, so in slot order
  const auto inRegions = util::getTileContiguousRegions(graph, in);
  for (unsigned tile = 0; tile < inRegions.size(); ++tile) {
    if (inRegions[tile].empty())
      continue;
    plan.partials.push_back(planPartialsTile(graph, tile, inRegions[tile], geometry,
                                             minElementsPerWorker, plan.numPartialSlots, entries));
    plan.numPartialSlots += plan.partials.back().partitionSlots.back();
  }

  std::vector<OutputQuery> queries;
  const auto outRegions = util::getTileContiguousRegions(graph, out);
  for (unsigned tile = 0; tile < outRegions.size(); ++tile) {
    if (outRegions[tile].empty())
      continue;
    FinalTile planned{tile, {}, {}, {0}, {0}, plan.numStateSlots};
    unsigned slots = 0;
    for (const auto &share :
         util::splitRegionsBetweenWorkers(graph.getTarget(), outRegions[tile], 1, 32)) {
      for (const Interval &region : share) {
        queries.push_back({region.begin(), region.end(), slots, plan.finals.size(),
                           static_cast<unsigned>(planned.partitionSlots.size() - 1)});
        planned.outRegions.push_back(region);
        slots += static_cast<unsigned>(region.size());
      }
      planned.partitionSlots.push_back(slots);
    }
    plan.numStateSlots += slots;
    plan.finals.push_back(std::move(planned));
  }

  // Sweep queries and slot entries in output order; runs are found per (tile, partition).
  std::vector<std::vector<std::vector<FinalRun>>> runs(plan.finals.size());
  for (std::size_t t = 0; t < plan.finals.size(); ++t)
    runs[t].resize(plan.finals[t].partitionSlots.size() - 1);
  std::vector<std::size_t> byBegin(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i)
    byBegin[i] = i;
  std::stable_sort(byBegin.begin(), byBegin.end(), [&](std::size_t a, std::size_t b) {
    return entries[a].begin < entries[b].begin;
  });
  std::sort(queries.begin(), queries.end(),
            [](const OutputQuery &a, const OutputQuery &b) { return a.begin < b.begin; });
  std::vector<std::size_t> active;
  std::size_t next = 0;
  for (const OutputQuery &q : queries) {
    while (next < byBegin.size() && entries[byBegin[next]].begin < q.end)
      active.push_back(byBegin[next++]);
    std::erase_if(active, [&](std::size_t e) { return entries[e].end <= q.begin; });
    for (std::size_t e : active) {
      const SlotEntry &entry = entries[e];
      const std::size_t b = std::max(entry.begin, q.begin), end = std::min(entry.end, q.end);
      if (b < end)
        runs[q.tile][q.partition].push_back({entry.slot + (b - entry.begin), end - b,
                                             q.localSlot + static_cast<unsigned>(b - q.begin)});
    }
  }
  for (std::size_t t = 0; t < plan.finals.size(); ++t) {
    FinalTile &tile = plan.finals[t];
    for (auto &partitionRuns : runs[t]) {
      std::sort(partitionRuns.begin(), partitionRuns.end(),
                [](const FinalRun &a, const FinalRun &b) { return a.slot < b.slot; });
      tile.runs.insert(tile.runs.end(), partitionRuns.begin(), partitionRuns.end());
      tile.partitionRuns.push_back(static_cast<unsigned>(tile.runs.size()));
    }
  }
  return plan;
}

} // namespace aspen::ops::detail
