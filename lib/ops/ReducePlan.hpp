// The plan of a reduction: which vertex reduces which input elements in which order.
//
// The order of accumulation is a function of the reduction (shape, dims) alone, never of the
// tile mappings of in and out, the target's worker count or the executor:
// Blocks. For each output, its reduced elements in canonical order (flattened index of the
// reduced dimensions) are cut into blocks of blockSize() elements (from the number of reduced
// elements only); when the innermost dimensions are reduced, blocks also end at the end of each
// innermost reduced row, so that every block is contiguous in memory.
// Stage 1 (partials): each block is reduced from the identity, in canonical order, into its own
// partial slot by the tile that holds the block's first element (a block may read elements of
// other tiles). A tile's blocks are grouped into partitions (one worker each) that never split a
// block.
//   inner dims reduced ("rows"): slot = (in flat index / innerSize) * blocksPerRow + block in row;
//                      a segment covers consecutive blocks, element j feeding slot + j / group.
//   otherwise ("columns"): slot = block * numOutputs + output; a block is a strip of outputs that
//                      are consecutive in memory; its rows are segments with group 1 (element k
//                      feeds slot + k), added elementwise in canonical order.
// Stage 2 (final): on each tile that holds output, each output merges its blocks' partials in
// block order from the identity (runs of consecutive partial slots, `group` slots per output).
#pragma once

#include <aspen/Graph.hpp>

#include <cstddef>
#include <vector>

namespace aspen::ops::detail {

// in's flat index <-> (out's flat index, canonical reduced index), for `dims` reduced.
class ReduceGeometry {
public:
  ReduceGeometry(const std::vector<std::size_t> &inShape, const std::vector<std::size_t> &dims);
  std::size_t outIndex(std::size_t inIndex) const;
  std::size_t reducedIndex(std::size_t inIndex) const;
  std::size_t inIndex(std::size_t outIndex, std::size_t reducedIndex) const;
  std::size_t numOutputs() const { return numOutputs_; }
  std::size_t numReduced() const { return numReduced_; }
  // The innermost group of dimensions (size-1 dimensions dropped, neighbours of one kind merged).
  std::size_t innerSize() const { return groups_.back().size; }
  bool innerReduced() const { return groups_.back().reduced; }
  // The size of the kept group outside the inner group (1 if none): within one such group,
  // consecutive outputs have consecutive inner rows.
  std::size_t innerKeptSize() const;
  // Elements per block: a function of numReduced() only.
  std::size_t blockSize() const;
  // Blocks per output.
  std::size_t blocksPerOutput() const;
  // innerReduced: elements per block in a row, blocks per row.
  std::size_t rowChunk() const;
  std::size_t blocksPerRow() const;

private:
  struct Group {
    std::size_t size, inStride, outStride, reducedStride;
    bool reduced;
  };
  std::vector<Group> groups_;
  std::size_t numOutputs_ = 1, numReduced_ = 1;
};

// A run of input elements [begin, end) (flat indices of in); element i feeds the partition's
// slot slot + (i - begin) / group.
struct ReduceSegment {
  std::size_t begin, end;
  unsigned slot, group;
};

struct PartialsTile {
  unsigned tile;
  std::vector<ReduceSegment> segments;
  std::vector<unsigned> partitionSegments; // partition p: segments [p], [p + 1)
  std::vector<Interval> partitionSlots;    // partition p: these global partial slots
};

// Partial slots [slot, slot + count) merged into the tile's output slots from localSlot on,
// `group` consecutive partial slots per output slot.
struct FinalRun {
  std::size_t slot, count;
  unsigned localSlot, group;
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
