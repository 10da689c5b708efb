#include "StepWalk.hpp"

#include <vector>

namespace aspen::detail {

namespace {
// The walk both forms share; Graph is CompiledGraph or const CompiledGraph.
template <class Graph, class F> void walkSteps(Graph &graph, ArrayRef<std::uint32_t> roots, F &&f) {
  std::vector<bool> seen(graph.steps.size(), false);
  std::vector<std::uint32_t> stack;
  for (std::size_t r = roots.size(); r-- > 0;)
    stack.push_back(roots[r]);
  while (!stack.empty()) {
    const std::uint32_t index = stack.back();
    stack.pop_back();
    if (seen[index])
      continue;
    seen[index] = true;
    f(index, graph.steps[index]);
    const auto &children = graph.steps[index].children;
    for (auto it = children.rbegin(); it != children.rend(); ++it)
      stack.push_back(*it);
  }
}
} // namespace

void forEachStep(const CompiledGraph &graph, ArrayRef<std::uint32_t> roots,
                 const std::function<void(std::uint32_t, const Step &)> &visit) {
  walkSteps(graph, roots, visit);
}

void rewriteSteps(CompiledGraph &graph, ArrayRef<std::uint32_t> roots,
                  const std::function<void(std::uint32_t, Step &)> &rewrite) {
  walkSteps(graph, roots, rewrite);
}

std::vector<std::uint32_t> firstCollectives(const CompiledGraph &graph) {
  std::vector<std::uint32_t> first(graph.steps.size(), kNoCollective);
  std::vector<bool> seen(graph.steps.size());
  auto visit = [&](auto &self, std::uint32_t index) -> std::uint32_t {
    if (!seen[index]) {
      seen[index] = true;
      const Step &step = graph.steps[index];
      if (step.kind == StepKind::Kernel && runsOnHost(graph.kernels[step.index].kind))
        first[index] = step.index;
      for (std::uint32_t child : step.children)
        if (const std::uint32_t below = self(self, child);
            first[index] == kNoCollective && below != kNoCollective)
          first[index] = below;
    }
    return first[index];
  };
  for (std::uint32_t i = 0; i < graph.steps.size(); ++i)
    visit(visit, i);
  return first;
}

} // namespace aspen::detail
