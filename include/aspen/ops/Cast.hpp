// Element type conversion (popops' Cast.hpp).
//
// cast(graph, src, type, prog, debug) -> Tensor
//   A new tensor of src's shape and `type`, mapped like src. All twelve element types (float,
//   half, int, unsigned int, short, unsigned short, char, unsigned char, signed char, bool,
//   long long, unsigned long long) convert to each other (144 pairs):
//     float/half -> integer: truncation toward zero as static_cast for values in range (also
//                            for the 64-bit types); out of range saturates to the type's
//                            min/max, NaN gives 0
//     integer -> integer:    modulo 2^bits (static_cast), 64-bit ones included
//     anything -> bool:      x != 0 (NaN gives true);  bool -> number: 0 or 1
//     -> float:              rounded to nearest even, once (2^60 + 2^36 + 1 gives 2^60 + 2^37)
//     -> half:               rounded to nearest even, once, from every type (2049 gives 2048,
//                            2051 gives 2052); beyond ±65520 gives ±inf
//   expr::Cast in a fused expression (ElementWise.hpp's map) follows the same rules for all
//   twelve types; the other operations and constants keep the nine types of ElementwiseOpTable,
//   so a value of signed char, long long or unsigned long long can only be cast (anything else
//   is a type_error naming the operation and the type).
// castWithOutput(graph, src, dst, prog, debug): into dst (src's shape, parallel-writeable).
//
// QUARTER (aspen/ops/Quarter.hpp): a QUARTER src casts to FLOAT or HALF with its own metadata;
// a cast to QUARTER needs a metadata tensor, cast(graph, src, QUARTER, metadata, prog), and
// here raises type_error; castWithOutput into a QUARTER dst uses dst's metadata.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

namespace aspen::ops {

ASPEN_API Tensor cast(Graph &graph, const Tensor &src, Type dstType, program::Sequence &prog,
                      const DebugContext &debug = {});
ASPEN_API void castWithOutput(Graph &graph, const Tensor &src, const Tensor &dst,
                              program::Sequence &prog, const DebugContext &debug = {});

} // namespace aspen::ops
