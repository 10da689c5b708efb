// cycleStamp and cycleCount: CycleStamp vertices in their own compute set, and a
// CycleDifference for the count.
#include <aspen/ops/CycleCount.hpp>

#include <aspen/Error.hpp>

#include <fmt/format.h>

namespace aspen::ops {

namespace {

void requireTile(const Graph &graph, unsigned tile, const char *what) {
  if (tile >= graph.getTarget().getNumTiles())
    throw invalid_tile_mapping(fmt::format("{}: tile {} is outside the graph's {} tiles", what,
                                           tile, graph.getTarget().getNumTiles()));
}

Tensor stampTensor(Graph &graph, unsigned tile, const DebugContext &debug) {
  Tensor t = graph.addVariable(UNSIGNED_INT, {2}, debug);
  graph.setTileMapping(t, tile);
  return t;
}

void addStamp(Graph &graph, ComputeSet cs, const Tensor &out, unsigned tile) {
  VertexRef v = graph.addVertex(cs, "aspen::ops::CycleStamp");
  graph.setTileMapping(v, tile);
  graph.connect(v["out"], out);
  graph.setInitialValue(v["cyclesPerNanosecond"],
                        static_cast<float>(graph.getTarget().getTileClockFrequency() / 1e9));
}

} // namespace

std::vector<Tensor> cycleStamp(Graph &graph, program::Sequence &prog,
                               const std::vector<unsigned> &tiles, program::SyncType,
                               const DebugContext &debug) {
  const DebugContext name = debug.getPathName().empty() ? DebugContext("cycleStamp") : debug;
  for (unsigned tile : tiles)
    requireTile(graph, tile, "cycleStamp");
  std::vector<Tensor> stamps;
  for (unsigned tile : tiles)
    stamps.push_back(stampTensor(graph, tile, {name, fmt::format("tile{}", tile)}));
  if (tiles.empty())
    return stamps;
  ComputeSet cs = graph.addComputeSet(name);
  for (std::size_t i = 0; i < tiles.size(); ++i)
    addStamp(graph, cs, stamps[i], tiles[i]);
  prog.add(program::Execute(cs, name));
  return stamps;
}

Tensor cycleStamp(Graph &graph, program::Sequence &prog, unsigned tile, program::SyncType syncType,
                  const DebugContext &debug) {
  return cycleStamp(graph, prog, std::vector<unsigned>{tile}, syncType, debug)[0];
}

Tensor cycleCount(Graph &graph, program::Sequence &prog, unsigned tile, program::SyncType syncType,
                  const DebugContext &debug) {
  const DebugContext name = debug.getPathName().empty() ? DebugContext("cycleCount") : debug;
  requireTile(graph, tile, "cycleCount");
  const Tensor count = stampTensor(graph, tile, {name, "count"});
  program::Sequence timed(name);
  const Tensor start = cycleStamp(graph, timed, tile, syncType, {name, "start"});
  timed.add(prog);
  const Tensor end = cycleStamp(graph, timed, tile, syncType, {name, "end"});
  ComputeSet cs = graph.addComputeSet({name, "difference"});
  VertexRef v = graph.addVertex(cs, "aspen::ops::CycleDifference");
  graph.setTileMapping(v, tile);
  graph.connect(v["start"], start);
  graph.connect(v["end"], end);
  graph.connect(v["out"], count);
  timed.add(program::Execute(cs, name));
  prog = timed;
  return count;
}

} // namespace aspen::ops
