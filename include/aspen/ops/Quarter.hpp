// QUARTER data on the device (<aspen/Quarter.hpp> describes the formats): metadata tensors and
// casts between quarter and float or half. Poplar's <poplar/MetadataCreation.hpp> and popops'
// quarter casts map onto these. The functions taking a device scale and the casts run vertices
// of the ops library: call aspen::ops::addCodelets(graph) first.
//
// createConstantMetadataTensor(graph, format, scale, debug) -> Tensor
//   A constant QUARTER_METADATA scalar of `format` and `scale` (in [-32, 31]; type_error
//   otherwise), mapped to the graph's first tile.
// createVariableMetadataTensor(graph, format, scale, debug) -> Tensor
//   The same as a variable, holding that value from load until written (by writeTensor with a
//   QuarterMetadata, a copy, or setMetadataTensor).
// createVariableMetadataTensor(graph, format, scale, prog, debug) -> Tensor
//   A variable whose scale is the value of `scale` (one element of an integral type, at most
//   four bytes) when prog runs; setMetadataTensor into a new variable.
// setMetadataTensor(graph, format, scale, metadataOut, prog, debug)
//   Appends to prog: metadataOut = {format, scale}. A scale outside [-32, 31] at run time fails
//   the vertex, and the engine's run raises an error naming it; nothing wraps.
//
// cast(graph, src, QUARTER, metadata, prog, debug) -> Tensor
//   src (FLOAT or HALF) divided by 2^scale and rounded to nearest even in metadata's format, as
//   a new QUARTER tensor mapped like src whose metadata is `metadata` (shared, not copied); the
//   format and scale are read when prog runs. Out-of-range magnitudes, infinities and NaN give
//   NaN (0x80): QUARTER has no infinities.
// cast(graph, src, FLOAT or HALF, prog, debug) with a QUARTER src (aspen::ops::cast in Cast.hpp)
//   decodes with src's metadata: exact in float, rounded once to half.
// castWithOutput(graph, src, dst, prog, debug) does either into dst, with dst's metadata when dst
//   is QUARTER.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>
#include <aspen/Quarter.hpp>

namespace aspen::ops {

ASPEN_API Tensor createConstantMetadataTensor(Graph &graph, QuarterMetadata::Format format,
                                              int scale, const DebugContext &debug = {});
ASPEN_API Tensor createVariableMetadataTensor(Graph &graph, QuarterMetadata::Format format,
                                              int scale, const DebugContext &debug = {});
ASPEN_API Tensor createVariableMetadataTensor(Graph &graph, QuarterMetadata::Format format,
                                              const Tensor &scale, program::Sequence &prog,
                                              const DebugContext &debug = {});
ASPEN_API void setMetadataTensor(Graph &graph, QuarterMetadata::Format format, const Tensor &scale,
                                 const Tensor &metadataOut, program::Sequence &prog,
                                 const DebugContext &debug = {});

ASPEN_API Tensor cast(Graph &graph, const Tensor &src, Type dstType, const Tensor &metadata,
                      program::Sequence &prog, const DebugContext &debug = {});

} // namespace aspen::ops
