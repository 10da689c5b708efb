#include "Profile.hpp"

#include "ProfileReport.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace aspen::detail {

ExecutionProfile::ExecutionProfile(const CompiledGraph &graph)
    : computeSets(graph.computeSets.size()), kernels(graph.kernels.size()),
      steps(graph.steps.size()),
      programs(graph.programs.size()) {}

BufferTotals bufferTotals(const CompiledGraph &graph) {
  BufferTotals totals;
  for (const Buffer &b : graph.buffers) {
    if (b.kind == BufferKind::VertexState)
      totals.vertexState += b.bytes;
    else if (b.kind == BufferKind::Scratch)
      totals.scratch = std::max(totals.scratch, b.bytes);
  }
  return totals;
}

std::vector<const Buffer *> largestBuffers(const CompiledGraph &graph, std::size_t count) {
  std::vector<const Buffer *> largest;
  for (const Buffer &b : graph.buffers)
    largest.push_back(&b);
  const std::size_t shown = std::min(largest.size(), count);
  std::partial_sort(largest.begin(), largest.begin() + shown, largest.end(),
                    [](const Buffer *a, const Buffer *b) {
                      return a->bytes != b->bytes ? a->bytes > b->bytes : a < b;
                    });
  largest.resize(shown);
  return largest;
}

TileStats tileStats(const std::vector<std::uint64_t> &bytes) {
  TileStats s;
  if (bytes.empty())
    return s;
  const auto [least, most] = std::minmax_element(bytes.begin(), bytes.end());
  s.min = *least;
  s.max = *most;
  s.maxTile = static_cast<std::uint32_t>(most - bytes.begin());
  s.total = std::accumulate(bytes.begin(), bytes.end(), std::uint64_t(0));
  s.mean = double(s.total) / double(bytes.size());
  s.tilesUsed = static_cast<std::uint32_t>(
      std::count_if(bytes.begin(), bytes.end(), [](std::uint64_t b) { return b != 0; }));
  return s;
}

namespace {

// One step's estimate, memoised by step (a step's cost does not depend on where it runs).
class ProgramEstimator {
public:
  ProgramEstimator(const CompiledGraph &graph, const CompileReport &compile)
      : graph_(graph), compile_(compile), memo_(graph.steps.size()),
        active_(graph.steps.size(), false) {}

  // Every step reached so far.
  const std::vector<std::optional<ProgramEstimate>> &steps() const { return memo_; }

  ProgramEstimate operator()(std::uint32_t index) {
    if (memo_[index])
      return *memo_[index];
    if (active_[index]) // a function that calls itself: its cost is not finite
      return {0.0, 0, false};
    active_[index] = true;
    const ProgramEstimate result = estimate(graph_.steps[index]);
    active_[index] = false;
    memo_[index] = result;
    return result;
  }

private:
  static void add(ProgramEstimate &sum, const ProgramEstimate &part, std::uint64_t times = 1) {
    sum.seconds = *sum.seconds + *part.seconds * double(times);
    sum.flops += part.flops * times;
    sum.exact = sum.exact && part.exact;
  }

  ProgramEstimate leaf(const std::vector<std::optional<double>> &table, std::uint32_t index,
                       std::uint64_t flops) const {
    const std::optional<double> seconds =
        index < table.size() ? table[index] : std::optional<double>();
    return {seconds.value_or(0.0), flops, seconds.has_value()};
  }

  ProgramEstimate estimate(const Step &step) {
    ProgramEstimate sum{0.0, 0, true};
    switch (step.kind) {
    case StepKind::Execute:
      return leaf(compile_.computeSetSeconds, step.index,
                  graph_.computeSets[step.index].estimatedFlops);
    case StepKind::Kernel: {
      const CompiledKernel &k = graph_.kernels[step.index];
      return leaf(compile_.kernelSeconds, step.index,
                  k.kind == KernelKind::Block
                      ? graph_.computeSets[k.launch.computeSet].estimatedFlops
                      : k.flops());
    }
    case StepKind::Copy: return leaf(compile_.copySeconds, step.index, 0);
    case StepKind::Sequence:
      for (std::uint32_t child : step.children)
        add(sum, (*this)(child));
      return sum;
    case StepKind::Repeat:
      if (!step.children.empty())
        add(sum, (*this)(step.children[0]), step.count);
      return sum;
    case StepKind::RepeatWhileTrue:
    case StepKind::RepeatWhileFalse:
      for (std::uint32_t child : step.children)
        add(sum, (*this)(child));
      sum.exact = false; // the number of iterations is known only when it runs
      return sum;
    case StepKind::Cached: // the first run's cost; later runs skip the body while it is fresh
      add(sum, (*this)(step.children[0]));
      sum.exact = false;
      return sum;
    case StepKind::If:
    case StepKind::Switch: {
      std::optional<ProgramEstimate> costliest;
      for (std::uint32_t child : step.children) {
        const ProgramEstimate branch = (*this)(child);
        if (!costliest || *branch.seconds > *costliest->seconds)
          costliest = branch;
      }
      if (costliest)
        add(sum, *costliest);
      sum.exact = false;
      return sum;
    }
    // Stream transfers (host links are not modelled), prints, aborts, no-ops.
    case StepKind::StreamToTensor:
    case StepKind::TensorToStream:
    case StepKind::PrintTensor:
    case StepKind::Abort:
    case StepKind::Nop:
      return sum;
    }
    return sum;
  }

  const CompiledGraph &graph_;
  const CompileReport &compile_;
  std::vector<std::optional<ProgramEstimate>> memo_;
  std::vector<bool> active_;
};

} // namespace

std::vector<ProgramEstimate>
estimatePrograms(const CompiledGraph &graph, const CompileReport *compile,
                 std::vector<std::optional<ProgramEstimate>> *perStep) {
  std::vector<ProgramEstimate> result;
  if (!compile)
    return result;
  ProgramEstimator estimator(graph, *compile);
  for (std::uint32_t root : graph.programs)
    result.push_back(estimator(root));
  if (perStep)
    *perStep = estimator.steps();
  return result;
}

namespace {

void printMemory(std::ostream &out, const CompiledGraph &graph) {
  const auto &tiles = graph.tileBytes;
  const std::uint64_t total = std::accumulate(tiles.begin(), tiles.end(), std::uint64_t(0));
  const auto maxTile = std::max_element(tiles.begin(), tiles.end());
  const BufferTotals totals = bufferTotals(graph);
  fmt::print(out, "Memory Usage:\n");
  fmt::print(out, "  Total variable bytes:       {}\n", graph.variableBytes);
  fmt::print(out, "  Mapped to tiles:            {}\n", total);
  if (maxTile != tiles.end()) {
    const TileStats stats = tileStats(tiles);
    fmt::print(out, "  Per tile: max {} bytes (tile {}), mean {:.1f} bytes over {} tiles, min {}\n",
               *maxTile, maxTile - tiles.begin(), double(total) / double(tiles.size()),
               tiles.size(), stats.min);
    fmt::print(out, "  Tiles used:                 {} of {}\n", stats.tilesUsed, tiles.size());
    const auto &peaks = graph.tilePeakBytes;
    const auto maxPeak = std::max_element(peaks.begin(), peaks.end());
    if (maxPeak != peaks.end())
      fmt::print(out, "  Per tile at once: max {} bytes (tile {})\n", *maxPeak,
                 maxPeak - peaks.begin());
    if (graph.target.bytesPerTile && maxPeak != peaks.end())
      fmt::print(out, "  Tile budget:                {} bytes ({:.1f}% used at most)\n",
                 graph.target.bytesPerTile,
                 100.0 * double(*maxPeak) / double(graph.target.bytesPerTile));
  }
  fmt::print(out, "  Vertex state bytes:         {}\n", totals.vertexState);
  fmt::print(out, "  Rearrangement scratch:      {}\n", totals.scratch);
  fmt::print(out, "  Arena bytes (peak):         {} ({} always live; {} if no buffer shared)\n",
             graph.arenaBytes, graph.alwaysLiveBytes, graph.bufferBytes);
  fmt::print(out, "  Largest buffers:\n");
  for (const Buffer *largest : largestBuffers(graph, 5)) {
    const Buffer &b = *largest;
    const char *use = b.kind == BufferKind::Scratch ? "scratch, shared"
                      : b.isReusable()               ? "reused"
                                                     : "always live";
    fmt::print(out, "    {:<30} {:>12} bytes at {} ({})\n", b.name, b.bytes, b.offset, use);
  }
}

void printComputeSets(std::ostream &out, const CompiledGraph &graph) {
  std::uint64_t vertices = 0, rearranged = 0;
  std::map<std::string, std::uint64_t> byType;
  for (const CompiledComputeSet &cs : graph.computeSets) {
    vertices += cs.vertices.size();
    rearranged += cs.rearrangedBytes;
    for (const CompiledVertex &v : cs.vertices)
      ++byType[graph.vertexTypes[v.type].name];
  }
  fmt::print(out, "Compute sets: {}\n", graph.computeSets.size());
  fmt::print(out, "  Rearrangement bytes per execution of all compute sets: {}\n", rearranged);
  fmt::print(out, "Vertices: {}\n", vertices);
  for (const auto &[type, count] : byType)
    fmt::print(out, "  {}: {}\n", type, count);
}

void printEstimates(std::ostream &out, const CompiledGraph &graph,
                    const CompileReport *compile) {
  const std::vector<ProgramEstimate> estimates = estimatePrograms(graph, compile);
  if (estimates.empty())
    return;
  fmt::print(out, "Estimates (the target model's; docs/profiling.md):\n");
  for (std::size_t p = 0; p < estimates.size(); ++p)
    fmt::print(out, "  Program {}: {:.6f} s, {} flops a run{}\n", p, *estimates[p].seconds,
               estimates[p].flops,
               estimates[p].exact ? "" : " (inexact: data-dependent control flow or steps "
                                         "without an estimate)");
}

void printExecution(std::ostream &out, const CompiledGraph &graph,
                    const ExecutionProfile &profile, const ProfileOptions &options) {
  double total = 0;
  std::uint64_t runs = 0;
  for (const auto &p : profile.programs) {
    total += p.seconds;
    runs += p.calls;
  }
  fmt::print(out, "Execution:\n");
  fmt::print(out, "  Program runs: {}\n", runs);
  fmt::print(out, "  Total cycles: {} (measured {:.6f} s at {:.3f} GHz)\n",
             std::uint64_t(total * graph.target.clockHz), total, graph.target.clockHz / 1e9);
  fmt::print(out, "  Copies: {} calls, {} bytes, {:.6f} s\n", profile.copies.calls,
             profile.copiedBytes, profile.copies.seconds);
  fmt::print(out, "  Stream transfers: {} calls, {} bytes, {:.6f} s\n",
             profile.streamTransfers.calls, profile.streamedBytes,
             profile.streamTransfers.seconds);
  if (profile.deviceSubtrees.calls)
    fmt::print(out, "  Device graphs: {} launches, {:.6f} s (their compute sets and copies are "
                    "timed here, not one by one)\n",
               profile.deviceSubtrees.calls, profile.deviceSubtrees.seconds);
  fmt::print(out, "  Rearrangement bytes moved: {}\n", profile.rearrangedBytes);
  fmt::print(out, "  Compute sets (time, calls, estimated cycles a call from setPerfEstimate):\n");
  for (std::size_t i = 0; i < graph.computeSets.size(); ++i) {
    const CompiledComputeSet &cs = graph.computeSets[i];
    fmt::print(out, "    {}: {:.6f} s, {} calls, estimated {} cycles, {} flops", cs.name,
               profile.computeSets[i].seconds, profile.computeSets[i].calls, cs.estimatedCycles,
               cs.estimatedFlops);
    if (cs.verticesWithoutEstimate)
      fmt::print(out, " ({} of {} vertices without an estimate)", cs.verticesWithoutEstimate,
                 cs.vertices.size());
    fmt::print(out, "\n");
  }
  if (!graph.kernels.empty())
    fmt::print(out, "  Kernels (time, calls, flops a call):\n");
  for (std::size_t i = 0; i < graph.kernels.size(); ++i) {
    const CompiledKernel &k = graph.kernels[i];
    fmt::print(out, "    {} {}: {:.6f} s, {} calls, {} flops, {} bytes rearranged a call\n",
               kernelKindName(k.kind), k.name, profile.kernels[i].seconds,
               profile.kernels[i].calls, k.gemm.flops(), k.rearrangedBytes);
  }
  if (!options.showExecutionSteps)
    return;
  fmt::print(out, "  Execution steps (step: kind name, time including children, calls):\n");
  for (std::size_t i = 0; i < graph.steps.size(); ++i)
    if (profile.steps[i].calls)
      fmt::print(out, "    {}: {} '{}', {:.6f} s, {} calls\n", i,
                 stepKindName(graph.steps[i].kind), graph.steps[i].name,
                 profile.steps[i].seconds, profile.steps[i].calls);
}

} // namespace

void printProfileSummary(std::ostream &out, const ProfileSources &sources,
                         const ProfileOptions &options) {
  using Format = ProfileOptions::Format;
  if (options.format != Format::Text) {
    const support::json::Value report = profileReport(sources, options.context);
    out << (options.format == Format::Json    ? report.write()
            : options.format == Format::Trace ? chromeTrace(report)
                                              : htmlReport(report));
    return;
  }
  const CompiledGraph &graph = sources.graph;
  fmt::print(out, "Target: {} ({} tiles, {} workers a tile)\n", graph.target.name,
             graph.target.numTiles, graph.target.numWorkerContexts);
  printMemory(out, graph);
  printComputeSets(out, graph);
  printEstimates(out, graph, sources.compile);
  printExecution(out, graph, sources.profile, options);
}

} // namespace aspen::detail
