#include "LinearMapping.hpp"

#include <algorithm>

namespace aspen::detail {

std::vector<TileRange> linearMapping(unsigned numTiles, std::size_t numElements,
                                     std::size_t grainSize, std::size_t minElementsPerTile) {
  std::vector<TileRange> ranges;
  if (numElements == 0 || numTiles == 0)
    return ranges;
  const std::size_t grain = std::max<std::size_t>(1, grainSize);
  const std::size_t minGrains = std::max<std::size_t>(1, (minElementsPerTile + grain - 1) / grain);
  const std::size_t numGrains = (numElements + grain - 1) / grain;
  const std::size_t tiles =
      std::min<std::size_t>(numTiles, std::max<std::size_t>(1, numGrains / minGrains));
  const std::size_t grainsPerTile = numGrains / tiles;
  const std::size_t tilesWithExtra = numGrains % tiles;
  std::size_t begin = 0;
  for (std::size_t tile = 0; tile < tiles && begin < numElements; ++tile) {
    const std::size_t grains = grainsPerTile + (tile < tilesWithExtra ? 1 : 0);
    const std::size_t end = std::min(numElements, begin + grains * grain);
    ranges.push_back({static_cast<unsigned>(tile), begin, end});
    begin = end;
  }
  return ranges;
}

} // namespace aspen::detail
