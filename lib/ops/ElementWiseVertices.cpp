#include "ops/ElementWiseVertices.hpp"

#include "ops/ExprCodegen.hpp"
#include "ops/FillRegions.hpp"

#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace aspen::ops::detail {

using Kind = ExprNode::Kind;

Tensor constantFor(Graph &graph, const ExprNode &node) {
  Tensor c;
  if (node.type == FLOAT || node.type == HALF)
    c = graph.addConstant(node.type, {}, static_cast<float>(node.floatValue));
  else if (node.type == BOOL)
    c = graph.addConstant(node.type, {}, node.intValue != 0);
  else
    c = graph.addConstant(node.type, {}, node.intValue);
  graph.setTileMapping(c, 0);
  return c;
}

namespace {

// Rows shorter than this are gathered: a region a row costs a descriptor per field.
constexpr std::size_t kMinRowLength = 16;

// `regions` cut where rows of rowLength elements end, and the row of each piece.
std::vector<Interval> cutAtRows(const std::vector<Interval> &regions, std::size_t rowLength,
                                std::vector<std::size_t> &rows) {
  std::vector<Interval> pieces;
  for (const Interval &r : regions)
    for (std::size_t b = r.begin(); b < r.end();) {
      const std::size_t row = b / rowLength, e = std::min(r.end(), (row + 1) * rowLength);
      pieces.emplace_back(b, e);
      rows.push_back(row);
      b = e;
    }
  return pieces;
}

// perRowValues[rows[0]], perRowValues[rows[1]], ... as one tensor (runs of consecutive rows as
// single slices).
Tensor rowElements(const Tensor &perRowValues, const std::vector<std::size_t> &rows) {
  std::vector<Tensor> runs;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i + 1;
    while (j < rows.size() && rows[j] == rows[j - 1] + 1)
      ++j;
    runs.push_back(perRowValues.slice(rows[i], rows[j - 1] + 1));
    i = j;
  }
  return concat(runs);
}

} // namespace

RowBroadcast findRowBroadcast(const std::vector<Tensor> &ts, const std::vector<bool> &candidate,
                              const std::vector<std::size_t> &shape) {
  const std::size_t rank = shape.size();
  const auto trailing = [&](std::size_t k) {
    std::size_t n = 1;
    for (std::size_t d = k; d < rank; ++d)
      n *= shape[d];
    return n;
  };
  RowBroadcast b;
  b.perRow.assign(ts.size(), false);
  std::size_t split = 0; // rows are the output's dimensions [split, rank)
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (!candidate[i])
      continue;
    // Dimensions from k on are 1 in ts[i] (aligned to the output's trailing dimensions).
    const std::vector<std::size_t> &s = ts[i].shape();
    std::size_t k = rank;
    while (k > 0 && (k + s.size() <= rank || s[k + s.size() - rank - 1] == 1))
      --k;
    if (trailing(k) < 2)
      continue; // not broadcast along a row
    b.perRow[i] = true;
    split = std::max(split, k);
  }
  const std::size_t rowLength = trailing(split);
  if (std::none_of(b.perRow.begin(), b.perRow.end(), [](bool r) { return r; }) ||
      rowLength < kMinRowLength)
    return {0, std::vector<bool>(ts.size(), false)};
  b.rowLength = rowLength;
  return b;
}

void addElementwiseVertices(Graph &graph, ComputeSet cs, const std::string &vertexType,
                            const Tensor &outFlat,
                            const std::vector<std::pair<std::string, ElementwiseOperand>> &inputs,
                            std::size_t rowLength) {
  addVertexPerTile(graph, cs, outFlat, vertexType,
                   [&](VertexRef v, const std::vector<Interval> &tileRegions) {
                     std::vector<std::size_t> rows;
                     const std::vector<Interval> regions =
                         rowLength > 0 ? cutAtRows(tileRegions, rowLength, rows) : tileRegions;
                     graph.connect(v["out"], outFlat.slices(regions));
                     for (const auto &[field, operand] : inputs) {
                       if (operand.scalar)
                         graph.connect(v[field], operand.tensor);
                       else if (operand.perRow)
                         graph.connect(v[field], rowElements(operand.tensor, rows));
                       else
                         graph.connect(v[field], operand.tensor.slices(regions));
                     }
                   });
}

void runGenerated(Graph &graph, const LoweredExpr &e, const std::vector<ElementwiseOperand> &operands,
                  const Tensor &outFlat, program::Sequence &prog, const std::string &name,
                  std::size_t rowLength) {
  std::vector<CodegenOperand> codegenOperands;
  std::vector<std::pair<std::string, ElementwiseOperand>> inputs;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const ElementwiseOperand &o = operands[i];
    codegenOperands.push_back({o.used ? o.tensor.elementType() : Type(), o.scalar, o.used, o.perRow});
    if (o.used)
      inputs.emplace_back("in" + std::to_string(i), o);
  }
  const GeneratedExpr generated = generateExpr(e, codegenOperands);
  if (!graph.hasCodelet(generated.vertexName))
    graph.addCodeletsFromString(generated.codeletSource, generated.vertexName, "-O3");
  ComputeSet cs = graph.addComputeSet(name);
  addElementwiseVertices(graph, cs, generated.vertexName, outFlat, inputs, rowLength);
  prog.add(program::Execute(cs));
}

namespace {

const char *const kUnaryNames[] = {
#define ASPEN_EW_NAME(e, node, fn, types, result) "UnaryOpType::" #e,
    ASPEN_EW_UNARY_OPS(ASPEN_EW_NAME)
#undef ASPEN_EW_NAME
};
const char *const kBinaryNames[] = {
#define ASPEN_EW_NAME(e, node, fn, types, result) "BinaryOpType::" #e,
    ASPEN_EW_BINARY_OPS(ASPEN_EW_NAME)
#undef ASPEN_EW_NAME
};
const char *const kTernaryNames[] = {
#define ASPEN_EW_NAME(e, node, fn, types, result) "TernaryOpType::" #e,
    ASPEN_EW_TERNARY_OPS(ASPEN_EW_NAME)
#undef ASPEN_EW_NAME
};

// A vector operand of n elements: the operand, or its one element repeated.
ElementwiseOperand asVector(const ElementwiseOperand &o, std::size_t n) {
  if (!o.scalar)
    return o;
  return {o.tensor.flatten().broadcast(static_cast<unsigned>(n), 0), false, true};
}

} // namespace

void runOperationByOperation(Graph &graph, const LoweredExpr &e,
                             const std::vector<ElementwiseOperand> &operands, const Tensor &outFlat,
                             program::Sequence &prog, const std::string &name) {
  const std::size_t n = outFlat.numElements();
  std::vector<ElementwiseOperand> values(e.nodes.size());
  for (std::size_t k = 0; k < e.nodes.size(); ++k) {
    const ExprNode &node = e.nodes[k];
    if (node.kind == Kind::Input) {
      values[k] = operands[node.input];
      continue;
    }
    if (node.kind == Kind::Const) {
      values[k] = {constantFor(graph, node).flatten()[0], true, true};
      continue;
    }
    const bool isRoot = k + 1 == e.nodes.size();
    const Tensor result = isRoot ? outFlat : graph.clone(node.type, outFlat, name + "/partial");
    const std::string T = node.operandType.toString();
    std::string vertex;
    std::vector<std::pair<std::string, ElementwiseOperand>> inputs;
    switch (node.kind) {
    case Kind::Cast:
      vertex = util::templateVertex("aspen::ops::Cast", node.operandType, node.type);
      inputs = {{"in", asVector(values[node.args[0]], n)}};
      break;
    case Kind::Unary:
      vertex = util::templateVertex("aspen::ops::UnaryOp", kUnaryNames[node.op], node.operandType);
      inputs = {{"in", asVector(values[node.args[0]], n)}};
      break;
    case Kind::Binary: {
      const bool scalarB = values[node.args[1]].scalar && !values[node.args[0]].scalar;
      vertex = util::templateVertex(scalarB ? "aspen::ops::BinaryOpScalarB" : "aspen::ops::BinaryOp",
                                    kBinaryNames[node.op], node.operandType);
      inputs = {{"in1", asVector(values[node.args[0]], n)},
                {"in2", scalarB ? values[node.args[1]] : asVector(values[node.args[1]], n)}};
      break;
    }
    case Kind::Ternary:
      vertex = util::templateVertex("aspen::ops::TernaryOp", kTernaryNames[node.op], node.operandType);
      inputs = {{"in1", asVector(values[node.args[0]], n)},
                {"in2", asVector(values[node.args[1]], n)},
                {"in3", asVector(values[node.args[2]], n)}};
      break;
    default:
      break;
    }
    ComputeSet cs = graph.addComputeSet(fmt::format("{}/{}", name, k));
    addElementwiseVertices(graph, cs, vertex, result, inputs);
    prog.add(program::Execute(cs));
    values[k] = {result, false, true};
  }
}

} // namespace aspen::ops::detail
