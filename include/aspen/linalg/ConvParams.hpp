// The parameters of a convolution (poplin/ConvParams.hpp): element types, batch, channels,
// groups, field and kernel shapes, and the transforms applied to the input, the kernel and the
// output. Host-side only; the graph builders take them.
//
// Shapes of the tensors a convolution with these parameters reads and writes (B = batchSize,
// G = numConvGroups, Ci / Co = input / output channels per conv group):
//   activations  [B, G*Ci, inputFieldShape...]       (inputType)
//   weights      [G, Co, Ci, kernelShape...]         (inputType)
//   output       [B, G*Co, getOutputFieldShape()...] (outputType)
// Channel c of the activations belongs to group c / Ci; output channel c to group c / Co.
//
// What the convolution computes, per field dimension d (any number of them, 0 included):
//   1. the input field is truncated (inputTransform.truncationLower/Upper[d] elements dropped at
//      each end), dilated (dilation[d] - 1 zeros put between neighbouring elements), padded
//      (paddingLower/Upper[d] zeros added at each end) and, if flip[d], reversed:
//      getTransformedInputSize(d) = paddingLower + getDilatedSize(truncated, dilation) +
//      paddingUpper, where getDilatedSize(n, k) is 0 for n = 0 and (n - 1) * k + 1 otherwise;
//   2. the kernel likewise with kernelTransform (getTransformedKernelSize(d));
//   3. the transformed kernel slides over the transformed input without padding
//      (cross-correlation: out[u] = sum over k of in[u + k] * kernel[k]), giving
//      getUntransformedOutputSize(d) = transformedInput - transformedKernel + 1 elements;
//   4. that output is truncated (outputTransform.truncationLower/Upper[d]), strided (every
//      stride[d]-th element kept, starting with the first: n elements become
//      (n + stride - 1) / stride) and padded with zeros (paddingLower/Upper[d]): getOutputSize(d).
// Each element of an output channel sums over the Ci input channels of its group.
//
// validate() states the rules; it raises (the message names the field, the dimension and the
// values involved):
//   aspen::type_error      types other than (FLOAT, FLOAT), (HALF, HALF) and (HALF in, FLOAT out)
//   aspen::invalid_option  numConvGroups 0, a dilation or a stride of 0
//   aspen::shape_error     kernelShape or a transform vector whose length is not the number of
//                          field dimensions; a truncation larger than what it truncates; a
//                          transformed kernel of size 0 or larger than the transformed input
//                          (PopLibs refuses these too); sizes past 2^32 - 1 (the transforms
//                          count in unsigned, as PopLibs' do); element counts of the
//                          activations, weights or output that overflow 64 bits
// Batch 0 and 0 channels are valid (the tensors are empty). The size getters assume valid
// parameters (indices below getNumFieldDims(), no overflow).
//
// canonicalize() returns parameters computing the same output, in PopLibs' canonical form:
// output elements that only ever see padding become output padding, input and kernel elements
// no output reads become truncation, padding on both the input and the kernel (or on the input
// with the output truncated) is removed, the truncated output ends on a strided element, and
// dilation / flip of a dimension with one element are dropped. A convolution whose output is all
// zeros becomes PopLibs' zero convolution (input and kernel truncated away, one padding element
// each, the one output element truncated and the output padded back to its size).
//
// Equality and order compare every field in declaration order; std::hash agrees with equality.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Type.hpp>

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <vector>

namespace aspen::linalg {

struct ASPEN_API ConvParams {
  // Applied to the input field or to the kernel: truncate, dilate, pad, flip (in that order).
  struct ASPEN_API InputTransform {
    std::vector<unsigned> truncationLower; // elements dropped at the start, before dilation
    std::vector<unsigned> truncationUpper; // elements dropped at the end, before dilation
    std::vector<unsigned> dilation;        // 1 = none; k puts k - 1 zeros between elements
    std::vector<unsigned> paddingLower;    // zeros added at the start, after dilation
    std::vector<unsigned> paddingUpper;    // zeros added at the end, after dilation
    std::vector<bool> flip;                // reverse the dimension, after padding

    InputTransform() = default;
    // The identity transform of `numFieldDims` dimensions.
    explicit InputTransform(std::size_t numFieldDims);
    InputTransform(std::vector<unsigned> truncationLower, std::vector<unsigned> truncationUpper,
                   std::vector<unsigned> dilation, std::vector<unsigned> paddingLower,
                   std::vector<unsigned> paddingUpper, std::vector<bool> flip);

    friend ASPEN_API bool operator<(const InputTransform &a, const InputTransform &b);
    friend ASPEN_API bool operator==(const InputTransform &a, const InputTransform &b);
    friend bool operator!=(const InputTransform &a, const InputTransform &b) { return !(a == b); }
  };

  // Applied to the output of the convolution: truncate, stride, pad (in that order).
  struct ASPEN_API OutputTransform {
    std::vector<unsigned> truncationLower; // elements dropped at the start, before striding
    std::vector<unsigned> truncationUpper; // elements dropped at the end, before striding
    std::vector<unsigned> stride;          // 1 = every element; k keeps elements 0, k, 2k, ...
    std::vector<unsigned> paddingLower;    // zeros added at the start, after striding
    std::vector<unsigned> paddingUpper;    // zeros added at the end, after striding

    OutputTransform() = default;
    // The identity transform of `numFieldDims` dimensions.
    explicit OutputTransform(std::size_t numFieldDims);
    OutputTransform(std::vector<unsigned> truncationLower, std::vector<unsigned> truncationUpper,
                    std::vector<unsigned> stride, std::vector<unsigned> paddingLower,
                    std::vector<unsigned> paddingUpper);

    friend ASPEN_API bool operator<(const OutputTransform &a, const OutputTransform &b);
    friend ASPEN_API bool operator==(const OutputTransform &a, const OutputTransform &b);
    friend bool operator!=(const OutputTransform &a, const OutputTransform &b) { return !(a == b); }
  };

  Type inputType = FLOAT;  // activations and weights
  Type outputType = FLOAT; // output
  std::size_t batchSize = 0;
  std::vector<std::size_t> inputFieldShape;
  std::vector<std::size_t> kernelShape;
  std::size_t inputChannelsPerConvGroup = 0;
  std::size_t outputChannelsPerConvGroup = 0;
  std::size_t numConvGroups = 1;
  InputTransform inputTransform;
  InputTransform kernelTransform;
  OutputTransform outputTransform;

  // A 0-D convolution of batch 0 with no channels, one group and FLOAT data.
  ConvParams() = default;
  // Identity transforms; the output type is dataType.
  ConvParams(Type dataType, std::size_t batchSize, std::vector<std::size_t> inputFieldShape,
             std::vector<std::size_t> kernelShape, std::size_t inputChannelsPerConvGroup,
             std::size_t outputChannelsPerConvGroup, std::size_t numConvGroups);
  // Identity transforms.
  ConvParams(Type inputType, Type outputType, std::size_t batchSize,
             std::vector<std::size_t> inputFieldShape, std::vector<std::size_t> kernelShape,
             std::size_t inputChannelsPerConvGroup, std::size_t outputChannelsPerConvGroup,
             std::size_t numConvGroups);
  ConvParams(Type inputType, Type outputType, std::size_t batchSize,
             std::vector<std::size_t> inputFieldShape, std::vector<std::size_t> kernelShape,
             std::size_t inputChannelsPerConvGroup, std::size_t outputChannelsPerConvGroup,
             std::size_t numConvGroups, InputTransform inputTransform,
             InputTransform kernelTransform, OutputTransform outputTransform);

  Type getInputType() const { return inputType; }
  Type getOutputType() const { return outputType; }
  std::size_t getBatchSize() const { return batchSize; }
  std::size_t getNumConvGroups() const { return numConvGroups; }
  std::size_t getNumInputChansPerConvGroup() const { return inputChannelsPerConvGroup; }
  std::size_t getNumOutputChansPerConvGroup() const { return outputChannelsPerConvGroup; }
  std::size_t getNumInputChans() const { return inputChannelsPerConvGroup * numConvGroups; }
  std::size_t getNumOutputChans() const { return outputChannelsPerConvGroup * numConvGroups; }
  std::size_t getNumFieldDims() const { return inputFieldShape.size(); }
  const std::vector<std::size_t> &getInputFieldShape() const { return inputFieldShape; }
  const std::vector<std::size_t> &getKernelShape() const { return kernelShape; }
  std::size_t getInputSize(unsigned dim) const { return inputFieldShape[dim]; }
  std::size_t getKernelSize(unsigned dim) const { return kernelShape[dim]; }

  // Sizes along field dimension `dim` after each step (see the header comment).
  std::size_t getTruncatedInputSize(unsigned dim) const;
  std::size_t getTruncatedKernelSize(unsigned dim) const;
  std::size_t getTransformedInputSize(unsigned dim) const;
  std::size_t getTransformedKernelSize(unsigned dim) const;
  std::size_t getUntransformedOutputSize(unsigned dim) const; // before the output transform
  std::size_t getOutputSize(unsigned dim) const;              // after it
  std::vector<std::size_t> getOutputFieldShape() const;

  void validate() const;
  // Validates, then returns the canonical form (see the header comment).
  ConvParams canonicalize() const;

  friend ASPEN_API bool operator<(const ConvParams &a, const ConvParams &b);
  friend ASPEN_API bool operator==(const ConvParams &a, const ConvParams &b);
  friend bool operator!=(const ConvParams &a, const ConvParams &b) { return !(a == b); }
};

// Every field, one per line, and the output field shape when the parameters are valid.
ASPEN_API std::ostream &operator<<(std::ostream &os, const ConvParams &params);

ASPEN_API std::size_t hash_value(const ConvParams::InputTransform &transform);
ASPEN_API std::size_t hash_value(const ConvParams::OutputTransform &transform);
ASPEN_API std::size_t hash_value(const ConvParams &params);

} // namespace aspen::linalg

namespace std {

template <> struct hash<aspen::linalg::ConvParams::InputTransform> {
  size_t operator()(const aspen::linalg::ConvParams::InputTransform &t) const {
    return aspen::linalg::hash_value(t);
  }
};

template <> struct hash<aspen::linalg::ConvParams::OutputTransform> {
  size_t operator()(const aspen::linalg::ConvParams::OutputTransform &t) const {
    return aspen::linalg::hash_value(t);
  }
};

template <> struct hash<aspen::linalg::ConvParams> {
  size_t operator()(const aspen::linalg::ConvParams &p) const {
    return aspen::linalg::hash_value(p);
  }
};

} // namespace std
