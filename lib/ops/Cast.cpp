// cast and castWithOutput: a one-node expression (expr::Cast) on the library Cast<Src, Dst>
// codelets; casts from or to QUARTER go to the quarter vertices with the metadata tensor.
#include "QuarterCast.hpp"

#include <aspen/ops/Cast.hpp>
#include <aspen/ops/ElementWise.hpp>

namespace aspen::ops {

namespace {
const char *const kNeedsMetadata =
    ": a cast to QUARTER needs a metadata tensor for the format and scale; call "
    "cast(graph, src, QUARTER, metadata, prog) (aspen/ops/Quarter.hpp)";
}

Tensor cast(Graph &graph, const Tensor &src, Type dstType, program::Sequence &prog,
            const DebugContext &debug) {
  const DebugContext name = debug.getPathName().empty() ? DebugContext("cast") : debug;
  if (dstType == QUARTER && !(src.valid() && src.elementType() == QUARTER))
    throw type_error(std::string("cast") + kNeedsMetadata);
  if (src.valid() && src.elementType() == QUARTER && dstType != QUARTER) {
    const Tensor dst = graph.clone(dstType, src, name);
    detail::castQuarter(graph, src, dst, src.getMetadata(), prog, name, "cast from quarter");
    return dst;
  }
  return map(graph, expr::Cast(expr::_1, dstType), {src}, prog, name);
}

void castWithOutput(Graph &graph, const Tensor &src, const Tensor &dst, program::Sequence &prog,
                    const DebugContext &debug) {
  const DebugContext name = debug.getPathName().empty() ? DebugContext("cast") : debug;
  const bool srcQuarter = src.valid() && src.elementType() == QUARTER;
  const bool dstQuarter = dst.valid() && dst.elementType() == QUARTER;
  if (srcQuarter != dstQuarter) {
    detail::castQuarter(graph, src, dst, srcQuarter ? src.getMetadata() : dst.getMetadata(), prog,
                        name, "castWithOutput");
    return;
  }
  mapWithOutput(graph, expr::Cast(expr::_1, dst.valid() ? dst.elementType() : Type()), {src}, dst,
                prog, name);
}

} // namespace aspen::ops
