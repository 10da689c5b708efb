// Timing programs on the device (Poplar's <poplar/CycleCount.hpp>).
//
// cycleStamp(graph, prog, tile, syncType, debug) -> Tensor
//   Appends to prog a reading of the device's clock on `tile`, returned as a new UNSIGNED_INT
//   tensor of shape {2}: the low 32 bits, then the high 32 bits, of a 64-bit count of the
//   target's tile-clock cycles (Target::getTileClockFrequency) from an arbitrary origin.
//   Each run of prog overwrites it. The clock is the GPU's global timer (nanoseconds, the same on
//   every SM) or, on the CPU executor, the host's steady clock, scaled to cycles: differences of
//   stamps measure elapsed time in the target's cycles, whichever executor runs the program.
// cycleStamp(graph, prog, tiles, syncType, debug) -> one stamp per tile, taken in one step.
// cycleCount(graph, prog, tile, syncType, debug) -> Tensor
//   Makes prog time itself: prog becomes {stamp, what prog was, stamp, difference}, and the
//   result (UNSIGNED_INT {2}, low then high) holds the cycles that its body took, stamps
//   included, after each run.
// syncType (program::SyncType::INTERNAL, EXTERNAL or GLOBAL) is accepted for Poplar's signature:
// Aspen's steps already run in program order, each after the one before has finished on every tile.
// The vertices are the ops library's: call aspen::ops::addCodelets(graph) first. A tile outside
// the graph raises invalid_tile_mapping.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

#include <vector>

namespace aspen::ops {

ASPEN_API Tensor cycleStamp(Graph &graph, program::Sequence &prog, unsigned tile,
                            program::SyncType syncType = program::SyncType::INTERNAL,
                            const DebugContext &debug = {});
ASPEN_API std::vector<Tensor> cycleStamp(Graph &graph, program::Sequence &prog,
                                         const std::vector<unsigned> &tiles,
                                         program::SyncType syncType = program::SyncType::INTERNAL,
                                         const DebugContext &debug = {});
ASPEN_API Tensor cycleCount(Graph &graph, program::Sequence &prog, unsigned tile,
                            program::SyncType syncType = program::SyncType::INTERNAL,
                            const DebugContext &debug = {});

} // namespace aspen::ops
