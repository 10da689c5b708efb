// cast and castWithOutput: a one-node expression (expr::Cast) on the library Cast<Src, Dst>
// codelets.
#include <aspen/ops/Cast.hpp>
#include <aspen/ops/ElementWise.hpp>

namespace aspen::ops {

Tensor cast(Graph &graph, const Tensor &src, Type dstType, program::Sequence &prog,
            const DebugContext &debug) {
  return map(graph, expr::Cast(expr::_1, dstType), {src}, prog,
             debug.getPathName().empty() ? DebugContext("cast") : debug);
}

void castWithOutput(Graph &graph, const Tensor &src, const Tensor &dst, program::Sequence &prog,
                    const DebugContext &debug) {
  mapWithOutput(graph, expr::Cast(expr::_1, dst.valid() ? dst.elementType() : Type()), {src}, dst,
                prog, debug.getPathName().empty() ? DebugContext("cast") : debug);
}

} // namespace aspen::ops
