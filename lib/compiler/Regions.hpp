// Tensors as byte runs of compiled buffers (variable v is buffer v).
#pragma once

#include "CompiledGraph.hpp"

#include <aspen/Tensor.hpp>

namespace aspen::detail {

RegionList regionsOf(const Tensor &t);

// True when the regions are one run of consecutive elements.
bool isContiguous(const RegionList &regions);

} // namespace aspen::detail
