// Helpers of the ops builders that put one vertex on each tile over a tensor's regions (fill,
// iota, scaledAdd, dynamic slices, element-wise operations).
#pragma once

#include "layersupport/VertexPerTile.hpp"
#include "support/Writability.hpp"

#include <aspen/Graph.hpp>

namespace aspen::ops::detail {

// Raises graph_connection_error naming `op` and t unless a vertex may write every element of t
// (support/Writability.hpp).
using aspen::detail::requireWritable;

// One vertex per tile over a tensor's regions (support/VertexPerTile.hpp).
using aspen::detail::addVertexPerTile;
using aspen::detail::regionSlices;

// A scalar constant of `type` holding `value` (converted; type_error when type cannot hold it),
// mapped to tile 0.
template <class T>
Tensor scalarConstant(Graph &graph, Type type, T value, const DebugContext &debug) {
  Tensor c = graph.addConstant(type, {}, value, debug);
  graph.setTileMapping(c, 0);
  return c;
}

} // namespace aspen::ops::detail
