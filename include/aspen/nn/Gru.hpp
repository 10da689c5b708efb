// GRU and AUGRU layers (popnn's Gru.hpp). The contract -- maths, shapes, options, variable
// lengths and where Aspen differs from popnn -- is docs/recurrent.md; this header gives the shapes.
//
// T = maxTimeSteps, B = batchSize, I = layerSizes[0], H = layerSizes[1]. Gates: reset (r),
// update (u), candidate (c); rho = recurrentActivation, phi = activation.
//   resetAfter false: r = rho(x.Wi_r + h.Wo_r + b_r), u = rho(x.Wi_u + h.Wo_u + b_u),
//                     c = phi(x.Wi_c + (r*h).Wo_c + b_c)
//   resetAfter true:  r, u as above with biases bx + bh; n = h.Wo_c + bh_c,
//                     c = phi(x.Wi_c + bx_c + r*n)
//   AUGRU:            u <- (1 - a_t) * u, a [B, T] broadcast over H
//   h' = u*h + (1-u)*c
//
// Tensors:
//   input            [T, B, I]            createInput
//   initial state    [B, H]               createInitialState
//   weights          GruWeights{inputWeights [3, I, H], outputWeights [3, H, H],
//                    biases [3, H] or [3, 2, H] with resetAfter ([g][0] input, [g][1] recurrent)},
//                    dimension 0 in params.cellOrder
//   attention        [B, T]               createAttention (AUGRU)
//   output           [T, B, H] (outputFullSequence) or [B, H] (each row's last output)
//   fwdIntermediates [T, n, B, H]: [r, u, c] (u after attention), then h_t when
//                    outputFullSequence is false, then n when resetAfter. Canonical order for any
//                    cellOrder. When the activation's gradient needs its input (gelu, gelu_erf,
//                    swish) or with activationClip, slot 2 holds the candidate's pre-activation
//                    instead of c; with activationClip the clipped pre-activations of r and u
//                    follow, the last two slots.
//   bwdIntermediates [T, 3, B, H]: the gradients of the gates' pre-activations, dimension 1 in
//                    cellOrder (as the weights).
// All tensors of params.dataType (FLOAT or HALF); timeSteps (or realTimeSteps) UNSIGNED_INT [1]
// or [B].
//
// Functions (the realTimeSteps overloads take the per-row lengths as an argument instead of
// through params; giving both is an error):
//   gruFwd(graph, params, stateInit, in, weights, intermediates*, prog, debug, options, cache)
//     -> output. intermediates may be null (inference); with inferenceOnly it must be.
//   gruBwd(graph, params, prog, fwdOutputInit, fwdIntermediates, weights, input, output,
//          outputGrad, inputGrad*, bwdIntermediates*, debug, options, cache)
//     -> gradient of the initial state [B, H]. inputGrad (needs calcInputGradients) receives
//     [T, B, I].
//   gruWU(graph, params, prog, fwdOutputInit, fwdIntermediates, bwdIntermediates, weights, input,
//         output, debug, options, cache) -> weight gradients (GruWeights, shapes as weights)
//   gruBwdWithWU(..., outputGrad, inputGrad*, weightsGrad&, ...) -> gradient of the initial state
//   auGruFwd / auGruBwd / auGruWU / auGruBwdWithWU: the same with the attention tensor; auGruBwd
//     and auGruBwdWithWU also return d(attention) [B, T] through attentionGrad*.
//
// Options (unknown keys and bad values raise invalid_option naming the key and allowed values):
//   inferenceOnly (false), partialsType (float|half; default float), availableMemoryProportion
//   ((0, 1], default 0.6), numShards (1..T; default estimated from the memory the sequence tensors
//   need), rnnCodeReuse (default: true when numShards > 1), rnnStepsPerWU (any unsigned integer,
//   as popnn: the weight update every k steps inside the backward loop, 0 or T and above = one
//   pass after it; default: one pass when the gate gradients of all steps fit the memory budget,
//   else the largest k that fits), hardSigmoidGradient (poplibs|exact, default poplibs; as the
//   LSTM's: PopLibs' 0.2 wherever the output is in [0, 1], or the true derivative, 0 outside
//   (-2.5, 2.5)), stepMethod (auto|fused|productThenCell, an Aspen extension as the LSTM's;
//   default auto): productThenCell multiplies h by Wo with matMul and runs the cells' compute
//   sets; fused packs Wo once a run into panels of 16 units of one gate and makes each step one
//   compute set (resetAfter true) or two (resetAfter false, whose candidate needs r*h of every
//   unit) whose vertices multiply by their panels, finish the cell on the results and read and
//   write the step's part of the sequences themselves (rnnCodeReuse is then ignored). fused
//   needs element-wise activations; auto chooses it then for batches of 2 to 64, and of 1 with
//   inferenceOnly (the weights are packed once, again only when they are written) or when the
//   sequence pays for packing every run (T >= 3 H^2 x 1.1 ns / 30 us), when the packed copy
//   (3H^2 floats) fits half of the tiles' memory, except on GPU targets. The backward loop
//   (the AUGRU's too) is fused wherever the forward's is and the gate gradients of every
//   step are kept (not with rnnStepsPerWU interleaving the weight update): a step is one
//   compute set (resetAfter true; two without) multiplying the next step's gate gradients by
//   Wo^T (packed every run) and running the backward cell on the result. The two differ by the rounding of the products' sums;
//   the fused steps' results are the same bits for any number of tiles or threads. Results do
//   not depend on numShards or rnnCodeReuse, nor on rnnStepsPerWU beyond rounding of the sums.
//   preCalcWeights (an Aspen extension for the GRU; default true): x.Wi for every step in one
//   product before the loop; false: fused steps in one shard weigh their input themselves, a
//   compute set of input product (Wi packed as Wo is) before the cell's (what a stack's
//   wavefront runs above its first layer, GruStack.hpp); other loops weigh it before the loop
//   either way. The two differ by the rounding of the products' sums.
//   direction (forward|reverse, an Aspen extension; default forward): as the LSTM's; the
//   AUGRU's attention [B, T] and its gradient stay in the caller's order too. A reverse layer
//   with lengths takes them in params (the timeSteps constructor), for every call: the
//   realTimeSteps overloads refuse direction reverse, as gruWU and auGruWU have no
//   realTimeSteps argument and could not pair each row's steps. Bidirectional layers and stacks
//   in one call: GruStack.hpp.
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/GruDef.hpp>
#include <aspen/nn/NonLinearityDef.hpp>
#include <aspen/nn/Rnn.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace aspen::nn::gru {

// {reset, update, candidate}
ASPEN_API std::vector<BasicGruCellUnit> getDefaultBasicGruCellOrder();

struct ASPEN_API GruParams {
  rnn::RnnParams rnn;
  // popnn's deprecated copies of rnn's fields, kept equal to them by the constructors.
  Type dataType;
  std::size_t batchSize;
  std::size_t timeSteps;
  std::vector<std::size_t> layerSizes;

  bool outputFullSequence = true;
  bool calcInputGradients = true;
  std::vector<BasicGruCellUnit> cellOrder = getDefaultBasicGruCellOrder();
  bool resetAfter = false;
  NonLinearityType activation = NonLinearityType::TANH;
  NonLinearityType recurrentActivation = NonLinearityType::SIGMOID;
  // An Aspen extension: ONNX's GRU clip, the three gates' pre-activations clipped to
  // [-threshold, threshold] before their activations (the candidate's after r*n or with r*h's
  // product, as ONNX and onnxruntime take it); the gradient does not pass a clipped one.
  // threshold > 0, rounded to dataType; both activations element-wise. With it
  // fwdIntermediates gain two slots, the last, holding the clipped pre-activations of r and u
  // (the candidate's slot holds its clipped pre-activation), and the steps are products then
  // cells (stepMethod fused and rnnPersistentKernel true are refused).
  struct ActivationClip {
    bool enabled = false;
    double threshold = 0.0;
  } activationClip;

  GruParams(Type dataType, std::size_t batchSize, std::size_t timeSteps,
            std::vector<std::size_t> layerSizes,
            NonLinearityType activation = NonLinearityType::TANH,
            NonLinearityType recurrentActivation = NonLinearityType::SIGMOID);
  GruParams(Type dataType, std::size_t batchSize, std::size_t maxTimeSteps,
            const Tensor &timeSteps, std::vector<std::size_t> layerSizes,
            NonLinearityType activation = NonLinearityType::TANH,
            NonLinearityType recurrentActivation = NonLinearityType::SIGMOID);
};

struct GruWeights {
  Tensor inputWeights;
  Tensor outputWeights;
  Tensor biases;
};

// Multiply-adds count two FLOPs; non-linearities are not counted.
//   fwd: T*B*(2*3H*(I + H) + 3H (biases) + 4H (cell: r*h or r*n, the blend))
//   bwd: T*B*(2*3H*(H + I*[calcInputGradients]) + 10H (gate gradients))
//   wu:  T*B*(2*3H*(I + H) + 3H (bias sums)) (6H with resetAfter)
ASPEN_API std::uint64_t getBasicGruCellFwdFlops(const GruParams &params);
ASPEN_API std::uint64_t getBasicGruCellBwdFlops(const GruParams &params);
ASPEN_API std::uint64_t getBasicGruCellWuFlops(const GruParams &params);

ASPEN_API Tensor createInput(Graph &graph, const GruParams &params, const DebugContext &debug,
                             const OptionFlags &options = {},
                             linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor createInitialState(Graph &graph, const GruParams &params,
                                    const DebugContext &debug, const OptionFlags &options = {},
                                    linalg::PlanningCache *cache = nullptr);
ASPEN_API void zeroInitialState(Graph &graph, const Tensor &initialState, program::Sequence &prog,
                                const DebugContext &debug = {});
ASPEN_API std::pair<Tensor, Tensor> createWeightsKernel(Graph &graph, const GruParams &params,
                                                        const DebugContext &debug,
                                                        const OptionFlags &options = {},
                                                        linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor createWeightsBiases(Graph &graph, const GruParams &params,
                                     const DebugContext &debug, const OptionFlags &options = {},
                                     linalg::PlanningCache *cache = nullptr);
ASPEN_API GruWeights createWeights(Graph &graph, const GruParams &params, const DebugContext &debug,
                                   const OptionFlags &options = {},
                                   linalg::PlanningCache *cache = nullptr);
// [B, T]
ASPEN_API Tensor createAttention(Graph &graph, const GruParams &params, const DebugContext &debug,
                                 const OptionFlags &options = {});

ASPEN_API Tensor gruFwd(Graph &graph, const GruParams &params, const Tensor &stateInit,
                        const Tensor &in, const GruWeights &weights, Tensor *intermediates,
                        program::Sequence &prog, const DebugContext &debug = {},
                        const OptionFlags &options = {}, linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor gruFwd(Graph &graph, const GruParams &params, const Tensor &stateInit,
                        const Tensor &in, const Tensor &realTimeSteps, const GruWeights &weights,
                        Tensor *intermediates, program::Sequence &prog,
                        const DebugContext &debug = {}, const OptionFlags &options = {},
                        linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor auGruFwd(Graph &graph, const GruParams &params, const Tensor &stateInit,
                          const Tensor &in, const GruWeights &weights, Tensor *intermediates,
                          const Tensor &attention, program::Sequence &prog,
                          const DebugContext &debug = {}, const OptionFlags &options = {},
                          linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor auGruFwd(Graph &graph, const GruParams &params, const Tensor &stateInit,
                          const Tensor &in, const Tensor &realTimeSteps, const GruWeights &weights,
                          Tensor *intermediates, const Tensor &attention, program::Sequence &prog,
                          const DebugContext &debug = {}, const OptionFlags &options = {},
                          linalg::PlanningCache *cache = nullptr);

ASPEN_API Tensor gruBwd(Graph &graph, const GruParams &params, program::Sequence &prog,
                        const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                        const GruWeights &weights, const Tensor &input, const Tensor &output,
                        const Tensor &outputGrad, Tensor *inputGrad, Tensor *bwdIntermediates,
                        const DebugContext &debug = {}, const OptionFlags &options = {},
                        linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor gruBwd(Graph &graph, const GruParams &params, program::Sequence &prog,
                        const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                        const GruWeights &weights, const Tensor &input, const Tensor &realTimeSteps,
                        const Tensor &output, const Tensor &outputGrad, Tensor *inputGrad,
                        Tensor *bwdIntermediates, const DebugContext &debug = {},
                        const OptionFlags &options = {}, linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor auGruBwd(Graph &graph, const GruParams &params, program::Sequence &prog,
                          const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                          const GruWeights &weights, const Tensor &input, const Tensor &output,
                          const Tensor &outputGrad, Tensor *inputGrad, Tensor *bwdIntermediates,
                          const Tensor &attention, Tensor *attentionGrad,
                          const DebugContext &debug = {}, const OptionFlags &options = {},
                          linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor auGruBwd(Graph &graph, const GruParams &params, program::Sequence &prog,
                          const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                          const GruWeights &weights, const Tensor &input,
                          const Tensor &realTimeSteps, const Tensor &output,
                          const Tensor &outputGrad, Tensor *inputGrad, Tensor *bwdIntermediates,
                          const Tensor &attention, Tensor *attentionGrad,
                          const DebugContext &debug = {}, const OptionFlags &options = {},
                          linalg::PlanningCache *cache = nullptr);

ASPEN_API GruWeights gruWU(Graph &graph, const GruParams &params, program::Sequence &prog,
                           const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                           const Tensor &bwdIntermediates, const GruWeights &weights,
                           const Tensor &input, const Tensor &output,
                           const DebugContext &debug = {}, const OptionFlags &options = {},
                           linalg::PlanningCache *cache = nullptr);
ASPEN_API GruWeights auGruWU(Graph &graph, const GruParams &params, program::Sequence &prog,
                             const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                             const Tensor &bwdIntermediates, const GruWeights &weights,
                             const Tensor &input, const Tensor &output,
                             const DebugContext &debug = {}, const OptionFlags &options = {},
                             linalg::PlanningCache *cache = nullptr);

ASPEN_API Tensor gruBwdWithWU(Graph &graph, const GruParams &params, program::Sequence &prog,
                              const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                              const GruWeights &weights, const Tensor &input, const Tensor &output,
                              const Tensor &outputGrad, Tensor *inputGrad, GruWeights &weightsGrad,
                              const DebugContext &debug = {}, const OptionFlags &options = {},
                              linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor gruBwdWithWU(Graph &graph, const GruParams &params, program::Sequence &prog,
                              const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                              const GruWeights &weights, const Tensor &input,
                              const Tensor &realTimeSteps, const Tensor &output,
                              const Tensor &outputGrad, Tensor *inputGrad, GruWeights &weightsGrad,
                              const DebugContext &debug = {}, const OptionFlags &options = {},
                              linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor auGruBwdWithWU(Graph &graph, const GruParams &params, program::Sequence &prog,
                                const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                                const GruWeights &weights, const Tensor &input,
                                const Tensor &output, const Tensor &outputGrad, Tensor *inputGrad,
                                GruWeights &weightsGrad, const Tensor &attention,
                                Tensor *attentionGrad, const DebugContext &debug = {},
                                const OptionFlags &options = {},
                                linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor auGruBwdWithWU(Graph &graph, const GruParams &params, program::Sequence &prog,
                                const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                                const GruWeights &weights, const Tensor &input,
                                const Tensor &realTimeSteps, const Tensor &output,
                                const Tensor &outputGrad, Tensor *inputGrad,
                                GruWeights &weightsGrad, const Tensor &attention,
                                Tensor *attentionGrad, const DebugContext &debug = {},
                                const OptionFlags &options = {},
                                linalg::PlanningCache *cache = nullptr);

} // namespace aspen::nn::gru
