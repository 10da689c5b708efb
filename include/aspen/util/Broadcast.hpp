// Broadcasting and duplication helpers (poputil's Broadcast.hpp and Util.hpp).
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

#include <vector>

namespace aspen::util {

// Views of a and b broadcast to their common NumPy-style shape (trailing dimensions aligned,
// size-1 dimensions repeated). Raises shape_error naming both shapes when they do not broadcast.
ASPEN_API void broadcastToMatch(Tensor &a, Tensor &b);
ASPEN_API void broadcastToMatch(Tensor &a, Tensor &b, Tensor &c);
// A view of t broadcast to `shape`.
ASPEN_API void broadcastToMatch(Tensor &t, ArrayRef<std::size_t> shape);
// The common broadcast shape of several shapes.
ASPEN_API std::vector<std::size_t>
broadcastShape(const std::vector<std::vector<std::size_t>> &shapes);

// A new variable like t (mapped like t), and a copy of t into it appended to prog.
ASPEN_API Tensor
duplicate(Graph &graph, const Tensor &t, program::Sequence &prog, const DebugContext &debug = {},
          TensorCloneMethod method = TensorCloneMethod::PRESERVE_ORDER_UNLESS_ALIASES);
// N clones of t stacked along a new outermost dimension: shape {N, t.shape()...}.
ASPEN_API Tensor
cloneN(Graph &graph, const Tensor &t, unsigned N, const DebugContext &debug = {},
       TensorCloneMethod method = TensorCloneMethod::PRESERVE_ORDER_UNLESS_ALIASES);

} // namespace aspen::util
