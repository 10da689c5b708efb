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
      groups_.push_back({inShape[d], 0, 0, 0, reduced});
  }
  if (groups_.empty())
    groups_.push_back({1, 0, 0, 0, false});
  std::size_t inStride = 1;
  for (auto g = groups_.rbegin(); g != groups_.rend(); ++g) {
    g->inStride = inStride;
    inStride *= g->size;
    g->outStride = numOutputs_;
    g->reducedStride = numReduced_;
    (g->reduced ? numReduced_ : numOutputs_) *= g->size;
  }
}

std::size_t ReduceGeometry::outIndex(std::size_t inIndex) const {
  std::size_t out = 0;
  for (const Group &g : groups_)
    if (!g.reduced)
      out += (inIndex / g.inStride) % g.size * g.outStride;
  return out;
}

std::size_t ReduceGeometry::reducedIndex(std::size_t inIndex) const {
  std::size_t r = 0;
  for (const Group &g : groups_)
    if (g.reduced)
      r += (inIndex / g.inStride) % g.size * g.reducedStride;
  return r;
}

std::size_t ReduceGeometry::inIndex(std::size_t outIndex, std::size_t reducedIndex) const {
  std::size_t in = 0;
  for (const Group &g : groups_)
    in +=
        (g.reduced ? reducedIndex / g.reducedStride : outIndex / g.outStride) % g.size * g.inStride;
  return in;
}

std::size_t ReduceGeometry::innerKeptSize() const {
  return groups_.size() < 2 ? 1 : groups_[groups_.size() - 2].size;
}

std::size_t ReduceGeometry::blockSize() const {
  std::size_t b = 256;
  while (numReduced_ / b > 1024)
    b *= 2;
  return b;
}

std::size_t ReduceGeometry::rowChunk() const { return std::min(blockSize(), innerSize()); }
std::size_t ReduceGeometry::blocksPerRow() const {
  return (innerSize() + rowChunk() - 1) / rowChunk();
}

std::size_t ReduceGeometry::blocksPerOutput() const {
  if (numReduced_ == 0)
    return 0;
  if (innerReduced())
    return numReduced_ / innerSize() * blocksPerRow();
  return (numReduced_ + blockSize() - 1) / blockSize();
}

namespace {

// Collects one tile's blocks into partitions (consecutive global slots, about `target`
// elements each) and segments.
class PartialsBuilder {
public:
  PartialsBuilder(unsigned tile, std::size_t target)
      : planned_{tile, {}, {0}, {}}, target_(target) {}

  // A contiguous "rows" block [begin, end) for global slot `slot`; `mergeable`: it may share a
  // segment with the previous block (it does not reach past its tile region).
  void addBlock(std::size_t begin, std::size_t end, std::size_t slot, unsigned group,
                bool mergeable) {
    openPartition(slot, end - begin);
    const unsigned local = static_cast<unsigned>(slot - planned_.partitionSlots.back().begin());
    if (mergeable && canExtend_ && planned_.segments.back().end == begin)
      planned_.segments.back().end = end;
    else
      planned_.segments.push_back({begin, end, local, group});
    canExtend_ = mergeable && end - begin == group;
    extend(slot + 1);
  }
  // Global slots [slot, slot + n) of a "columns" block: runs of n elements at rowBegins.
  void addStrip(const std::vector<std::size_t> &rowBegins, std::size_t n, std::size_t slot) {
    openPartition(slot, n * rowBegins.size());
    const unsigned local = static_cast<unsigned>(slot - planned_.partitionSlots.back().begin());
    for (std::size_t b : rowBegins)
      planned_.segments.push_back({b, b + n, local, 1});
    canExtend_ = false;
    extend(slot + n);
  }
  PartialsTile finish() {
    close();
    return std::move(planned_);
  }

private:
  void openPartition(std::size_t slot, std::size_t elements) {
    if (open_ && (elements_ >= target_ || slot != planned_.partitionSlots.back().end()))
      close();
    if (!open_) {
      planned_.partitionSlots.emplace_back(slot, slot);
      open_ = true;
      elements_ = 0;
      canExtend_ = false;
    }
    elements_ += elements;
  }
  void extend(std::size_t slotEnd) {
    planned_.partitionSlots.back() = Interval(planned_.partitionSlots.back().begin(), slotEnd);
  }
  void close() {
    if (!open_)
      return;
    planned_.partitionSegments.push_back(static_cast<unsigned>(planned_.segments.size()));
    open_ = false;
  }

  PartialsTile planned_;
  std::size_t target_, elements_ = 0;
  bool open_ = false, canExtend_ = false;
};

// Blocks of inner-reduced rows whose first element is in [begin, end).
void addRowBlocks(const ReduceGeometry &geometry, std::size_t begin, std::size_t end,
                  PartialsBuilder &builder) {
  const std::size_t inner = geometry.innerSize(), chunk = geometry.rowChunk(),
                    perRow = geometry.blocksPerRow();
  std::size_t row = begin / inner, c = (begin % inner + chunk - 1) / chunk;
  if (c == perRow)
    ++row, c = 0;
  for (std::size_t at = row * inner + c * chunk; at < end;) {
    const std::size_t stop = std::min(row * inner + inner, at + chunk);
    builder.addBlock(at, stop, row * perRow + c, static_cast<unsigned>(chunk), stop <= end);
    if (++c == perRow)
      ++row, c = 0;
    at = row * inner + c * chunk;
  }
}

// Blocks of "columns" reductions whose first row is in [begin, end), each split so that one
// part has about `target` elements.
void addColumnBlocks(const ReduceGeometry &geometry, std::size_t begin, std::size_t end,
                     std::size_t target, PartialsBuilder &builder) {
  const std::size_t inner = geometry.innerSize(), block = geometry.blockSize(),
                    reduced = geometry.numReduced();
  std::vector<std::size_t> rowBegins;
  for (std::size_t rowStart = begin / inner * inner; rowStart < end; rowStart += inner) {
    const std::size_t b = std::max(begin, rowStart), e = std::min(end, rowStart + inner);
    const std::size_t r = geometry.reducedIndex(rowStart);
    if (r % block != 0)
      continue;
    const std::size_t rows = std::min(block, reduced - r);
    const std::size_t o = geometry.outIndex(b);
    const std::size_t step = std::max<std::size_t>(1, target / rows);
    for (std::size_t from = 0; from < e - b; from += step) {
      const std::size_t n = std::min(step, e - b - from);
      rowBegins.clear();
      for (std::size_t k = 0; k < rows; ++k)
        rowBegins.push_back(geometry.inIndex(o + from, r + k));
      builder.addStrip(rowBegins, n, r / block * geometry.numOutputs() + o + from);
    }
  }
}

// The runs that merge the partials of outputs `region` (local slots from localSlot on), each
// output's blocks in block order.
void addFinalRuns(const ReduceGeometry &geometry, const Interval &region, unsigned localSlot,
                  std::vector<FinalRun> &runs) {
  const std::size_t perOutput = geometry.blocksPerOutput();
  if (perOutput == 0)
    return;
  if (!geometry.innerReduced()) { // block-major slots: one run per block
    for (std::size_t b = 0; b < perOutput; ++b)
      runs.push_back({b * geometry.numOutputs() + region.begin(), region.size(), localSlot, 1});
    return;
  }
  // Row-major slots: within an inner kept group, consecutive outputs have consecutive rows.
  const std::size_t perRow = geometry.blocksPerRow(), inner = geometry.innerSize(),
                    outerRows = geometry.numReduced() / inner,
                    kept = outerRows == 1 ? region.end() : geometry.innerKeptSize();
  for (std::size_t o = region.begin(); o < region.end();) {
    const std::size_t stop = std::min(region.end(), (o / kept + 1) * kept);
    for (std::size_t r = 0; r < outerRows; ++r)
      runs.push_back({geometry.inIndex(o, r * inner) / inner * perRow, (stop - o) * perRow,
                      localSlot + static_cast<unsigned>(o - region.begin()),
                      static_cast<unsigned>(perRow)});
    o = stop;
  }
}

} // namespace

ReducePlan planReduction(const Graph &graph, const Tensor &in, const Tensor &out,
                         const ReduceGeometry &geometry, unsigned minElementsPerWorker) {
  ReducePlan plan;
  plan.numPartialSlots = geometry.numOutputs() * geometry.blocksPerOutput();
  const unsigned workers = graph.getTarget().getNumWorkerContexts();
  const auto inRegions = util::getTileContiguousRegions(graph, in);
  if (plan.numPartialSlots != 0)
    for (unsigned tile = 0; tile < inRegions.size(); ++tile) {
      std::size_t elements = 0;
      for (const Interval &region : inRegions[tile])
        elements += region.size();
      if (elements == 0)
        continue;
      const std::size_t target =
          std::max<std::size_t>(minElementsPerWorker, (elements + workers - 1) / workers);
      PartialsBuilder builder(tile, target);
      for (const Interval &region : inRegions[tile])
        if (geometry.innerReduced())
          addRowBlocks(geometry, region.begin(), region.end(), builder);
        else
          addColumnBlocks(geometry, region.begin(), region.end(), target, builder);
      PartialsTile planned = builder.finish();
      if (!planned.segments.empty())
        plan.partials.push_back(std::move(planned));
    }

  const auto outRegions = util::getTileContiguousRegions(graph, out);
  for (unsigned tile = 0; tile < outRegions.size(); ++tile) {
    if (outRegions[tile].empty())
      continue;
    FinalTile planned{tile, {}, {}, {0}, {0}, plan.numStateSlots};
    unsigned slots = 0;
    for (const auto &share :
         util::splitRegionsBetweenWorkers(graph.getTarget(), outRegions[tile], 1, 32)) {
      for (const Interval &region : share) {
        addFinalRuns(geometry, region, slots, planned.runs);
        planned.outRegions.push_back(region);
        slots += static_cast<unsigned>(region.size());
      }
      planned.partitionRuns.push_back(static_cast<unsigned>(planned.runs.size()));
      planned.partitionSlots.push_back(slots);
    }
    plan.numStateSlots += slots;
    plan.finals.push_back(std::move(planned));
  }
  return plan;
}

} // namespace aspen::ops::detail
