// The linear tile mapping of a variable: elements spread evenly over tiles in grains.
#pragma once

#include <aspen/Target.hpp>

#include <cstddef>
#include <vector>

namespace aspen::detail {

struct TileRange {
  unsigned tile;
  std::size_t begin, end;
};

// Splits numElements of `type` over the target's tiles in order: each tile gets a whole number
// of grains (grainSize elements; the target's vector width when 0), at least minBytesPerTile
// bytes where there is that much, and the tiles used get equal shares to within one grain.
std::vector<TileRange> linearMapping(const Target &target, Type type, std::size_t numElements,
                                     std::size_t grainSize = 0, std::size_t minBytesPerTile = 128);

} // namespace aspen::detail
