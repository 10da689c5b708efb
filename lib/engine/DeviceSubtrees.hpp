// Which program steps are device work only: compute sets, copies and control flow over them,
// with no host interaction (stream copies, prints, aborts) anywhere below. An executor that can
// run control flow on the device (the CUDA executor, as CUDA graphs with conditional nodes)
// runs each maximal such subtree in one go; the engine interprets the rest. Control flow over a
// co-resident Launch is not device-only: a cooperative kernel cannot sit in a conditional node.
#pragma once

#include "compiler/CompiledGraph.hpp"

#include <vector>

namespace aspen::detail {

// result[i]: step i and everything below it are device work only.
std::vector<bool> deviceOnlySteps(const CompiledGraph &graph);

// Whether the engine offers step `step` to Executor::runDeviceSubtree: device work only and
// worth a graph (control flow or a sequence; a lone compute set or copy runs directly).
bool offeredAsDeviceSubtree(const CompiledGraph &graph, const std::vector<bool> &deviceOnly,
                            std::uint32_t step);

} // namespace aspen::detail
