// What compiling a graph learnt beyond the CompiledGraph: the passes' times, the run order that
// liveness numbered (so that memory over a program's steps can be labelled), and the target
// model's time estimate of each compute set, kernel and copy. The engine keeps it for its
// profile reports (Profile.hpp); it is not part of an Executable, so an engine made from a
// deserialised executable reports without it.
//
// The estimates are a first-order model of the target, documented in docs/profiling.md:
//  - a compute set: its slowest tile's cycles from the vertices' perf estimates
//    (CompiledComputeSet::estimatedCycles) at the tile clock; a vertex without an estimate
//    (no setPerfEstimate, no registered estimator) costs the bytes of the tensors its fields
//    connect at its tile's bandwidth (a GPU: the card's memory bandwidth shared by its tiles;
//    otherwise every worker moving one data-path word a cycle), the slowest tile's sum of those
//    added; plus, on a GPU, one kernel launch (kGpuLaunchSeconds);
//  - a Gemm kernel: 2*G*M*K*N flops at the target's matmul peak over all tiles
//    (Target::getMatMulMacsPerCycle), plus a launch on a GPU;
//  - a block kernel: its compute set's estimate;
//  - moving n bytes (copies, the Copy steps of gathers and scatters among them): on a GPU, a
//    read and a write of n bytes at the card's memory bandwidth; elsewhere n bytes at the
//    exchange rate of every tile at once.
#pragma once

#include "CompiledGraph.hpp"
#include "core/GraphState.hpp"

#include <aspen/Target.hpp>

#include <optional>
#include <string>
#include <vector>

namespace aspen::detail {

struct CompileReport {
  struct Pass {
    std::string name;
    double start = 0;   // seconds since compiling began
    double seconds = 0;
  };
  std::vector<Pass> passes;
  double seconds = 0; // the whole compile
  // Walks of the program tree (ProgramNode) so far: verification's and program lowering's; the
  // passes after those work on the steps. The compiler dump prints it after each pass.
  std::uint32_t programTreeWalks = 0;

  // Per program: the step at each position liveness numbers (Buffer::liveBegin/liveEnd), as
  // "<kind> '<name>'" (or "<kind> #<step index>" when it has no name); at most kMaxPositions,
  // `truncated` when the program has more.
  struct RunOrder {
    std::vector<std::string> positions;
    bool truncated = false;
  };
  static constexpr std::size_t kMaxPositions = 1 << 16;
  std::vector<RunOrder> runOrder;

  // Estimated seconds of one execution, by index; nullopt where the model has no estimate.
  std::vector<std::optional<double>> computeSetSeconds, kernelSeconds, copySeconds;
};

// The run order of every program of `graph`, numbered as Liveness.cpp numbers it. Call it before
// the steps are simplified (the numbering is of the lowered steps).
std::vector<CompileReport::RunOrder> describeRunOrder(const CompiledGraph &graph);

// What launching one kernel costs on a GPU, in the model (a host-driven launch is a few
// microseconds; inside a CUDA graph less).
inline constexpr double kGpuLaunchSeconds = 2e-6;

// The model's estimates above, for every compute set, kernel and copy of `compiled`, made from
// `graph`.
void estimateSteps(const GraphState &graph, const CompiledGraph &compiled, CompileReport &report);

// Seconds to move `bytes` on `target` by the model above.
double estimateMoveSeconds(const Target &target, std::uint64_t bytes);

} // namespace aspen::detail
