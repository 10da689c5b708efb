#include "Dump.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

namespace aspen::detail {

namespace {

const char *bufferKindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::Variable: return "variable";
  case BufferKind::VertexState: return "vertex-state";
  case BufferKind::Scratch: return "scratch";
  }
  return "?";
}

std::string regionsText(const RegionList &regions) {
  std::string text = fmt::format("{} x {}B:", regions.numElements, regions.elementBytes);
  for (const ByteRun &run : regions.runs)
    text += fmt::format(" b{}+{}/{}x{}", run.buffer, run.offset, run.stride, run.count);
  return text;
}

void dumpBuffers(const CompiledGraph &graph, std::ostream &out) {
  fmt::print(out, "arena {} bytes (always live {}), buffers {} bytes\n", graph.arenaBytes,
             graph.alwaysLiveBytes, graph.bufferBytes);
  for (std::size_t i = 0; i < graph.buffers.size(); ++i) {
    const Buffer &b = graph.buffers[i];
    std::string live = "always live";
    if (b.kind == BufferKind::Scratch)
      live = "shared scratch";
    else if (!b.alwaysLive && b.liveBegin > b.liveEnd)
      live = "never live";
    else if (!b.alwaysLive)
      live = fmt::format("program {} steps [{}, {}]", b.liveProgram, b.liveBegin, b.liveEnd);
    fmt::print(out, "  b{} {} '{}' {} bytes at {}, {}\n", i, bufferKindName(b.kind), b.name,
               b.bytes, b.offset, live);
  }
}

void dumpComputeSets(const CompiledGraph &graph, std::ostream &out) {
  for (std::size_t i = 0; i < graph.computeSets.size(); ++i) {
    const CompiledComputeSet &cs = graph.computeSets[i];
    fmt::print(out, "compute set {} '{}': {} vertices on {} tiles, {} fields, {} gathers, "
                    "{} scatters\n",
               i, cs.name, cs.vertices.size(), cs.tiles.size(), cs.fields.size(),
               cs.gathers.size(), cs.scatters.size());
    for (const CopyPlan &g : cs.gathers)
      fmt::print(out, "  gather {} -> {}\n", regionsText(g.src), regionsText(g.dst));
    for (const CopyPlan &s : cs.scatters)
      fmt::print(out, "  scatter {} -> {}\n", regionsText(s.src), regionsText(s.dst));
  }
}

void dumpKernels(const CompiledGraph &graph, std::ostream &out) {
  for (std::size_t i = 0; i < graph.kernels.size(); ++i) {
    const CompiledKernel &k = graph.kernels[i];
    if (k.kind == KernelKind::Block) {
      const BlockLaunch &l = k.launch;
      fmt::print(out, "kernel {} '{}': Block of compute set {}, {} blocks x {} threads, {} shared "
                      "bytes a block\n",
                 i, k.name, l.computeSet, l.blocks, l.threadsPerBlock, l.sharedBytes);
      continue;
    }
    const GemmShape &s = k.gemm;
    fmt::print(out, "kernel {} '{}': {} G={} M={} K={} N={} {} -> {}{}{}, {} gathers, {} "
                    "scatters\n",
               i, k.name, kernelKindName(k.kind), s.G, s.M, s.K, s.N, s.inputType.toString(),
               s.outputType.toString(), s.accumulate ? " accumulate" : "",
               s.allowTF32 ? " tf32" : "", k.gathers.size(), k.scatters.size());
    for (const DescTemplate &d : k.operands)
      if (d.base == DescTemplate::Arena)
        fmt::print(out, "  operand b{}+{} x{}\n", d.buffer, d.offset, d.size);
    for (const CopyPlan &g : k.gathers)
      fmt::print(out, "  gather {} -> {}\n", regionsText(g.src), regionsText(g.dst));
    for (const CopyPlan &c : k.scatters)
      fmt::print(out, "  scatter {} -> {}\n", regionsText(c.src), regionsText(c.dst));
  }
}

void dumpSteps(const CompiledGraph &graph, std::uint32_t step, int depth, std::ostream &out) {
  const Step &s = graph.steps[step];
  fmt::print(out, "{:{}}{} #{}", "", 2 * depth, stepKindName(s.kind), step);
  if (!s.name.empty())
    fmt::print(out, " '{}'", s.name);
  switch (s.kind) {
  case StepKind::Execute:
  case StepKind::Copy:
  case StepKind::StreamToTensor:
  case StepKind::TensorToStream:
  case StepKind::PrintTensor:
  case StepKind::Kernel: fmt::print(out, " index {}", s.index); break;
  case StepKind::Repeat: fmt::print(out, " count {}", s.count); break;
  default: break;
  }
  fmt::print(out, "\n");
  // The steps of a function calling itself form a cycle: stop at a depth no program reaches.
  if (depth > 64)
    return;
  for (std::uint32_t child : s.children)
    dumpSteps(graph, child, depth + 1, out);
}

} // namespace

void dumpCompiledGraph(const CompiledGraph &graph, std::ostream &out) {
  fmt::print(out, "target '{}': {} tiles, {} workers, {} bytes per tile\n", graph.target.name,
             graph.target.numTiles, graph.target.numWorkerContexts, graph.target.bytesPerTile);
  dumpBuffers(graph, out);
  dumpComputeSets(graph, out);
  dumpKernels(graph, out);
  for (std::size_t i = 0; i < graph.copies.size(); ++i)
    fmt::print(out, "copy {}{}: {} -> {}\n", i,
               graph.copies[i].throughTemporary ? " (through a temporary)" : "",
               regionsText(graph.copies[i].src), regionsText(graph.copies[i].dst));
  for (std::size_t i = 0; i < graph.streamCopies.size(); ++i)
    fmt::print(out, "stream copy {}: stream '{}' {}\n", i,
               graph.streamCopies[i].stream < graph.streams.size()
                   ? graph.streams[graph.streamCopies[i].stream].handle
                   : "",
               regionsText(graph.streamCopies[i].tensor));
  for (std::size_t p = 0; p < graph.programs.size(); ++p) {
    fmt::print(out, "program {}:\n", p);
    dumpSteps(graph, graph.programs[p], 1, out);
  }
}

} // namespace aspen::detail
