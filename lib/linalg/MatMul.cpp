// The matmul builders of aspen::linalg (MatMul.hpp) other than the planner's functions: operand
// checks, then the plan's compute sets (MatMulBuild.hpp), and tensors laid out for a plan
// (MatMulLayout.hpp).
#include "support/CheckedSize.hpp"
#include "linalg/MatMulBuild.hpp"
#include "linalg/MatMulLayout.hpp"
#include "linalg/MatMulPlanner.hpp"
#include "support/Writability.hpp"

#include <aspen/Error.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/Zero.hpp>
#include <aspen/util/TileMapping.hpp>

#include <fmt/format.h>

namespace aspen::linalg {

namespace {

using Shape = std::vector<std::size_t>;

std::string describe(const Tensor &t) {
  return fmt::format("{} {} of type {}", t.getDebugStr(), t.shapeToString(),
                     t.elementType().toString());
}

bool isMatMulType(Type t) { return t == FLOAT || t == HALF; }

// The output (G x M x N elements) and the multiply-accumulates (G x M x K x N, which the planner
// counts) must fit 64 bits: shape_error naming the sizes otherwise.
void checkProductSizes(std::size_t g, std::size_t m, std::size_t k, std::size_t n,
                       std::size_t elementBytes, const std::string &op) {
  aspen::detail::checkedElements<shape_error>(std::vector<std::size_t>{g, m, n}, elementBytes,
                                              [&] { return op + ": the output [G,M,N]"; });
  aspen::detail::checkedElements<shape_error>(
      std::vector<std::size_t>{g, m, k, n}, 1,
      [&] { return op + ": the multiply-accumulates [G,M,K,N]"; });
}

// Checks A and B (rank, inner dimensions, groups, types, mapping) and returns the [G,M,K] and
// [G,K,N] views.
std::pair<Tensor, Tensor> checkOperands(const Graph &graph, const Tensor &A, const Tensor &B,
                                        bool grouped, const std::string &op) {
  const unsigned rank = grouped ? 3 : 2;
  if (A.rank() != rank || B.rank() != rank)
    throw shape_error(fmt::format("{}: A {} and B {} must both have rank {}", op, describe(A),
                                  describe(B), rank));
  const Shape a = A.shape(), b = B.shape();
  if (grouped && a[0] != b[0])
    throw shape_error(fmt::format("{}: A {} and B {} must have the same number of groups "
                                  "(dimension 0), but have {} and {}",
                                  op, describe(A), describe(B), a[0], b[0]));
  if (a[rank - 1] != b[rank - 2])
    throw shape_error(fmt::format("{}: the inner dimensions of A {} and B {} must agree (A's "
                                  "columns {} against B's rows {})",
                                  op, describe(A), describe(B), a[rank - 1], b[rank - 2]));
  if (!isMatMulType(A.elementType()) || A.elementType() != B.elementType())
    throw type_error(fmt::format("{}: A {} and B {} must both be float or both be half", op,
                                 describe(A), describe(B)));
  checkProductSizes(grouped ? a[0] : 1, a[rank - 2], a[rank - 1], b[rank - 1],
                    A.elementType().size(), op);
  for (const Tensor *t : {&A, &B}) {
    std::size_t mapped = 0;
    for (const auto &intervals : graph.getTileMapping(*t, false))
      for (const Interval &i : intervals)
        mapped += i.size();
    if (mapped != t->numElements())
      throw invalid_tile_mapping(
          fmt::format("{}: operand {} of A {} . B {} is not completely mapped ({} of {} elements "
                      "have a tile)",
                      op, t == &A ? "A" : "B", describe(A), describe(B), mapped, t->numElements()));
  }
  if (grouped)
    return {A, B};
  return {A.expand({0}), B.expand({0})};
}

void checkOutput(const Tensor &out, const Tensor &A3, const Tensor &B3, const Tensor &A,
                 const Tensor &B, bool grouped, const std::string &op) {
  Shape expected{A3.dim(0), A3.dim(1), B3.dim(2)};
  if (!grouped)
    expected.erase(expected.begin());
  if (out.shape() != expected)
    throw shape_error(fmt::format("{}: output {} must have shape {} for A {} . B {}", op,
                                  describe(out), fmt::join(expected, "x"), describe(A),
                                  describe(B)));
  if (!isMatMulType(out.elementType()))
    throw type_error(fmt::format("{}: output {} must be float or half (A {}, B {})", op,
                                 describe(out), describe(A), describe(B)));
}

MatMulParams paramsOf(Type inputType, Type outputType, const Shape &aShape, const Shape &bShape) {
  return MatMulParams{inputType, outputType, aShape, bShape};
}

bool hasEmptyDimension(const Shape &a, const Shape &b) {
  for (const Shape *s : {&a, &b})
    for (std::size_t d : *s)
      if (d == 0)
        return true;
  return false;
}

// out (+)= k * A . B for checked operands; the shapes of A and B as the user gave them decide the
// plan (2-D or 3-D).
void build(Graph &graph, const Tensor &A, const Tensor &B, const Tensor &out, bool grouped,
           const std::optional<detail::MatMulScale> &scale, program::Sequence &prog,
           const DebugContext &debug, const OptionFlags &options, PlanningCache *cache,
           const std::string &op) {
  const auto [A3, B3] = checkOperands(graph, A, B, grouped, op);
  checkOutput(out, A3, B3, A, B, grouped, op);
  const Tensor out3 = grouped ? out : out.expand({0});
  if (out.numElements() == 0)
    return;
  if (A3.dim(2) == 0) { // an empty sum
    if (!scale)
      ops::zero(graph, out, prog, {debug, op + "/zero"});
    return;
  }
  const MatMulPlan plan = planMatMul(
      graph.getTarget(), paramsOf(A.elementType(), out.elementType(), A.shape(), B.shape()),
      options, cache);
  detail::buildMatMul(graph, plan, A3, B3, out3, scale, prog, {debug, op});
}

Tensor matMulTo(Graph &graph, const Tensor &A, const Tensor &B, bool grouped,
                const Type &outputType, program::Sequence &prog, const DebugContext &debug,
                const OptionFlags &options, PlanningCache *cache, const std::string &op) {
  const auto [A3, B3] = checkOperands(graph, A, B, grouped, op);
  if (!isMatMulType(outputType))
    throw type_error(fmt::format("{}: the output type {} of A {} . B {} must be float or half", op,
                                 outputType.toString(), describe(A), describe(B)));
  const Tensor out = (grouped ? createMatMulGroupedOutput : createMatMulOutput)(
      graph, A.elementType(), outputType, A.shape(), B.shape(), {debug, op + "/out"}, options,
      cache);
  build(graph, A, B, out, grouped, std::nullopt, prog, debug, options, cache, op);
  return out;
}

detail::MatMulScale hostScale(Graph &graph, float k, const DebugContext &debug) {
  Tensor c = graph.addConstant(FLOAT, {}, k, {debug, "k"});
  graph.setTileMapping(c, 0);
  return {c};
}

detail::MatMulScale tensorScale(const Tensor &k, const Tensor &C, const std::string &op) {
  if (k.numElements() != 1 || k.elementType() != FLOAT)
    throw type_error(fmt::format("{}: the scale k {} of C {} must be a one-element float tensor",
                                 op, describe(k), describe(C)));
  return {k.reshape({})};
}

void requireWritableOutput(const Tensor &out, const std::string &op) {
  aspen::detail::requireWritable(out, op + " output");
}

// A variable of `shape` ([M,K]-like or grouped) mapped by the plan's rule for `operand`.
Tensor createOperand(Graph &graph, Type type, Type inputType, Type outputType, const Shape &aShape,
                     const Shape &bShape, bool grouped, detail::MatMulOperand operand,
                     const DebugContext &debug, const OptionFlags &options, PlanningCache *cache) {
  const std::size_t rank = grouped ? 3 : 2;
  if (aShape.size() != rank || bShape.size() != rank)
    throw shape_error(fmt::format("create matmul tensor: shapes A [{}] and B [{}] must both have "
                                  "rank {}",
                                  fmt::join(aShape, ","), fmt::join(bShape, ","), rank));
  if (aShape[rank - 1] == bShape[rank - 2])
    checkProductSizes(rank == 3 ? aShape[0] : 1, aShape[rank - 2], aShape[rank - 1],
                      bShape[rank - 1], type.valid() ? type.size() : 1, "create matmul tensor");
  Shape shape = operand == detail::MatMulOperand::LHS   ? aShape
                : operand == detail::MatMulOperand::RHS ? bShape
                                                        : aShape;
  if (operand == detail::MatMulOperand::Output)
    shape.back() = bShape.back();
  if (hasEmptyDimension(aShape, bShape)) {
    Tensor t = graph.addVariable(type, shape, debug);
    util::mapTensorLinearly(graph, t);
    return t;
  }
  const MatMulPlan plan = planMatMul(
      graph.getTarget(), paramsOf(inputType, outputType, aShape, bShape), options, cache);
  Tensor t = graph.addVariable(type, shape, debug);
  detail::mapMatMulOperand(graph, grouped ? t : t.expand({0}), plan, operand);
  return t;
}

} // namespace

Tensor matMul(Graph &graph, const Tensor &A, const Tensor &B, program::Sequence &prog,
              const Type &outputType, const DebugContext &debug, const OptionFlags &options,
              PlanningCache *cache) {
  return matMulTo(graph, A, B, false, outputType, prog, debug, options, cache, "matMul");
}
Tensor matMul(Graph &graph, const Tensor &A, const Tensor &B, program::Sequence &prog,
              const DebugContext &debug, const OptionFlags &options, PlanningCache *cache) {
  return matMulTo(graph, A, B, false, A.elementType(), prog, debug, options, cache, "matMul");
}
void matMulWithOutput(Graph &graph, const Tensor &A, const Tensor &B, const Tensor &out,
                      program::Sequence &prog, const DebugContext &debug,
                      const OptionFlags &options, PlanningCache *cache) {
  requireWritableOutput(out, "matMulWithOutput");
  build(graph, A, B, out, false, std::nullopt, prog, debug, options, cache, "matMulWithOutput");
}
void matMulAcc(Graph &graph, const Tensor &C, float k, const Tensor &A, const Tensor &B,
               program::Sequence &prog, const DebugContext &debug, const OptionFlags &options,
               PlanningCache *cache) {
  requireWritableOutput(C, "matMulAcc");
  build(graph, A, B, C, false, hostScale(graph, k, debug), prog, debug, options, cache,
        "matMulAcc");
}
void matMulAcc(Graph &graph, const Tensor &C, const Tensor &k, const Tensor &A, const Tensor &B,
               program::Sequence &prog, const DebugContext &debug, const OptionFlags &options,
               PlanningCache *cache) {
  requireWritableOutput(C, "matMulAcc");
  build(graph, A, B, C, false, tensorScale(k, C, "matMulAcc"), prog, debug, options, cache,
        "matMulAcc");
}

Tensor matMulGrouped(Graph &graph, const Tensor &A, const Tensor &B, program::Sequence &prog,
                     const Type &outputType, const DebugContext &debug, const OptionFlags &options,
                     PlanningCache *cache) {
  return matMulTo(graph, A, B, true, outputType, prog, debug, options, cache, "matMulGrouped");
}
void matMulGroupedWithOutput(Graph &graph, const Tensor &A, const Tensor &B, const Tensor &out,
                             program::Sequence &prog, const DebugContext &debug,
                             const OptionFlags &options, PlanningCache *cache) {
  requireWritableOutput(out, "matMulGroupedWithOutput");
  build(graph, A, B, out, true, std::nullopt, prog, debug, options, cache,
        "matMulGroupedWithOutput");
}
void matMulGroupedAcc(Graph &graph, const Tensor &C, float k, const Tensor &A, const Tensor &B,
                      program::Sequence &prog, const DebugContext &debug,
                      const OptionFlags &options, PlanningCache *cache) {
  requireWritableOutput(C, "matMulGroupedAcc");
  build(graph, A, B, C, true, hostScale(graph, k, debug), prog, debug, options, cache,
        "matMulGroupedAcc");
}
void matMulGroupedAcc(Graph &graph, const Tensor &C, const Tensor &k, const Tensor &A,
                      const Tensor &B, program::Sequence &prog, const DebugContext &debug,
                      const OptionFlags &options, PlanningCache *cache) {
  requireWritableOutput(C, "matMulGroupedAcc");
  build(graph, A, B, C, true, tensorScale(k, C, "matMulGroupedAcc"), prog, debug, options, cache,
        "matMulGroupedAcc");
}

Tensor createMatMulInputLHS(Graph &graph, const Type &inputType, const Type &outputType,
                            const Shape &aShape, const Shape &bShape, const DebugContext &debug,
                            const OptionFlags &options, PlanningCache *cache) {
  return createOperand(graph, inputType, inputType, outputType, aShape, bShape, false,
                       detail::MatMulOperand::LHS, debug, options, cache);
}
Tensor createMatMulInputLHS(Graph &graph, const Type &dataType, const Shape &aShape,
                            const Shape &bShape, const DebugContext &debug,
                            const OptionFlags &options, PlanningCache *cache) {
  return createMatMulInputLHS(graph, dataType, dataType, aShape, bShape, debug, options, cache);
}
Tensor createMatMulInputRHS(Graph &graph, const Type &inputType, const Type &outputType,
                            const Shape &aShape, const Shape &bShape, const DebugContext &debug,
                            const OptionFlags &options, PlanningCache *cache) {
  return createOperand(graph, inputType, inputType, outputType, aShape, bShape, false,
                       detail::MatMulOperand::RHS, debug, options, cache);
}
Tensor createMatMulInputRHS(Graph &graph, const Type &dataType, const Shape &aShape,
                            const Shape &bShape, const DebugContext &debug,
                            const OptionFlags &options, PlanningCache *cache) {
  return createMatMulInputRHS(graph, dataType, dataType, aShape, bShape, debug, options, cache);
}
Tensor createMatMulOutput(Graph &graph, const Type &inputType, const Type &outputType,
                          const Shape &aShape, const Shape &bShape, const DebugContext &debug,
                          const OptionFlags &options, PlanningCache *cache) {
  return createOperand(graph, outputType, inputType, outputType, aShape, bShape, false,
                       detail::MatMulOperand::Output, debug, options, cache);
}
Tensor createMatMulGroupedInputLHS(Graph &graph, const Type &inputType, const Type &outputType,
                                   const Shape &aShape, const Shape &bShape,
                                   const DebugContext &debug, const OptionFlags &options,
                                   PlanningCache *cache) {
  return createOperand(graph, inputType, inputType, outputType, aShape, bShape, true,
                       detail::MatMulOperand::LHS, debug, options, cache);
}
Tensor createMatMulGroupedInputRHS(Graph &graph, const Type &inputType, const Type &outputType,
                                   const Shape &aShape, const Shape &bShape,
                                   const DebugContext &debug, const OptionFlags &options,
                                   PlanningCache *cache) {
  return createOperand(graph, inputType, inputType, outputType, aShape, bShape, true,
                       detail::MatMulOperand::RHS, debug, options, cache);
}
Tensor createMatMulGroupedOutput(Graph &graph, const Type &inputType, const Type &outputType,
                                 const Shape &aShape, const Shape &bShape,
                                 const DebugContext &debug, const OptionFlags &options,
                                 PlanningCache *cache) {
  return createOperand(graph, outputType, inputType, outputType, aShape, bShape, true,
                       detail::MatMulOperand::Output, debug, options, cache);
}

Tensor preArrangeMatMulInputRHS(Graph &graph, const Shape &aShape, const Tensor &B,
                                program::Sequence &prog, const Type &outputType,
                                const DebugContext &debug, const OptionFlags &options,
                                PlanningCache *cache) {
  const bool grouped = B.rank() == 3;
  Tensor arranged =
      createOperand(graph, B.elementType(), B.elementType(), outputType, aShape, B.shape(), grouped,
                    detail::MatMulOperand::RHS, {debug, "preArranged"}, options, cache);
  prog.add(program::Copy(B, arranged, false, {debug, "preArrange"}));
  return arranged;
}

} // namespace aspen::linalg
