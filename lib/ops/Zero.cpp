#include <aspen/ops/Fill.hpp>
#include <aspen/ops/Zero.hpp>

namespace aspen::ops {

void zero(Graph &graph, const Tensor &t, program::Sequence &prog, const DebugContext &debug) {
  fill(graph, t, prog, 0, debug);
}

} // namespace aspen::ops
