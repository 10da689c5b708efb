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
  // Constant along each row of rowLength output elements: `tensor` holds one element a row
  // ([numElements / rowLength]), read once a row instead of gathered element by element.
  bool perRow = false;
};

// A scalar constant tensor (tile 0) holding a Const node's value.
Tensor constantFor(Graph &graph, const ExprNode &node);

// One vertex of `vertexType` per tile that owns part of outFlat: field "out" gets the tile's
// regions of outFlat, each vector input its matching slices, each scalar input its element.
// With rowLength > 0 the regions are cut where rows of rowLength elements end, and each perRow
// input gets its element of each region's row.
void addElementwiseVertices(Graph &graph, ComputeSet cs, const std::string &vertexType,
                            const Tensor &outFlat,
                            const std::vector<std::pair<std::string, ElementwiseOperand>> &inputs,
                            std::size_t rowLength = 0);

// Operands constant along rows of the output (a channel's scale over its image, say), read once
// a row instead of gathered element by element. rowLength is the product of the output's
// trailing dimensions over which every such operand is broadcast, or 0 when no operand is or the
// rows are too short to pay; perRow[i] says operand i is one.
struct RowBroadcast {
  std::size_t rowLength = 0;
  std::vector<bool> perRow;
};
// ts: the operands in their own shapes; candidate[i]: ts[i] is read and has more than one
// element; shape: the output's.
RowBroadcast findRowBroadcast(const std::vector<Tensor> &ts, const std::vector<bool> &candidate,
                              const std::vector<std::size_t> &shape);

void runGenerated(Graph &graph, const LoweredExpr &e, const std::vector<ElementwiseOperand> &operands,
                  const Tensor &outFlat, program::Sequence &prog, const std::string &name,
                  std::size_t rowLength = 0);

void runOperationByOperation(Graph &graph, const LoweredExpr &e,
                             const std::vector<ElementwiseOperand> &operands, const Tensor &outFlat,
                             program::Sequence &prog, const std::string &name);

} // namespace aspen::ops::detail
