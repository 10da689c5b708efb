// PopLibs' <popnn/Pooling.hpp>, mapped onto <aspen/nn/Pooling.hpp>: popnn::pooling::PoolParams,
// pool and both poolInputGradient forms.
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <popnn/PoolingDef.hpp>
#include <aspen/nn/Pooling.hpp>
