// Which program steps are device work only: compute sets, copies and control flow over them,
// with no host interaction (stream copies, prints, aborts) anywhere below. An executor that can
// run control flow on the device (the CUDA executor, as CUDA graphs with conditional nodes)
// runs each maximal such subtree in one go; the engine interprets the rest. Control flow over a
// co-resident Launch is not device-only: a cooperative kernel cannot sit in a conditional node.
//
// A collective is the engine's (it meets the other replicas' runs), unless the executor runs the
// collectives itself (NCCL on a GPU): then it is device work, captured into a graph, but only in
// a graph without conditional nodes. NCCL's captured work holds event-wait nodes, and a graph
// that has conditional nodes cannot be instantiated with those (CUDA refuses it: "conditional
// nodes do not support EVENT_WAIT nodes"). So control flow over a collective stays with the
// engine (which drives that loop from the host), as does a sequence that holds both a collective
// and control flow; a sequence of compute sets, copies and collectives is one graph.
#pragma once

#include "compiler/CompiledGraph.hpp"
#include "compiler/StepWalk.hpp" // firstCollectives

#include <vector>

namespace aspen::detail {

// result[i]: step i and everything below it are device work only. collectivesOnDevice: the
// executor runs the collectives itself.
std::vector<bool> deviceOnlySteps(const CompiledGraph &graph, bool collectivesOnDevice = false);


// Whether the engine offers step `step` to Executor::runDeviceSubtree: device work only and
// worth a graph (control flow or a sequence; a lone compute set or copy runs directly).
bool offeredAsDeviceSubtree(const CompiledGraph &graph, const std::vector<bool> &deviceOnly,
                            std::uint32_t step);

} // namespace aspen::detail
