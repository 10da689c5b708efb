#include "LowerKernels.hpp"

#include "LowerCopies.hpp"
#include "ProgramWalk.hpp"
#include "Regions.hpp"
#include "Verify.hpp"

#include <aspen/Error.hpp>

namespace aspen::detail {

const char *kernelKindName(KernelKind kind) {
  switch (kind) {
  case KernelKind::Gemm: return "Gemm";
  case KernelKind::Block: return "Block";
  }
  return "?";
}

namespace {

// Temporaries start on 256-byte boundaries: what GPU libraries want of their operands.
constexpr std::uint64_t kTemporaryAlignment = 256;

std::uint64_t alignUp(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

class KernelLowering {
public:
  explicit KernelLowering(CompiledGraph &out) : out_(out) {}

  std::uint32_t lower(const ProgramNode &node) {
    CompiledKernel kernel;
    kernel.name = node.debugName.empty() ? std::string("Gemm") : node.debugName;
    scratchBuffer_ = static_cast<std::uint32_t>(out_.buffers.size());
    scratchBytes_ = 0;
    switch (node.libraryKernel) {
    case LibraryKernel::Gemm:
      lowerGemm(node, kernel);
      break;
    }
    for (const std::vector<CopyPlan> *plans : {&kernel.gathers, &kernel.scatters})
      for (const CopyPlan &p : *plans)
        kernel.rearrangedBytes += p.src.bytes();
    if (scratchBytes_ > 0)
      out_.buffers.push_back(
          {BufferKind::Scratch, "scratch of kernel '" + kernel.name + "'", scratchBytes_, 0});
    out_.kernels.push_back(std::move(kernel));
    return static_cast<std::uint32_t>(out_.kernels.size() - 1);
  }

private:
  void lowerGemm(const ProgramNode &node, CompiledKernel &kernel) {
    const Tensor &a = node.operands.at(0), &b = node.operands.at(1), &c = node.operands.at(2);
    const Tensor &scale = node.operands.at(3);
    GemmShape &g = kernel.gemm;
    const std::size_t off = a.rank() - 2;
    g.G = off ? a.dim(0) : 1;
    g.M = a.dim(off);
    g.K = a.dim(off + 1);
    g.N = b.dim(off + 1);
    g.inputType = a.elementType();
    g.outputType = c.elementType();
    g.accumulate = node.flags & kGemmAccumulate;
    g.allowTF32 = node.flags & kGemmAllowTF32;

    const RegionList out = regionsOf(c);
    auto input = [&](const Tensor &t) {
      if (!t.valid())
        return DescTemplate{DescTemplate::Null, 0, 0, 0};
      RegionList regions = regionsOf(t);
      // Before the move: the order in which arguments are evaluated is unspecified (clang moves
      // `regions` first, and a moved-from list overlaps nothing).
      const bool overlaps = mayOverlap(regions, out);
      return operand(std::move(regions), t.elementType(), true, false, overlaps, kernel);
    };
    kernel.operands.push_back(input(a));
    kernel.operands.push_back(input(b));
    kernel.operands.push_back(operand(out, c.elementType(), g.accumulate, true, false, kernel));
    kernel.operands.push_back(input(scale));
  }

  DescTemplate operand(RegionList regions, Type type, bool reads, bool writes, bool mustCopy,
                       CompiledKernel &kernel) {
    const std::uint64_t n = regions.numElements;
    if (n == 0)
      return {DescTemplate::Null, 0, 0, 0};
    if (!mustCopy && isContiguous(regions)) {
      const ByteRun &run = regions.runs.front();
      return {DescTemplate::Arena, run.buffer, std::uint64_t(run.offset), n};
    }
    const std::uint64_t offset = alignUp(scratchBytes_, kTemporaryAlignment);
    scratchBytes_ = offset + regions.bytes();
    RegionList scratch;
    scratch.elementBytes = static_cast<std::uint32_t>(type.size());
    scratch.numElements = n;
    scratch.runs.push_back({scratchBuffer_, std::int64_t(offset), std::int64_t(type.size()), n});
    if (reads)
      kernel.gathers.push_back(makeCopyPlan(regions, scratch));
    if (writes)
      kernel.scatters.push_back(makeCopyPlan(scratch, regions));
    return {DescTemplate::Arena, scratchBuffer_, offset, n};
  }

  CompiledGraph &out_;
  std::uint32_t scratchBuffer_ = 0;
  std::uint64_t scratchBytes_ = 0;
};

} // namespace

KernelIndex lowerKernels(const GraphState &graph, ArrayRef<program::Program> programs,
                         const std::unordered_map<unsigned, std::uint32_t> &computeSets,
                         CompiledGraph &out) {
  KernelLowering lowering(out);
  KernelIndex index;
  forEachProgramNode(graph, programs, [&](const ProgramNode &node) {
    if (node.kind == ProgramKind::LibraryCall) {
      index[&node] = lowering.lower(node);
    } else if (node.kind == ProgramKind::Launch) {
      CompiledKernel kernel;
      kernel.kind = KernelKind::Block;
      kernel.name = node.debugName.empty() ? graph.computeSets[node.id].name : node.debugName;
      kernel.launch = {computeSets.at(node.id), node.launch.blocks,
                       launchThreads(node.launch, graph.target), node.launch.sharedBytes};
      index[&node] = static_cast<std::uint32_t>(out.kernels.size());
      out.kernels.push_back(std::move(kernel));
    }
  });
  return index;
}

} // namespace aspen::detail
