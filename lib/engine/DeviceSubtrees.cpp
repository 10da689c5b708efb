// Finding device-only program subtrees (see DeviceSubtrees.hpp).
#include "DeviceSubtrees.hpp"

namespace aspen::detail {

namespace {

// Whether step `index` or a step below it satisfies `holds`, memoised in `state` (0 unknown,
// 1 yes, 2 no), so that shared subtrees (called functions) are visited once.
template <class Holds>
bool anyBelow(const CompiledGraph &graph, std::uint32_t index, std::vector<std::uint8_t> &state,
              const Holds &holds) {
  if (state[index] == 0) {
    bool found = holds(graph.steps[index]);
    for (std::uint32_t child : graph.steps[index].children)
      found = anyBelow(graph, child, state, holds) || found;
    state[index] = found ? 1 : 2;
  }
  return state[index] == 1;
}

bool isCollective(const CompiledGraph &graph, const Step &step) {
  return step.kind == StepKind::Kernel && runsOnHost(graph.kernels[step.index].kind);
}

// Control flow: a step with children that is not a sequence (a conditional node on the device).
bool isControlFlow(const Step &step) {
  return step.kind != StepKind::Sequence && !step.children.empty();
}

} // namespace

std::vector<bool> deviceOnlySteps(const CompiledGraph &graph, bool collectivesOnDevice) {
  const std::size_t n = graph.steps.size();
  std::vector<std::uint8_t> coResident(n), collective(n), controlFlow(n);
  const auto holdsCoResident = [&](std::uint32_t index) {
    return anyBelow(graph, index, coResident, [&](const Step &step) {
      return step.kind == StepKind::Kernel && graph.kernels[step.index].kind == KernelKind::Block &&
             graph.kernels[step.index].launch.coResident;
    });
  };
  const auto holdsCollective = [&](std::uint32_t index) {
    return anyBelow(graph, index, collective,
                    [&](const Step &step) { return isCollective(graph, step); });
  };
  const auto holdsControlFlow = [&](std::uint32_t index) {
    return anyBelow(graph, index, controlFlow, isControlFlow);
  };
  enum State : std::uint8_t { Unknown, Yes, No };
  std::vector<State> state(n, Unknown);
  auto visit = [&](auto &self, std::uint32_t index) -> bool {
    if (state[index] != Unknown)
      return state[index] == Yes;
    const Step &step = graph.steps[index];
    bool deviceOnly = stepKindInfo(step.kind).onDevice &&
                      (collectivesOnDevice || !isCollective(graph, step));
    for (std::uint32_t child : step.children)
      deviceOnly = self(self, child) && deviceOnly;
    // A cooperative kernel cannot be in a conditional node's body: control flow over a
    // co-resident launch stays on the host (a sequence of them may still be one graph).
    if (deviceOnly && isControlFlow(step) && holdsCoResident(index))
      deviceOnly = false;
    // Nor can NCCL's captured work share a graph with any conditional node.
    if (deviceOnly && holdsCollective(index) && holdsControlFlow(index))
      deviceOnly = false;
    state[index] = deviceOnly ? Yes : No;
    return deviceOnly;
  };
  std::vector<bool> result(n);
  for (std::uint32_t i = 0; i < n; ++i)
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
