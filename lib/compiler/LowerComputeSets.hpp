// Compute-set lowering: each vertex's connections become field descriptors (VertexAbi.hpp).
//  - an edge whose tensor is one run of consecutive elements points straight at its buffer;
//  - any other edge gets a contiguous temporary in the compute set's scratch buffer, gathered
//    before the vertices run (fields that read) and scattered after (fields that write). Fields
//    of one vertex connected to the same tensor share a temporary, so in-place vertices work;
//  - plain members point at their values in the vertex-state buffer;
//  - 2-D fields point at a table of edge descriptors.
// Vertices are grouped by tile, keeping their order of addition within a tile.
// Assumes a verified graph.
#pragma once

#include "CompiledGraph.hpp"
#include "core/GraphState.hpp"

#include <unordered_map>

namespace aspen::detail {

// For each graph compute set in `computeSets`, its index in CompiledGraph::computeSets.
std::unordered_map<unsigned, std::uint32_t>
lowerComputeSets(const GraphState &graph, const std::vector<unsigned> &computeSets,
                 CompiledGraph &out);

} // namespace aspen::detail
