// Tensors as byte runs of compiled buffers (variable v is buffer v).
#pragma once

#include "CompiledGraph.hpp"

#include <aspen/Tensor.hpp>

namespace aspen::detail {

RegionList regionsOf(const Tensor &t);

// True when the regions are one run of consecutive elements.
bool isContiguous(const RegionList &regions);

// The same elements in the same order: equal element size, count and runs.
bool sameElements(const RegionList &a, const RegionList &b);

// A hash of what sameElements compares, so that matching a tensor against many others is a
// look-up rather than a comparison with each.
std::uint64_t hashElements(const RegionList &regions);

// A running hash combined with the next value (hashElements' step; also for keys around it).
std::uint64_t hashMix(std::uint64_t h, std::uint64_t value);

} // namespace aspen::detail
