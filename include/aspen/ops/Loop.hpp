// Counted loops of programs (popops/Loop.hpp).
//
//   countedLoop(graph, begin, end, step, body, debug) -> Sequence
//     for (i = begin; i < end; i += step) body(i): body is called once, at build time, with
//     the index tensor (UNSIGNED_INT, shape {1}, tile 0) and returns the program to repeat;
//     the program reads the index on device. Runs ceil((end - begin) / step) times, as a
//     Repeat. step == 0 or begin >= end raise aspen::control_program_error (as popops does).
//   countedLoop(graph, count, body, debug) = countedLoop(graph, 0, count, 1, body, debug).
//
//   countedForLoop(graph, count, initialCount, countLimit, countStep, body, debug) -> Sequence
//     for (count = initialCount; count != countLimit; count += countStep) body, as a
//     RepeatWhileTrue whose condition updates count on device. count and countLimit: scalars
//     (one element) of the same type, INT or UNSIGNED_INT (type_error / shape_error otherwise);
//     countLimit is read on device each pass, so it may change at run time. A limit that the
//     count never equals loops forever, as in popops.
//   countedForLoop(graph, initialCount, countLimit, countStep, body, debug)
//     the same with a new count variable (countLimit's type, tile 0).
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

#include <cstddef>
#include <functional>

namespace aspen::ops {

using CountedLoopBodyType = std::function<program::Program(const Tensor &)>;

ASPEN_API program::Sequence countedLoop(Graph &graph, std::size_t begin, std::size_t end,
                                        std::size_t step, const CountedLoopBodyType &body,
                                        const DebugContext &debug = {});
ASPEN_API program::Sequence countedLoop(Graph &graph, std::size_t count,
                                        const CountedLoopBodyType &body,
                                        const DebugContext &debug = {});

ASPEN_API program::Sequence countedForLoop(Graph &graph, const Tensor &count, int initialCount,
                                           const Tensor &countLimit, int countStep,
                                           const program::Program &body,
                                           const DebugContext &debug = {});
ASPEN_API program::Sequence countedForLoop(Graph &graph, int initialCount, const Tensor &countLimit,
                                           int countStep, const program::Program &body,
                                           const DebugContext &debug = {});

} // namespace aspen::ops
