#include "StepWalk.hpp"

#include <vector>

namespace aspen::detail {

void forEachStep(const CompiledGraph &graph, ArrayRef<std::uint32_t> roots,
                 const std::function<void(std::uint32_t, const Step &)> &visit) {
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
    const Step &step = graph.steps[index];
    visit(index, step);
    for (auto it = step.children.rbegin(); it != step.children.rend(); ++it)
      stack.push_back(*it);
  }
}

} // namespace aspen::detail
