#include "FillRegions.hpp"

#include <aspen/util/TileMapping.hpp>

#include <fmt/format.h>

namespace aspen::ops::detail {

void addVertexPerTile(
    Graph &graph, ComputeSet cs, const Tensor &t, const std::string &vertexType,
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

std::vector<Tensor> regionSlices(const Tensor &flat, const std::vector<Interval> &regions) {
  std::vector<Tensor> slices;
  slices.reserve(regions.size());
  for (const Interval &i : regions)
    slices.push_back(flat.slice(i));
  return slices;
}

} // namespace aspen::ops::detail
