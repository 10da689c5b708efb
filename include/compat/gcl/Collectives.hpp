// GCL's <gcl/Collectives.hpp>, mapped onto <aspen/Collectives.hpp>: the all-reduce (one tensor
// or a list, fused a type), reduce-scatter, all-gather and all-to-all calls, each with or
// without a replica group (gcl::CommGroup, gcl::CommGroupType: ALL, CONSECUTIVE, ORTHOGONAL) in
// GCL's position, and their operators, in namespace gcl (and Aspen's broadcastCrossReplica).
// GCL's fabric options (method, maxBytesPerTile, syncful.*) tune IPU links only and are refused
// as unknown (aspen/Collectives.hpp).
#pragma once

#include <poplar/Namespace.hpp>
#include <aspen/Collectives.hpp>

namespace gcl {
using aspen::collectives::allReduceCrossReplica;
using aspen::collectives::allReduceInPlaceCrossReplica;
using aspen::collectives::allReduceToDestinationCrossReplica;
using aspen::collectives::allGatherCrossReplica;
using aspen::collectives::allToAllCrossReplica;
using aspen::collectives::broadcastCrossReplica;
using aspen::collectives::reduceScatterCrossReplica;
using aspen::collectives::CollectiveOperator;
using aspen::collectives::CommGroup;
using aspen::collectives::CommGroupType;
} // namespace gcl
