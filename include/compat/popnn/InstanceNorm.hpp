// PopLibs' <popnn/InstanceNorm.hpp>, mapped onto <aspen/nn/InstanceNorm.hpp> (popnn::in is aspen::nn::in).
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/InstanceNorm.hpp>
