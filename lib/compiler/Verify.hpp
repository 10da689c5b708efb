// Verification: checks a graph and its programs before lowering, so that every later pass may
// assume well-formed input. Each misuse raises the aspen::error subclass for its rule, naming the
// object, the rule and the values:
//  - tensors used by programs, vertices and host handles belong to the graph and are fully mapped
//  - vertices have a tile and every edge field is connected to a tensor of the field's type
//  - predicates and Switch controls are scalars of a usable type
//  - copies match in element count and type; written tensors hold no aliases or constants
//  - no two vertices of one compute set write the same variable element
//  - Execute, Launch and Call refer to this graph's compute sets and functions
//  - Launch runs a compute set of exactly one block codelet within the target's block limits;
//    Execute runs no block codelet
//  - a kernel's operands (KernelKinds.hpp) are present unless optional, this graph's,
//    mapped, and writable where its kind writes them
#pragma once

#include "core/GraphState.hpp"

#include <aspen/BlockCodelets.hpp>
#include <aspen/Target.hpp>

#include <cstdint>

namespace aspen::detail {

// Walks the program tree once (counted in `walks`).
void verifyGraph(const GraphState &graph, ArrayRef<program::Program> programs,
                 std::uint32_t &walks);

// The threads of each block of a launch: its own count, else the target's workers per tile.
inline unsigned launchThreads(const LaunchShape &shape, const Target &target) {
  return shape.threadsPerBlock ? shape.threadsPerBlock : target.getNumWorkerContexts();
}

} // namespace aspen::detail
