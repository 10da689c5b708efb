// Copy lowering, a pass on the steps: every compute set's and kernel's gathers and scatters
// (LoweringState's rearrangements) become Copy steps, so that all data movement between buffers
// is one mechanism (CompiledGraph::copies, run by each executor's copy). A step running a
// compute set or kernel that rearranges becomes a Sequence of its gathers, itself and its
// scatters; the plans are made once per compute set or kernel (shared by every step running
// it), one per element size, each marked `rearranges` for the profile.
//
// makeCopyPlan is what every copy is built with: tensors are byte runs of buffers, already
// merged wherever one strided run describes several (flatRegions); a copy whose source and
// destination bytes may overlap is marked to go through a temporary, so that it is correct as
// if the source were read first.
// Runs after compute-set and kernel lowering, before liveness.
#pragma once

#include "CompiledGraph.hpp"
#include "Lowering.hpp"

namespace aspen::detail {

void lowerCopies(CompiledGraph &out, const LoweringState &state);

CopyPlan makeCopyPlan(RegionList src, RegionList dst);

// Whether two region lists may share bytes. Conservative (extents of strided runs, not their
// elements): a false positive only costs a trip through a temporary.
bool mayOverlap(const RegionList &a, const RegionList &b);

} // namespace aspen::detail
