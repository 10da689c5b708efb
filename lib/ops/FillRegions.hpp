// Helpers of the builders that put one vertex on each tile over a tensor's regions (fill, iota,
// scaledAdd, dynamic slices, element-wise operations, nn's element-wise non-linearities).
#pragma once

#include "support/Writability.hpp"

#include <aspen/Graph.hpp>

#include <functional>
#include <string>
#include <vector>

namespace aspen::ops::detail {

// Raises graph_connection_error naming `op` and t unless a vertex may write every element of t
// (support/Writability.hpp).
using aspen::detail::requireWritable;

// For each tile owning elements of t: one vertex of vertexType on that tile in cs; `connect`
// receives it and the tile's intervals of t.flatten() (each contiguous in one variable).
void addVertexPerTile(Graph &graph, ComputeSet cs, const Tensor &t, const std::string &vertexType,
                      const std::function<void(VertexRef, const std::vector<Interval> &)> &connect);

// The views flat.slice(i) for each interval i.
std::vector<Tensor> regionSlices(const Tensor &flat, const std::vector<Interval> &regions);

// A scalar constant of `type` holding `value` (converted; type_error when type cannot hold it),
// mapped to tile 0.
template <class T>
Tensor scalarConstant(Graph &graph, Type type, T value, const DebugContext &debug) {
  Tensor c = graph.addConstant(type, {}, value, debug);
  graph.setTileMapping(c, 0);
  return c;
}

} // namespace aspen::ops::detail
