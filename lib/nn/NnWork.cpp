#include "NnWork.hpp"

#include <aspen/Error.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <istream>
#include <sstream>

namespace aspen::nn::work {

Tensor asRows(const Tensor &t) {
  if (t.rank() == 1)
    return t.reshape({1, t.dim(0)});
  return t.flatten(0, t.rank() - 1);
}

std::vector<std::vector<Interval>> rowsByTile(const Graph &graph, const Tensor &rows) {
  const std::size_t cols = rows.dim(1);
  const auto regions = util::getTileContiguousRegions(graph, rows);
  std::vector<std::vector<Interval>> tileRows(regions.size());
  for (std::size_t tile = 0; tile < regions.size(); ++tile)
    for (const Interval &region : regions[tile]) {
      // The rows whose first element (at row * cols) lies in this region.
      const std::size_t first = (region.begin() + cols - 1) / cols;
      const std::size_t last = (region.end() + cols - 1) / cols;
      if (first >= last)
        continue;
      auto &list = tileRows[tile];
      if (!list.empty() && list.back().end() == first)
        list.back() = Interval(list.back().begin(), last);
      else
        list.emplace_back(first, last);
    }
  return tileRows;
}

TileToTensorMapping rowResultMapping(const Graph &graph,
                                     const std::vector<std::vector<Interval>> &tileRows,
                                     std::size_t perRow) {
  TileToTensorMapping mapping(graph.getTarget().getNumTiles());
  for (std::size_t tile = 0; tile < tileRows.size(); ++tile)
    for (const Interval &rows : tileRows[tile])
      mapping[tile].emplace_back(rows.begin() * perRow, rows.end() * perRow);
  return mapping;
}

Tensor addRowResult(Graph &graph, Type type, const std::vector<std::vector<Interval>> &tileRows,
                    std::size_t numRows, std::size_t perRow, const DebugContext &debug) {
  Tensor result = perRow == 0 ? graph.addVariable(type, {numRows}, debug)
                              : graph.addVariable(type, {numRows, perRow}, debug);
  graph.setTileMapping(result, rowResultMapping(graph, tileRows, perRow == 0 ? 1 : perRow));
  return result;
}

std::vector<Tensor> rowList(const Tensor &rows, const std::vector<Interval> &intervals) {
  std::vector<Tensor> list;
  for (const Interval &i : intervals)
    for (std::size_t r = i.begin(); r < i.end(); ++r)
      list.push_back(rows[r]);
  return list;
}

Tensor rowElements(const Tensor &perRow, const std::vector<Interval> &intervals) {
  return concat(perRow.slices(intervals));
}

std::vector<Tensor> gateSegments(const Tensor &t, const std::vector<Interval> &intervals,
                                 const std::vector<unsigned> &gates) {
  std::vector<Tensor> out;
  for (const Interval &i : intervals)
    for (std::size_t r = i.begin(); r < i.end(); ++r)
      for (unsigned j : gates)
        out.push_back(t[j][r]);
  return out;
}

namespace {
std::string listed(const std::vector<std::string> &names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}
} // namespace

std::string gateName(const std::vector<std::string> &names, int unit, const std::string &kind) {
  if (unit < 0 || unit >= static_cast<int>(names.size()))
    throw invalid_option(kind + " " + std::to_string(unit) + " is not a gate (0.." +
                         std::to_string(names.size() - 1) + ": " + listed(names) + ")");
  return names[unit];
}

int parseGateName(const std::vector<std::string> &names, const std::string &name,
                  const std::string &layer) {
  for (std::size_t u = 0; u < names.size(); ++u)
    if (name == names[u])
      return static_cast<int>(u);
  throw invalid_option("unknown " + layer + " gate '" + name + "': the gates are " +
                       listed(names));
}

std::string describe(const Tensor &t) {
  std::ostringstream os;
  os << t.getDebugStr() << " (" << t.elementType() << ")";
  return os.str();
}

void requireFloatingPoint(const Tensor &t, const std::string &what) {
  if (t.elementType() != FLOAT && t.elementType() != HALF) {
    std::ostringstream os;
    os << what << ": " << describe(t) << " must be float or half, not " << t.elementType();
    throw type_error(os.str());
  }
}

void addRowVertices(Graph &graph, ComputeSet cs, const std::string &vertexType,
                    const std::vector<std::vector<Interval>> &tileRows,
                    const std::function<void(VertexRef, const std::vector<Interval> &)> &connect) {
  for (unsigned tile = 0; tile < tileRows.size(); ++tile) {
    if (tileRows[tile].empty())
      continue;
    VertexRef v = graph.addVertex(cs, vertexType);
    connect(v, tileRows[tile]);
    graph.setTileMapping(v, tile);
  }
}

Tensor rowMoments(Graph &graph, const Tensor &a, const Tensor &b, const Tensor &shift,
                  program::Sequence &prog, const DebugContext &debug) {
  const std::size_t R = a.dim(0);
  const auto tileRows = rowsByTile(graph, a);
  Tensor out = addRowResult(graph, FLOAT, tileRows, R, 2, {debug, "moments"});
  ComputeSet cs = graph.addComputeSet({debug, "moments"});
  addRowVertices(graph, cs, util::templateVertex("aspen::nn::RowMoments", a.elementType()),
                 tileRows, [&](VertexRef v, const std::vector<Interval> &intervals) {
                   graph.connect(v["a"], rowList(a, intervals));
                   graph.connect(v["b"], rowList(b, intervals));
                   graph.connect(v["shift"], rowElements(shift, intervals));
                   graph.connect(v["out"], rowElements(out, intervals).flatten());
                 });
  prog.add(program::Execute(cs, {debug, "moments"}));
  return out;
}

} // namespace aspen::nn::work
