// Walking and rewriting the lowered program: what the passes after program lowering (liveness,
// memory layout, step simplification, future fusion and scheduling) use instead of the program
// tree.
#pragma once

#include "CompiledGraph.hpp"

#include <aspen/ArrayRef.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace aspen::detail {

// Visits every step reachable from `roots` once, parents before children, children in order;
// a step shared by several parents (a called function) is visited at its first use.
void forEachStep(const CompiledGraph &graph, ArrayRef<std::uint32_t> roots,
                 const std::function<void(std::uint32_t index, const Step &step)> &visit);

// The mutator: the same walk, but `rewrite` may change the step it is given (its kind, fields
// and children), and the walk continues into the children the step has after the rewrite. A
// step that becomes unreachable stays in graph.steps (indices are stable) and is not visited.
// `rewrite` must not add or remove elements of graph.steps while the walk runs.
void rewriteSteps(CompiledGraph &graph, ArrayRef<std::uint32_t> roots,
                  const std::function<void(std::uint32_t index, Step &step)> &rewrite);

// result[i]: the first collective kernel (runsOnHost) below step i in program order, step i
// itself included, or kNoCollective.
inline constexpr std::uint32_t kNoCollective = ~std::uint32_t(0);
std::vector<std::uint32_t> firstCollectives(const CompiledGraph &graph);

} // namespace aspen::detail
