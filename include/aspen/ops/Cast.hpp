// Element type conversion (popops' Cast.hpp).
//
// cast(graph, src, type, prog, debug) -> Tensor
//   A new tensor of src's shape and `type`, mapped like src. All nine element-wise types
//   (float, half, int, unsigned int, short, unsigned short, char, unsigned char, bool) convert
//   to each other (type_error for others):
//     float/half -> integer: truncation toward zero as static_cast for values in range;
//                            out of range saturates to the type's min/max, NaN gives 0
//     integer -> integer:    modulo 2^bits (static_cast)
//     anything -> bool:      x != 0 (NaN gives true);  bool -> number: 0 or 1
//     -> half:               rounded to nearest even; beyond ±65520 gives ±inf
// castWithOutput(graph, src, dst, prog, debug): into dst (src's shape, parallel-writeable).
#pragma once

#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

namespace aspen::ops {

Tensor cast(Graph &graph, const Tensor &src, Type dstType, program::Sequence &prog,
            const DebugContext &debug = {});
void castWithOutput(Graph &graph, const Tensor &src, const Tensor &dst, program::Sequence &prog,
                    const DebugContext &debug = {});

} // namespace aspen::ops
