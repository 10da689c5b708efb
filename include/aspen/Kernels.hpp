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
//   ConvForward(in, weights, out, geometry)          out = conv(in, weights)
//   ConvBackwardData(outGrad, weights, inGrad, geometry)   inGrad = the adjoint in `in`
//   ConvBackwardFilter(outGrad, in, weights, geometry, options)
//         weights = deltas (options.accumulate false) or weights += scale * deltas (true)
//         in [B, G*Ci, F...], out / outGrad [B, G*Co, O...], weights [G, Co, Ci*T] (T kernel
//         taps) of the geometry's sizes; in and weights one type (float or half), out float or
//         half; a backward call's operands all one type. ConvGeometry's per-dimension tables say which input element each output reads
//         through each tap, so any truncation, dilation, padding, flip and stride is one form.
//         aspen::linalg's convolution builders make these (its planner's "library" method).
//         CPU executor: oneDNN (libdnnl, opened at load) for float calls that are ordinary
//         convolutions (stride, kernel dilation, padding); otherwise, per image and group,
//         im2col of a chunk of output positions into a cache-sized buffer, then OpenBLAS sgemm
//         into the output's rows (a 1x1 convolution reading every input element once in order
//         is multiplied in place); backward data is sgemm then col2im (a scatter-add), the
//         weight update sgemm over every chunk of every image, accumulated in float. Either
//         way the bits do not depend on the executor's thread count.
//         GPU (aspen.cuda.convolutions = auto | cudnn | gemm): cuDNN (opened at load; its
//         algorithm the fastest of cuDNN's heuristic picks whose workspace fits
//         geometry.workspaceBytes; FMA float maths unless allowTF32) when the tables are an
//         ordinary convolution with symmetric-enough padding and one element type; otherwise
//         im2col of as many images as the workspace allows, then one batched cuBLASLt product
//         per image (the groups its batch), col2im as a gather. Capturable into CUDA graphs.
//
// Operands may be any views: those whose elements are not one contiguous row-major run are
// gathered into temporaries first (and c scattered back after), and so are a and b when they
// may share bytes with c. Errors: shape_error / type_error at construction for shapes or types
// outside the contract, control_program_error (or invalid_tile_mapping) when the program is
// compiled with a tensor of another graph, unmapped, constant or aliased output elements.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Program.hpp>

#include <cstdint>
#include <vector>

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

// What a convolution call computes, in index tables (aspen::linalg builds one from ConvParams).
struct ConvGeometry {
  std::uint64_t batch = 0, groups = 1, inChans = 0, outChans = 0; // channels per group
  std::vector<std::uint64_t> inputField, outputField; // F..., O...
  std::vector<std::uint64_t> taps;                    // T_d: kernel taps per field dimension
  // Per field dimension d, outputField[d] * taps[d] entries, output-major: the input index
  // output o reads through tap t, or -1 (padding, a dilation hole, a truncated element).
  std::vector<std::vector<std::int64_t>> inputIndex;
  // On a GPU: the most scratch memory the call may take (cuDNN's workspace, im2col's columns),
  // 0 for the executor's own bound; and whether float products may use TF32 tensor cores.
  std::uint64_t workspaceBytes = 0;
  bool allowTF32 = false;
};

struct ConvBackwardFilterOptions {
  Tensor scale;            // one float; invalid: 1
  bool accumulate = false; // weights += scale * deltas; else weights = scale * deltas
};

class ASPEN_API ConvForward : public Program {
public:
  ConvForward(const Tensor &in, const Tensor &weights, const Tensor &out,
              const ConvGeometry &geometry, const DebugContext &debug = {});
};
class ASPEN_API ConvBackwardData : public Program {
public:
  ConvBackwardData(const Tensor &outGrad, const Tensor &weights, const Tensor &inGrad,
                   const ConvGeometry &geometry, const DebugContext &debug = {});
};
class ASPEN_API ConvBackwardFilter : public Program {
public:
  ConvBackwardFilter(const Tensor &outGrad, const Tensor &in, const Tensor &weights,
                     const ConvGeometry &geometry, const ConvBackwardFilterOptions &options = {},
                     const DebugContext &debug = {});
};

} // namespace aspen::program
