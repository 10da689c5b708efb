// Poplar's <poplar/exceptions.hpp>: poplar_error is aspen::error, and the specific errors keep
// their Poplar names (graph_memory_allocation_error, index_error, invalid_option, ...).
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Error.hpp>

namespace poplar {
using poplar_error = aspen::error;
} // namespace poplar
