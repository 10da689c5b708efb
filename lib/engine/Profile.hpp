// The execution profile an engine keeps, and the profile it prints: the text summary
// (printProfileSummary's default), and the JSON report, Chrome trace and HTML page of
// ProfileReport.hpp, all from the same data.
#pragma once

#include "EngineOptions.hpp"
#include "compiler/CompileReport.hpp"
#include "compiler/CompiledGraph.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <vector>

namespace aspen::detail {

struct ExecutionProfile {
  struct Entry {
    double seconds = 0;
    std::uint64_t calls = 0;
    void add(double s) {
      seconds += s;
      ++calls;
    }
  };
  std::vector<Entry> computeSets; // by compiled compute set
  std::vector<Entry> kernels;     // by compiled kernel
  std::vector<Entry> steps;       // by step, each including its children
  std::vector<Entry> programs;    // Engine::run, by program index
  Entry copies, streamTransfers;
  // Device-only subtrees run whole by the executor (CUDA graphs); their compute sets and copies
  // are timed as part of these, not one by one.
  Entry deviceSubtrees;
  std::uint64_t copiedBytes = 0, streamedBytes = 0, rearrangedBytes = 0;

  // What ran when, in the first runs (engine option autoReport.executionProfileProgramRunCount):
  // seconds since the engine's time 0 (the start of compiling, or of the engine's creation from
  // an executable). At most kMaxEvents are kept; the rest are counted in droppedEvents.
  struct Event {
    enum class Kind : std::uint8_t { Program, ComputeSet, Kernel, Copy, Stream, DeviceGraph };
    Kind kind = Kind::Program;
    std::uint32_t index = 0; // program, compute set, kernel, copy plan, stream or step
    double start = 0, duration = 0;
  };
  static constexpr std::size_t kMaxEvents = std::size_t(1) << 18;
  std::vector<Event> timeline;
  std::uint64_t droppedEvents = 0;
  unsigned recordedRuns = 0;
  void record(const Event &e) {
    if (timeline.size() < kMaxEvents)
      timeline.push_back(e);
    else
      ++droppedEvents;
  }

  ExecutionProfile() = default;
  explicit ExecutionProfile(const CompiledGraph &graph);
};

// Everything a profile is made from. `compile` is null for an engine made from an executable;
// `load` is {start, seconds} once the engine is loaded.
struct ProfileSources {
  const CompiledGraph &graph;
  const ExecutionProfile &profile;
  const CompileReport *compile = nullptr;
  std::optional<std::pair<double, double>> load;
};

// The vertex state bytes and the shared scratch region (its largest buffer) of a graph.
struct BufferTotals {
  std::uint64_t vertexState = 0, scratch = 0;
};
BufferTotals bufferTotals(const CompiledGraph &graph);
// The `count` largest buffers, largest first (ties in buffer order).
std::vector<const Buffer *> largestBuffers(const CompiledGraph &graph, std::size_t count);

// Variable bytes per tile: the least, the mean, the most and the tile with the most, the total
// and the number of tiles with any.
struct TileStats {
  std::uint64_t min = 0, max = 0, total = 0;
  double mean = 0;
  std::uint32_t maxTile = 0, tilesUsed = 0;
};
TileStats tileStats(const std::vector<std::uint64_t> &bytes);

// The estimated seconds and flops of one run of each program: each step's estimate times the
// times it runs (Repeat counts multiply; a RepeatWhile body counts once and If/Switch their
// costliest branch, which make the estimate inexact). Empty without a compile report.
struct ProgramEstimate {
  std::optional<double> seconds;
  std::uint64_t flops = 0;
  bool exact = true;
};
// `perStep`, when given, receives one execution's estimate of every step the programs reach.
std::vector<ProgramEstimate>
estimatePrograms(const CompiledGraph &graph, const CompileReport *compile,
                 std::vector<std::optional<ProgramEstimate>> *perStep = nullptr);

// options.format "text": headings "Target:", "Memory Usage:", "Compute sets:", "Vertices:",
// "Execution:"; "json", "trace" and "html": ProfileReport.hpp.
void printProfileSummary(std::ostream &out, const ProfileSources &sources,
                         const ProfileOptions &options);

} // namespace aspen::detail
