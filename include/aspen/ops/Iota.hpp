// iota (popops/Iota.hpp): t[i] = startInteger + i, on device.
//   t:            1-D, INT or UNSIGNED_INT,
//                 completely mapped and writable; may be empty. Another rank raises
//                 aspen::shape_error, another type aspen::type_error.
//   startInteger: the first value, which t's type must hold (type_error: e.g. a negative
//                 start for UNSIGNED_INT); the values wrap around as 32-bit integers do.
// Appends one compute set to prog.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

namespace aspen::ops {

ASPEN_API void iota(Graph &graph, const Tensor &t, int startInteger, program::Sequence &prog,
                    const DebugContext &debug = {});
ASPEN_API void iota(Graph &graph, const Tensor &t, unsigned startInteger, program::Sequence &prog,
                    const DebugContext &debug = {});

} // namespace aspen::ops
