// PopLibs' popnn namespace is aspen::nn.
#pragma once

#include <poplar/Namespace.hpp>

namespace aspen::nn {}

namespace popnn {
using namespace aspen::nn;
} // namespace popnn
