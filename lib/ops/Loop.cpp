// Counted loops: countedLoop is a Repeat whose body ends by adding the step to the index;
// countedForLoop is a RepeatWhileTrue whose condition runs a ForLoopCounter vertex.
#include <aspen/ops/Loop.hpp>
#include <aspen/ops/ScaledAdd.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

namespace aspen::ops {

program::Sequence countedLoop(Graph &graph, std::size_t begin, std::size_t end, std::size_t step,
                              const CountedLoopBodyType &body, const DebugContext &debug) {
  if (step == 0)
    throw control_program_error("countedLoop: step must be greater than zero");
  if (begin >= end)
    throw control_program_error(
        fmt::format("countedLoop: begin ({}) must be less than end ({})", begin, end));
  if (end > 0xffffffffu || step > 0xffffffffu)
    throw control_program_error(fmt::format(
        "countedLoop: end ({}) and step ({}) must fit the 32-bit unsigned index", end, step));
  Tensor index = graph.addVariable(UNSIGNED_INT, {1}, {debug, "index"});
  Tensor first =
      graph.addConstant(UNSIGNED_INT, {1}, static_cast<unsigned>(begin), {debug, "begin"});
  Tensor increment =
      graph.addConstant(UNSIGNED_INT, {1}, static_cast<unsigned>(step), {debug, "step"});
  for (const Tensor &t : {index, first, increment})
    graph.setTileMapping(t, 0);
  program::Sequence pass({body(index)}, debug);
  scaledAddTo(graph, index, increment, 1.0f, pass, {debug, "increment"});
  const std::size_t count = (end - begin + step - 1) / step;
  return program::Sequence(
      {program::Copy(first, index), program::Repeat(static_cast<unsigned>(count), pass, debug)},
      debug);
}

program::Sequence countedLoop(Graph &graph, std::size_t count, const CountedLoopBodyType &body,
                              const DebugContext &debug) {
  return countedLoop(graph, 0, count, 1, body, debug);
}

program::Sequence countedForLoop(Graph &graph, const Tensor &count, int initialCount,
                                 const Tensor &countLimit, int countStep,
                                 const program::Program &body, const DebugContext &debug) {
  const Type type = count.elementType();
  if (type != countLimit.elementType() || (type != INT && type != UNSIGNED_INT))
    throw type_error(fmt::format("countedForLoop: count {} ({}) and countLimit {} ({}) must have "
                                 "the same type, int or unsigned int",
                                 count.getDebugStr(), type.toString(), countLimit.getDebugStr(),
                                 countLimit.elementType().toString()));
  for (const Tensor *t : {&count, &countLimit})
    if (t->numElements() != 1)
      throw shape_error(fmt::format("countedForLoop: {} must have one element, but has shape {}",
                                    t->getDebugStr(), t->shapeToString()));
  // Starting one step early: the condition adds the step before the body sees the count.
  const unsigned startBits = static_cast<unsigned>(initialCount) - static_cast<unsigned>(countStep);
  Tensor start = type == INT
                     ? graph.addConstant(INT, {}, static_cast<int>(startBits), {debug, "start"})
                     : graph.addConstant(UNSIGNED_INT, {}, startBits, {debug, "start"});
  Tensor more = graph.addVariable(BOOL, {}, {debug, "more"});
  graph.setTileMapping(start, 0);
  graph.setTileMapping(more, 0);
  ComputeSet cs = graph.addComputeSet({debug, "counter"});
  VertexRef v = graph.addVertex(cs, util::templateVertex("aspen::ops::ForLoopCounter", type));
  graph.setTileMapping(v, 0);
  graph.connect(v["count"], count.reshape({}));
  graph.connect(v["limit"], countLimit.reshape({}));
  graph.connect(v["more"], more);
  graph.setInitialValue(v["step"], countStep);
  return program::Sequence({program::Copy(start, count.reshape({})),
                            program::RepeatWhileTrue(program::Execute(cs), more, body, debug)},
                           debug);
}

program::Sequence countedForLoop(Graph &graph, int initialCount, const Tensor &countLimit,
                                 int countStep, const program::Program &body,
                                 const DebugContext &debug) {
  Tensor count = graph.addVariable(countLimit.elementType(), {}, {debug, "count"});
  graph.setTileMapping(count, 0);
  return countedForLoop(graph, count, initialCount, countLimit, countStep, body, debug);
}

} // namespace aspen::ops
