// Copy lowering: every Copy program (tensor to tensor, stream to tensor, tensor to stream)
// becomes byte runs of buffers. Runs are already merged wherever one strided run describes
// several (flatRegions); a tensor-to-tensor copy whose source and destination bytes may overlap
// is marked to go through a temporary, so that it is correct as if the source were read first.
#pragma once

#include "CompiledGraph.hpp"
#include "core/GraphState.hpp"
#include "core/ProgramNode.hpp"

#include <unordered_map>

namespace aspen::detail {

// For each Copy node, its index in CompiledGraph::copies (tensor copies) or ::streamCopies.
using CopyIndex = std::unordered_map<const ProgramNode *, std::uint32_t>;

CopyIndex lowerCopies(const GraphState &graph, ArrayRef<program::Program> programs,
                      CompiledGraph &out);

CopyPlan makeCopyPlan(RegionList src, RegionList dst);

// Whether two region lists may share bytes. Conservative (extents of strided runs, not their
// elements): a false positive only costs a trip through a temporary.
bool mayOverlap(const RegionList &a, const RegionList &b);

} // namespace aspen::detail
