// PopLibs' <popnn/BatchNorm.hpp>, mapped onto <aspen/nn/BatchNorm.hpp> (popnn::bn is aspen::nn::bn).
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/BatchNorm.hpp>
