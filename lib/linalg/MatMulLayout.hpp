// Where the blocks of a matmul plan live: the tile of each block product and the tile mapping of
// operands and output that createMatMulInputLHS/RHS/Output give (MatMulPlanner.hpp defines the
// block geometry).
//
// A library plan's operands are mapped linearly over all tiles (util::mapTensorLinearly).
//
// Mapping rule of a vertex plan. Block product (g, m, n, k) of every serial step runs on
// tile ((g * pm + m) * pn + n) * pk + k. An A block (g, m, k) is read by the pn tiles
// (g, m, *, k): its rows are cut into pn chunks and chunk j lives on tile (g, m, j, k). A B block
// (g, k, n) is read by the pm tiles (g, *, n, k): chunk i of its rows lives on tile (g, i, n, k).
// An output block (g, m, n) is summed by the pk tiles (g, m, n, *): chunk p of its rows lives on
// (and is reduced by) tile (g, m, n, p). Chunks are ceil-division row chunks, so every tile of a
// block holds a share of it and holds only data it computes with.
#pragma once

#include <aspen/Graph.hpp>
#include <aspen/Interval.hpp>
#include <aspen/linalg/MatMulPlan.hpp>

#include <cstddef>

namespace aspen::linalg::detail {

// The tile of block product (g, m, n, k) (partition indices).
unsigned matMulTile(const MatMulPlan &plan, std::size_t g, std::size_t m, std::size_t n,
                    std::size_t k);

// Chunk `index` of `parts` ceil-division chunks of the rows `rows` (possibly empty).
Interval rowChunk(const Interval &rows, std::size_t parts, std::size_t index);

// The three tensors of a plan, [G, rows, cols] each.
enum class MatMulOperand { LHS, RHS, Output };

// Maps t ([G, M, K], [G, K, N] or [G, M, N] for `operand`) by the rule above.
void mapMatMulOperand(Graph &graph, const Tensor &t, const MatMulPlan &plan, MatMulOperand operand);

} // namespace aspen::linalg::detail
