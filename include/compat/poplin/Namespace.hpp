// PopLibs' poplin namespace is aspen::linalg: poplin::X is aspen::linalg::X.
#pragma once

#include <poplar/Namespace.hpp>

namespace aspen::linalg {}

namespace poplin {
using namespace aspen::linalg;
} // namespace poplin
