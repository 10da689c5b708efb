#include "LowerPrograms.hpp"

#include "Regions.hpp"
#include "core/TensorRegions.hpp"

#include <aspen/Error.hpp>

namespace aspen::detail {

const char *stepKindName(StepKind kind) {
  switch (kind) {
  case StepKind::Sequence: return "Sequence";
  case StepKind::Execute: return "Execute";
  case StepKind::Copy: return "Copy";
  case StepKind::StreamToTensor: return "StreamToTensor";
  case StepKind::TensorToStream: return "TensorToStream";
  case StepKind::Repeat: return "Repeat";
  case StepKind::RepeatWhileTrue: return "RepeatWhileTrue";
  case StepKind::RepeatWhileFalse: return "RepeatWhileFalse";
  case StepKind::If: return "If";
  case StepKind::Switch: return "Switch";
  case StepKind::PrintTensor: return "PrintTensor";
  case StepKind::Abort: return "AbortOnCondition";
  case StepKind::Kernel: return "Kernel";
  case StepKind::Nop: return "Nop";
  }
  return "?";
}

namespace {

class ProgramLowering {
public:
  ProgramLowering(const GraphState &graph, const CopyIndex &copies,
                  const std::unordered_map<unsigned, std::uint32_t> &computeSets,
                  const KernelIndex &kernels, CompiledGraph &out)
      : graph_(graph), copies_(copies), computeSets_(computeSets), kernels_(kernels), out_(out) {}

  std::uint32_t lower(const program::Program &p) {
    if (p.isEmpty())
      return add(Step{StepKind::Nop, "", 0, 0, {}, {}, {}}, nullptr);
    const ProgramNode &node = p.node();
    if (auto it = done_.find(&node); it != done_.end())
      return it->second;
    // Reserved before the children, so that a function calling itself refers to this step.
    const std::uint32_t index = add(Step{}, &node);
    done_[&node] = index;
    Step step = lowerNode(node);
    out_.steps[index] = std::move(step);
    return index;
  }

  StepOrigins takeOrigins() { return std::move(origins_); }

private:
  std::uint32_t add(Step step, const ProgramNode *origin) {
    out_.steps.push_back(std::move(step));
    origins_.push_back(origin);
    return static_cast<std::uint32_t>(out_.steps.size() - 1);
  }

  static ScalarRef scalarOf(const Tensor &t) {
    const RegionList regions = regionsOf(t);
    const ByteRun &run = regions.runs.front();
    return {run.buffer, std::uint64_t(run.offset), t.elementType()};
  }

  Step lowerNode(const ProgramNode &node) {
    Step step;
    step.name = node.debugName;
    for (const program::Program &child : node.children)
      step.children.push_back(lower(child));
    switch (node.kind) {
    case ProgramKind::Empty:
    case ProgramKind::Sync:
    case ProgramKind::WriteUndef:
      step.kind = StepKind::Nop;
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
      step.index = computeSets_.at(node.id);
      if (step.name.empty())
        step.name = graph_.computeSets[node.id].name;
      break;
    case ProgramKind::Copy:
      step.kind = StepKind::Copy;
      step.index = copies_.at(&node);
      break;
    case ProgramKind::StreamToTensor:
    case ProgramKind::TensorToStream:
      step.kind = node.kind == ProgramKind::StreamToTensor ? StepKind::StreamToTensor
                                                           : StepKind::TensorToStream;
      step.index = copies_.at(&node);
      if (step.name.empty())
        step.name = graph_.streams[node.id].handle;
      break;
    case ProgramKind::Repeat:
      step.kind = StepKind::Repeat;
      step.count = node.count;
      break;
    case ProgramKind::RepeatWhileTrue:
    case ProgramKind::RepeatWhileFalse:
    case ProgramKind::If:
    case ProgramKind::Switch:
    case ProgramKind::AbortOnCondition:
      step.kind = node.kind == ProgramKind::RepeatWhileTrue    ? StepKind::RepeatWhileTrue
                  : node.kind == ProgramKind::RepeatWhileFalse ? StepKind::RepeatWhileFalse
                  : node.kind == ProgramKind::If               ? StepKind::If
                  : node.kind == ProgramKind::Switch           ? StepKind::Switch
                                                               : StepKind::Abort;
      step.scalar = scalarOf(node.tensor);
      step.cases = node.caseValues;
      break;
    case ProgramKind::LibraryCall:
    case ProgramKind::Launch:
      step.kind = StepKind::Kernel;
      step.index = kernels_.at(&node);
      if (step.name.empty())
        step.name = node.kind == ProgramKind::Launch ? graph_.computeSets[node.id].name
                                                     : kernelKindName(out_.kernels[step.index].kind);
      break;
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
  const CopyIndex &copies_;
  const std::unordered_map<unsigned, std::uint32_t> &computeSets_;
  const KernelIndex &kernels_;
  CompiledGraph &out_;
  std::unordered_map<const ProgramNode *, std::uint32_t> done_;
  StepOrigins origins_;
};

} // namespace

StepOrigins lowerPrograms(const GraphState &graph, ArrayRef<program::Program> programs,
                          const CopyIndex &copies,
                          const std::unordered_map<unsigned, std::uint32_t> &computeSets,
                          const KernelIndex &kernels, CompiledGraph &out) {
  ProgramLowering lowering(graph, copies, computeSets, kernels, out);
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
    out.streams.push_back({s.handle, s.type, s.numElements, s.hostToDevice});
  return lowering.takeOrigins();
}

} // namespace aspen::detail
