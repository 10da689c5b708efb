// poplin/ConvUtil.hpp: the convolution index maths and the backward passes' parameters of
// aspen::linalg (include/aspen/linalg/ConvUtil.hpp) under poplin's names: getDilatedSize,
// getInputIndex, getOutputRangeForKernelRange, getInputRange, getKernelRange,
// getGradientParams and getWeightUpdateParams.
// Unlike PopLibs, getInputIndex returns an empty std::optional, not ~0U, when the output and
// kernel elements meet no input element, and indices and ranges are std::size_t.
#pragma once

#include <aspen/linalg/ConvUtil.hpp>
#include <poplar/Implicit.hpp>
#include <poplin/ConvParams.hpp>
#include <poplin/Namespace.hpp>
