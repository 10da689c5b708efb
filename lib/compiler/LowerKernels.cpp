#include "LowerKernels.hpp"

#include "LowerCopies.hpp"
#include "Regions.hpp"

#include <aspen/Error.hpp>

namespace aspen::detail {

namespace {

// Temporaries start on 256-byte boundaries: what GPU libraries want of their operands.
constexpr std::uint64_t kTemporaryAlignment = 256;

std::uint64_t alignUp(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

class KernelLowering {
public:
  explicit KernelLowering(CompiledGraph &out) : out_(out) {}

  void lower(CompiledKernel &kernel, const KernelCall &call, AccessList &accesses,
             Rearrangement &copies) {
    scratchBuffer_ = static_cast<std::uint32_t>(out_.buffers.size());
    scratchBytes_ = 0;
    const ArrayRef<OperandInfo> table = kernelOperands(kernel.kind);
    const bool accumulate = call.flags & kKernelAccumulate;
    if (call.operands.size() != table.size())
      throw internal_error("kernel '" + kernel.name + "' has " +
                           std::to_string(call.operands.size()) + " operands, its kind " +
                           std::to_string(table.size()));
    kernel.operands.clear();
    for (std::size_t i = 0; i < table.size(); ++i) {
      const OperandInfo &info = table[i];
      const RegionList &regions = call.operands[i];
      bool overlapsWritten = false;
      if (info.role == OperandRole::Read)
        for (std::size_t j = 0; j < table.size(); ++j)
          overlapsWritten |= table[j].writes() && mayOverlap(regions, call.operands[j]);
      kernel.operands.push_back(
          operand(regions, info, accumulate, overlapsWritten, accesses, copies));
    }
    for (const std::vector<CopyPlan> *plans : {&copies.gathers, &copies.scatters})
      for (const CopyPlan &p : *plans)
        kernel.rearrangedBytes += p.src.bytes();
    if (scratchBytes_ > 0)
      out_.buffers.push_back(
          {BufferKind::Scratch, "scratch of kernel '" + kernel.name + "'", scratchBytes_, 0});
  }

private:
  DescTemplate operand(const RegionList &regions, const OperandInfo &info, bool accumulate,
                       bool mustCopy, AccessList &accesses, Rearrangement &copies) {
    const std::uint64_t n = regions.numElements;
    if (n == 0)
      return {DescTemplate::Null, 0, 0, 0};
    const bool reads = info.reads(accumulate), writes = info.writes();
    const bool scratchOnly = info.role == OperandRole::Scratch;
    if (!scratchOnly && !mustCopy && isContiguous(regions)) {
      const ByteRun &run = regions.runs.front();
      if (reads)
        accesses.add(AccessKind::Read, run, regions.elementBytes);
      if (writes)
        accesses.add(AccessKind::Write, run, regions.elementBytes);
      return {DescTemplate::Arena, run.buffer, std::uint64_t(run.offset), n};
    }
    const std::uint64_t offset = alignUp(scratchBytes_, kTemporaryAlignment);
    scratchBytes_ = offset + regions.bytes();
    RegionList scratch;
    scratch.elementBytes = regions.elementBytes;
    scratch.numElements = n;
    scratch.runs.push_back({scratchBuffer_, std::int64_t(offset),
                            std::int64_t(regions.elementBytes), n});
    if (!scratchOnly && reads)
      copies.gathers.push_back(makeCopyPlan(regions, scratch));
    if (!scratchOnly && writes)
      copies.scatters.push_back(makeCopyPlan(scratch, regions));
    return {DescTemplate::Arena, scratchBuffer_, offset, n};
  }

  CompiledGraph &out_;
  std::uint32_t scratchBuffer_ = 0;
  std::uint64_t scratchBytes_ = 0;
};

} // namespace

CompiledKernel describeKernelCall(const ProgramNode &node) {
  CompiledKernel kernel;
  kernel.kind = node.kernel;
  kernel.name = node.debugName.empty() ? std::string(kernelKindName(node.kernel)) : node.debugName;
  switch (node.kernel) {
  case KernelKind::Gemm: {
    const Tensor &a = node.operands.at(GemmOperand::a), &b = node.operands.at(GemmOperand::b),
                 &c = node.operands.at(GemmOperand::c);
    GemmShape &g = kernel.gemm;
    const std::size_t off = a.rank() - 2;
    g.G = off ? a.dim(0) : 1;
    g.M = a.dim(off);
    g.K = a.dim(off + 1);
    g.N = b.dim(off + 1);
    g.inputType = a.elementType();
    g.outputType = c.elementType();
    g.accumulate = node.flags & kKernelAccumulate;
    g.allowTF32 = node.flags & kGemmAllowTF32;
    break;
  }
  case KernelKind::ConvForward:
  case KernelKind::ConvBackwardData:
  case KernelKind::ConvBackwardFilter: {
    ConvShape &c = kernel.conv;
    c.geometry = node.conv;
    // The data operand (in, or outGrad) has the input type; ConvForward's out the output's.
    c.inputType = node.operands.at(1).elementType();
    c.outputType = node.operands.at(node.kernel == KernelKind::ConvForward ? 2 : 0).elementType();
    c.accumulate = node.flags & kKernelAccumulate;
    break;
  }
  case KernelKind::AllReduce:
  case KernelKind::ReduceScatter:
  case KernelKind::AllGather:
  case KernelKind::Broadcast:
  case KernelKind::AllToAll:
  case KernelKind::CrossReplicaCopy: {
    const Tensor &data = node.operands.at(AllReduceOperand::data);
    CollectiveShape &c = kernel.collective;
    c.op = node.collectiveOperator;
    c.type = data.elementType();
    c.elements = data.numElements();
    c.root = node.collectiveRoot;
    c.groupType = node.collectiveGroupType;
    c.groupSize = node.collectiveGroupSize;
    c.sources = node.collectiveSources;
    break;
  }
  case KernelKind::Block:
    throw internal_error("a Kernel node of kind Block: Launch makes block kernels");
  }
  return kernel;
}

void lowerKernels(CompiledGraph &out, LoweringState &state) {
  KernelLowering lowering(out);
  state.kernelAccesses.assign(out.kernels.size(), {});
  state.kernelCopies.assign(out.kernels.size(), {});
  for (std::size_t k = 0; k < out.kernels.size(); ++k)
    if (out.kernels[k].kind != KernelKind::Block)
      lowering.lower(out.kernels[k], state.kernelCalls[k], state.kernelAccesses[k],
                     state.kernelCopies[k]);
}

} // namespace aspen::detail
