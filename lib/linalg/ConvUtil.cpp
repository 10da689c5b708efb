// Convolution index maths (which input element an output and a kernel element meet, and the
// ranges that meet anything) and the parameters of the backward-data and weight-update
// convolutions (include/aspen/linalg/ConvUtil.hpp says what they mean).
#include <aspen/Error.hpp>
#include <aspen/linalg/ConvUtil.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <vector>

namespace aspen::linalg {

using InputTransform = ConvParams::InputTransform;
using OutputTransform = ConvParams::OutputTransform;
using Range = std::pair<std::size_t, std::size_t>;

namespace {

// Where element `index` of a field of `size` elements lands after transform `t` in dimension
// `dim`, or no value when it is truncated away.
std::optional<std::size_t> transformIndex(std::size_t index, std::size_t size,
                                          const InputTransform &t, unsigned dim) {
  const std::size_t lower = t.truncationLower[dim], upper = t.truncationUpper[dim];
  if (index < lower || index >= size - upper)
    return {};
  const std::size_t position = t.paddingLower[dim] + (index - lower) * t.dilation[dim];
  if (!t.flip[dim])
    return position;
  const std::size_t transformedSize = t.paddingLower[dim] +
                                      getDilatedSize(size - lower - upper, t.dilation[dim]) +
                                      t.paddingUpper[dim];
  return transformedSize - 1 - position;
}

// The element of a field of `size` elements that lands at `position` after transform `t` in
// dimension `dim`, or no value when padding or a dilation hole lands there.
std::optional<std::size_t> untransformPosition(std::size_t position, std::size_t size,
                                               const InputTransform &t, unsigned dim) {
  const std::size_t lower = t.truncationLower[dim];
  const std::size_t dilated =
      getDilatedSize(size - lower - t.truncationUpper[dim], t.dilation[dim]);
  const std::size_t transformedSize = t.paddingLower[dim] + dilated + t.paddingUpper[dim];
  const std::size_t unflipped = t.flip[dim] ? transformedSize - 1 - position : position;
  if (unflipped < t.paddingLower[dim] || unflipped >= t.paddingLower[dim] + dilated)
    return {};
  const std::size_t offset = unflipped - t.paddingLower[dim];
  if (offset % t.dilation[dim] != 0)
    return {};
  return lower + offset / t.dilation[dim];
}

// One field dimension of valid parameters: which input index an output index and a kernel
// index meet.
class DimensionMap {
public:
  DimensionMap(const ConvParams &params, unsigned dim)
      : params_(params), dim_(dim), outputSize_(params.getOutputSize(dim)) {}

  // The position in the transformed kernel of kernel index k, if it is not truncated.
  std::optional<std::size_t> kernelPosition(std::size_t kernelIndex) const {
    return transformIndex(kernelIndex, params_.kernelShape[dim_], params_.kernelTransform, dim_);
  }

  // The index into the convolution's output before the output transform, if the output index
  // is not padding.
  std::optional<std::size_t> untransformedOutput(std::size_t outputIndex) const {
    const OutputTransform &out = params_.outputTransform;
    if (outputIndex < out.paddingLower[dim_] || outputIndex >= outputSize_ - out.paddingUpper[dim_])
      return {};
    return out.truncationLower[dim_] + (outputIndex - out.paddingLower[dim_]) * out.stride[dim_];
  }

  std::optional<std::size_t> inputIndex(std::size_t untransformedOutput,
                                        std::size_t kernelPosition) const {
    return untransformPosition(untransformedOutput + kernelPosition, params_.inputFieldShape[dim_],
                               params_.inputTransform, dim_);
  }

  // Calls f(outputIndex, kernelIndex, inputIndex) for every meeting of the two ranges.
  template <class F> void forEachMeeting(Range outputs, Range kernels, F &&f) const {
    std::vector<std::pair<std::size_t, std::size_t>> positions; // kernel index, position
    for (std::size_t k = kernels.first; k != kernels.second; ++k)
      if (const auto position = kernelPosition(k))
        positions.emplace_back(k, *position);
    for (std::size_t o = outputs.first; o != outputs.second; ++o)
      if (const auto u = untransformedOutput(o))
        for (const auto &[k, position] : positions)
          if (const auto i = inputIndex(*u, position))
            f(o, k, *i);
  }

  std::size_t outputSize() const { return outputSize_; }

private:
  const ConvParams &params_;
  unsigned dim_;
  std::size_t outputSize_;
};

// The smallest half-open range holding every index added; {0, 0} when none was.
class Hull {
public:
  void add(std::size_t index) {
    first_ = std::min(first_, index);
    end_ = std::max(end_, index + 1);
  }
  Range range() const { return first_ < end_ ? Range{first_, end_} : Range{0, 0}; }

private:
  std::size_t first_ = std::numeric_limits<std::size_t>::max();
  std::size_t end_ = 0;
};

void checkDim(const char *what, unsigned dim, const ConvParams &params) {
  if (dim >= params.getNumFieldDims())
    throw index_error(fmt::format("{}: dimension {} is out of range: the convolution has {} field "
                                  "dimensions",
                                  what, dim, params.getNumFieldDims()));
}

void checkRange(const char *what, const char *name, Range range, std::size_t size) {
  if (range.first > range.second || range.second > size)
    throw index_error(fmt::format("{}: {} [{}, {}) is not a range within [0, {})", what, name,
                                  range.first, range.second, size));
}

} // namespace

std::size_t getDilatedSize(std::size_t size, unsigned dilation) {
  return size == 0 ? 0 : (size - 1) * dilation + 1;
}

std::optional<std::size_t> getInputIndex(unsigned dim, std::size_t outputIndex,
                                         std::size_t kernelIndex, const ConvParams &params) {
  constexpr const char *what = "getInputIndex";
  checkDim(what, dim, params);
  const DimensionMap map(params, dim);
  if (outputIndex >= map.outputSize() || kernelIndex >= params.kernelShape[dim])
    throw index_error(fmt::format("{}: output index {} (of {}) or kernel index {} (of {}) is out "
                                  "of range in dimension {}",
                                  what, outputIndex, map.outputSize(), kernelIndex,
                                  params.kernelShape[dim], dim));
  const auto u = map.untransformedOutput(outputIndex);
  const auto position = map.kernelPosition(kernelIndex);
  if (!u || !position)
    return {};
  return map.inputIndex(*u, *position);
}

Range getOutputRangeForKernelRange(unsigned dim, Range outputRange, Range kernelRange,
                                   const ConvParams &params) {
  constexpr const char *what = "getOutputRangeForKernelRange";
  checkDim(what, dim, params);
  const DimensionMap map(params, dim);
  checkRange(what, "output range", outputRange, map.outputSize());
  checkRange(what, "kernel range", kernelRange, params.kernelShape[dim]);
  Hull hull;
  map.forEachMeeting(outputRange, kernelRange,
                     [&](std::size_t o, std::size_t, std::size_t) { hull.add(o); });
  return hull.range();
}

Range getInputRange(unsigned dim, Range outputRange, Range kernelRange, const ConvParams &params) {
  constexpr const char *what = "getInputRange";
  checkDim(what, dim, params);
  const DimensionMap map(params, dim);
  checkRange(what, "output range", outputRange, map.outputSize());
  checkRange(what, "kernel range", kernelRange, params.kernelShape[dim]);
  Hull hull;
  map.forEachMeeting(outputRange, kernelRange,
                     [&](std::size_t, std::size_t, std::size_t i) { hull.add(i); });
  return hull.range();
}

Range getKernelRange(unsigned dim, Range outputRange, Range inputRange, const ConvParams &params) {
  constexpr const char *what = "getKernelRange";
  checkDim(what, dim, params);
  const DimensionMap map(params, dim);
  checkRange(what, "output range", outputRange, map.outputSize());
  checkRange(what, "input range", inputRange, params.inputFieldShape[dim]);
  Hull hull;
  map.forEachMeeting(outputRange, {0, params.kernelShape[dim]},
                     [&](std::size_t, std::size_t k, std::size_t i) {
                       if (i >= inputRange.first && i < inputRange.second)
                         hull.add(k);
                     });
  return hull.range();
}

ConvParams getGradientParams(const ConvParams &fwdParams) {
  const ConvParams fwd = fwdParams.canonicalize();
  const std::size_t dims = fwd.getNumFieldDims();
  const InputTransform &fwdIn = fwd.inputTransform;
  const InputTransform &fwdKernel = fwd.kernelTransform;
  const OutputTransform &fwdOut = fwd.outputTransform;
  // The output gradient, with fwd's output padding dropped, dilated back to the spacing of the
  // untransformed output and padded to make the "full" convolution (transformed kernel - 1).
  InputTransform in(fwdOut.paddingLower, fwdOut.paddingUpper, fwdOut.stride, fwdOut.truncationLower,
                    fwdOut.truncationUpper, fwdIn.flip);
  // The caller flips the weights, so truncation and padding change ends. A flipped fwd input
  // flips the output gradient and the kernel too.
  InputTransform kernel(fwdKernel.truncationUpper, fwdKernel.truncationLower, fwdKernel.dilation,
                        fwdKernel.paddingUpper, fwdKernel.paddingLower, fwdKernel.flip);
  for (unsigned d = 0; d != dims; ++d) {
    const auto fullPadding = static_cast<unsigned>(fwd.getTransformedKernelSize(d) - 1);
    in.paddingLower[d] += fullPadding;
    in.paddingUpper[d] += fullPadding;
    kernel.flip[d] = kernel.flip[d] != fwdIn.flip[d];
  }
  // Undo fwd's input transform: its padding is truncated, its dilation strided away and its
  // truncation given back as zeros.
  OutputTransform out(fwdIn.paddingLower, fwdIn.paddingUpper, fwdIn.dilation, fwdIn.truncationLower,
                      fwdIn.truncationUpper);
  const ConvParams bwd(fwd.inputType, fwd.outputType, fwd.batchSize, fwd.getOutputFieldShape(),
                       fwd.kernelShape, fwd.outputChannelsPerConvGroup,
                       fwd.inputChannelsPerConvGroup, fwd.numConvGroups, std::move(in),
                       std::move(kernel), std::move(out));
  return bwd.canonicalize();
}

ConvParams getWeightUpdateParams(const ConvParams &fwdParams) {
  const ConvParams fwd = fwdParams.canonicalize();
  const std::size_t dims = fwd.getNumFieldDims();
  const InputTransform &fwdKernel = fwd.kernelTransform;
  const OutputTransform &fwdOut = fwd.outputTransform;
  // A flipped fwd kernel flips the weight deltas: flip both operands of the update.
  InputTransform in = fwd.inputTransform;
  // The output gradient as the kernel: fwd's output padding dropped, dilated back to the
  // spacing of the untransformed output, fwd's output truncation given back as zeros.
  InputTransform kernel(fwdOut.paddingLower, fwdOut.paddingUpper, fwdOut.stride,
                        fwdOut.truncationLower, fwdOut.truncationUpper,
                        std::vector<bool>(dims, false));
  for (unsigned d = 0; d != dims; ++d) {
    in.flip[d] = in.flip[d] != fwdKernel.flip[d];
    kernel.flip[d] = fwdKernel.flip[d];
  }
  // Undo fwd's kernel transform: its padding is truncated, its dilation strided away and its
  // truncation given back as zeros.
  OutputTransform out(fwdKernel.paddingLower, fwdKernel.paddingUpper, fwdKernel.dilation,
                      fwdKernel.truncationLower, fwdKernel.truncationUpper);
  const ConvParams wu(fwd.inputType, fwd.outputType, fwd.inputChannelsPerConvGroup,
                      fwd.inputFieldShape, fwd.getOutputFieldShape(), fwd.batchSize,
                      fwd.outputChannelsPerConvGroup, fwd.numConvGroups, std::move(in),
                      std::move(kernel), std::move(out));
  return wu.canonicalize();
}

} // namespace aspen::linalg
