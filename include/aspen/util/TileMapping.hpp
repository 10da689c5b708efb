// Tile-mapping helpers (poputil's TileMapping.hpp).
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>

#include <cstddef>
#include <vector>

namespace aspen::util {

// The linear mapping of a tensor of `shape` and `type` over the graph's tiles: elements in
// grains (grainSize elements; the target's vector width when 0), at least minElementsPerTile
// per tile where there are that many, equal shares to within a grain.
ASPEN_API TileToTensorMapping calcLinearTileMapping(const Graph &graph, ArrayRef<std::size_t> shape,
                                                    std::size_t minElementsPerTile,
                                                    std::size_t grainSize);
// With the defaults: grain = vector width of the type, at least 128 bytes per tile.
ASPEN_API TileToTensorMapping calcLinearTileMapping(const Graph &graph, const Tensor &t);

ASPEN_API void mapTensorLinearly(Graph &graph, const Tensor &t);
ASPEN_API void mapTensorLinearly(Graph &graph, const Tensor &t, std::size_t minElementsPerTile,
                                 std::size_t grainSize);
// As mapTensorLinearly, with tiles numbered from `offset` (wrapping), or in reverse order.
ASPEN_API void mapTensorLinearlyWithOffset(Graph &graph, const Tensor &t, unsigned offset,
                                           bool ascendingOrder = true);
ASPEN_API void mapTensorLinearlyWithOffset(Graph &graph, const Tensor &t,
                                           std::size_t minElementsPerTile, std::size_t grainSize,
                                           unsigned offset, bool ascendingOrder = true);

// The flattened intervals of t, grouped by tile, each interval cut where the elements stop being
// consecutive elements of one variable: per tile, a list of regions that a vertex can take as
// contiguous vectors. Empty lists for tiles that own nothing. Raises invalid_tile_mapping when t
// is not completely mapped.
ASPEN_API std::vector<std::vector<Interval>> getTileContiguousRegions(const Graph &graph,
                                                                      const Tensor &t);

// Splits `regions` (intervals of a flattened tensor) into at most maxPartitions groups of about
// equal element count, each a list of intervals; intervals are cut only at multiples of grainSize
// from their start, and a group gets at least minElementsPerPartition where there is enough.
ASPEN_API std::vector<std::vector<Interval>>
splitRegions(const std::vector<Interval> &regions, unsigned grainSize, unsigned maxPartitions,
             unsigned minElementsPerPartition = 0, unsigned maxElementsPerPartition = ~0u);
// splitRegions over the target's workers per tile, with the grain in elements of `type`.
ASPEN_API std::vector<std::vector<Interval>>
splitRegionsBetweenWorkers(const Target &target, const std::vector<Interval> &regions,
                           unsigned grainSize, unsigned minElementsPerPartition = 0,
                           unsigned maxElementsPerPartition = ~0u);

} // namespace aspen::util
