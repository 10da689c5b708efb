// The pass "simplify steps", the last one: it shortens what the executors interpret. Liveness
// and memory layout are done by then, so only the order of the steps with an effect matters.
#pragma once

#include "CompiledGraph.hpp"

namespace aspen::detail {

// In every Sequence step reachable from graph.programs: a child Sequence that nothing else uses
// is replaced by its children (at any depth), and Nop children (Sync, WriteUndef and empty
// programs, whose part in liveness is already played) are dropped. A step used by several
// parents (a function called more than once, a program reused) stays whole, so an executor can
// treat it as one unit (the CUDA executor captures it once). Bypassed steps stay in
// graph.steps, unreachable. Returns the number of steps the programs no longer reach.
std::size_t simplifySteps(CompiledGraph &graph);

} // namespace aspen::detail
