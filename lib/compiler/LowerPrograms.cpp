#include "LowerPrograms.hpp"

#include "LowerCopies.hpp"
#include "LowerKernels.hpp"
#include "Regions.hpp"
#include "Verify.hpp"
#include "core/ProgramNode.hpp"
#include "core/TensorRegions.hpp"

#include <aspen/Error.hpp>

#include <unordered_map>

namespace aspen::detail {

namespace {

class ProgramLowering {
public:
  ProgramLowering(const GraphState &graph, CompiledGraph &out, LoweringState &state)
      : graph_(graph), out_(out), state_(state) {}

  std::uint32_t lower(const program::Program &p) {
    if (p.isEmpty())
      return add(Step{});
    const ProgramNode &node = p.node();
    if (auto it = done_.find(&node); it != done_.end())
      return it->second;
    // Reserved before the children, so that a function calling itself refers to this step.
    const std::uint32_t index = add(Step{});
    done_[&node] = index;
    Step step = lowerNode(node, index);
    out_.steps[index] = std::move(step);
    return index;
  }

private:
  std::uint32_t add(Step step) {
    out_.steps.push_back(std::move(step));
    return static_cast<std::uint32_t>(out_.steps.size() - 1);
  }

  // The step of a program that decides by a scalar.
  static StepKind controlStepKind(ProgramKind kind) {
    return kind == ProgramKind::RepeatWhileTrue    ? StepKind::RepeatWhileTrue
           : kind == ProgramKind::RepeatWhileFalse ? StepKind::RepeatWhileFalse
           : kind == ProgramKind::If               ? StepKind::If
           : kind == ProgramKind::Switch           ? StepKind::Switch
                                                   : StepKind::Abort;
  }

  static ScalarRef scalarOf(const Tensor &t) {
    const RegionList regions = regionsOf(t);
    const ByteRun &run = regions.runs.front();
    return {run.buffer, std::uint64_t(run.offset), t.elementType()};
  }

  std::uint32_t computeSet(unsigned id) {
    const auto [it, added] =
        computeSets_.emplace(id, static_cast<std::uint32_t>(state_.computeSetIds.size()));
    if (added)
      state_.computeSetIds.push_back(id);
    return it->second;
  }

  std::uint32_t addKernel(CompiledKernel kernel, KernelCall call) {
    out_.kernels.push_back(std::move(kernel));
    state_.kernelCalls.push_back(std::move(call));
    return static_cast<std::uint32_t>(out_.kernels.size() - 1);
  }

  Step lowerNode(const ProgramNode &node, std::uint32_t index) {
    Step step;
    step.name = node.debugName;
    for (const program::Program &child : node.children)
      step.children.push_back(lower(child));
    switch (node.kind) {
    case ProgramKind::Empty:
    case ProgramKind::Sync:
      step.kind = StepKind::Nop;
      break;
    case ProgramKind::WriteUndef:
      step.kind = StepKind::Nop;
      state_.stepAccesses[index].add(AccessKind::Undefine, regionsOf(node.tensor));
      break;
    case ProgramKind::Sequence:
      step.kind = StepKind::Sequence;
      break;
    case ProgramKind::Call:
      step.kind = StepKind::Sequence;
      step.children = {lower(graph_.functions[node.id])};
      break;
    case ProgramKind::Execute:
      step.kind = StepKind::Execute;
      step.index = computeSet(node.id);
      if (step.name.empty())
        step.name = graph_.computeSets[node.id].name;
      break;
    case ProgramKind::Copy:
      step.kind = StepKind::Copy;
      step.index = static_cast<std::uint32_t>(out_.copies.size());
      out_.copies.push_back(makeCopyPlan(regionsOf(node.tensor), regionsOf(node.dst)));
      break;
    case ProgramKind::StreamToTensor:
    case ProgramKind::TensorToStream: {
      const bool toTensor = node.kind == ProgramKind::StreamToTensor;
      step.kind = toTensor ? StepKind::StreamToTensor : StepKind::TensorToStream;
      step.index = static_cast<std::uint32_t>(out_.streamCopies.size());
      out_.streamCopies.push_back({node.id, regionsOf(toTensor ? node.dst : node.tensor)});
      if (step.name.empty())
        step.name = graph_.streams[node.id].handle;
      break;
    }
    case ProgramKind::Repeat:
      step.kind = StepKind::Repeat;
      step.count = node.count;
      break;
    case ProgramKind::RepeatWhileTrue:
    case ProgramKind::RepeatWhileFalse:
    case ProgramKind::If:
    case ProgramKind::Switch:
    case ProgramKind::AbortOnCondition:
      step.kind = controlStepKind(node.kind);
      step.scalar = scalarOf(node.tensor);
      step.cases = node.caseValues;
      break;
    case ProgramKind::Kernel: {
      step.kind = StepKind::Kernel;
      KernelCall call;
      call.flags = node.flags;
      for (const Tensor &t : node.operands)
        call.operands.push_back(t.valid() ? regionsOf(t) : RegionList{});
      step.index = addKernel(describeKernelCall(node), std::move(call));
      if (step.name.empty())
        step.name = kernelKindName(node.kernel);
      break;
    }
    case ProgramKind::Launch: {
      step.kind = StepKind::Kernel;
      CompiledKernel kernel;
      kernel.kind = KernelKind::Block;
      kernel.name = node.debugName.empty() ? graph_.computeSets[node.id].name : node.debugName;
      kernel.launch = {computeSet(node.id), node.launch.blocks,
                       launchThreads(node.launch, graph_.target), node.launch.sharedBytes,
                       node.launch.coResident};
      step.index = addKernel(std::move(kernel), {});
      if (step.name.empty())
        step.name = graph_.computeSets[node.id].name;
      break;
    }
    case ProgramKind::Cached: {
      // One cache per Cached program: its copies (which keep its id) used in several places
      // are fresh or stale together.
      step.kind = StepKind::Cached;
      const auto [it, added] =
          caches_.emplace(node.id, static_cast<std::uint32_t>(out_.caches.size()));
      if (added)
        out_.caches.push_back({node.debugName.empty() ? "Cached" : node.debugName, {}, {}});
      step.index = it->second;
      break;
    }
    case ProgramKind::PrintTensor: {
      step.kind = StepKind::PrintTensor;
      step.index = static_cast<std::uint32_t>(out_.prints.size());
      PrintInfo print{node.title, node.tensor.elementType(), {}, regionsOf(node.tensor)};
      for (std::size_t d : node.tensor.shape())
        print.shape.push_back(d);
      out_.prints.push_back(std::move(print));
      break;
    }
    }
    return step;
  }

  const GraphState &graph_;
  CompiledGraph &out_;
  LoweringState &state_;
  std::unordered_map<const ProgramNode *, std::uint32_t> done_;
  std::unordered_map<unsigned, std::uint32_t> computeSets_; // graph id -> compiled index
  std::unordered_map<unsigned, std::uint32_t> caches_; // Cached program id -> cache
};

} // namespace

void lowerPrograms(const GraphState &graph, ArrayRef<program::Program> programs,
                   CompiledGraph &out, LoweringState &state, std::uint32_t &walks) {
  ++walks;
  ProgramLowering lowering(graph, out, state);
  for (const program::Program &p : programs)
    out.programs.push_back(lowering.lower(p));
  const auto hostHandle = [&](const Tensor &t) {
    HostHandle h{t.elementType(), regionsOf(t), {}, false};
    if (const Tensor m = uniqueMetadata(t); m.valid()) {
      h.metadata = regionsOf(m);
      h.metadataIsConstant = m.containsConstant();
    }
    return h;
  };
  for (const auto &[handle, t] : graph.hostWrites)
    out.hostWrites[handle] = hostHandle(t);
  for (const auto &[handle, t] : graph.hostReads)
    out.hostReads[handle] = hostHandle(t);
  for (const StreamRecord &s : graph.streams)
    out.streams.push_back({s.handle, s.type, s.numElements, s.hostToDevice, s.broadcast});
}

} // namespace aspen::detail
