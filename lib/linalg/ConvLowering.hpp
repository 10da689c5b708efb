// The "gemm" lowering of a convolution (ConvPlan.hpp): the matrices of its grouped product as
// tensor views, no data moved until a program reads them.
//
// With B images, G groups, Ci / Co channels per group, P output field elements and T kernel taps
// kept after kernel truncation (taps in row-major order of the kept kernel):
//   loweredInput(in)       col [G, B*P, Ci*T]: col[g][b*P + p][ci*T + t] is the input element
//                          that output p reads through tap t (a zero constant where it reads
//                          padding or a dilation hole, and for rows of output padding)
//   weightMatrix(weights)  [G, Ci*T, Co]: weights [G, Co, Ci, K...] (kept taps), or, transposed,
//                          weights [G, Ci, Co, K...] used as w[g][co][ci][K-1-k...]
//   outputMatrix(out)      [G, B*P, Co]: out [B, G*Co, O...]
//   gradientMatrix(dz)     [G, Co, B*P]: dz [B, G*Co, O...]
//   keptKernel(w)          w [G, Co, Ci, K...] restricted to the kept taps, as [G, Co, Ci*T]
//   geometry()             the index tables of the convolution calls (Kernels.hpp), for the
//                          library method: output o reads input getInputIndex(o, tap) per dim
// Batch chunks are slices of dimension 1 of the [G, B*P, ...] matrices (P rows an image).
#pragma once

#include <aspen/Graph.hpp>
#include <aspen/Kernels.hpp>
#include <aspen/linalg/ConvParams.hpp>

#include <cstddef>

namespace aspen::linalg::detail {

class ConvLowering {
public:
  // params must be valid.
  ConvLowering(Graph &graph, const ConvParams &params, const DebugContext &debug);

  std::size_t outputElements() const { return outputElements_; } // P
  std::size_t keptTaps() const { return keptTaps_; }             // T

  Tensor loweredInput(const Tensor &in) const;
  Tensor weightMatrix(const Tensor &weights, bool transposeAndFlip) const;
  Tensor outputMatrix(const Tensor &out) const;
  Tensor gradientMatrix(const Tensor &zDeltas) const;
  program::ConvGeometry geometry() const;
  Tensor keptKernel(const Tensor &weights) const;
  // keptKernel of the weights as this convolution uses them ([G, Co, Ci*T]): `weights`
  // themselves, or [G, Ci, Co, K...] transposed and flipped.
  Tensor kernelMatrix(const Tensor &weights, bool transposeAndFlip) const;

private:
  // A zero view of `shape` and the input type (a broadcast one-element constant).
  Tensor zeros(std::vector<std::size_t> shape) const;
  // `t` with n zero slices added before (lower) or after along `axis`.
  Tensor padded(const Tensor &t, unsigned axis, std::size_t lower, std::size_t upper) const;
  // The transformed input: truncated, dilated, padded and flipped along each field axis.
  Tensor transformedInput(const Tensor &in) const;
  // The output elements one kept tap tuple reads, [B, G*Ci, O...].
  Tensor tapView(const Tensor &transformed, const std::vector<std::size_t> &tap) const;

  Graph &graph_;
  ConvParams params_;
  DebugContext debug_;
  mutable Tensor zero_; // [1], the input type; made by the first zeros()
  std::size_t outputElements_ = 1, keptTaps_ = 1;
};

} // namespace aspen::linalg::detail
