// The plan of a reduction: which vertex reduces which input elements in which order.
//
// Stage 1 (partials): on each tile that holds input, the tile's contiguous input regions are split
// over the target's workers (util::splitRegionsBetweenWorkers); each share ("partition") is cut
// into segments of consecutive elements that feed consecutive outputs, and reduces them into its
// own slots, one slot per distinct output it touches.
// Stage 2 (final): on each tile that holds output, the tile's output regions are split over the
// workers; each output merges the slots of every stage-1 partition that touched it, in the
// global order of partitions (tile, then worker share).
// Everything is decided here from the tile mappings of in and out, so the order of accumulation
// never depends on how the executor schedules tiles or workers.
#pragma once

#include <aspen/Graph.hpp>

#include <cstddef>
#include <vector>

namespace aspen::ops::detail {

// in's flat index -> out's flat index, for `dims` reduced (dims valid, in any order).
class ReduceGeometry {
public:
  ReduceGeometry(const std::vector<std::size_t> &inShape, const std::vector<std::size_t> &dims);
  std::size_t outIndex(std::size_t inIndex) const;
  std::size_t numOutputs() const { return numOutputs_; }
  // The innermost group of dimensions (size-1 dimensions dropped, neighbours of one kind merged).
  std::size_t innerSize() const { return groups_.back().size; }
  bool innerReduced() const { return groups_.back().reduced; }
  // Elements over which consecutive inner rows feed consecutive outputs (innerReduced only).
  std::size_t consecutiveRowsSpan() const;

private:
  struct Group {
    std::size_t size, inStride, outStride;
    bool reduced;
  };
  std::vector<Group> groups_;
  std::size_t numOutputs_ = 1;
};

// A run of input elements [begin, end) (flat indices of in); element i feeds the vertex slot
// slot + (i - begin) / group.
struct ReduceSegment {
  std::size_t begin, end;
  unsigned slot, group;
};

struct PartialsTile {
  unsigned tile;
  std::vector<ReduceSegment> segments;
  std::vector<unsigned> partitionSegments; // partition p: segments [p], [p + 1)
  std::vector<unsigned> partitionSlots;    // partition p: tile slots [p], [p + 1)
  std::size_t slotBase;                    // first slot of this tile in the partials tensor
};

// Slots [slot, slot + count) of the partials tensor, merged into the tile's output slots from
// localSlot on.
struct FinalRun {
  std::size_t slot, count;
  unsigned localSlot;
};

struct FinalTile {
  unsigned tile;
  std::vector<Interval> outRegions; // of out's flat index, in slot order
  std::vector<FinalRun> runs;
  std::vector<unsigned> partitionRuns;  // partition p: runs [p], [p + 1)
  std::vector<unsigned> partitionSlots; // partition p: slots [p], [p + 1)
  std::size_t slotBase;                 // first slot of this tile in the states tensor
};

struct ReducePlan {
  std::vector<PartialsTile> partials;
  std::vector<FinalTile> finals;
  std::size_t numPartialSlots = 0, numStateSlots = 0;
};

// in and out completely mapped; out has geometry.numOutputs() elements.
ReducePlan planReduction(const Graph &graph, const Tensor &in, const Tensor &out,
                         const ReduceGeometry &geometry, unsigned minElementsPerWorker);

} // namespace aspen::ops::detail
