#include "ops/ElementWiseVertices.hpp"

#include "ops/ExprCodegen.hpp"
#include "ops/FillRegions.hpp"

#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

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

void addElementwiseVertices(Graph &graph, ComputeSet cs, const std::string &vertexType,
                            const Tensor &outFlat,
                            const std::vector<std::pair<std::string, ElementwiseOperand>> &inputs) {
  addVertexPerTile(graph, cs, outFlat, vertexType,
                   [&](VertexRef v, const std::vector<Interval> &regions) {
                     graph.connect(v["out"], outFlat.slices(regions));
                     for (const auto &[field, operand] : inputs) {
                       if (operand.scalar)
                         graph.connect(v[field], operand.tensor);
                       else
                         graph.connect(v[field], operand.tensor.slices(regions));
                     }
                   });
}

void runGenerated(Graph &graph, const LoweredExpr &e, const std::vector<ElementwiseOperand> &operands,
                  const Tensor &outFlat, program::Sequence &prog, const std::string &name) {
  std::vector<CodegenOperand> codegenOperands;
  std::vector<std::pair<std::string, ElementwiseOperand>> inputs;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const ElementwiseOperand &o = operands[i];
    codegenOperands.push_back({o.used ? o.tensor.elementType() : Type(), o.scalar, o.used});
    if (o.used)
      inputs.emplace_back("in" + std::to_string(i), o);
  }
  const GeneratedExpr generated = generateExpr(e, codegenOperands);
  if (!graph.hasCodelet(generated.vertexName))
    graph.addCodeletsFromString(generated.codeletSource, generated.vertexName, "-O3");
  ComputeSet cs = graph.addComputeSet(name);
  addElementwiseVertices(graph, cs, generated.vertexName, outFlat, inputs);
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
