// PopLibs' <popnn/GroupNorm.hpp>, mapped onto <aspen/nn/GroupNorm.hpp> (popnn::gn is aspen::nn::gn).
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/GroupNorm.hpp>
