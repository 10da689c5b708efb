// Finding device-only program subtrees (see DeviceSubtrees.hpp).
#include "DeviceSubtrees.hpp"

namespace aspen::detail {

std::vector<bool> deviceOnlySteps(const CompiledGraph &graph) {
  // Memoised, so that shared subtrees (called functions) are visited once.
  enum State : std::uint8_t { Unknown, Yes, No };
  std::vector<State> state(graph.steps.size(), Unknown);
  auto visit = [&](auto &self, std::uint32_t index) -> bool {
    if (state[index] != Unknown)
      return state[index] == Yes;
    const Step &step = graph.steps[index];
    bool deviceOnly = stepKindInfo(step.kind).onDevice;
    for (std::uint32_t child : step.children)
      deviceOnly = self(self, child) && deviceOnly;
    state[index] = deviceOnly ? Yes : No;
    return deviceOnly;
  };
  std::vector<bool> result(graph.steps.size());
  for (std::uint32_t i = 0; i < graph.steps.size(); ++i)
    result[i] = visit(visit, i);
  return result;
}

bool offeredAsDeviceSubtree(const CompiledGraph &graph, const std::vector<bool> &deviceOnly,
                            std::uint32_t step) {
  const StepKind kind = graph.steps[step].kind;
  return deviceOnly[step] && kind != StepKind::Execute && kind != StepKind::Kernel &&
         kind != StepKind::Copy &&
         kind != StepKind::Nop;
}

} // namespace aspen::detail
