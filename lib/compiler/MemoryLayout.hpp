// Memory layout: places every buffer in one arena and accounts variable bytes per tile.
//  - variables and the vertex state are always live, each at its own 64-byte aligned offset;
//  - compute sets run one at a time, so all scratch buffers share one region as big as the
//    largest of them;
//  - constants get their initial values;
//  - variable bytes mapped to a tile above the target's bytes per tile raise
//    graph_memory_allocation_error naming the tile, unless allowOutOfMemory (then a warning).
#pragma once

#include "CompiledGraph.hpp"
#include "core/GraphState.hpp"

namespace aspen::detail {

// Adds one buffer per variable as buffers [0, numVariables): call before any other pass adds a
// buffer, so that variable v is buffer v.
void addVariableBuffers(const GraphState &graph, CompiledGraph &out);

void planMemory(const GraphState &graph, bool allowOutOfMemory, CompiledGraph &out);

} // namespace aspen::detail
