// Tile mapping of matmul operands and outputs by their plan (the rule is in MatMulLayout.hpp).
#include "linalg/MatMulLayout.hpp"

#include "linalg/MatMulPlanner.hpp"

#include <aspen/util/TileMapping.hpp>

namespace aspen::linalg::detail {

unsigned matMulTile(const MatMulPlan &plan, std::size_t g, std::size_t m, std::size_t n,
                    std::size_t k) {
  const MatMulSplit &p = plan.partition;
  return unsigned(((g * p.m + m) * p.n + n) * p.k + k);
}

Interval rowChunk(const Interval &rows, std::size_t parts, std::size_t index) {
  const std::size_t size = (rows.size() + parts - 1) / parts;
  const std::size_t begin = std::min(rows.end(), rows.begin() + index * size);
  return {begin, std::min(rows.end(), begin + size)};
}

void mapMatMulOperand(Graph &graph, const Tensor &t, const MatMulPlan &plan,
                      MatMulOperand operand) {
  if (plan.method == MatMulMethod::Library) { // the library reads it whole, from anywhere
    util::mapTensorLinearly(graph, t);
    return;
  }
  const MatMulSplit &p = plan.partition, &s = plan.serial;
  // The operand's row and column dimensions, as (size, parts, serial) of the plan.
  struct Dim {
    std::size_t size, parts, serial;
  };
  Dim rows{plan.M, p.m, s.m}, cols{plan.K, p.k, s.k};
  std::size_t chunks = p.n; // the other tiles that read each block
  if (operand == MatMulOperand::RHS)
    rows = {plan.K, p.k, s.k}, cols = {plan.N, p.n, s.n}, chunks = p.m;
  else if (operand == MatMulOperand::Output)
    cols = {plan.N, p.n, s.n}, chunks = p.k;
  const std::size_t rowLength = cols.size, groupSize = rows.size * rowLength;
  TileToTensorMapping mapping(graph.getTarget().getNumTiles());
  for (std::size_t gp = 0; gp < p.groups; ++gp) {
    const Interval groups = matMulBlock(plan.G, p.groups, 1, 0, gp);
    for (std::size_t rs = 0; rs < rows.serial; ++rs)
      for (std::size_t rp = 0; rp < rows.parts; ++rp) {
        const Interval blockRows = matMulBlock(rows.size, rows.parts, rows.serial, rs, rp);
        for (std::size_t cs = 0; cs < cols.serial; ++cs)
          for (std::size_t cp = 0; cp < cols.parts; ++cp) {
            const Interval blockCols = matMulBlock(cols.size, cols.parts, cols.serial, cs, cp);
            for (std::size_t c = 0; c < chunks; ++c) {
              unsigned tile = 0;
              if (operand == MatMulOperand::LHS)
                tile = matMulTile(plan, gp, rp, c, cp);
              else if (operand == MatMulOperand::RHS)
                tile = matMulTile(plan, gp, c, cp, rp);
              else
                tile = matMulTile(plan, gp, rp, cp, c);
              const Interval chunk = rowChunk(blockRows, chunks, c);
              for (std::size_t g = groups.begin(); g < groups.end(); ++g)
                for (std::size_t r = chunk.begin(); r < chunk.end(); ++r) {
                  const std::size_t at = g * groupSize + r * rowLength;
                  mapping[tile].emplace_back(at + blockCols.begin(), at + blockCols.end());
                }
            }
          }
      }
  }
  graph.setTileMapping(t, mapping);
}

} // namespace aspen::linalg::detail
