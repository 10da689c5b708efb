// PopLibs' poputil namespace is aspen::util.
#pragma once

#include <poplar/Namespace.hpp>

namespace aspen::util {}

namespace poputil {
using namespace aspen::util;
} // namespace poputil
