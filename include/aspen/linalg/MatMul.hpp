// Matrix multiplication (poplin/MatMul.hpp) and its planner.
//
// Shapes and types (aspen::shape_error / aspen::type_error otherwise, naming both operands):
//   matMul(graph, A[M,K], B[K,N], prog)                       -> C[M,N]
//   matMulGrouped(graph, A[G,M,K], B[G,K,N], prog)            -> C[G,M,N]
//   matMulWithOutput / matMulGroupedWithOutput                   write into `out` ([M,N] / [G,M,N])
//   matMulAcc(graph, C, k, A, B, prog)                           C += k * A.B   (k a float, or a
//                                                                  one-element FLOAT tensor)
// A and B: FLOAT or HALF, the same type; the output type is FLOAT or HALF (by default the input
// type). Operands may be any views (transposed, strided, sliced): a plan reads blocks of rows, and
// rows that are not contiguous are gathered by the compiler (the bytes appear in the profile as
// rearranged bytes). Operands must be completely mapped.
//
// Options (OptionFlags; unknown keys and bad values raise aspen::invalid_option naming the key and
// the allowed values):
//   "partialsType"               "float" (default) or "half" (half only with HALF inputs)
//   "availableMemoryProportion"  (0, 1], default 0.6: the share of a tile's bytes the plan's
//                                working set (operand blocks and partials) may use
//   "fullyConnectedPass"         NONE (default), INFERENCE_FWD, TRAINING_FWD, TRAINING_BWD,
//                                TRAINING_WU: which pass of a fully connected layer this is.
//                                Validated and accepted for Poplar compatibility; today it does
//                                not change the plan (each pass is planned on its own shapes)
//   "inputRHSIsPreArranged"      "true"/"false" (default false): B came from
//                                preArrangeMatMulInputRHS with the same parameters
//   "planConstraints"            JSON pinning parts of the plan (see MatMulPlan.hpp); an
//                                impossible constraint raises aspen::invalid_option naming it.
//                                PopLibs' form is accepted too (MatMulPlan.hpp says how)
//   "remapOutputTensor"          "true"/"false" (poplin's, default true) and
//   "enableFastReduce"           "true"/"false" (poplin's, default false): validated and
//                                accepted without effect (the planner lays out the output
//                                itself; partial sums have one reduction)
//
// PlanningCache: plans are deterministic functions of (target, params, options); a cache keeps
// them so the same matmul is planned once. Passing nullptr plans afresh.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/linalg/MatMulPlan.hpp>

#include <cstddef>
#include <iosfwd>
#include <set>
#include <vector>

namespace aspen::linalg {

ASPEN_API Tensor matMul(Graph &graph, const Tensor &A, const Tensor &B, program::Sequence &prog,
                        const Type &outputType, const DebugContext &debug = {},
                        const OptionFlags &options = {}, PlanningCache *cache = nullptr);
ASPEN_API Tensor matMul(Graph &graph, const Tensor &A, const Tensor &B, program::Sequence &prog,
                        const DebugContext &debug = {}, const OptionFlags &options = {},
                        PlanningCache *cache = nullptr);
ASPEN_API void matMulWithOutput(Graph &graph, const Tensor &A, const Tensor &B, const Tensor &out,
                                program::Sequence &prog, const DebugContext &debug = {},
                                const OptionFlags &options = {}, PlanningCache *cache = nullptr);
ASPEN_API void matMulAcc(Graph &graph, const Tensor &C, float k, const Tensor &A, const Tensor &B,
                         program::Sequence &prog, const DebugContext &debug = {},
                         const OptionFlags &options = {}, PlanningCache *cache = nullptr);
ASPEN_API void matMulAcc(Graph &graph, const Tensor &C, const Tensor &k, const Tensor &A,
                         const Tensor &B, program::Sequence &prog, const DebugContext &debug = {},
                         const OptionFlags &options = {}, PlanningCache *cache = nullptr);

ASPEN_API Tensor matMulGrouped(Graph &graph, const Tensor &A, const Tensor &B,
                               program::Sequence &prog, const Type &outputType,
                               const DebugContext &debug = {}, const OptionFlags &options = {},
                               PlanningCache *cache = nullptr);
ASPEN_API void matMulGroupedWithOutput(Graph &graph, const Tensor &A, const Tensor &B,
                                       const Tensor &out, program::Sequence &prog,
                                       const DebugContext &debug = {},
                                       const OptionFlags &options = {},
                                       PlanningCache *cache = nullptr);
ASPEN_API void matMulGroupedAcc(Graph &graph, const Tensor &C, float k, const Tensor &A,
                                const Tensor &B, program::Sequence &prog,
                                const DebugContext &debug = {}, const OptionFlags &options = {},
                                PlanningCache *cache = nullptr);
ASPEN_API void matMulGroupedAcc(Graph &graph, const Tensor &C, const Tensor &k, const Tensor &A,
                                const Tensor &B, program::Sequence &prog,
                                const DebugContext &debug = {}, const OptionFlags &options = {},
                                PlanningCache *cache = nullptr);

// Tensors laid out for the plan of the matmul with these shapes (aShape [M,K], bShape [K,N];
// grouped forms [G,M,K], [G,K,N]): each block lives on a tile that computes with it, so a matmul
// of tensors made here moves as little as the plan allows.
ASPEN_API Tensor createMatMulInputLHS(Graph &graph, const Type &inputType, const Type &outputType,
                                      const std::vector<std::size_t> &aShape,
                                      const std::vector<std::size_t> &bShape,
                                      const DebugContext &debug = {},
                                      const OptionFlags &options = {},
                                      PlanningCache *cache = nullptr);
ASPEN_API Tensor createMatMulInputLHS(Graph &graph, const Type &dataType,
                                      const std::vector<std::size_t> &aShape,
                                      const std::vector<std::size_t> &bShape,
                                      const DebugContext &debug = {},
                                      const OptionFlags &options = {},
                                      PlanningCache *cache = nullptr);
ASPEN_API Tensor createMatMulInputRHS(Graph &graph, const Type &inputType, const Type &outputType,
                                      const std::vector<std::size_t> &aShape,
                                      const std::vector<std::size_t> &bShape,
                                      const DebugContext &debug = {},
                                      const OptionFlags &options = {},
                                      PlanningCache *cache = nullptr);
ASPEN_API Tensor createMatMulInputRHS(Graph &graph, const Type &dataType,
                                      const std::vector<std::size_t> &aShape,
                                      const std::vector<std::size_t> &bShape,
                                      const DebugContext &debug = {},
                                      const OptionFlags &options = {},
                                      PlanningCache *cache = nullptr);
ASPEN_API Tensor createMatMulOutput(Graph &graph, const Type &inputType, const Type &outputType,
                                    const std::vector<std::size_t> &aShape,
                                    const std::vector<std::size_t> &bShape,
                                    const DebugContext &debug = {}, const OptionFlags &options = {},
                                    PlanningCache *cache = nullptr);
ASPEN_API Tensor createMatMulGroupedInputLHS(Graph &graph, const Type &inputType,
                                             const Type &outputType,
                                             const std::vector<std::size_t> &aShape,
                                             const std::vector<std::size_t> &bShape,
                                             const DebugContext &debug = {},
                                             const OptionFlags &options = {},
                                             PlanningCache *cache = nullptr);
ASPEN_API Tensor createMatMulGroupedInputRHS(Graph &graph, const Type &inputType,
                                             const Type &outputType,
                                             const std::vector<std::size_t> &aShape,
                                             const std::vector<std::size_t> &bShape,
                                             const DebugContext &debug = {},
                                             const OptionFlags &options = {},
                                             PlanningCache *cache = nullptr);
ASPEN_API Tensor createMatMulGroupedOutput(Graph &graph, const Type &inputType,
                                           const Type &outputType,
                                           const std::vector<std::size_t> &aShape,
                                           const std::vector<std::size_t> &bShape,
                                           const DebugContext &debug = {},
                                           const OptionFlags &options = {},
                                           PlanningCache *cache = nullptr);

// B rearranged (a copy added to prog) into the layout its plan reads with the least exchange;
// pass the result with option "inputRHSIsPreArranged" = "true". aShape is A's shape.
ASPEN_API Tensor preArrangeMatMulInputRHS(Graph &graph, const std::vector<std::size_t> &aShape,
                                          const Tensor &B, program::Sequence &prog,
                                          const Type &outputType, const DebugContext &debug = {},
                                          const OptionFlags &options = {},
                                          PlanningCache *cache = nullptr);

// The plan a matmul of these parameters gets on graph's target (shapes 2-D, or 3-D grouped).
ASPEN_API MatMulPlan getMatMulPlan(const Graph &graph, const Type &inputType,
                                   const Type &outputType, const std::vector<std::size_t> &aShape,
                                   const std::vector<std::size_t> &bShape,
                                   const OptionFlags &options = {}, PlanningCache *cache = nullptr);
// How many serial steps that plan takes (1 when everything fits at once).
ASPEN_API std::size_t getMatMulSerialSplits(const Graph &graph, const Type &inputType,
                                            const Type &outputType,
                                            const std::vector<std::size_t> &aShape,
                                            const std::vector<std::size_t> &bShape,
                                            const OptionFlags &options = {},
                                            PlanningCache *cache = nullptr);
// Writes the plan as text (poplin's matMulReportPlan).
ASPEN_API void matMulReportPlan(std::ostream &out, const Graph &graph, const Type &inputType,
                                const Type &outputType, const std::vector<std::size_t> &aShape,
                                const std::vector<std::size_t> &bShape,
                                const OptionFlags &options = {}, PlanningCache *cache = nullptr);
// The same for a grouped product (poplin's matMulGroupedReportPlan): aShape [G,M,K] and bShape
// [G,K,N]; other ranks raise shape_error naming both shapes.
ASPEN_API void matMulGroupedReportPlan(std::ostream &out, const Graph &graph,
                                       const Type &inputType, const Type &outputType,
                                       const std::vector<std::size_t> &aShape,
                                       const std::vector<std::size_t> &bShape,
                                       const OptionFlags &options = {},
                                       PlanningCache *cache = nullptr);

// Plans every matmul of the list into the cache (preplanning before the graph is built).
using MatMulPlanParams = std::tuple<const Target *, MatMulParams, const OptionFlags *>;
ASPEN_API void preplanMatMuls(const std::set<MatMulPlanParams> &matmuls, PlanningCache &cache);

} // namespace aspen::linalg
