// The program of one planned matmul. A library plan is one program::Gemm over the whole
// operands (Kernels.hpp). A vertex plan is, for each serial step a compute set of block products
// (MatMulPartials, or MatMulPartialsAcc for serial k steps after the first, one MultiVertex per
// group of a tile's block), and a reduce compute set
// (ReducePartials / ReducePartialsAcc) once the last k step of an (m, n) step has run, unless
// the block products can write the output directly (partition.k == 1, no accumulation into C,
// partials type == output type). Serial k steps accumulate into the same partials.
#pragma once

#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>
#include <aspen/linalg/MatMulPlan.hpp>

#include <optional>

namespace aspen::linalg::detail {

// matMulAcc's k: a FLOAT scalar tensor (host values become constants).
struct MatMulScale {
  Tensor k;
};

// out3 = A3 . B3 ([G,M,K] . [G,K,N] -> [G,M,N]), or out3 += k * A3 . B3 with a scale, as `plan`
// says; operands are checked, non-empty and mapped.
void buildMatMul(Graph &graph, const MatMulPlan &plan, const Tensor &A3, const Tensor &B3,
                 const Tensor &out3, const std::optional<MatMulScale> &scale,
                 program::Sequence &prog, const DebugContext &debug);

} // namespace aspen::linalg::detail
