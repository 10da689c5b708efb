// Builds the compute sets of a planned matmul (see MatMulBuild.hpp; tiles and block geometry in
// MatMulLayout.hpp and MatMulPlanner.hpp).
#include "linalg/MatMulBuild.hpp"

#include "linalg/MatMulLayout.hpp"
#include "linalg/MatMulPlanner.hpp"

#include <aspen/Kernels.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

#include <vector>

namespace aspen::linalg::detail {

namespace {

// The rows rows[begin, end) of a 2-D tensor, each cut to the columns `cols`.
std::vector<Tensor> blockRows(const Tensor &matrix, const Interval &rows, const Interval &cols) {
  std::vector<Tensor> result;
  result.reserve(rows.size());
  for (std::size_t r = rows.begin(); r < rows.end(); ++r)
    result.push_back(matrix[r].slice(cols.begin(), cols.end()));
  return result;
}

struct Builder {
  Graph &graph;
  const MatMulPlan &plan;
  const Tensor &A3, &B3, &out3;
  const std::optional<MatMulScale> &scale;
  program::Sequence &prog;
  const DebugContext &debug;

  const MatMulSplit &p = plan.partition, &s = plan.serial;
  // The block products write the output themselves: no partials, no reduction.
  const bool direct = p.k == 1 && !scale && plan.partialsType == out3.elementType();

  Interval groups(std::size_t gp) const { return matMulBlock(plan.G, p.groups, 1, 0, gp); }

  // The partials of one (m, n) serial step: one [groups, m, n] variable per tile.
  std::vector<Tensor> addPartials(std::size_t sm, std::size_t sn) const {
    std::vector<Tensor> partials(p.product());
    for (std::size_t gp = 0; gp < p.groups; ++gp)
      for (std::size_t mp = 0; mp < p.m; ++mp)
        for (std::size_t np = 0; np < p.n; ++np)
          for (std::size_t kp = 0; kp < p.k; ++kp) {
            const unsigned tile = matMulTile(plan, gp, mp, np, kp);
            partials[tile] =
                graph.addVariable(plan.partialsType,
                                  {groups(gp).size(), matMulBlock(plan.M, p.m, s.m, sm, mp).size(),
                                   matMulBlock(plan.N, p.n, s.n, sn, np).size()},
                                  {debug, fmt::format("partials/tile{}", tile)});
            graph.setTileMapping(partials[tile], tile);
          }
    return partials;
  }

  // Serial step (sm, sn, sk): every tile's block product.
  void addProducts(std::size_t sm, std::size_t sn, std::size_t sk,
                   const std::vector<Tensor> &partials) const {
    const std::string vertex = util::templateVertex(sk == 0 ? "aspen::linalg::MatMulPartials"
                                                            : "aspen::linalg::MatMulPartialsAcc",
                                                    plan.inputType, plan.partialsType);
    ComputeSet cs = graph.addComputeSet({debug, fmt::format("products{}.{}.{}", sm, sn, sk)});
    for (std::size_t gp = 0; gp < p.groups; ++gp)
      for (std::size_t mp = 0; mp < p.m; ++mp)
        for (std::size_t np = 0; np < p.n; ++np)
          for (std::size_t kp = 0; kp < p.k; ++kp) {
            const Interval g = groups(gp), m = matMulBlock(plan.M, p.m, s.m, sm, mp),
                           n = matMulBlock(plan.N, p.n, s.n, sn, np),
                           k = matMulBlock(plan.K, p.k, s.k, sk, kp);
            const unsigned tile = matMulTile(plan, gp, mp, np, kp);
            for (std::size_t gi = g.begin(); gi < g.end(); ++gi) {
              VertexRef v = graph.addVertex(cs, vertex);
              graph.connect(v["aRows"], blockRows(A3[gi], m, k));
              graph.connect(v["bRows"], blockRows(B3[gi], k, n));
              graph.connect(v["partials"], direct ? blockRows(out3[gi], m, n)
                                                  : blockRows(partials[tile][gi - g.begin()],
                                                              {0, m.size()}, {0, n.size()}));
              graph.setTileMapping(v, tile);
            }
          }
    prog.add(program::Execute(cs, {debug, "products"}));
  }

  // The sum of the k parts of (m, n) step's partials into the output; tile (g, m, n, q) sums
  // row chunk q of its output block.
  void addReduction(std::size_t sm, std::size_t sn, const std::vector<Tensor> &partials) const {
    const std::string vertex = util::templateVertex(scale ? "aspen::linalg::ReducePartialsAcc"
                                                          : "aspen::linalg::ReducePartials",
                                                    plan.partialsType, out3.elementType());
    ComputeSet cs = graph.addComputeSet({debug, fmt::format("reduce{}.{}", sm, sn)});
    for (std::size_t gp = 0; gp < p.groups; ++gp)
      for (std::size_t mp = 0; mp < p.m; ++mp)
        for (std::size_t np = 0; np < p.n; ++np) {
          const Interval g = groups(gp), m = matMulBlock(plan.M, p.m, s.m, sm, mp),
                         n = matMulBlock(plan.N, p.n, s.n, sn, np);
          for (std::size_t q = 0; q < p.k; ++q) {
            const Interval rows = rowChunk({0, m.size()}, p.k, q);
            if (rows.size() == 0)
              continue;
            for (std::size_t gi = g.begin(); gi < g.end(); ++gi) {
              std::vector<Tensor> parts;
              for (std::size_t r = rows.begin(); r < rows.end(); ++r)
                for (std::size_t kp = 0; kp < p.k; ++kp)
                  parts.push_back(partials[matMulTile(plan, gp, mp, np, kp)][gi - g.begin()][r]);
              VertexRef v = graph.addVertex(cs, vertex);
              graph.connect(v["partials"], parts);
              graph.connect(
                  v["out"],
                  blockRows(out3[gi], {m.begin() + rows.begin(), m.begin() + rows.end()}, n));
              graph.setInitialValue(v["numParts"], unsigned(p.k));
              if (scale)
                graph.connect(v["scale"], scale->k);
              graph.setTileMapping(v, matMulTile(plan, gp, mp, np, q));
            }
          }
        }
    prog.add(program::Execute(cs, {debug, "reduce"}));
  }

  void build() const {
    for (std::size_t sm = 0; sm < s.m; ++sm)
      for (std::size_t sn = 0; sn < s.n; ++sn) {
        const std::vector<Tensor> partials = direct ? std::vector<Tensor>{} : addPartials(sm, sn);
        for (std::size_t sk = 0; sk < s.k; ++sk)
          addProducts(sm, sn, sk, partials);
        if (!direct)
          addReduction(sm, sn, partials);
      }
  }
};

} // namespace

void buildMatMul(Graph &graph, const MatMulPlan &plan, const Tensor &A3, const Tensor &B3,
                 const Tensor &out3, const std::optional<MatMulScale> &scale,
                 program::Sequence &prog, const DebugContext &debug) {
  if (plan.method == MatMulMethod::Library) {
    program::GemmOptions options;
    if (scale) {
      options.scale = scale->k;
      options.accumulate = true;
    }
    prog.add(program::Gemm(A3, B3, out3, options, {debug, "gemm"}));
    return;
  }
  Builder{graph, plan, A3, B3, out3, scale, prog, debug}.build();
}

} // namespace aspen::linalg::detail
