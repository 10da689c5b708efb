// PopLibs' <popnn/LayerNorm.hpp>, mapped onto <aspen/nn/LayerNorm.hpp> (popnn::ln is aspen::nn::ln).
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/LayerNorm.hpp>
