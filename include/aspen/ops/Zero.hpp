// zero (popops/Zero.hpp): every element of a tensor set to 0 on device; fill<float>(..., 0).
//   t: any shape and element type, completely mapped, writable (see Fill.hpp); may be empty.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

namespace aspen::ops {

ASPEN_API void zero(Graph &graph, const Tensor &t, program::Sequence &prog,
                    const DebugContext &debug = {});

} // namespace aspen::ops
