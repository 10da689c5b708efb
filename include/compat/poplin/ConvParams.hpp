// poplin/ConvParams.hpp: the convolution parameters of aspen::linalg
// (include/aspen/linalg/ConvParams.hpp) under poplin's names: poplin::ConvParams with its
// InputTransform and OutputTransform, and std::hash for them.
#pragma once

#include <aspen/linalg/ConvParams.hpp>
#include <poplar/Implicit.hpp>
#include <poplar/Type.hpp>
#include <poplin/Namespace.hpp>
