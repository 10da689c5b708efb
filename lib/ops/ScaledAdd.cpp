// scaledAddTo / scaledSubtractFrom: one ScaledAdd<TA,TB,TS> vertex per tile over A's regions,
// with B's matching elements and the two scales as scalar tensors (host scales become
// constants on tile 0).
#include "FillRegions.hpp"
#include "support/OptionParsing.hpp"

#include <aspen/ops/ScaledAdd.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

#include <limits>

#include <optional>

namespace aspen::ops {

namespace {

// The (A, B, scale) type triples that codelets/ops/scaledadd.cpp instantiates.
struct ScaledAddTypes {
  Type a, b, scale;
};
constexpr ScaledAddTypes kScaledAddTypes[] = {
    {FLOAT, FLOAT, FLOAT}, {FLOAT, FLOAT, HALF},
    {FLOAT, HALF, FLOAT},  {FLOAT, HALF, HALF},
    {HALF, FLOAT, FLOAT},  {HALF, FLOAT, HALF},
    {HALF, HALF, FLOAT},   {HALF, HALF, HALF},
    {INT, INT, INT},       {UNSIGNED_INT, UNSIGNED_INT, UNSIGNED_INT},
};

bool supported(Type a, Type b, Type scale) {
  for (const auto &t : kScaledAddTypes)
    if (t.a == a && t.b == b && t.scale == scale)
      return true;
  return false;
}

// A scale as the caller gave it: a host value or a scalar tensor.
struct Scale {
  std::optional<float> value;
  Tensor tensor;
};

void scaledAdd(Graph &graph, const Tensor &A, const Scale &scaleA, const Tensor &B,
               const Scale &scaleB, bool subtract, program::Sequence &prog,
               const DebugContext &debug, const OptionFlags &options,
               ScaledAddSpecialisation speciality = ScaledAddSpecialisation::DEFAULT) {
  const std::string op = subtract ? "scaledSubtractFrom" : "scaledAddTo";
  if (speciality != ScaledAddSpecialisation::DEFAULT &&
      speciality != ScaledAddSpecialisation::X_MINUS_AX_PLUS_BY)
    throw invalid_option(fmt::format("{}: speciality {} is not a ScaledAddSpecialisation "
                                     "(DEFAULT or X_MINUS_AX_PLUS_BY)",
                                     op, static_cast<int>(speciality)));
  // Accepted for popops compatibility, without effect: one implementation, and the scale is
  // always applied in float (popops falls back to float when a float scale cast to half would
  // be off by more than scaleFloatToHalfTolerance; Aspen never casts it).
  bool optimizeForSpeed = false;
  double scaleFloatToHalfTolerance = 1e-6;
  aspen::detail::OptionSpec(op)
      .boolean("optimizeForSpeed", optimizeForSpeed)
      .number("scaleFloatToHalfTolerance", scaleFloatToHalfTolerance, 0.0,
              std::numeric_limits<double>::infinity())
      .parse(options);
  if (A.shape() != B.shape())
    throw shape_error(fmt::format("{}: A {} and B {} must have the same shape, but have {} and {}",
                                  op, A.getDebugStr(), B.getDebugStr(), A.shapeToString(),
                                  B.shapeToString()));
  const Type typeA = A.elementType(), typeB = B.elementType();
  Type scaleType = typeA.isFloatingPoint() ? FLOAT : typeA;
  for (const Scale *s : {&scaleA, &scaleB}) {
    if (s->value)
      continue;
    const Tensor &t = s->tensor;
    if (t.numElements() != 1)
      throw shape_error(fmt::format("{}: scale tensor {} must have one element, but has shape {}",
                                    op, t.getDebugStr(), t.shapeToString()));
    const bool allowed =
        typeA.isFloatingPoint() ? t.elementType().isFloatingPoint() : t.elementType() == typeA;
    if (!allowed)
      throw type_error(fmt::format("{}: scale tensor {} has type {}; for A of type {} a scale "
                                   "must have type {}",
                                   op, t.getDebugStr(), t.elementType().toString(),
                                   typeA.toString(),
                                   typeA.isFloatingPoint() ? "float or half" : typeA.toString()));
    scaleType = t.elementType();
  }
  if (!scaleA.value && !scaleB.value && scaleA.tensor.elementType() != scaleB.tensor.elementType())
    throw type_error(fmt::format(
        "{}: scale tensors {} and {} must have the same type, not {} and {}", op,
        scaleA.tensor.getDebugStr(), scaleB.tensor.getDebugStr(),
        scaleA.tensor.elementType().toString(), scaleB.tensor.elementType().toString()));
  if (!supported(typeA, typeB, scaleType))
    throw type_error(fmt::format("{}: A {} of type {} with B {} of type {} is not supported; A and "
                                 "B must be float or half (any mix), or both int, or both "
                                 "unsigned int",
                                 op, A.getDebugStr(), typeA.toString(), B.getDebugStr(),
                                 typeB.toString()));
  detail::requireWritable(A, op);
  auto scaleTensor = [&](const Scale &s, const char *name) {
    return s.value ? detail::scalarConstant(graph, scaleType, *s.value, {debug, name})
                   : s.tensor.reshape({});
  };
  const Tensor a = scaleTensor(scaleA, "scaleA"), b = scaleTensor(scaleB, "scaleB");
  ComputeSet cs = graph.addComputeSet({debug, op});
  const Tensor flatA = A.flatten(), flatB = B.flatten();
  detail::addVertexPerTile(graph, cs, A,
                           util::templateVertex("aspen::ops::ScaledAdd", typeA, typeB, scaleType),
                           [&](VertexRef v, const std::vector<Interval> &regions) {
                             graph.connect(v["A"], detail::regionSlices(flatA, regions));
                             graph.connect(v["B"], detail::regionSlices(flatB, regions));
                             graph.connect(v["scaleA"], a);
                             graph.connect(v["scaleB"], b);
                             graph.setInitialValue(v["subtract"], subtract);
                             graph.setInitialValue(
                                 v["xMinusAx"],
                                 speciality == ScaledAddSpecialisation::X_MINUS_AX_PLUS_BY);
                           });
  prog.add(program::Execute(cs, debug));
}

Scale host(float v) { return {v, {}}; }
Scale device(const Tensor &t) { return {std::nullopt, t}; }

} // namespace

void scaledAddTo(Graph &graph, const Tensor &A, const Tensor &B, float scaleB,
                 program::Sequence &prog, const DebugContext &debug, const OptionFlags &options) {
  scaledAdd(graph, A, host(1.0f), B, host(scaleB), false, prog, debug, options);
}
void scaledAddTo(Graph &graph, const Tensor &A, const Tensor &B, const Tensor &scaleB,
                 program::Sequence &prog, const DebugContext &debug, const OptionFlags &options) {
  scaledAdd(graph, A, host(1.0f), B, device(scaleB), false, prog, debug, options);
}
void scaledAddTo(Graph &graph, const Tensor &A, float scaleA, const Tensor &B, float scaleB,
                 program::Sequence &prog, const DebugContext &debug, const OptionFlags &options) {
  scaledAdd(graph, A, host(scaleA), B, host(scaleB), false, prog, debug, options);
}
void scaledAddTo(Graph &graph, const Tensor &A, const Tensor &scaleA, const Tensor &B,
                 const Tensor &scaleB, program::Sequence &prog, const DebugContext &debug,
                 const OptionFlags &options) {
  scaledAdd(graph, A, device(scaleA), B, device(scaleB), false, prog, debug, options);
}

void scaledAddTo(Graph &graph, const Tensor &A, const Tensor &scaleA, const Tensor &B,
                 const Tensor &scaleB, program::Sequence &prog, ScaledAddSpecialisation speciality,
                 const DebugContext &debug, const OptionFlags &options) {
  scaledAdd(graph, A, device(scaleA), B, device(scaleB), false, prog, debug, options, speciality);
}
void scaledAddTo(Graph &graph, const Tensor &A, float scaleA, const Tensor &B, float scaleB,
                 program::Sequence &prog, ScaledAddSpecialisation speciality,
                 const DebugContext &debug, const OptionFlags &options) {
  scaledAdd(graph, A, host(scaleA), B, host(scaleB), false, prog, debug, options, speciality);
}

void scaledSubtractFrom(Graph &graph, const Tensor &A, const Tensor &B, float scaleB,
                        program::Sequence &prog, const DebugContext &debug,
                        const OptionFlags &options) {
  scaledAdd(graph, A, host(1.0f), B, host(scaleB), true, prog, debug, options);
}
void scaledSubtractFrom(Graph &graph, const Tensor &A, const Tensor &B, const Tensor &scaleB,
                        program::Sequence &prog, const DebugContext &debug,
                        const OptionFlags &options) {
  scaledAdd(graph, A, host(1.0f), B, device(scaleB), true, prog, debug, options);
}
void scaledSubtractFrom(Graph &graph, const Tensor &A, float scaleA, const Tensor &B, float scaleB,
                        program::Sequence &prog, const DebugContext &debug,
                        const OptionFlags &options) {
  scaledAdd(graph, A, host(scaleA), B, host(scaleB), true, prog, debug, options);
}
void scaledSubtractFrom(Graph &graph, const Tensor &A, const Tensor &scaleA, const Tensor &B,
                        const Tensor &scaleB, program::Sequence &prog, const DebugContext &debug,
                        const OptionFlags &options) {
  scaledAdd(graph, A, device(scaleA), B, device(scaleB), true, prog, debug, options);
}

} // namespace aspen::ops
