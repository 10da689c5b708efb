// fill: one Fill<T> vertex per tile over the tile's regions of t.
#include "FillRegions.hpp"
#include "support/TypeConversion.hpp"

#include <aspen/ops/Fill.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <cmath>
#include <fmt/format.h>
#include <vector>

namespace aspen::ops {

namespace {

void fillFromHost(Graph &graph, const Tensor &t, program::Sequence &prog,
                  aspen::detail::HostType hostType, const void *value, double valueAsDouble,
                  const DebugContext &debug) {
  const Type type = t.elementType();
  const std::string what = fmt::format("fill value for tensor {}", t.getDebugStr());
  std::vector<unsigned char> bytes(type.size());
  aspen::detail::convertValues(hostType, value, type, bytes.data(), 1, what);
  if (std::isfinite(valueAsDouble) &&
      !std::isfinite(aspen::detail::loadAsDouble(type, bytes.data())))
    throw type_error(
        fmt::format("{}: {} overflows {} to infinity", what, valueAsDouble, type.toString()));
  detail::requireWritable(t, "fill");
  ComputeSet cs = graph.addComputeSet({debug, "fill"});
  detail::addVertexPerTile(graph, cs, t, util::templateVertex("aspen::ops::Fill", type),
                           [&](VertexRef v, const std::vector<Interval> &regions) {
                             graph.connect(v["out"], detail::regionSlices(t.flatten(), regions));
                             graph.setInitialValueFromHost(v["value"], type, bytes.data(), 1,
                                                           false);
                           });
  prog.add(program::Execute(cs, debug));
}

} // namespace

template <class T>
void fill(Graph &graph, const Tensor &t, program::Sequence &prog, T value,
          const DebugContext &debug) {
  fillFromHost(graph, t, prog, aspen::detail::hostTypeOf<T>(), &value, static_cast<double>(value),
               debug);
}

#define ASPEN_FILL_HOST_TYPE(T)                                                                    \
  template void fill<T>(Graph &, const Tensor &, program::Sequence &, T, const DebugContext &);
ASPEN_FILL_HOST_TYPE(float)
ASPEN_FILL_HOST_TYPE(double)
ASPEN_FILL_HOST_TYPE(half)
ASPEN_FILL_HOST_TYPE(int)
ASPEN_FILL_HOST_TYPE(unsigned)
ASPEN_FILL_HOST_TYPE(long)
ASPEN_FILL_HOST_TYPE(unsigned long)
ASPEN_FILL_HOST_TYPE(long long)
ASPEN_FILL_HOST_TYPE(unsigned long long)
ASPEN_FILL_HOST_TYPE(short)
ASPEN_FILL_HOST_TYPE(unsigned short)
ASPEN_FILL_HOST_TYPE(char)
ASPEN_FILL_HOST_TYPE(signed char)
ASPEN_FILL_HOST_TYPE(unsigned char)
ASPEN_FILL_HOST_TYPE(bool)
#undef ASPEN_FILL_HOST_TYPE

} // namespace aspen::ops
