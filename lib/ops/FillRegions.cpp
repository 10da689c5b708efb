#include "FillRegions.hpp"

#include <aspen/util/TileMapping.hpp>

#include <fmt/format.h>

namespace aspen::ops::detail {

void requireWritable(const Tensor &t, const std::string &op) {
  if (t.containsConstant())
    throw graph_connection_error(fmt::format(
        "{}: tensor {} contains constant elements, which cannot be written", op, t.getDebugStr()));
  if (t.containsAliases())
    throw graph_connection_error(fmt::format("{}: tensor {} contains the same element more than "
                                             "once, so the value written would be undefined",
                                             op, t.getDebugStr()));
}

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
