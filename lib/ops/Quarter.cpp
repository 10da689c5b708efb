// QUARTER on the device: metadata tensors (Poplar's MetadataCreation) and the casts between
// quarter and float or half, one CastQuarter vertex per tile.
#include "QuarterCast.hpp"
#include "support/TypeConversion.hpp"
#include "layersupport/VertexPerTile.hpp"
#include "support/Writability.hpp"

#include <aspen/ops/Quarter.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

namespace aspen::ops {

namespace {

void requireMetadataTensor(const Tensor &m, const std::string &what) {
  if (!m.valid())
    throw graph_connection_error(what + ": the metadata tensor is invalid");
  if (m.elementType() != QUARTER_METADATA || m.numElements() != 1)
    throw type_error(fmt::format("{}: the metadata tensor {} must be one QUARTER_METADATA "
                                 "element; it is {} {}",
                                 what, m.getDebugStr(), m.elementType().toString(),
                                 m.shapeToString()));
}

Tensor metadataScalar(Graph &graph, const QuarterMetadata &m, bool constant,
                      const DebugContext &debug) {
  Tensor t;
  const aspen::detail::HostType host(QUARTER_METADATA);
  if (constant) {
    t = graph.addConstantFromHost(QUARTER_METADATA, {}, host, &m, 1, debug);
  } else {
    t = graph.addVariable(QUARTER_METADATA, {}, debug);
    graph.setInitialValueFromHost(t, host, &m, 1);
  }
  graph.setTileMapping(t, 0);
  return t;
}

} // namespace

namespace detail {

void castQuarter(Graph &graph, const Tensor &src, const Tensor &dst, const Tensor &metadata,
                 program::Sequence &prog, const DebugContext &debug, const std::string &what) {
  const bool toQuarter = dst.elementType() == QUARTER;
  const Type other = toQuarter ? src.elementType() : dst.elementType();
  if ((toQuarter ? src : dst).elementType() == QUARTER || (other != FLOAT && other != HALF))
    throw type_error(fmt::format("{}: quarter converts to and from float and half only, not {} "
                                 "to {}",
                                 what, src.elementType().toString(), dst.elementType().toString()));
  if (src.shape() != dst.shape())
    throw shape_error(fmt::format("{}: source {} has shape {} but destination {} has shape {}",
                                  what, src.getDebugStr(), src.shapeToString(), dst.getDebugStr(),
                                  dst.shapeToString()));
  requireMetadataTensor(metadata, what);
  aspen::detail::requireWritable(dst, what);
  if (src.intersectsWith(dst))
    throw graph_connection_error(fmt::format("{}: source {} and destination {} share elements",
                                             what, src.getDebugStr(), dst.getDebugStr()));
  if (dst.numElements() == 0)
    return;
  const std::string vertex =
      util::templateVertex("aspen::ops::CastQuarter", src.elementType(), dst.elementType());
  const Tensor srcFlat = src.flatten(), dstFlat = dst.flatten();
  const Tensor metadataElement = metadata.flatten()[0];
  ComputeSet cs = graph.addComputeSet({debug, toQuarter ? "castToQuarter" : "castFromQuarter"});
  aspen::detail::addVertexPerTile(
      graph, cs, dst, vertex, [&](VertexRef v, const std::vector<Interval> &regions) {
        graph.connect(v["out"], aspen::detail::regionSlices(dstFlat, regions));
        graph.connect(v["in"], aspen::detail::regionSlices(srcFlat, regions));
        graph.connect(v["metadata"], metadataElement);
      });
  prog.add(program::Execute(cs, debug));
}

} // namespace detail

Tensor createConstantMetadataTensor(Graph &graph, QuarterMetadata::Format format, int scale,
                                    const DebugContext &debug) {
  return metadataScalar(graph, QuarterMetadata(format, scale), true,
                        debug.getPathName().empty() ? DebugContext("metadata") : debug);
}

Tensor createVariableMetadataTensor(Graph &graph, QuarterMetadata::Format format, int scale,
                                    const DebugContext &debug) {
  return metadataScalar(graph, QuarterMetadata(format, scale), false,
                        debug.getPathName().empty() ? DebugContext("metadata") : debug);
}

Tensor createVariableMetadataTensor(Graph &graph, QuarterMetadata::Format format,
                                    const Tensor &scale, program::Sequence &prog,
                                    const DebugContext &debug) {
  const DebugContext name = debug.getPathName().empty() ? DebugContext("metadata") : debug;
  Tensor t = graph.addVariable(QUARTER_METADATA, {}, name);
  graph.setTileMapping(t, 0);
  setMetadataTensor(graph, format, scale, t, prog, name);
  return t;
}

void setMetadataTensor(Graph &graph, QuarterMetadata::Format format, const Tensor &scale,
                       const Tensor &metadataOut, program::Sequence &prog,
                       const DebugContext &debug) {
  const std::string what = "setMetadataTensor";
  if (format != QuarterMetadata::Format::F143 && format != QuarterMetadata::Format::F152)
    throw type_error(what + ": the format is neither F143 nor F152");
  if (!scale.valid())
    throw graph_connection_error(what + ": the scale tensor is invalid");
  const Type s = scale.elementType();
  if (!s.isIntegral() || s == BOOL || s.size() > 4 || scale.numElements() != 1)
    throw type_error(fmt::format("{}: the scale tensor {} must be one element of an integral "
                                 "type of at most four bytes; it is {} {}",
                                 what, scale.getDebugStr(), s.toString(), scale.shapeToString()));
  requireMetadataTensor(metadataOut, what);
  aspen::detail::requireWritable(metadataOut, what);
  const auto mapping = graph.getTileMapping(metadataOut);
  unsigned tile = 0;
  while (mapping[tile].empty())
    ++tile;
  ComputeSet cs = graph.addComputeSet({debug, "setMetadata"});
  VertexRef v = graph.addVertex(cs, util::templateVertex("aspen::ops::SetQuarterMetadata", s));
  graph.setTileMapping(v, tile);
  graph.connect(v["scale"], scale.flatten()[0]);
  graph.connect(v["out"], metadataOut.flatten()[0]);
  graph.setInitialValue(v["format"], static_cast<unsigned char>(format));
  prog.add(program::Execute(cs, debug));
}

Tensor cast(Graph &graph, const Tensor &src, Type dstType, const Tensor &metadata,
            program::Sequence &prog, const DebugContext &debug) {
  const std::string what = "cast to quarter";
  if (!src.valid())
    throw graph_connection_error(what + ": the source tensor is invalid");
  if (dstType != QUARTER)
    throw type_error(fmt::format("{}: a metadata tensor is given only for casts to QUARTER, not to "
                                 "{}",
                                 what, dstType.toString()));
  requireMetadataTensor(metadata, what);
  const DebugContext name = debug.getPathName().empty() ? DebugContext("cast") : debug;
  Tensor dst = graph.addVariable(QUARTER, metadata, src.shape(), name);
  if (src.numElements() > 0)
    graph.setTileMapping(dst, graph.getTileMapping(src));
  detail::castQuarter(graph, src, dst, metadata, prog, name, what);
  return dst;
}

} // namespace aspen::ops
