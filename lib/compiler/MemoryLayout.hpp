// Memory layout: places every buffer in one arena and accounts variable bytes per tile.
//  - always-live variables and the vertex state each get their own 64-byte aligned bytes, first;
//  - compute sets run one at a time, so all scratch buffers share one region as big as the
//    largest of them, next;
//  - the other variables (reusable, see Liveness.hpp) share the rest: programs never run at the
//    same time, and within a program two buffers share bytes only when their live ranges do not
//    overlap. Placement is first fit, largest buffer first (ties: earlier range, lower index), so
//    the layout is deterministic; the arena is as big as the largest program needs;
//  - constants get their initial values;
//  - the peak of variable bytes mapped to each tile, counting reusable variables only during
//    their live ranges: above the target's bytes per tile it raises
//    graph_memory_allocation_error naming the tile with the highest peak, the step of its peak
//    and the largest tensors live on it there (debug names, shapes, bytes on the tile, where
//    they are live, in the run order of `report`), unless allowOutOfMemory or the target does
//    not enforce tile memory (Target::isTileMemoryEnforced; then a warning with that message).
// Assumes analyseLiveness has set the buffers' live ranges.
#pragma once

#include "CompileReport.hpp"
#include "CompiledGraph.hpp"
#include "core/GraphState.hpp"

namespace aspen::detail {

// Adds one buffer per variable as buffers [0, numVariables): call before any other pass adds a
// buffer, so that variable v is buffer v.
void addVariableBuffers(const GraphState &graph, CompiledGraph &out);

void planMemory(const GraphState &graph, bool allowOutOfMemory, const CompileReport &report,
                CompiledGraph &out);

} // namespace aspen::detail
