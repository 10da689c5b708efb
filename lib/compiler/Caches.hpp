// Cached steps (program::Cached): what each body depends on, and which steps and host writes
// make it stale.
//
// A cache is fresh after its body ran and until something other than that run writes a
// variable the body reads or writes: the result would differ, or has been overwritten. The
// engine keeps one flag a cache (cleared at load) and clears it before running a step, a
// device subtree or a host write whose `invalidates` names it. Writes are tracked a whole
// variable at a time, from the accesses the lowering passes recorded (Lowering.hpp): a compute
// set's, a kernel's, a copy's destination, a stream copy's tensor, WriteUndef's.
#pragma once

#include "CompiledGraph.hpp"
#include "Lowering.hpp"

namespace aspen::detail {

// Before liveness: fills each CachedStep's reads and writes from its body's steps. Raises
// control_program_error when a body holds host work (a stream copy, a print, an abort) or
// writes a variable it reads.
void analyseCaches(const LoweringState &state, CompiledGraph &out);

// After step simplification (the last change to the step tree): sets Step::invalidates on
// every step that writes a cache's variables and on every device-only compound step below
// which one does, and HostHandle::invalidates on the host writes; and Buffer::written on every
// buffer a step writes.
void markCacheInvalidations(const LoweringState &state, CompiledGraph &out);

} // namespace aspen::detail
