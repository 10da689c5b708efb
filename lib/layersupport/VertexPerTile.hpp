// Building a compute set with one vertex on each tile over a tensor's regions: what fill, iota,
// scaledAdd, dynamic slices, element-wise operations and nn's non-linearities share. Layer
// support (lib/layersupport): header-only over aspen::util's public API, so only the layers above
// aspen_util include it.
#pragma once

#include <aspen/Graph.hpp>
#include <aspen/util/TileMapping.hpp>

#include <functional>
#include <string>
#include <vector>

namespace aspen::detail {

// For each tile owning elements of t: one vertex of vertexType on that tile in cs; `connect`
// receives it and the tile's intervals of t.flatten() (each contiguous in one variable).
inline void
addVertexPerTile(Graph &graph, ComputeSet cs, const Tensor &t, const std::string &vertexType,
                 const std::function<void(VertexRef, const std::vector<Interval> &)> &connect) {
  const auto perTile = util::getTileContiguousRegions(graph, t);
  for (unsigned tile = 0; tile < perTile.size(); ++tile) {
    if (perTile[tile].empty())
      continue;
    VertexRef v = graph.addVertex(cs, vertexType);
    graph.setTileMapping(v, tile);
    connect(v, perTile[tile]);
  }
}

// The views flat.slice(i) for each interval i.
inline std::vector<Tensor> regionSlices(const Tensor &flat, const std::vector<Interval> &regions) {
  std::vector<Tensor> slices;
  slices.reserve(regions.size());
  for (const Interval &i : regions)
    slices.push_back(flat.slice(i));
  return slices;
}

} // namespace aspen::detail
