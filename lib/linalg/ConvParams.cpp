// ConvParams: construction, comparison, printing, hashing, the size of each transform step,
// validation and the canonical form (include/aspen/linalg/ConvParams.hpp says what they mean).
#include <aspen/Error.hpp>
#include <aspen/linalg/ConvParams.hpp>
#include <aspen/linalg/ConvUtil.hpp>

#include "support/CheckedSize.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>

namespace aspen::linalg {

using InputTransform = ConvParams::InputTransform;
using OutputTransform = ConvParams::OutputTransform;

namespace {

constexpr std::size_t kMaxUnsigned = std::numeric_limits<unsigned>::max();

auto fields(const InputTransform &t) {
  return std::tie(t.truncationLower, t.truncationUpper, t.dilation, t.paddingLower, t.paddingUpper,
                  t.flip);
}

auto fields(const OutputTransform &t) {
  return std::tie(t.truncationLower, t.truncationUpper, t.stride, t.paddingLower, t.paddingUpper);
}

auto fields(const ConvParams &p) {
  return std::tie(p.inputType, p.outputType, p.batchSize, p.inputFieldShape, p.kernelShape,
                  p.inputChannelsPerConvGroup, p.outputChannelsPerConvGroup, p.numConvGroups,
                  p.inputTransform, p.kernelTransform, p.outputTransform);
}

template <class T> std::string list(const std::vector<T> &values) {
  std::string s = "{";
  for (std::size_t i = 0; i != values.size(); ++i) {
    if (i != 0)
      s += ',';
    s += std::to_string(static_cast<std::size_t>(values[i]));
  }
  s += '}';
  return s;
}

// boost::hash_combine's mixing step.
void combine(std::size_t &seed, std::size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
}

template <class T> void combine(std::size_t &seed, const std::vector<T> &values) {
  combine(seed, values.size());
  for (const T &v : values)
    combine(seed, static_cast<std::size_t>(v));
}

std::size_t transformedSize(std::size_t size, const InputTransform &t, unsigned dim) {
  const std::size_t truncated =
      size - (t.truncationLower[dim] + std::size_t{t.truncationUpper[dim]});
  return t.paddingLower[dim] + getDilatedSize(truncated, t.dilation[dim]) + t.paddingUpper[dim];
}

// transformedSize without wrapping: the size, or SIZE_MAX when it does not fit 64 bits.
std::size_t saturatedTransformedSize(std::size_t size, const InputTransform &t, unsigned dim) {
  const std::size_t truncated =
      size - (t.truncationLower[dim] + std::size_t{t.truncationUpper[dim]});
  std::size_t n = 0;
  if (truncated != 0 && (__builtin_mul_overflow(truncated - 1, std::size_t{t.dilation[dim]}, &n) ||
                         __builtin_add_overflow(n, std::size_t{1}, &n)))
    return std::numeric_limits<std::size_t>::max();
  if (__builtin_add_overflow(n, std::size_t{t.paddingLower[dim]}, &n) ||
      __builtin_add_overflow(n, std::size_t{t.paddingUpper[dim]}, &n))
    return std::numeric_limits<std::size_t>::max();
  return n;
}

std::string transformName(const char *transform, const char *field, unsigned dim) {
  return fmt::format("{}.{}[{}]", transform, field, dim);
}

// The lengths of every transform vector match the number of field dimensions.
void checkLengths(const ConvParams &p) {
  const std::size_t dims = p.inputFieldShape.size();
  const std::pair<const char *, std::size_t> lengths[] = {
      {"inputTransform.truncationLower", p.inputTransform.truncationLower.size()},
      {"inputTransform.truncationUpper", p.inputTransform.truncationUpper.size()},
      {"inputTransform.dilation", p.inputTransform.dilation.size()},
      {"inputTransform.paddingLower", p.inputTransform.paddingLower.size()},
      {"inputTransform.paddingUpper", p.inputTransform.paddingUpper.size()},
      {"inputTransform.flip", p.inputTransform.flip.size()},
      {"kernelTransform.truncationLower", p.kernelTransform.truncationLower.size()},
      {"kernelTransform.truncationUpper", p.kernelTransform.truncationUpper.size()},
      {"kernelTransform.dilation", p.kernelTransform.dilation.size()},
      {"kernelTransform.paddingLower", p.kernelTransform.paddingLower.size()},
      {"kernelTransform.paddingUpper", p.kernelTransform.paddingUpper.size()},
      {"kernelTransform.flip", p.kernelTransform.flip.size()},
      {"outputTransform.truncationLower", p.outputTransform.truncationLower.size()},
      {"outputTransform.truncationUpper", p.outputTransform.truncationUpper.size()},
      {"outputTransform.stride", p.outputTransform.stride.size()},
      {"outputTransform.paddingLower", p.outputTransform.paddingLower.size()},
      {"outputTransform.paddingUpper", p.outputTransform.paddingUpper.size()},
  };
  if (p.kernelShape.size() != dims)
    throw shape_error(fmt::format("ConvParams: kernelShape {} has {} dimensions but "
                                  "inputFieldShape {} has {}",
                                  list(p.kernelShape), p.kernelShape.size(),
                                  list(p.inputFieldShape), dims));
  for (const auto &[name, length] : lengths)
    if (length != dims)
      throw shape_error(fmt::format("ConvParams: {} has {} elements but there are {} field "
                                    "dimensions (inputFieldShape {})",
                                    name, length, dims, list(p.inputFieldShape)));
}

void checkNonZero(const std::vector<unsigned> &values, const char *name, const char *meaning) {
  for (unsigned d = 0; d != values.size(); ++d)
    if (values[d] == 0)
      throw invalid_option(fmt::format("ConvParams: {}[{}] is 0; it must be at least 1 (1 means "
                                       "no {})",
                                       name, d, meaning));
}

// Checks the truncation of one dimension of the input or the kernel and returns its size after
// the transform.
std::size_t checkTransform(const char *transform, const InputTransform &t, const char *shapeName,
                           std::size_t size, unsigned d) {
  if (size > kMaxUnsigned)
    throw shape_error(fmt::format("ConvParams: {}[{}] = {} exceeds 2^32 - 1 (the transforms "
                                  "count elements in unsigned)",
                                  shapeName, d, size));
  if (std::size_t{t.truncationLower[d]} + t.truncationUpper[d] > size)
    throw shape_error(fmt::format("ConvParams: {} + {} = {} + {} exceeds {}[{}] = {}",
                                  transformName(transform, "truncationLower", d),
                                  transformName(transform, "truncationUpper", d),
                                  t.truncationLower[d], t.truncationUpper[d], shapeName, d, size));
  const std::size_t transformed = saturatedTransformedSize(size, t, d);
  if (transformed > kMaxUnsigned)
    throw shape_error(fmt::format("ConvParams: dimension {}: {}[{}] = {} after {} (dilation {}, "
                                  "padding {} and {}) exceeds 2^32 - 1 elements",
                                  d, shapeName, d, size, transform, t.dilation[d],
                                  t.paddingLower[d], t.paddingUpper[d]));
  return transformed;
}

// PopLibs' zero convolution of p's output shape (ConvParams.hpp, canonicalize).
ConvParams zeroConvolution(const ConvParams &p) {
  const std::size_t dims = p.getNumFieldDims();
  const auto asUnsigned = [](const std::vector<std::size_t> &shape) {
    return std::vector<unsigned>(shape.begin(), shape.end());
  };
  const std::vector<unsigned> zeros(dims, 0), ones(dims, 1);
  const std::vector<bool> noFlip(dims, false);
  ConvParams zero = p;
  zero.inputTransform = {zeros, asUnsigned(p.inputFieldShape), ones, ones, zeros, noFlip};
  zero.kernelTransform = {zeros, asUnsigned(p.kernelShape), ones, ones, zeros, noFlip};
  zero.outputTransform = {zeros, ones, ones, zeros, asUnsigned(p.getOutputFieldShape())};
  return zero;
}

} // namespace

InputTransform::InputTransform(std::size_t numFieldDims)
    : InputTransform(std::vector<unsigned>(numFieldDims, 0), std::vector<unsigned>(numFieldDims, 0),
                     std::vector<unsigned>(numFieldDims, 1), std::vector<unsigned>(numFieldDims, 0),
                     std::vector<unsigned>(numFieldDims, 0),
                     std::vector<bool>(numFieldDims, false)) {}

InputTransform::InputTransform(std::vector<unsigned> truncationLower_,
                               std::vector<unsigned> truncationUpper_,
                               std::vector<unsigned> dilation_, std::vector<unsigned> paddingLower_,
                               std::vector<unsigned> paddingUpper_, std::vector<bool> flip_)
    : truncationLower(std::move(truncationLower_)), truncationUpper(std::move(truncationUpper_)),
      dilation(std::move(dilation_)), paddingLower(std::move(paddingLower_)),
      paddingUpper(std::move(paddingUpper_)), flip(std::move(flip_)) {}

OutputTransform::OutputTransform(std::size_t numFieldDims)
    : OutputTransform(
          std::vector<unsigned>(numFieldDims, 0), std::vector<unsigned>(numFieldDims, 0),
          std::vector<unsigned>(numFieldDims, 1), std::vector<unsigned>(numFieldDims, 0),
          std::vector<unsigned>(numFieldDims, 0)) {}

OutputTransform::OutputTransform(std::vector<unsigned> truncationLower_,
                                 std::vector<unsigned> truncationUpper_,
                                 std::vector<unsigned> stride_, std::vector<unsigned> paddingLower_,
                                 std::vector<unsigned> paddingUpper_)
    : truncationLower(std::move(truncationLower_)), truncationUpper(std::move(truncationUpper_)),
      stride(std::move(stride_)), paddingLower(std::move(paddingLower_)),
      paddingUpper(std::move(paddingUpper_)) {}

ConvParams::ConvParams(Type dataType, std::size_t batchSize_,
                       std::vector<std::size_t> inputFieldShape_,
                       std::vector<std::size_t> kernelShape_,
                       std::size_t inputChannelsPerConvGroup_,
                       std::size_t outputChannelsPerConvGroup_, std::size_t numConvGroups_)
    : ConvParams(dataType, dataType, batchSize_, std::move(inputFieldShape_),
                 std::move(kernelShape_), inputChannelsPerConvGroup_, outputChannelsPerConvGroup_,
                 numConvGroups_) {}

ConvParams::ConvParams(Type inputType_, Type outputType_, std::size_t batchSize_,
                       std::vector<std::size_t> inputFieldShape_,
                       std::vector<std::size_t> kernelShape_,
                       std::size_t inputChannelsPerConvGroup_,
                       std::size_t outputChannelsPerConvGroup_, std::size_t numConvGroups_)
    : ConvParams(inputType_, outputType_, batchSize_, inputFieldShape_, std::move(kernelShape_),
                 inputChannelsPerConvGroup_, outputChannelsPerConvGroup_, numConvGroups_,
                 InputTransform(inputFieldShape_.size()), InputTransform(inputFieldShape_.size()),
                 OutputTransform(inputFieldShape_.size())) {}

ConvParams::ConvParams(Type inputType_, Type outputType_, std::size_t batchSize_,
                       std::vector<std::size_t> inputFieldShape_,
                       std::vector<std::size_t> kernelShape_,
                       std::size_t inputChannelsPerConvGroup_,
                       std::size_t outputChannelsPerConvGroup_, std::size_t numConvGroups_,
                       InputTransform inputTransform_, InputTransform kernelTransform_,
                       OutputTransform outputTransform_)
    : inputType(inputType_), outputType(outputType_), batchSize(batchSize_),
      inputFieldShape(std::move(inputFieldShape_)), kernelShape(std::move(kernelShape_)),
      inputChannelsPerConvGroup(inputChannelsPerConvGroup_),
      outputChannelsPerConvGroup(outputChannelsPerConvGroup_), numConvGroups(numConvGroups_),
      inputTransform(std::move(inputTransform_)), kernelTransform(std::move(kernelTransform_)),
      outputTransform(std::move(outputTransform_)) {}

bool operator<(const InputTransform &a, const InputTransform &b) { return fields(a) < fields(b); }
bool operator==(const InputTransform &a, const InputTransform &b) { return fields(a) == fields(b); }
bool operator<(const OutputTransform &a, const OutputTransform &b) { return fields(a) < fields(b); }
bool operator==(const OutputTransform &a, const OutputTransform &b) {
  return fields(a) == fields(b);
}
bool operator<(const ConvParams &a, const ConvParams &b) { return fields(a) < fields(b); }
bool operator==(const ConvParams &a, const ConvParams &b) { return fields(a) == fields(b); }

std::size_t hash_value(const InputTransform &t) {
  std::size_t seed = 0;
  combine(seed, t.truncationLower);
  combine(seed, t.truncationUpper);
  combine(seed, t.dilation);
  combine(seed, t.paddingLower);
  combine(seed, t.paddingUpper);
  combine(seed, t.flip);
  return seed;
}

std::size_t hash_value(const OutputTransform &t) {
  std::size_t seed = 0;
  combine(seed, t.truncationLower);
  combine(seed, t.truncationUpper);
  combine(seed, t.stride);
  combine(seed, t.paddingLower);
  combine(seed, t.paddingUpper);
  return seed;
}

std::size_t hash_value(const ConvParams &p) {
  std::size_t seed = 0;
  combine(seed, static_cast<std::size_t>(p.inputType.id()));
  combine(seed, static_cast<std::size_t>(p.outputType.id()));
  combine(seed, p.batchSize);
  combine(seed, p.inputFieldShape);
  combine(seed, p.kernelShape);
  combine(seed, p.inputChannelsPerConvGroup);
  combine(seed, p.outputChannelsPerConvGroup);
  combine(seed, p.numConvGroups);
  combine(seed, hash_value(p.inputTransform));
  combine(seed, hash_value(p.kernelTransform));
  combine(seed, hash_value(p.outputTransform));
  return seed;
}

std::ostream &operator<<(std::ostream &os, const ConvParams &p) {
  const auto row = [&os](const std::string &name, const std::string &value) {
    os << fmt::format("  {:<27}{}\n", name, value);
  };
  os << "ConvParams:\n";
  row("inputType", p.inputType.toString());
  row("outputType", p.outputType.toString());
  row("batchSize", std::to_string(p.batchSize));
  row("numConvGroups", std::to_string(p.numConvGroups));
  row("inputFieldShape", list(p.inputFieldShape));
  row("kernelShape", list(p.kernelShape));
  row("inputChannelsPerConvGroup", std::to_string(p.inputChannelsPerConvGroup));
  row("outputChannelsPerConvGroup", std::to_string(p.outputChannelsPerConvGroup));
  for (const auto &[prefix, t] :
       {std::pair<const char *, const InputTransform &>{"input", p.inputTransform},
        {"kernel", p.kernelTransform}}) {
    row(fmt::format("{}TruncationLower", prefix), list(t.truncationLower));
    row(fmt::format("{}TruncationUpper", prefix), list(t.truncationUpper));
    row(fmt::format("{}Dilation", prefix), list(t.dilation));
    row(fmt::format("{}PaddingLower", prefix), list(t.paddingLower));
    row(fmt::format("{}PaddingUpper", prefix), list(t.paddingUpper));
    row(fmt::format("{}Flip", prefix), list(t.flip));
  }
  row("outputTruncationLower", list(p.outputTransform.truncationLower));
  row("outputTruncationUpper", list(p.outputTransform.truncationUpper));
  row("stride", list(p.outputTransform.stride));
  row("outputPaddingLower", list(p.outputTransform.paddingLower));
  row("outputPaddingUpper", list(p.outputTransform.paddingUpper));
  try {
    p.validate();
    row("outputFieldShape", list(p.getOutputFieldShape()));
  } catch (const error &e) {
    row("outputFieldShape", std::string("(invalid parameters: ") + e.what() + ")");
  }
  return os;
}

std::size_t ConvParams::getTruncatedInputSize(unsigned dim) const {
  return inputFieldShape[dim] -
         (inputTransform.truncationLower[dim] + std::size_t{inputTransform.truncationUpper[dim]});
}

std::size_t ConvParams::getTruncatedKernelSize(unsigned dim) const {
  return kernelShape[dim] -
         (kernelTransform.truncationLower[dim] + std::size_t{kernelTransform.truncationUpper[dim]});
}

std::size_t ConvParams::getTransformedInputSize(unsigned dim) const {
  return transformedSize(inputFieldShape[dim], inputTransform, dim);
}

std::size_t ConvParams::getTransformedKernelSize(unsigned dim) const {
  return transformedSize(kernelShape[dim], kernelTransform, dim);
}

std::size_t ConvParams::getUntransformedOutputSize(unsigned dim) const {
  return getTransformedInputSize(dim) + 1 - getTransformedKernelSize(dim);
}

std::size_t ConvParams::getOutputSize(unsigned dim) const {
  const std::size_t truncated =
      getUntransformedOutputSize(dim) -
      (outputTransform.truncationLower[dim] + std::size_t{outputTransform.truncationUpper[dim]});
  const std::size_t stride = outputTransform.stride[dim];
  return outputTransform.paddingLower[dim] + (truncated + stride - 1) / stride +
         outputTransform.paddingUpper[dim];
}

std::vector<std::size_t> ConvParams::getOutputFieldShape() const {
  std::vector<std::size_t> shape;
  for (unsigned d = 0; d != getNumFieldDims(); ++d)
    shape.push_back(getOutputSize(d));
  return shape;
}

void ConvParams::validate() const {
  const bool typesSupported = (inputType == FLOAT && outputType == FLOAT) ||
                              (inputType == HALF && (outputType == HALF || outputType == FLOAT));
  if (!typesSupported)
    throw type_error(fmt::format("ConvParams: inputType {} with outputType {} is not supported: "
                                 "the types must be float and float, half and half, or half "
                                 "and float",
                                 inputType.toString(), outputType.toString()));
  if (numConvGroups == 0)
    throw invalid_option("ConvParams: numConvGroups is 0; it must be at least 1");
  checkLengths(*this);
  checkNonZero(inputTransform.dilation, "inputTransform.dilation", "dilation");
  checkNonZero(kernelTransform.dilation, "kernelTransform.dilation", "dilation");
  checkNonZero(outputTransform.stride, "outputTransform.stride", "striding");
  for (unsigned d = 0; d != getNumFieldDims(); ++d) {
    const std::size_t in =
        checkTransform("inputTransform", inputTransform, "inputFieldShape", inputFieldShape[d], d);
    const std::size_t kernel =
        checkTransform("kernelTransform", kernelTransform, "kernelShape", kernelShape[d], d);
    if (kernel == 0)
      throw shape_error(fmt::format("ConvParams: dimension {}: the transformed kernel is empty "
                                    "(kernelShape[{}] = {}, truncated by {} and {}, padded by {} "
                                    "and {})",
                                    d, d, kernelShape[d], kernelTransform.truncationLower[d],
                                    kernelTransform.truncationUpper[d],
                                    kernelTransform.paddingLower[d],
                                    kernelTransform.paddingUpper[d]));
    if (in < kernel)
      throw shape_error(fmt::format("ConvParams: dimension {}: the transformed kernel (size {}, "
                                    "from kernelShape[{}] = {}) is larger than the transformed "
                                    "input (size {}, from inputFieldShape[{}] = {})",
                                    d, kernel, d, kernelShape[d], in, d, inputFieldShape[d]));
    const std::size_t untransformedOutput = in + 1 - kernel;
    const auto &out = outputTransform;
    if (std::size_t{out.truncationLower[d]} + out.truncationUpper[d] > untransformedOutput)
      throw shape_error(fmt::format("ConvParams: outputTransform.truncationLower[{}] + "
                                    "outputTransform.truncationUpper[{}] = {} + {} exceeds the {} "
                                    "elements of the convolution's output in dimension {}",
                                    d, d, out.truncationLower[d], out.truncationUpper[d],
                                    untransformedOutput, d));
    if (getOutputSize(d) > kMaxUnsigned)
      throw shape_error(fmt::format("ConvParams: dimension {}: the output size {} (with padding "
                                    "{} and {}) exceeds 2^32 - 1 elements",
                                    d, getOutputSize(d), out.paddingLower[d], out.paddingUpper[d]));
  }
  const auto withField = [](std::vector<std::size_t> dims, const std::vector<std::size_t> &field) {
    dims.insert(dims.end(), field.begin(), field.end());
    return dims;
  };
  detail::checkedElements<shape_error>(
      withField({batchSize, numConvGroups, inputChannelsPerConvGroup}, inputFieldShape),
      inputType.size(), [] { return "ConvParams: activations [B, G, Ci, inputFieldShape...]"; });
  detail::checkedElements<shape_error>(
      withField({numConvGroups, outputChannelsPerConvGroup, inputChannelsPerConvGroup},
                kernelShape),
      inputType.size(), [] { return "ConvParams: weights [G, Co, Ci, kernelShape...]"; });
  detail::checkedElements<shape_error>(
      withField({batchSize, numConvGroups, outputChannelsPerConvGroup}, getOutputFieldShape()),
      outputType.size(), [] { return "ConvParams: output [B, G, Co, outputFieldShape...]"; });
}

ConvParams ConvParams::canonicalize() const {
  validate();
  ConvParams p = *this;
  auto &in = p.inputTransform;
  auto &kernel = p.kernelTransform;
  auto &out = p.outputTransform;
  for (unsigned d = 0; d != p.getNumFieldDims(); ++d) {
    const std::size_t outSize = p.getOutputSize(d);
    // Output elements that no kernel element reaches are zeros: make them output padding.
    const auto live = getOutputRangeForKernelRange(d, {0, outSize}, {0, p.kernelShape[d]}, p);
    if (live.first == live.second)
      return zeroConvolution(p);
    const std::size_t zerosLower = live.first, zerosUpper = outSize - live.second;
    if (zerosLower > out.paddingLower[d]) {
      out.truncationLower[d] +=
          static_cast<unsigned>((zerosLower - out.paddingLower[d]) * out.stride[d]);
      out.paddingLower[d] = static_cast<unsigned>(zerosLower);
    }
    if (zerosUpper > out.paddingUpper[d]) {
      out.truncationUpper[d] +=
          static_cast<unsigned>((zerosUpper - out.paddingUpper[d]) * out.stride[d]);
      out.paddingUpper[d] = static_cast<unsigned>(zerosUpper);
    }
    // End the truncated output on a kept element, so that striding's adjoint is a dilation
    // with nothing after the last element.
    std::size_t truncated = p.getUntransformedOutputSize(d) -
                            (out.truncationLower[d] + std::size_t{out.truncationUpper[d]});
    const std::size_t unused = (truncated - 1) % out.stride[d];
    out.truncationUpper[d] += static_cast<unsigned>(unused);
    truncated -= unused;
    if (truncated == 1)
      out.stride[d] = 1;
    // Input elements that no output reads: truncate them (their dilated span becomes padding).
    const auto usedInput = getInputRange(d, {0, outSize}, {0, p.kernelShape[d]}, p);
    const std::size_t unreadInputLower = usedInput.first;
    const std::size_t unreadInputUpper = p.inputFieldShape[d] - usedInput.second;
    if (unreadInputLower > in.truncationLower[d]) {
      in.paddingLower[d] +=
          static_cast<unsigned>((unreadInputLower - in.truncationLower[d]) * in.dilation[d]);
      in.truncationLower[d] = static_cast<unsigned>(unreadInputLower);
    }
    if (unreadInputUpper > in.truncationUpper[d]) {
      in.paddingUpper[d] +=
          static_cast<unsigned>((unreadInputUpper - in.truncationUpper[d]) * in.dilation[d]);
      in.truncationUpper[d] = static_cast<unsigned>(unreadInputUpper);
    }
    // Kernel elements that meet no input: likewise.
    const auto usedKernel = getKernelRange(d, {0, outSize}, {0, p.inputFieldShape[d]}, p);
    const std::size_t unusedKernelLower = usedKernel.first;
    const std::size_t unusedKernelUpper = p.kernelShape[d] - usedKernel.second;
    if (unusedKernelLower > kernel.truncationLower[d]) {
      kernel.paddingLower[d] += static_cast<unsigned>(
          (unusedKernelLower - kernel.truncationLower[d]) * kernel.dilation[d]);
      kernel.truncationLower[d] = static_cast<unsigned>(unusedKernelLower);
    }
    if (unusedKernelUpper > kernel.truncationUpper[d]) {
      kernel.paddingUpper[d] += static_cast<unsigned>(
          (unusedKernelUpper - kernel.truncationUpper[d]) * kernel.dilation[d]);
      kernel.truncationUpper[d] = static_cast<unsigned>(unusedKernelUpper);
    }
    // Padding at the same end of the transformed (flipped) input and kernel: drop what both
    // have, keeping one kernel element.
    unsigned &inPadFirst = in.flip[d] ? in.paddingUpper[d] : in.paddingLower[d];
    unsigned &inPadLast = in.flip[d] ? in.paddingLower[d] : in.paddingUpper[d];
    unsigned &kernelPadFirst = kernel.flip[d] ? kernel.paddingUpper[d] : kernel.paddingLower[d];
    unsigned &kernelPadLast = kernel.flip[d] ? kernel.paddingLower[d] : kernel.paddingUpper[d];
    for (auto [inPad, kernelPad] : {std::pair<unsigned *, unsigned *>{&inPadFirst, &kernelPadFirst},
                                    {&inPadLast, &kernelPadLast}}) {
      const auto excess = static_cast<unsigned>(
          std::min<std::size_t>({*inPad, *kernelPad, p.getTransformedKernelSize(d) - 1}));
      *inPad -= excess;
      *kernelPad -= excess;
    }
    // Input padding whose outputs are truncated: drop both, keeping one output element.
    for (auto [inPad, outTruncation] :
         {std::pair<unsigned *, unsigned *>{&inPadFirst, &out.truncationLower[d]},
          {&inPadLast, &out.truncationUpper[d]}}) {
      const auto excess = static_cast<unsigned>(
          std::min<std::size_t>({*inPad, *outTruncation, p.getUntransformedOutputSize(d) - 1}));
      *inPad -= excess;
      *outTruncation -= excess;
    }
    // With one element left, dilation does nothing and flipping only swaps the padding.
    for (auto [t, size] : {std::pair<InputTransform *, std::size_t>{&in, p.inputFieldShape[d]},
                           {&kernel, p.kernelShape[d]}}) {
      if (size <= t->truncationLower[d] + std::size_t{1} + t->truncationUpper[d]) {
        t->dilation[d] = 1;
        if (t->flip[d]) {
          t->flip[d] = false;
          std::swap(t->paddingLower[d], t->paddingUpper[d]);
        }
      }
    }
  }
  return p;
}

} // namespace aspen::linalg
