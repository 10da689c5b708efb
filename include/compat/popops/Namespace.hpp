// PopLibs' popops namespace is aspen::ops: popops::X is aspen::ops::X (and popops::expr::X is
// aspen::ops::expr::X).
#pragma once

#include <poplar/Namespace.hpp>

namespace aspen::ops {}

namespace popops {
using namespace aspen::ops;
} // namespace popops
