// Walking the lowered program: what the passes after program lowering (liveness, memory layout,
// future fusion and scheduling) use instead of the program tree.
#pragma once

#include "CompiledGraph.hpp"

#include <aspen/ArrayRef.hpp>

#include <cstdint>
#include <functional>

namespace aspen::detail {

// Visits every step reachable from `roots` once, parents before children, children in order;
// a step shared by several parents (a called function) is visited at its first use.
void forEachStep(const CompiledGraph &graph, ArrayRef<std::uint32_t> roots,
                 const std::function<void(std::uint32_t index, const Step &step)> &visit);

} // namespace aspen::detail
