// Poplar's <poplar/CycleCount.hpp>, mapped onto aspen/ops/CycleCount.hpp: cycleCount and
// cycleStamp with Poplar's signatures, counting the target's tile-clock cycles (see that header
// for the clocks used). They live in Aspen's ops library: link -lpopops (or Aspen::ops) too,
// and call popops::addCodelets(graph) first, as for any popops function.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <poplar/Program.hpp>
#include <poplar/SyncType.hpp>
#include <aspen/ops/CycleCount.hpp>

namespace poplar {
using aspen::ops::cycleCount;
using aspen::ops::cycleStamp;
} // namespace poplar
