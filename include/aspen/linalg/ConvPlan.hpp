// How a convolution is computed: its plan (poplin's plan, reported by reportPlanInfo). Three
// methods, chosen by estimated cost among those that can run:
//
// "library": one convolution call a pass (program::ConvForward, ConvBackwardData,
// ConvBackwardFilter in Kernels.hpp) over the whole tensors, with the index tables of
// ConvParams' transforms. The CPU executor runs ordinary float convolutions with oneDNN and the
// rest by lowering a cache-sized chunk of output positions at a time (im2col) and multiplying
// it with OpenBLAS (a 1x1 convolution reading its input in order is multiplied in place);
// backward data is a product and a col2im scatter, not a zero-stuffed forward: convolution() on getGradientParams(fwd) with transposeAndFlipWeights is recognised
// (getGradientParams of it is fwd again) and runs as fwd's ConvBackwardData. The CUDA executor
// runs the calls with cuDNN, or im2col + cuBLASLt where cuDNN does not apply (Kernels.hpp). The
// CPU, GPU and generic targets plan "library"; the IPU models, whose graphs are the portable
// ones, plan "gemm" or "direct".
//
// "gemm": one grouped matrix product per serial batch chunk,
//   out[g] [b*P, Co] = col[g] [b*P, Ci*T] . W[g] [Ci*T, Co]
// where P is the output field's element count, T the number of kernel taps kept after kernel
// truncation, col the lowered input (im2col: row (b, p), column (ci, tap) is the input element
// that output p reads through that tap, 0 on padding and dilation holes) and W the weights as a
// matrix. col is a view of the input -- transforms, padding and strides are expressed as tensor
// views over the input and a zero constant, no vertex computes indices -- which the product
// gathers into a temporary (the profile shows its bytes as rearranged bytes). The product is
// planned by the matmul planner (MatMulPlan.hpp), which picks a library call (OpenBLAS on the
// CPU executor, cuBLASLt on a GPU) or vertices on tiles by cost on every target.
//
// "direct": one vertex (ConvDirect, codelets/linalg/matmul.cpp) an image, group and output
// channel, its workers sharing the output positions, each a float sum over the group's input
// channels and kernel taps through the index table: for convolutions with at most 64 input
// channels x taps a group (depthwise and small-channel layers, where gemm's product has a
// degenerate K), on targets without convolution calls, and for forward and backward data only
// (a weight update sums over the batch and field: it plans gemm).
//
// Serial batch split (gemm): when one product's lowered input (B*P*Ci*T elements) would exceed
// the memory the plan may use -- availableMemoryProportion of the target's memory (all tiles'
// bytes) -- the batch is cut into `batchSerial` chunks of about B / batchSerial images, computed
// one after another (the weight update accumulates over them). The library method lowers a
// chunk of a few hundred KiB at a time and never splits.
//
// Cost (cycles of the target model): multiply-adds at the target's matmul rate, plus the
// lowered input's bytes at its exchange rate (the library lowers inside the call; gemm's gather
// is a copy), plus gemm's product as the matmul planner estimates it; direct: one multiply-add
// a worker-cycle plus reading the input once.
//
// planConstraints {"method": "library" | "gemm" | "direct"} pins the method (a library pin on
// a target without convolution calls, or a direct pin over 64 terms, is invalid_option), {"serial": {"batch": n}} the split (gemm), and
// {"matMul": {...}} passes constraints to gemm's products.
//
// JSON (ConvPlan::toJson):
//   {"method": "gemm", "serial": {"batch": 1}, "batchPerChunk": 5, "loweredBytes": 1234,
//    "budgetBytes": 5678, "estimatedCycles": 99, "reason": "...",
//    "matMul": {...the first chunk's MatMulPlan::toJson(); gemm only...}}
#pragma once

#include <aspen/Export.hpp>
#include <aspen/linalg/MatMulPlan.hpp>

#include <cstddef>
#include <string>

namespace aspen::linalg {

struct ASPEN_API ConvPlan {
  std::string method = "gemm"; // "library" or "gemm"
  std::size_t batchSerial = 1;   // serial batch chunks (gemm)
  std::size_t batchPerChunk = 0; // images in the largest chunk
  std::size_t loweredBytes = 0;  // one chunk's lowered input
  std::size_t budgetBytes = 0;   // what the plan may use for it
  double estimatedCycles = 0;    // of the method taken
  std::string reason;            // why this method
  MatMulPlan matMul;             // gemm: the first chunk's product
  std::string toJson() const;
};

} // namespace aspen::linalg
