// fill (popops/Fill.hpp): every element of a tensor set to one value, on device.
//
//   fill<T>(graph, t, prog, value, debug)
//     t:     any shape and element type, completely mapped, no aliases and no constants
//            (aspen::graph_connection_error otherwise); may be empty.
//     value: converted to t's element type; a value that type cannot hold (out of range, a
//            fraction into an integer type, NaN into an integer, a finite value that would
//            overflow half or float to infinity) raises aspen::type_error.
//     Appends one compute set (one vertex per tile owning elements of t) to prog.
// Instantiated for float, double, half, int, unsigned, long long, unsigned long long, bool.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

namespace aspen::ops {

template <class T>
ASPEN_API void fill(Graph &graph, const Tensor &t, program::Sequence &prog, T value,
          const DebugContext &debug = {});

} // namespace aspen::ops
