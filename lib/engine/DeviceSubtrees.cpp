// Finding device-only program subtrees (see DeviceSubtrees.hpp).
#include "DeviceSubtrees.hpp"

namespace aspen::detail {

namespace {

bool hasCoResidentLaunch(const CompiledGraph &graph, std::uint32_t index) {
  const Step &step = graph.steps[index];
  if (step.kind == StepKind::Kernel)
    return graph.kernels[step.index].kind == KernelKind::Block &&
           graph.kernels[step.index].launch.coResident;
  for (std::uint32_t child : step.children)
    if (hasCoResidentLaunch(graph, child))
      return true;
  return false;
}

} // namespace

std::vector<bool> deviceOnlySteps(const CompiledGraph &graph) {
  // Memoised, so that shared subtrees (called functions) are visited once.
  enum State : std::uint8_t { Unknown, Yes, No };
  std::vector<State> state(graph.steps.size(), Unknown);
  auto visit = [&](auto &self, std::uint32_t index) -> bool {
    if (state[index] != Unknown)
      return state[index] == Yes;
    const Step &step = graph.steps[index];
    // A collective is the engine's (it meets the other replicas' runs), not device work.
    bool deviceOnly = stepKindInfo(step.kind).onDevice &&
                      !(step.kind == StepKind::Kernel && runsOnHost(graph.kernels[step.index].kind));
    for (std::uint32_t child : step.children)
      deviceOnly = self(self, child) && deviceOnly;
    // A cooperative kernel cannot be in a conditional node's body: control flow over a
    // co-resident launch stays on the host (a sequence of them may still be one graph).
    if (deviceOnly && step.kind != StepKind::Sequence && !step.children.empty() &&
        hasCoResidentLaunch(graph, index))
      deviceOnly = false;
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
