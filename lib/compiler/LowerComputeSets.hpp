// Compute-set lowering: each vertex's connections become field descriptors (VertexAbi.hpp).
//  - an edge whose tensor is one run of consecutive elements points straight at its buffer;
//  - any other edge gets a contiguous temporary in the compute set's scratch buffer, gathered
//    before the vertices run (fields that read) and scattered after (fields that write): Copy
//    steps, made by copy lowering. Fields of one vertex connected to the same tensor share a
//    temporary, so in-place vertices work;
//  - plain members point at their values in the vertex-state buffer;
//  - 2-D fields point at a table of edge descriptors.
// Vertices are grouped by tile, keeping their order of addition within a tile.
// Each edge used in place is recorded as an access of the compute set. Assumes a verified graph.
#pragma once

#include "CompiledGraph.hpp"
#include "Lowering.hpp"
#include "core/GraphState.hpp"

namespace aspen::detail {

// Lowers the graph compute sets LoweringState::computeSetIds names, in that order, and records
// each one's accesses and rearrangement (Lowering.hpp).
void lowerComputeSets(const GraphState &graph, CompiledGraph &out, LoweringState &state);

} // namespace aspen::detail
