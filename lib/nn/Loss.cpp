// calcLoss and calcAccuracy: per-row loss vertices on the tiles that own the deltas' rows;
// accuracy counts per tile, then one vertex adds them to numCorrect.
#include "NnWork.hpp"

#include <aspen/Error.hpp>
#include <aspen/nn/Loss.hpp>
#include <aspen/util/VertexTemplates.hpp>

namespace aspen::nn {

namespace {

using program::Execute;
using program::Program;
using program::Sequence;

bool isLabelType(Type t) { return t == UNSIGNED_INT || t == INT; }

void checkModelOutputs(const Tensor &modelOutputs, const std::string &what) {
  work::requireFloatingPoint(modelOutputs, what + " modelOutputs");
  if (modelOutputs.rank() != 2)
    throw shape_error(what + ": modelOutputs " + work::describe(modelOutputs) +
                      " must have rank 2 ([B,C])");
  if (modelOutputs.dim(1) == 0 && modelOutputs.dim(0) != 0)
    throw shape_error(what + ": modelOutputs " + work::describe(modelOutputs) +
                      " has no classes (C = 0)");
}

// expected is [B] labels or [B,C] targets of modelOutputs' type.
void checkExpected(const Tensor &modelOutputs, const Tensor &expected, const std::string &what) {
  if (expected.rank() == 1) {
    if (!isLabelType(expected.elementType()))
      throw type_error(what + ": labels " + work::describe(expected) +
                       " must be unsigned int or int (or one-hot [B,C] of " +
                       modelOutputs.elementType().toString() + ")");
    if (expected.dim(0) != modelOutputs.dim(0))
      throw shape_error(what + ": labels " + work::describe(expected) +
                        " must have one label per "
                        "row of modelOutputs " +
                        work::describe(modelOutputs));
    return;
  }
  if (expected.rank() != 2 || expected.shape() != modelOutputs.shape())
    throw shape_error(what + ": expected " + work::describe(expected) +
                      " must be labels [B] or targets of the shape of modelOutputs " +
                      work::describe(modelOutputs));
  if (expected.elementType() != modelOutputs.elementType())
    throw type_error(what + ": one-hot expected " + work::describe(expected) +
                     " must have the type of modelOutputs " + work::describe(modelOutputs));
}

std::string shapeString(const std::vector<std::size_t> &shape) {
  std::string s = "{";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "}";
}

void checkLike(const Tensor &t, const std::string &name, const std::vector<std::size_t> &shape,
               const Tensor &modelOutputs, const std::string &what) {
  if (t.shape() != shape)
    throw shape_error(what + ": " + name + " " + work::describe(t) + " must have shape " +
                      shapeString(shape) + " to match modelOutputs " +
                      work::describe(modelOutputs));
  if (t.elementType() != modelOutputs.elementType())
    throw type_error(what + ": " + name + " " + work::describe(t) +
                     " must have the type of modelOutputs " + work::describe(modelOutputs));
}

void checkScalar(const Tensor &t, const std::string &name, Type type, const std::string &what) {
  if (t.numElements() != 1)
    throw shape_error(what + ": " + name + " " + work::describe(t) + " must have one element");
  if (t.elementType() != type)
    throw type_error(what + ": " + name + " " + work::describe(t) + " must be " + type.toString());
}

Tensor scalarOne(Graph &graph, Type type, const DebugContext &debug) {
  Tensor one = graph.addConstant(type, {}, 1.0f, debug);
  graph.setTileMapping(one, 0);
  return one;
}

void addAccuracy(Graph &graph, const Tensor &modelOutputs, const Tensor &labels,
                 const Tensor &numCorrect, Sequence &prog, const DebugContext &debug) {
  const std::size_t numRows = modelOutputs.dim(0);
  if (numRows == 0)
    return;
  const auto tileRows = work::rowsByTile(graph, modelOutputs);
  std::vector<unsigned> tiles;
  for (unsigned tile = 0; tile < tileRows.size(); ++tile)
    if (!tileRows[tile].empty())
      tiles.push_back(tile);
  Tensor partials =
      graph.addVariable(UNSIGNED_INT, {tiles.size()}, DebugContext(debug, "partials"));
  ComputeSet countCs = graph.addComputeSet(DebugContext(debug, "count"));
  const std::string vertexType =
      util::templateVertex("aspen::nn::Accuracy", modelOutputs.elementType(), labels.elementType());
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    graph.setTileMapping(partials[i], tiles[i]);
    VertexRef v = graph.addVertex(countCs, vertexType);
    graph.connect(v["activations"], work::rowList(modelOutputs, tileRows[tiles[i]]));
    graph.connect(v["labels"], work::rowElements(labels, tileRows[tiles[i]]));
    graph.connect(v["count"], partials[i]);
    graph.setTileMapping(v, tiles[i]);
  }
  ComputeSet addCs = graph.addComputeSet(DebugContext(debug, "accumulate"));
  VertexRef add = graph.addVertex(addCs, "aspen::nn::AccumulateCount");
  graph.connect(add["partials"], partials);
  graph.connect(add["total"], numCorrect.flatten()[0]);
  unsigned totalTile = 0;
  const auto totalMapping = graph.getTileMapping(numCorrect);
  for (unsigned tile = 0; tile < totalMapping.size(); ++tile)
    if (!totalMapping[tile].empty()) {
      totalTile = tile;
      break;
    }
  graph.setTileMapping(add, totalTile);
  prog.add(Execute(countCs));
  prog.add(Execute(addCs));
}

void checkNumCorrect(const Tensor &numCorrect, const std::string &what) {
  checkScalar(numCorrect, "numCorrect", UNSIGNED_INT, what);
}

// The accuracy against labels, or against the targets' first maxima for [B,C] targets.
void addAccuracyFor(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
                    const Tensor &numCorrect, Sequence &prog, const DebugContext &debug) {
  if (modelOutputs.dim(0) == 0)
    return;
  const Tensor labels = expected.rank() == 1
                            ? expected
                            : argMax(graph, expected, prog, DebugContext(debug, "labels"));
  addAccuracy(graph, modelOutputs, labels, numCorrect, prog, debug);
}

Sequence buildLoss(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
                   const Tensor &loss, const Tensor &deltas, const Tensor *deltasScale,
                   const Tensor *modelOutputScaling, const Tensor *numCorrect, LossType lossType,
                   const DebugContext &debug) {
  const std::string what = "calcLoss";
  if (lossType != SUM_SQUARED_LOSS && lossType != CROSS_ENTROPY_LOSS)
    throw invalid_option(what + ": LossType " + std::to_string(static_cast<int>(lossType)) +
                         " is not one of SUM_SQUARED_LOSS, CROSS_ENTROPY_LOSS");
  checkModelOutputs(modelOutputs, what);
  checkExpected(modelOutputs, expected, what);
  checkLike(deltas, "deltas", modelOutputs.shape(), modelOutputs, what);
  checkLike(loss, "loss", {modelOutputs.dim(0)}, modelOutputs, what);
  const Type dtype = modelOutputs.elementType();
  if (deltasScale)
    checkScalar(*deltasScale, "deltasScale", dtype, what);
  if (modelOutputScaling)
    checkScalar(*modelOutputScaling, "modelOutputScaling", dtype, what);
  if (numCorrect)
    checkNumCorrect(*numCorrect, what);

  Sequence prog;
  const std::size_t numRows = modelOutputs.dim(0);
  if (numRows == 0)
    return prog;
  const Tensor ds = deltasScale ? *deltasScale : scalarOne(graph, dtype, {debug, "deltasScale"});
  const Tensor mos = modelOutputScaling ? *modelOutputScaling
                                        : scalarOne(graph, dtype, {debug, "modelOutputScaling"});
  const bool crossEntropy = lossType == CROSS_ENTROPY_LOSS;
  const bool labels = expected.rank() == 1;
  const std::string vertexType =
      labels ? util::templateVertex("aspen::nn::LossLabels", dtype, expected.elementType(),
                                    crossEntropy)
             : util::templateVertex("aspen::nn::LossOneHot", dtype, crossEntropy);
  const auto tileRows = work::rowsByTile(graph, deltas);
  ComputeSet cs = graph.addComputeSet(DebugContext(debug, "loss"));
  work::addRowVertices(graph, cs, vertexType, tileRows, [&](VertexRef v, const auto &rows) {
    graph.connect(v["probs"], work::rowList(modelOutputs, rows));
    if (labels)
      graph.connect(v["labels"], work::rowElements(expected, rows));
    else
      graph.connect(v["expected"], work::rowList(expected, rows));
    graph.connect(v["deltas"], work::rowList(deltas, rows));
    graph.connect(v["loss"], work::rowElements(loss, rows));
    graph.connect(v["deltasScale"], ds.flatten()[0]);
    graph.connect(v["modelOutputScaling"], mos.flatten()[0]);
  });
  prog.add(Execute(cs));
  if (numCorrect)
    addAccuracyFor(graph, modelOutputs, expected, *numCorrect, prog, debug);
  return prog;
}

} // namespace

Program calcLoss(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
                 const Tensor &loss, const Tensor &deltas, const Tensor &deltasScale,
                 const Tensor &modelOutputScaling, LossType lossType, const DebugContext &debug) {
  return buildLoss(graph, modelOutputs, expected, loss, deltas, &deltasScale, &modelOutputScaling,
                   nullptr, lossType, debug);
}

Program calcLoss(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
                 const Tensor &loss, const Tensor &deltas, LossType lossType,
                 const DebugContext &debug) {
  return buildLoss(graph, modelOutputs, expected, loss, deltas, nullptr, nullptr, nullptr, lossType,
                   debug);
}

Program calcLoss(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
                 const Tensor &loss, const Tensor &deltas, const Tensor &deltasScale,
                 const Tensor &modelOutputScaling, const Tensor &numCorrect, LossType lossType,
                 const DebugContext &debug) {
  return buildLoss(graph, modelOutputs, expected, loss, deltas, &deltasScale, &modelOutputScaling,
                   &numCorrect, lossType, debug);
}

Program calcLoss(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
                 const Tensor &loss, const Tensor &deltas, const Tensor &numCorrect,
                 LossType lossType, const DebugContext &debug) {
  return buildLoss(graph, modelOutputs, expected, loss, deltas, nullptr, nullptr, &numCorrect,
                   lossType, debug);
}

void calcAccuracy(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
                  const Tensor &numCorrect, Sequence &prog, const DebugContext &debug) {
  const std::string what = "calcAccuracy";
  checkModelOutputs(modelOutputs, what);
  if (expected.rank() != 1)
    throw shape_error(what + ": expected " + work::describe(expected) + " must be labels [B]");
  checkExpected(modelOutputs, expected, what);
  checkNumCorrect(numCorrect, what);
  addAccuracy(graph, modelOutputs, expected, numCorrect, prog, debug);
}

Program calcAccuracy(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
                     const Tensor &numCorrect, const DebugContext &debug) {
  Sequence prog;
  calcAccuracy(graph, modelOutputs, expected, numCorrect, prog, debug);
  return prog;
}

} // namespace aspen::nn
