// argMax, argMin, maxAndArgMax, minAndArgMin and topK: one MultiVertex per tile over its rows.
#include "NnWork.hpp"

#include <aspen/Error.hpp>
#include <aspen/nn/Loss.hpp>
#include <aspen/util/VertexTemplates.hpp>

namespace aspen::nn {

namespace {

using program::Execute;
using program::Sequence;

void checkRowInput(const Tensor &input, const std::string &what) {
  const Type t = input.elementType();
  if (t != FLOAT && t != HALF && t != INT && t != UNSIGNED_INT)
    throw type_error(what + ": input " + work::describe(input) +
                     " must be float, half, int or unsigned int");
  if (input.rank() != 2)
    throw shape_error(what + ": input " + work::describe(input) + " must have rank 2 ([B,C])");
  if (input.dim(1) == 0 && input.dim(0) != 0)
    throw shape_error(what + ": input " + work::describe(input) +
                      " has empty rows (C = 0), which have no best element");
}

std::pair<Tensor, Tensor> bestAndIndex(Graph &graph, const Tensor &input, bool max, Sequence &prog,
                                       const DebugContext &debug, const std::string &what) {
  checkRowInput(input, what);
  const std::size_t numRows = input.dim(0);
  const auto tileRows =
      numRows == 0 ? std::vector<std::vector<Interval>>() : work::rowsByTile(graph, input);
  Tensor values = work::addRowResult(graph, input.elementType(), tileRows, numRows, 0,
                                     DebugContext(debug, max ? "max" : "min"));
  Tensor indices = work::addRowResult(graph, UNSIGNED_INT, tileRows, numRows, 0,
                                      DebugContext(debug, max ? "argMax" : "argMin"));
  if (numRows == 0)
    return {values, indices};
  ComputeSet cs = graph.addComputeSet(DebugContext(debug, what));
  const std::string vertexType =
      util::templateVertex("aspen::nn::ArgBest", input.elementType(), max);
  work::addRowVertices(graph, cs, vertexType, tileRows, [&](VertexRef v, const auto &rows) {
    graph.connect(v["rows"], work::rowList(input, rows));
    graph.connect(v["values"], work::rowElements(values, rows));
    graph.connect(v["indices"], work::rowElements(indices, rows));
  });
  prog.add(Execute(cs));
  return {values, indices};
}

} // namespace

std::pair<Tensor, Tensor> maxAndArgMax(Graph &graph, const Tensor &input, Sequence &prog,
                                       const DebugContext &debug) {
  return bestAndIndex(graph, input, true, prog, debug, "maxAndArgMax");
}

std::pair<Tensor, Tensor> minAndArgMin(Graph &graph, const Tensor &input, Sequence &prog,
                                       const DebugContext &debug) {
  return bestAndIndex(graph, input, false, prog, debug, "minAndArgMin");
}

Tensor argMax(Graph &graph, const Tensor &input, Sequence &prog, const DebugContext &debug) {
  return bestAndIndex(graph, input, true, prog, debug, "argMax").second;
}

Tensor argMin(Graph &graph, const Tensor &input, Sequence &prog, const DebugContext &debug) {
  return bestAndIndex(graph, input, false, prog, debug, "argMin").second;
}

Tensor topK(Graph &graph, const Tensor &input, Tensor &indices, unsigned K, bool /*sort*/,
            Sequence &prog, const DebugContext &debug) {
  const std::string what = "topK";
  checkRowInput(input, what);
  if (K == 0 || K > input.dim(1))
    throw index_error(what + ": K = " + std::to_string(K) + " must be in [1, " +
                      std::to_string(input.dim(1)) + "] for input " + work::describe(input));
  const std::size_t numRows = input.dim(0);
  const auto tileRows =
      numRows == 0 ? std::vector<std::vector<Interval>>() : work::rowsByTile(graph, input);
  Tensor values = work::addRowResult(graph, input.elementType(), tileRows, numRows, K,
                                     DebugContext(debug, "topKValues"));
  indices = work::addRowResult(graph, UNSIGNED_INT, tileRows, numRows, K,
                               DebugContext(debug, "topKIndices"));
  if (numRows == 0)
    return values;
  ComputeSet cs = graph.addComputeSet(DebugContext(debug, what));
  const std::string vertexType = util::templateVertex("aspen::nn::TopK", input.elementType());
  work::addRowVertices(graph, cs, vertexType, tileRows, [&](VertexRef v, const auto &rows) {
    graph.connect(v["rows"], work::rowList(input, rows));
    graph.connect(v["values"], work::rowList(values, rows));
    graph.connect(v["indices"], work::rowList(indices, rows));
  });
  prog.add(Execute(cs));
  return values;
}

} // namespace aspen::nn
