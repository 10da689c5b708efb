// Building the compute sets of an element-wise evaluation.
//
// Work follows the output's tile mapping: per tile, util::getTileContiguousRegions(out) gives
// the regions; one MultiVertex per tile takes them as 2-D fields (the matching slices of every
// vector operand) and shares them between its workers (ElementwiseKernel.hpp). Scalar operands
// are scalar edges, read once.
//   runGenerated              one generated codelet for the whole expression (ExprCodegen)
//   runOperationByOperation   one compute set per operation on the precompiled library
//                             codelets (codelets/ops/elementwise_*.cpp), intermediate results
//                             in variables mapped like the output
#pragma once

#include "ops/ExprLowering.hpp"

#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

#include <string>
#include <vector>

namespace aspen::ops::detail {

struct ElementwiseOperand {
  Tensor tensor;       // flattened and broadcast to the output, or the one element when scalar
  bool scalar = false;
  bool used = false;
};

// A scalar constant tensor (tile 0) holding a Const node's value.
Tensor constantFor(Graph &graph, const ExprNode &node);

// One vertex of `vertexType` per tile that owns part of outFlat: field "out" gets the tile's
// regions of outFlat, each vector input its matching slices, each scalar input its element.
void addElementwiseVertices(Graph &graph, ComputeSet cs, const std::string &vertexType,
                            const Tensor &outFlat,
                            const std::vector<std::pair<std::string, ElementwiseOperand>> &inputs);

void runGenerated(Graph &graph, const LoweredExpr &e, const std::vector<ElementwiseOperand> &operands,
                  const Tensor &outFlat, program::Sequence &prog, const std::string &name);

void runOperationByOperation(Graph &graph, const LoweredExpr &e,
                             const std::vector<ElementwiseOperand> &operands, const Tensor &outFlat,
                             program::Sequence &prog, const std::string &name);

} // namespace aspen::ops::detail
