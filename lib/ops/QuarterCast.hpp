// The quarter casts shared by aspen::ops::cast (Cast.cpp) and the quarter API (Quarter.cpp).
#pragma once

#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

#include <string>

namespace aspen::ops::detail {

// dst = src converted through `metadata`; one of src and dst is QUARTER, the other FLOAT or
// HALF, with the same shape. Errors name `what`.
void castQuarter(Graph &graph, const Tensor &src, const Tensor &dst, const Tensor &metadata,
                 program::Sequence &prog, const DebugContext &debug, const std::string &what);

} // namespace aspen::ops::detail
