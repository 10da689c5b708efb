// The execution profile an engine keeps, and the profile summary it prints.
#pragma once

#include "EngineOptions.hpp"
#include "compiler/CompiledGraph.hpp"

#include <cstdint>
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
  std::vector<Entry> kernels;     // by compiled kernel (library calls)
  std::vector<Entry> steps;       // by step, each including its children
  std::vector<Entry> programs;    // Engine::run, by program index
  Entry copies, streamTransfers;
  // Device-only subtrees run whole by the executor (CUDA graphs); their compute sets and copies
  // are timed as part of these, not one by one.
  Entry deviceSubtrees;
  std::uint64_t copiedBytes = 0, streamedBytes = 0, rearrangedBytes = 0;

  ExecutionProfile() = default;
  explicit ExecutionProfile(const CompiledGraph &graph);
};

// Headings: "Target:", "Memory Usage:", "Compute sets:", "Vertices:", "Execution:".
void printProfileSummary(std::ostream &out, const CompiledGraph &graph,
                         const ExecutionProfile &profile, const ProfileOptions &options);

} // namespace aspen::detail
