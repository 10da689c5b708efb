// Loss, accuracy, arg-max/arg-min and top-k (popnn's Loss.hpp).
//
// calcLoss(graph, modelOutputs, expected, loss, deltas, [deltasScale, modelOutputScaling,]
//          [numCorrect,] lossType, debug) -> Program
//   modelOutputs [B,C] FLOAT or HALF: for CROSS_ENTROPY_LOSS, probabilities (softmax already
//     applied), possibly scaled by modelOutputScaling (SOFTMAX_SCALED gives SOFTMAX_SCALING).
//   expected: labels [B] UNSIGNED_INT or INT, or targets [B,C] of modelOutputs' type (one-hot or
//     soft labels). A label equal to MASKED_LABEL_CODE (all bits set; -1 for INT) masks its row:
//     loss 0, deltas 0, never counted as correct. Any other label outside [0, C) matches no class.
//   loss [B] and deltas [B,C], of modelOutputs' type, are written. With e the one-hot row, S the
//     modelOutputScaling and d the deltasScale (scalar tensors of modelOutputs' type, default 1):
//       CROSS_ENTROPY_LOSS  deltas = d (p/S - e),  loss = -sum(e log(p/S + eps)), eps = FLT_MIN
//                           (the smallest normal float: p = 0 gives a finite loss of ~87.3)
//       SUM_SQUARED_LOSS    deltas = p - e,         loss = 1/2 sum((p - e)^2)   (scales unused)
//   numCorrect [1] or scalar UNSIGNED_INT, optional: ACCUMULATES (+=) the number of rows whose
//     first maximum is at the label (for [B,C] targets: at the targets' first maximum).
//   Computed in float for both types.
// calcAccuracy(graph, modelOutputs [B,C], expected [B] labels, numCorrect, debug) -> Program
//   numCorrect += number of correctly classified rows, as above. Also an overload appending to a
//   Sequence.
//
// argMax / argMin(graph, input [B,C], prog, debug) -> [B] UNSIGNED_INT
// maxAndArgMax / minAndArgMin(...) -> {values [B] of input's type, indices [B] UNSIGNED_INT}
//   input FLOAT, HALF, INT or UNSIGNED_INT with C >= 1. The first occurrence wins ties. NaN ranks
//   above every number for both (as NumPy's argmax/argmin): a row with a NaN gives the index of
//   its first NaN and the value NaN.
// topK(graph, input [B,C], Tensor &indices, K, sort, prog, debug) -> values [B,K]
//   The K largest elements of each row and (in `indices`, [B,K] UNSIGNED_INT) their positions,
//   always in descending order with equal values by ascending index (so `sort` = false gives the
//   same, sorted, result); NaN ranks above +inf. 1 <= K <= C.
// Results are mapped to the tile that owns each row's first element.
//
// Errors: shape_error (ranks, B or C mismatches between the tensors, empty rows for arg-max),
// type_error (element types, label types), index_error (K outside [1, C]).
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

#include <utility>

namespace aspen::nn {

// Unscoped, as popnn: popnn::CROSS_ENTROPY_LOSS.
// Its underlying type is fixed (int), so that a value outside the two, from a cast or a foreign
// caller, is well-defined and refused with invalid_option instead of being undefined behaviour.
enum LossType : int { SUM_SQUARED_LOSS, CROSS_ENTROPY_LOSS };

// The label value that masks a row (popops' MASKED_LABEL_CODE), converted to the label type.
// PopLibs' name is a macro (<popops/EncodingConstants.hpp>, 0xFFFFFFFFU: the same bits); the
// macro is set aside while this name is declared, so the two can be included in either order
// (after the macro is defined, the spelling means the macro).
#pragma push_macro("MASKED_LABEL_CODE")
#undef MASKED_LABEL_CODE
inline constexpr int MASKED_LABEL_CODE = -1;
#pragma pop_macro("MASKED_LABEL_CODE")

ASPEN_API program::Program calcLoss(Graph &graph, const Tensor &modelOutputs,
                                    const Tensor &expected, const Tensor &loss,
                                    const Tensor &deltas, const Tensor &deltasScale,
                                    const Tensor &modelOutputScaling, LossType lossType,
                                    const DebugContext &debug = {});
ASPEN_API program::Program calcLoss(Graph &graph, const Tensor &modelOutputs,
                                    const Tensor &expected, const Tensor &loss,
                                    const Tensor &deltas, LossType lossType,
                                    const DebugContext &debug = {});
ASPEN_API program::Program calcLoss(Graph &graph, const Tensor &modelOutputs,
                                    const Tensor &expected, const Tensor &loss,
                                    const Tensor &deltas, const Tensor &deltasScale,
                                    const Tensor &modelOutputScaling, const Tensor &numCorrect,
                                    LossType lossType, const DebugContext &debug = {});
ASPEN_API program::Program calcLoss(Graph &graph, const Tensor &modelOutputs,
                                    const Tensor &expected, const Tensor &loss,
                                    const Tensor &deltas, const Tensor &numCorrect,
                                    LossType lossType, const DebugContext &debug = {});

ASPEN_API program::Program calcAccuracy(Graph &graph, const Tensor &modelOutputs,
                                        const Tensor &expected, const Tensor &numCorrect,
                                        const DebugContext &debug = {});
ASPEN_API void calcAccuracy(Graph &graph, const Tensor &modelOutputs, const Tensor &expected,
                            const Tensor &numCorrect, program::Sequence &prog,
                            const DebugContext &debug = {});

ASPEN_API Tensor argMax(Graph &graph, const Tensor &input, program::Sequence &prog,
                        const DebugContext &debug = {});
ASPEN_API Tensor argMin(Graph &graph, const Tensor &input, program::Sequence &prog,
                        const DebugContext &debug = {});
ASPEN_API std::pair<Tensor, Tensor> maxAndArgMax(Graph &graph, const Tensor &input,
                                                 program::Sequence &prog,
                                                 const DebugContext &debug = {});
ASPEN_API std::pair<Tensor, Tensor> minAndArgMin(Graph &graph, const Tensor &input,
                                                 program::Sequence &prog,
                                                 const DebugContext &debug = {});

ASPEN_API Tensor topK(Graph &graph, const Tensor &input, Tensor &indices, unsigned K, bool sort,
                      program::Sequence &prog, const DebugContext &debug = {});

} // namespace aspen::nn
