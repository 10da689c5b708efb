// GCL's <gcl/Collectives.hpp>, mapped onto <aspen/Collectives.hpp>: the all-reduce,
// reduce-scatter and all-gather calls and their operators, in namespace gcl (and Aspen's
// broadcastCrossReplica). Not yet: all-to-all, multi-tensor calls and CommGroup
// (aspen/Collectives.hpp, "Not yet").
#pragma once

#include <poplar/Namespace.hpp>
#include <aspen/Collectives.hpp>

namespace gcl {
using aspen::collectives::allReduceCrossReplica;
using aspen::collectives::allReduceInPlaceCrossReplica;
using aspen::collectives::allReduceToDestinationCrossReplica;
using aspen::collectives::allGatherCrossReplica;
using aspen::collectives::broadcastCrossReplica;
using aspen::collectives::reduceScatterCrossReplica;
using aspen::collectives::CollectiveOperator;
} // namespace gcl
