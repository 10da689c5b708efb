// PopLibs' <poputil/exceptions.hpp>: poplibs_error is aspen::error.
#pragma once

#include <poplar/Implicit.hpp>
#include <poputil/Namespace.hpp>
#include <aspen/Error.hpp>

namespace poputil {
using poplibs_error = aspen::error;
} // namespace poputil
