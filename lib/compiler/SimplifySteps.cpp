#include "SimplifySteps.hpp"

#include "StepWalk.hpp"
#include "support/Logging.hpp"

#include <aspen/Error.hpp>

#include <vector>

namespace aspen::detail {

namespace {
// Uses of each reachable step: by a parent's children list, or as a program's root.
std::vector<std::uint32_t> countUses(const CompiledGraph &graph) {
  std::vector<std::uint32_t> uses(graph.steps.size(), 0);
  for (std::uint32_t root : graph.programs)
    ++uses[root];
  forEachStep(graph, graph.programs, [&](std::uint32_t, const Step &step) {
    for (std::uint32_t child : step.children)
      ++uses[child];
  });
  return uses;
}

std::size_t countReachable(const CompiledGraph &graph) {
  std::size_t n = 0;
  forEachStep(graph, graph.programs, [&](std::uint32_t, const Step &) { ++n; });
  return n;
}
} // namespace

std::size_t simplifySteps(CompiledGraph &graph) {
  const std::size_t before = countReachable(graph);
  const std::vector<std::uint32_t> uses = countUses(graph);
  std::vector<bool> open(graph.steps.size(), false); // being spliced: a cycle would be a bug
  std::vector<std::uint32_t> flat;
  const auto append = [&](auto &self, std::uint32_t child) -> void {
    const Step &step = graph.steps[child];
    if (step.kind == StepKind::Nop)
      return;
    if (step.kind != StepKind::Sequence || uses[child] != 1) {
      flat.push_back(child);
      return;
    }
    // A step on a cycle is used by the step entering the cycle and by one inside it, so a step
    // used once is never its own descendant.
    if (open[child])
      throw internal_error("simplify steps: step " + std::to_string(child) +
                           " contains itself through steps used once");
    open[child] = true;
    for (std::uint32_t grandchild : step.children)
      self(self, grandchild);
    open[child] = false;
  };
  rewriteSteps(graph, graph.programs, [&](std::uint32_t, Step &step) {
    if (step.kind != StepKind::Sequence)
      return;
    flat.clear();
    for (std::uint32_t child : step.children)
      append(append, child);
    step.children = flat;
  });
  const std::size_t after = countReachable(graph);
  logger().debug("simplify steps: the programs reach {} steps, {} before", after, before);
  return before - after;
}

} // namespace aspen::detail
