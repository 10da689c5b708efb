// Pooling over N-d fields (popnn's Pooling.hpp).
//
// PoolParams(poolingType, inputFieldShape, kernelShape, stride, inputTruncationOrPaddingLower,
//            inputTruncationOrPaddingUpper, numChannels, batchSize, dType)
//   One entry a field dimension in each vector. A positive padding adds that many positions at
//   that end of the dimension, a negative one drops (truncates) that many input elements. Output
//   size a dimension: (F + lower + upper - kernel) / stride + 1, rounded down; it must be at
//   least 1 (F + lower + upper >= kernel). dType FLOAT or HALF; sums and averages are float.
//
// pool(graph, params, in, prog, debug, options) -> out
//   in [batchSize, numChannels, F...] of dType; out [batchSize, numChannels, O...], mapped like
//   in's channels (each image's channel on the tile that holds its first input element).
//   MAX: the largest element of each window (NaN if the window holds one; a window of padding
//   alone gives -infinity). SUM: the window's sum. AVG: the sum divided by the number of input
//   elements in the window (popnn: padding is not counted; a window of padding alone gives 0),
//   or by the kernel's size with option avgIncludePadding (PyTorch's and cuDNN's
//   count_include_pad).
// poolInputGradient(graph, params, in, pooled, pooledGradient, useScaledGradient, prog, debug,
//                   options) -> inGradient [batchSize, numChannels, F...]
//   For any kind; MAX needs the forward's input and output. MAX's gradient goes, by default
//   (popnn), to every input element equal to its window's maximum, divided by the number of such
//   elements with useScaledGradient; option maxPoolGradient "first" gives it to the first one
//   in the window (kernel positions row-major: PyTorch's and cuDNN's rule).
// poolInputGradient(graph, params, fwdChansPerGroup, pooledGradient, prog, debug, options)
//   For AVG and SUM (the gradient does not depend on the input); fwdChansPerGroup is PopLibs'
//   layout hint, checked to divide numChannels and otherwise without effect.
//   pooledGradient [batchSize, numChannels, O...] of dType.
//
// Options: "avgIncludePadding" (true | false, default false), "maxPoolGradient" ("all",
// default, | "first"): Aspen extensions for the frameworks' semantics; PopLibs'
// "poolUseIntrospectiveMapping" (true | false) is checked and without effect.
//
// getOutputFieldShape(params), getFwdFlops / getBwdFlops(params): one operation a window element
// read (and one a division for AVG); get{Fwd,Bwd}PerfectCycleCount(graph, params): those at the
// target's vector width on every worker of every tile.
//
// Errors: invalid_option (vectors that do not have one entry a field dimension, a kernel or stride
// of 0, a truncation of more than the field, no output, a type other than FLOAT or HALF, a bad
// option), shape_error / type_error naming the tensor (a shape or type other than the
// parameters give), control_program_error for an unmapped input.
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/nn/PoolingDef.hpp>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <vector>

namespace aspen::nn::pooling {

struct ASPEN_API PoolParams {
  PoolingType poolingType;
  std::vector<std::size_t> inputFieldShape;
  std::vector<std::size_t> kernelShape;
  std::vector<unsigned> stride;
  std::vector<int> inputTruncationOrPaddingLower;
  std::vector<int> inputTruncationOrPaddingUpper;
  std::size_t numChannels;
  std::size_t batchSize;
  Type dType;

  PoolParams(PoolingType poolingType, std::vector<std::size_t> inputFieldShape,
             std::vector<std::size_t> kernelShape, std::vector<unsigned> stride,
             std::vector<int> inputTruncationOrPaddingLower,
             std::vector<int> inputTruncationOrPaddingUpper, std::size_t numChannels,
             std::size_t batchSize, Type dType);

  std::size_t getNumFieldDims() const { return inputFieldShape.size(); }
  std::vector<std::size_t> getOutputFieldShape() const;
  // Raises invalid_option naming the field and the rule (see above).
  void validate() const;
};

ASPEN_API std::ostream &operator<<(std::ostream &os, const PoolParams &params);

ASPEN_API std::vector<std::size_t> getOutputFieldShape(const PoolParams &params);
ASPEN_API std::uint64_t getFwdFlops(const PoolParams &params);
ASPEN_API std::uint64_t getBwdFlops(const PoolParams &params);
ASPEN_API double getFwdPerfectCycleCount(const Graph &graph, const PoolParams &params);
ASPEN_API double getBwdPerfectCycleCount(const Graph &graph, const PoolParams &params);

ASPEN_API Tensor pool(Graph &graph, const PoolParams &params, const Tensor &in,
                      program::Sequence &prog, const DebugContext &debug = {},
                      const OptionFlags &options = {});

ASPEN_API Tensor poolInputGradient(Graph &graph, const PoolParams &params, const Tensor &in,
                                   const Tensor &pooled, const Tensor &pooledGradient,
                                   bool useScaledGradient, program::Sequence &prog,
                                   const DebugContext &debug = {},
                                   const OptionFlags &options = {});

ASPEN_API Tensor poolInputGradient(Graph &graph, const PoolParams &params,
                                   unsigned fwdChansPerGroup, const Tensor &pooledGradient,
                                   program::Sequence &prog, const DebugContext &debug = {},
                                   const OptionFlags &options = {});

} // namespace aspen::nn::pooling
