// Convolution index maths and the parameters of a convolution's backward passes
// (poplin/ConvUtil.hpp). Host-side only; ConvParams.hpp says what the parameters mean.
//
// Index helpers. Each works on one field dimension `dim` of valid parameters (they do not call
// ConvParams::validate(), which the caller has done); indices and ranges are of that dimension:
//   output index  an element of the final output (after the output transform), in
//                 [0, getOutputSize(dim))
//   kernel index  an element of the kernel as given (before its transform), in
//                 [0, kernelShape[dim])
//   input index   an element of the input field as given (before its transform), in
//                 [0, inputFieldShape[dim])
// An output index, a kernel index and an input index "meet" when the convolution multiplies that
// input element by that kernel element and adds the product into that output element. Output
// padding, truncated elements, dilation holes and input or kernel padding meet nothing.
// Ranges are half-open [first, second); an empty result is {0, 0}. The range functions visit
// each output of the output range with each kernel index of the kernel range (getKernelRange:
// of the whole kernel): O(outputs * kernel elements).
//
// getGradientParams(fwd): the backward-data convolution, PopLibs' semantics. Run it with
// transposeAndFlipWeights = true, i.e. on fwd's weights transposed and flipped:
//   input    zDeltas, the gradient of fwd's output      [B, G*Co, fwd.getOutputFieldShape()...]
//   weights  w'[g][ci][co][k...] = w[g][co][ci][K0-1-k0, K1-1-k1, ...]
//            (fwd's weights w [G, Co, Ci, K...] with Ci and Co swapped, every field dim reversed)
//   output   the gradient of fwd's input               [B, G*Ci, fwd.inputFieldShape...]
// Its batch and groups are fwd's, its channels per group Co in and Ci out, its input field
// fwd's output field and its kernel fwd's kernel shape. Input dilation is fwd's stride, input
// padding fwd's output truncation plus (transformed kernel - 1) each side (the "full"
// convolution), input truncation fwd's output padding; the output transform undoes fwd's input
// transform (fwd input padding -> truncation, dilation -> stride, truncation -> padding). It is
// the exact adjoint of fwd's convolution with respect to its input, and it is canonical.
//
// getWeightUpdateParams(fwd): the weight-update convolution, PopLibs' semantics
// (calculateWeightDeltas). Its batch is fwd's Ci, its input channels per group fwd's batch B,
// its output channels per group fwd's Co, its groups fwd's G; its input field is fwd's input
// field with fwd's input transform, its kernel fwd's output gradient (kernel shape
// fwd.getOutputFieldShape(): output padding -> truncation, stride -> dilation, output truncation
// -> padding) and its output transform undoes fwd's kernel transform, so its output field is
// fwd's kernel shape. The operands are fwd's tensors rearranged (no arithmetic):
//   input    acts' [Ci, G*B, inputField...]       acts'[ci][g*B + b][x...]  = acts[b][g*Ci +
//   ci][x...] weights  dz'   [G, Co, B, outputField...]     dz'[g][co][b][y...]       =
//   zDeltas[b][g*Co + co][y...] output   out   [Ci, G*Co, kernel...]          dW[g][co][ci][k...]
//   = out[ci][g*Co + co][k...]
// where acts [B, G*Ci, ...] are fwd's activations, zDeltas [B, G*Co, ...] the gradient of fwd's
// output and dW [G, Co, Ci, K...] the gradient of fwd's weights. It is canonical.
//
// Both raise what ConvParams::validate() raises for invalid fwd parameters.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/linalg/ConvParams.hpp>

#include <cstddef>
#include <optional>
#include <utility>

namespace aspen::linalg {

// 0 for size 0, else (size - 1) * dilation + 1.
ASPEN_API std::size_t getDilatedSize(std::size_t size, unsigned dilation);

// The input index that meets outputIndex and kernelIndex, or no value when they meet nothing.
// (PopLibs returns ~0U for no value.) Raises aspen::index_error for a dim, an output index or a
// kernel index out of range.
ASPEN_API std::optional<std::size_t> getInputIndex(unsigned dim, std::size_t outputIndex,
                                                   std::size_t kernelIndex,
                                                   const ConvParams &params);

// The smallest range holding every output index of outputRange that meets some kernel index of
// kernelRange.
ASPEN_API std::pair<std::size_t, std::size_t>
getOutputRangeForKernelRange(unsigned dim, std::pair<std::size_t, std::size_t> outputRange,
                             std::pair<std::size_t, std::size_t> kernelRange,
                             const ConvParams &params);

// The smallest range holding every input index that meets an output index of outputRange and
// a kernel index of kernelRange.
ASPEN_API std::pair<std::size_t, std::size_t>
getInputRange(unsigned dim, std::pair<std::size_t, std::size_t> outputRange,
              std::pair<std::size_t, std::size_t> kernelRange, const ConvParams &params);

// The smallest range holding every kernel index that meets an output index of outputRange and
// an input index of inputRange.
ASPEN_API std::pair<std::size_t, std::size_t>
getKernelRange(unsigned dim, std::pair<std::size_t, std::size_t> outputRange,
               std::pair<std::size_t, std::size_t> inputRange, const ConvParams &params);

ASPEN_API ConvParams getGradientParams(const ConvParams &fwdParams);
ASPEN_API ConvParams getWeightUpdateParams(const ConvParams &fwdParams);

} // namespace aspen::linalg
