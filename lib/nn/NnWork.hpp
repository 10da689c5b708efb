// How the aspen::nn basics spread their work over tiles (internal).
//
// Element-wise work follows the tile mapping of the tensor written: per tile, its contiguous
// regions (util::getTileContiguousRegions) become the 2-D fields of one MultiVertex.
// Row work (softmax, loss, arg-max, top-k) gives each row of a [rows, cols] view to the tile that
// owns the row's first element; per-row results are mapped to that tile too.
#pragma once

#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>
#include <aspen/Tensor.hpp>

#include <functional>
#include <string>
#include <vector>

namespace aspen::nn::work {

// A view of t as [rows, innermost]: rank >= 2 flattens the outer dimensions, rank 1 is one row.
Tensor asRows(const Tensor &t);

// Per tile, the intervals of row numbers of `rows` ([R, C], C > 0) that the tile computes.
std::vector<std::vector<Interval>> rowsByTile(const Graph &graph, const Tensor &rows);

// The mapping of a [R, perRow] result whose row r lives where rowsByTile put row r.
TileToTensorMapping rowResultMapping(const Graph &graph,
                                     const std::vector<std::vector<Interval>> &tileRows,
                                     std::size_t perRow);

// A new variable [R] or [R, perRow] (perRow == 0 gives [R]) mapped by rowResultMapping.
Tensor addRowResult(Graph &graph, Type type, const std::vector<std::vector<Interval>> &tileRows,
                    std::size_t numRows, std::size_t perRow, const DebugContext &debug);

// The rows of `rows` listed by `intervals`, one tensor each (for a 2-D field).
std::vector<Tensor> rowList(const Tensor &rows, const std::vector<Interval> &intervals);
// The elements of the 1-D `perRow` for the rows in `intervals`, concatenated (for a 1-D field).
Tensor rowElements(const Tensor &perRow, const std::vector<Interval> &intervals);

// One vertex of vertexType on each tile that computes rows (tileRows from rowsByTile), added to
// cs; connect(v, intervals) connects its fields for that tile's row intervals.
void addRowVertices(Graph &graph, ComputeSet cs, const std::string &vertexType,
                    const std::vector<std::vector<Interval>> &tileRows,
                    const std::function<void(VertexRef, const std::vector<Interval> &)> &connect);

// One pass over two [R, F] views of one element type (FLOAT or HALF): [R, 2] float holding, for
// each row r, the sum of a[r] and the sum of a[r] * (b[r] - shift[r]) (shift: [R] float), e.g.
// a channel's sums of x and x^2, or of dy and dy * (x - mean). Row r lives where rowsByTile(a)
// puts it (codelets/nn/norms.cpp).
Tensor rowMoments(Graph &graph, const Tensor &a, const Tensor &b, const Tensor &shift,
                  program::Sequence &prog, const DebugContext &debug);

// For the rows in `intervals`, t[j][row] for each j of `gates` (t: [n, R, C]): the per-row gate
// segments of a recurrent cell's 2-D fields, row by row.
std::vector<Tensor> gateSegments(const Tensor &t, const std::vector<Interval> &intervals,
                                 const std::vector<unsigned> &gates);

// The recurrent layers' gate names (LSTM: forget, input, cell, output; GRU: reset, update,
// cell): the name of gate `unit` (invalid_option naming `kind` and the names otherwise) and the
// gate named `name` (invalid_option listing the names otherwise).
std::string gateName(const std::vector<std::string> &names, int unit, const std::string &kind);
int parseGateName(const std::vector<std::string> &names, const std::string &name,
                  const std::string &layer);

// The tensor's names, shape and type for messages: "'probs' {2,3} (float)".
std::string describe(const Tensor &t);
// Raises type_error unless t is FLOAT or HALF, naming the builder, the argument and the type.
void requireFloatingPoint(const Tensor &t, const std::string &what);

} // namespace aspen::nn::work
