#include "LinearMapping.hpp"

#include <algorithm>

namespace aspen::detail {

std::vector<TileRange> linearMapping(unsigned numTiles, std::size_t numElements,
                                     std::size_t grainSize, std::size_t minElementsPerTile) {
  std::vector<TileRange> ranges;
  if (numElements == 0 || numTiles == 0)
    return ranges;
  const std::size_t grain = std::max<std::size_t>(1, grainSize);
  const std::size_t even = (numElements + numTiles - 1) / numTiles;
  const std::size_t share = std::max(even, minElementsPerTile);
  const std::size_t perTile = std::max(grain, (share + grain - 1) / grain * grain);
  for (std::size_t begin = 0, tile = 0; begin < numElements; begin += perTile, ++tile)
    ranges.push_back({static_cast<unsigned>(tile), begin, std::min(numElements, begin + perTile)});
  return ranges;
}

} // namespace aspen::detail
