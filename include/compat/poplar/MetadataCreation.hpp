// Poplar's <poplar/MetadataCreation.hpp>: QUARTER_METADATA tensors, mapped onto
// aspen/ops/Quarter.hpp. These functions live in Aspen's ops library (link -lpopops or
// Aspen::ops as well as -lpoplar), and the two taking a device scale run an ops vertex, so
// popops::addCodelets(graph) must have been called, as for any popops function.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <poplar/Program.hpp>
#include <poplar/Quarter.hpp>
#include <aspen/ops/Quarter.hpp>

namespace poplar {
using aspen::ops::createConstantMetadataTensor;
using aspen::ops::createVariableMetadataTensor;
using aspen::ops::setMetadataTensor;
} // namespace poplar
