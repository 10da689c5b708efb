// What the lowering passes hand on to each other besides the CompiledGraph: plain data, no
// program nodes. Program lowering (the one walk of the program tree after verification) fills
// it; the passes on the steps read and extend it; it ends with compile().
#pragma once

#include "CompiledGraph.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace aspen::detail {

// What a step does to the bytes of variables (other buffers are not tracked):
//   Read      reads them
//   Write     writes them (their old values are dead before the step)
//   Undefine  ends their values without touching them (WriteUndef)
// Pinned variables (predicates, printed and streamed tensors, host handles) are found from the
// CompiledGraph itself (Liveness.cpp).
enum class AccessKind : std::uint8_t { Read, Write, Undefine };

struct AccessRun {
  ByteRun run;
  std::uint32_t elementBytes = 0;
  AccessKind kind = AccessKind::Read;
};

// The accesses of one compute set, kernel or step, run by run (tensors flattened into one list
// so that a compute set of many vertices costs no allocation per edge).
struct AccessList {
  std::vector<AccessRun> runs;
  void add(AccessKind kind, const RegionList &regions) {
    for (const ByteRun &r : regions.runs)
      runs.push_back({r, regions.elementBytes, kind});
  }
  void add(AccessKind kind, const ByteRun &run, std::uint32_t elementBytes) {
    runs.push_back({run, elementBytes, kind});
  }
};

// A compute set's or kernel's copies into and out of its scratch buffer; copy lowering
// (LowerCopies.hpp) makes them Copy steps around each step that runs it.
struct Rearrangement {
  std::vector<CopyPlan> gathers, scatters;
};

// A kernel as program lowering found it: its operands as byte runs, in
// kernelOperands(kind) order (no runs for an absent one), and its flags (kKernelAccumulate...).
// A Block kernel has none.
struct KernelCall {
  std::vector<RegionList> operands;
  std::uint32_t flags = 0;
};

struct LoweringState {
  // Program lowering: the graph's compute set behind each CompiledGraph::computeSets entry (in
  // order of first use), and each kernel's call.
  std::vector<unsigned> computeSetIds;
  std::vector<KernelCall> kernelCalls;
  // Compute-set and kernel lowering: what each reads and writes in place (gathered and
  // scattered tensors are the Copy steps' accesses), and its rearrangements.
  std::vector<AccessList> computeSetAccesses, kernelAccesses;
  std::vector<Rearrangement> computeSetCopies, kernelCopies;
  // Program lowering: accesses of steps that carry no payload (WriteUndef's Nop), by step.
  std::unordered_map<std::uint32_t, AccessList> stepAccesses;
};

} // namespace aspen::detail
