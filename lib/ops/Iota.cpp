// iota: one Iota<T> vertex per tile; each region knows the flat index it starts at.
#include "FillRegions.hpp"
#include "support/TypeConversion.hpp"

#include <aspen/ops/Iota.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

namespace aspen::ops {

namespace {

template <class T>
void iotaImpl(Graph &graph, const Tensor &t, T start, program::Sequence &prog,
              const DebugContext &debug) {
  if (t.rank() != 1)
    throw shape_error(fmt::format("iota: tensor {} must be 1-D, but has shape {}", t.getDebugStr(),
                                  t.shapeToString()));
  const Type type = t.elementType();
  if (type != INT && type != UNSIGNED_INT)
    throw type_error(fmt::format("iota: tensor {} must have type int or unsigned int, not {}",
                                 t.getDebugStr(), type.toString()));
  unsigned startBits = 0; // int and unsigned int share the 32-bit representation
  aspen::detail::convertValues(aspen::detail::hostTypeOf<T>(), &start, type, &startBits, 1,
                               fmt::format("iota start for tensor {}", t.getDebugStr()));
  detail::requireWritable(t, "iota");
  ComputeSet cs = graph.addComputeSet({debug, "iota"});
  detail::addVertexPerTile(graph, cs, t, util::templateVertex("aspen::ops::Iota", type),
                           [&](VertexRef v, const std::vector<Interval> &regions) {
                             graph.connect(v["out"], detail::regionSlices(t, regions));
                             std::vector<unsigned> begins;
                             for (const Interval &i : regions)
                               begins.push_back(static_cast<unsigned>(i.begin()));
                             graph.setInitialValue(v["regionBegin"], begins);
                             graph.setInitialValueFromHost(v["start"], type, &startBits, 1, false);
                           });
  prog.add(program::Execute(cs, debug));
}

} // namespace

void iota(Graph &graph, const Tensor &t, int startInteger, program::Sequence &prog,
          const DebugContext &debug) {
  iotaImpl(graph, t, startInteger, prog, debug);
}

void iota(Graph &graph, const Tensor &t, unsigned startInteger, program::Sequence &prog,
          const DebugContext &debug) {
  iotaImpl(graph, t, startInteger, prog, debug);
}

} // namespace aspen::ops
