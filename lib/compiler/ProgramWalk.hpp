// Visits every distinct program node reachable from a list of programs, following Calls into the
// graph's functions. Each node is visited once, even when programs share it.
#pragma once

#include "core/GraphState.hpp"
#include "core/ProgramNode.hpp"

#include <functional>

namespace aspen::detail {

void forEachProgramNode(const GraphState &graph, ArrayRef<program::Program> programs,
                        const std::function<void(const ProgramNode &)> &visit);

} // namespace aspen::detail
