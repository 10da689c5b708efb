// Convolutions (poplin/Convolution.hpp): forward, backward data, weight update and biases, in
// PopLibs' names and semantics. ConvParams.hpp says what a convolution computes; ConvPlan.hpp how
// Aspen computes it.
//
// Tensors (B batch, G groups, Ci / Co channels per group, F... the field, K... the kernel,
// O... = params.getOutputFieldShape()):
//   activations  [B, G*Ci, F...]  params.inputType     createInput
//   weights      [G, Co, Ci, K...] params.inputType    createWeights
//   output       [B, G*Co, O...]  params.outputType    createConvOutput, convolution
//   biases       [G*Co]           the output's type    createBiases
//
// Functions:
//   convolution(graph, in, weights, params, transposeAndFlipWeights, prog, debug, options,
//               cache) -> output. With transposeAndFlipWeights, `weights` are a forward
//     convolution's [G, Ci, Co, K...] (this convolution's Ci and Co swapped) and are used
//     transposed and flipped (weightsTransposeChansFlipXY): the backward-data pass is
//     convolution(zDeltas, fwdWeights, getGradientParams(fwd), true) -> the input gradient.
//   convolutionWithOutput(..., out, ...): the same into `out` (the output's shape and type).
//   weightsTransposeChansFlipXY(graph, weightsIn [G, Co, Ci, K...], weightsOut [G, Ci, Co,
//     K...], prog): weightsOut[g][ci][co][k...] = weightsIn[g][co][ci][K-1-k...] (a copy).
//   calculateWeightDeltas(graph, zDeltas [B, G*Co, O...], activations [B, G*Ci, F...], params
//     (the forward's), prog, ...) -> dW [G, Co, Ci, K...] of params.inputType: the gradient of
//     sum(output * zDeltas) with respect to the weights (0 for truncated kernel elements).
//   convolutionWeightUpdate(graph, zDeltas, weights, activations, params, scale, prog, ...):
//     weights += scale * calculateWeightDeltas(...); scale a float or a one-element FLOAT tensor
//     (PopLibs' tool passes -learningRate). Computed as an accumulating product: no deltas
//     tensor is made.
//   convolutionBiasUpdate(graph, zDeltas, biases, scale, options, prog, debug):
//     biases[c] += scale * sum over batch and output field of zDeltas[b][c][...].
//   addBias(graph, acts [B, C, ...], biases [C], prog): acts[b][c][...] += biases[c].
//   getFwdFlops / getBwdFlops / getWuFlops: 2 * the multiply-adds that meet real elements
//     (input, kernel and output padding and dilation holes excluded); the three passes compute
//     the same products, so they are equal. The perfect cycle counts divide them by the
//     target's peak matmul rate over all tiles (Target::getMatMulMacsPerCycle).
//
// Options (unknown keys and bad values raise aspen::invalid_option naming the key and the
// allowed values; convolutionValidateOptions checks them alone):
//   "pass"                       NONE (default), INFERENCE_FWD, TRAINING_FWD, TRAINING_BWD,
//                                TRAINING_WU, FC_INFERENCE_FWD, FC_TRAINING_FWD, FC_TRAINING_BWD,
//                                FC_TRAINING_WU: validated; each pass is planned on its own
//                                shapes, so it does not change the plan
//   "availableMemoryProportion"  (0, 1], default 0.6: the share of the target's memory one
//                                product's lowered input may use (the serial batch split),
//                                and a GPU library call's scratch (cuDNN's workspace, im2col)
//   "allowTF32"                  true | false (default): an Aspen extension; float library
//                                calls on a GPU may use TF32 tensor cores (10-bit mantissa)
//   "partialsType"               "float" (default) or "half" (HALF inputs only): the products'
//                                partials
//   "planConstraints"            JSON: {"method": "library" | "gemm" | "direct"},
//                                {"serial": {"batch": n}} and
//                                {"matMul": {...}} (the products' own planConstraints,
//                                MatMulPlan.hpp, e.g. {"method": "vertices"}); any other
//                                Aspen key is an error. PopLibs' keys (plan levels "0",
//                                "1", ..., "method" AMP/SLIC/HMAC/VMAC/OUTER_PRODUCT and the
//                                grouping keys) are checked for their form and have no effect
//   "use128BitConvUnitLoad", "enableMultiStageReduce", "enableFastReduce",
//   "enableConvDithering", "remapOutputTensor"  (true | false): PopLibs' IPU-only keys,
//                                validated and without effect
// Errors: the shape_error / type_error / invalid_option of ConvParams::validate(); a tensor whose
// shape or type is not the one the parameters give raises shape_error / type_error naming the
// tensor, both shapes and the parameters.
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/linalg/ConvParams.hpp>
#include <aspen/linalg/ConvPlan.hpp>
#include <aspen/linalg/MatMul.hpp>

#include <cstdint>
#include <iosfwd>
#include <set>
#include <tuple>

namespace aspen::linalg {

ASPEN_API Tensor createInput(Graph &graph, const ConvParams &params, const DebugContext &debug = {},
                             const OptionFlags &options = {}, PlanningCache *cache = nullptr);
ASPEN_API Tensor createWeights(Graph &graph, const ConvParams &params,
                               const DebugContext &debug = {}, const OptionFlags &options = {},
                               PlanningCache *cache = nullptr);
ASPEN_API Tensor createConvOutput(Graph &graph, const ConvParams &params,
                                  const DebugContext &debug = {}, const OptionFlags &options = {},
                                  PlanningCache *cache = nullptr);
// [C] for activations [B, C, ...], of their type, mapped linearly.
ASPEN_API Tensor createBiases(Graph &graph, const Tensor &acts,
                              const DebugContext &debug = {"biases"});
ASPEN_API Tensor createBiases(Graph &graph, const Tensor &acts, const ConvParams &params,
                              const DebugContext &debug = {"biases"},
                              const OptionFlags &options = {}, PlanningCache *cache = nullptr);

ASPEN_API Tensor convolution(Graph &graph, const Tensor &in, const Tensor &weights,
                             const ConvParams &params, bool transposeAndFlipWeights,
                             program::Sequence &prog, const DebugContext &debug = {},
                             const OptionFlags &options = {}, PlanningCache *cache = nullptr);
ASPEN_API void convolutionWithOutput(Graph &graph, const Tensor &in, const Tensor &weights,
                                     const Tensor &out, const ConvParams &params,
                                     bool transposeAndFlipWeights, program::Sequence &prog,
                                     const DebugContext &debug = {},
                                     const OptionFlags &options = {},
                                     PlanningCache *cache = nullptr);

ASPEN_API void weightsTransposeChansFlipXY(Graph &graph, const Tensor &weightsIn,
                                           const Tensor &weightsOut, program::Sequence &prog,
                                           const DebugContext &debug = {});

ASPEN_API Tensor calculateWeightDeltas(Graph &graph, const Tensor &zDeltas,
                                       const Tensor &activations, const ConvParams &params,
                                       program::Sequence &prog, const DebugContext &debug = {},
                                       const OptionFlags &options = {},
                                       PlanningCache *cache = nullptr);
ASPEN_API void convolutionWeightUpdate(Graph &graph, const Tensor &zDeltas, const Tensor &weights,
                                       const Tensor &activations, const ConvParams &params,
                                       const Tensor &scale, program::Sequence &prog,
                                       const DebugContext &debug = {},
                                       const OptionFlags &options = {},
                                       PlanningCache *cache = nullptr);
ASPEN_API void convolutionWeightUpdate(Graph &graph, const Tensor &zDeltas, const Tensor &weights,
                                       const Tensor &activations, const ConvParams &params,
                                       float scale, program::Sequence &prog,
                                       const DebugContext &debug = {},
                                       const OptionFlags &options = {},
                                       PlanningCache *cache = nullptr);
ASPEN_API void convolutionBiasUpdate(Graph &graph, const Tensor &zDeltas, const Tensor &biases,
                                     const Tensor &scale, const OptionFlags &options,
                                     program::Sequence &prog, const DebugContext &debug = {});
ASPEN_API void convolutionBiasUpdate(Graph &graph, const Tensor &zDeltas, const Tensor &biases,
                                     float scale, const OptionFlags &options,
                                     program::Sequence &prog, const DebugContext &debug = {});
ASPEN_API void addBias(Graph &graph, const Tensor &acts, const Tensor &biases,
                       program::Sequence &prog, const DebugContext &debug = {});

ASPEN_API std::uint64_t getFwdFlops(const ConvParams &params);
ASPEN_API std::uint64_t getBwdFlops(const ConvParams &params);
ASPEN_API std::uint64_t getWuFlops(const ConvParams &params);
ASPEN_API double getFwdPerfectCycleCount(const Graph &graph, const ConvParams &params);
ASPEN_API double getBwdPerfectCycleCount(const Graph &graph, const ConvParams &params);
ASPEN_API double getWuPerfectCycleCount(const Graph &graph, const ConvParams &params);

// Raises invalid_option for an unknown key or a bad value (the parameters' own checks apart).
ASPEN_API void convolutionValidateOptions(const OptionFlags &options);

// The plan a convolution of these parameters gets on graph's target (ConvPlan.hpp).
ASPEN_API ConvPlan getConvPlan(const Graph &graph, const ConvParams &params,
                               const OptionFlags &options = {}, PlanningCache *cache = nullptr);
// Plans every convolution and matmul of the lists into the cache (PopLibs' preplan, before the
// graph is built; a convolution's options pointer may be null).
using ConvPlanParams = std::tuple<const Target *, const ConvParams, const OptionFlags *>;
ASPEN_API void preplan(const std::set<ConvPlanParams> &convs,
                       const std::set<MatMulPlanParams> &matmuls, PlanningCache &cache);

// The plan as text (poplin's reportPlanInfo).
ASPEN_API void reportPlanInfo(std::ostream &out, const Graph &graph, const ConvParams &params,
                              const OptionFlags &options = {}, PlanningCache *cache = nullptr);

} // namespace aspen::linalg
