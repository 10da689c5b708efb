// poplin/Convolution.hpp: convolutions, their tensors, weight and bias updates, flops and plans
// (include/aspen/linalg/Convolution.hpp) under poplin's names.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplin/ConvParams.hpp>
#include <poplin/MatMul.hpp>
#include <poplin/Namespace.hpp>
#include <aspen/linalg/Convolution.hpp>
