// The linear tile mapping of a flat range of elements: spread evenly over tiles in grains.
#pragma once

#include <cstddef>
#include <vector>

namespace aspen::detail {

struct TileRange {
  unsigned tile;
  std::size_t begin, end;
};

// Splits numElements over numTiles tiles in order (tile 0 first): each tile gets a whole number
// of grains (the last may end short), at least minElementsPerTile where there are that many, and
// the tiles used get equal shares to within one grain.
std::vector<TileRange> linearMapping(unsigned numTiles, std::size_t numElements,
                                     std::size_t grainSize, std::size_t minElementsPerTile);

} // namespace aspen::detail
