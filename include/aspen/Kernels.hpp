// Kernels: programs that run one native library kernel over whole tensors, as one step (the
// kinds and their operands: lib/core/KernelKinds.hpp).
// An Aspen extension (Poplar has none): the executor runs the kernel with its own launch shape,
// not as vertices on tiles.
//
//   Gemm  c[g] = alpha * a[g] . b[g] + beta * c[g]
//         a [G,M,K] or [M,K], b [G,K,N] or [K,N], c [G,M,N] or [M,N] (all rank 2 or all rank 3);
//         a and b both float or both half, c float or half; products accumulate in float.
//         alpha = the one-element float tensor `scale`, or 1 without one; beta = 1 with
//         `accumulate`, else 0 (c is then only written).
//         CPU executor: OpenBLAS cblas_sgemm over all cores when Aspen was built with it (a
//         portable blocked loop otherwise); half operands are widened to float first.
//         GPU: one cuBLASLt matmul (algorithm and workspace chosen at Engine::load, capturable
//         into CUDA graphs); float uses TF32 tensor cores only with `allowTF32`.
//
// Operands may be any views: those whose elements are not one contiguous row-major run are
// gathered into temporaries first (and c scattered back after), and so are a and b when they
// may share bytes with c. Errors: shape_error / type_error at construction for shapes or types
// outside the contract, control_program_error (or invalid_tile_mapping) when the program is
// compiled with a tensor of another graph, unmapped, constant or aliased output elements.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Program.hpp>

namespace aspen::program {

struct GemmOptions {
  Tensor scale;            // alpha: a one-element float tensor; invalid: alpha = 1
  bool accumulate = false; // beta = 1 (add to c) or 0 (overwrite c)
  bool allowTF32 = false;  // float operands on a GPU: TF32 tensor cores (10-bit mantissa)
};

class ASPEN_API Gemm : public Program {
public:
  Gemm(const Tensor &a, const Tensor &b, const Tensor &c, const GemmOptions &options = {},
       const DebugContext &debug = {});
};

} // namespace aspen::program
