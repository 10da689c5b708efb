// The linear tile mapping of a flat range of elements: spread evenly over tiles in grains.
#pragma once

#include <cstddef>
#include <vector>

namespace aspen::detail {

struct TileRange {
  unsigned tile;
  std::size_t begin, end;
};

// Splits numElements over numTiles tiles in order (tile 0 first), as PopLibs' linear mapping
// does: every tile used gets the same share, max(ceil(numElements / numTiles),
// minElementsPerTile) rounded up to a whole number of grains, except the last tile used, which
// gets what is left. Ports of PopLibs code therefore see the same layouts.
std::vector<TileRange> linearMapping(unsigned numTiles, std::size_t numElements,
                                     std::size_t grainSize, std::size_t minElementsPerTile);

} // namespace aspen::detail
