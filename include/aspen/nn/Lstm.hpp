// LSTM layers (popnn's Lstm.hpp). The contract -- maths, shapes, options, variable lengths and
// where Aspen differs from popnn -- is docs/recurrent.md; this header gives the shapes.
//
// T = maxTimeSteps, B = batchSize, I = layerSizes[0], H = layerSizes[1]. Gates: forget (f),
// input (i), candidate (g), output (o); rho = recurrentActivation, phi = activation.
//   f = rho(a_f), i = rho(a_i), o = rho(a_o), g = phi(a_g), a_u = x.Wi[u] + h.Wo[u] + b[u]
//   c_t = f*c_{t-1} + i*g,  h_t = o*phi(c_t)
//
// Tensors:
//   input            [T, B, I]            createInput
//   state            LstmState{output [B, H], cellState [B, H]}   createInitialState
//   weights          LstmWeights{inputWeights [4, I, H], outputWeights [4, H, H], biases [4, H]},
//                    dimension 0 in params.cellOrder; created as views of one [I+H, 4H] matrix
//                    (or two, [I, 4H] and [H, 4H], with preCalcWeights)
//   output           [T, B, H] (outputFullSequence) or [B, H] (the last step's output)
//   fwdIntermediates [T, n, B, H]: n = 6 for recomputationMode none ([f, i, g, o, phi(c_t),
//                    c_{t-1}]), 4 for cellAndTanh ([f, i, g, o]), 0 for full; plus h_t when
//                    outputFullSequence is false. Gates in this canonical order for any cellOrder.
//   bwdIntermediates [T, 4, B, H]: the gate gradients, dimension 1 in cellOrder.
// All tensors of params.dataType (FLOAT or HALF); timeSteps UNSIGNED_INT [1] or [B].
//
// Projection (params.projSize = P > 0, an Aspen extension: PyTorch's proj_size, TensorFlow's
// num_proj): the cell's output m_t = o*phi(c_t) [B, H] is projected, h_t = m_t . Wp, so h is P
// wide (0 < P < H). Then the state's output is [B, P], weights.outputWeights [4, P, H],
// weights.projection [H, P] (invalid without a projection), the output [T, B, P] or [B, P],
// fwdIntermediates gain m_t (one more H slot, after the others; h_t's slot, kept when
// outputFullSequence is false, holds h_t in its first P columns) and bwdIntermediates are
// [T, 5, B, H], slot 4's first P columns holding dh_t, the gradient reaching h_t (zero past a
// row's length), which the projection's gradient dWp = sum_t m_t^T dh_t needs. A projected
// layer's steps are products then cells (stepMethod fused and rnnPersistentKernel true are
// refused) and its weight update runs in one pass after the backward loop (rnnStepsPerWU is
// not used).
//
// Functions:
//   lstmFwd(graph, params, prog, stateInit, weights, in, intermediates*, debug, options, cache)
//     -> output. Also lstmFwd(graph, params, stateInit, in, weights, intermediates*, prog, ...)
//     -> {output, final cell state}. intermediates may be null (inference); with inferenceOnly
//     it must be.
//   lstmBwd(graph, params, prog, fwdStateInit, fwdIntermediates, weights, input, output,
//           outputGrad, lastCellStateGrad* | lastStepStateGrad*, inputGrad*, bwdIntermediates*,
//           debug, options, cache) -> gradient of the initial state
//     outputGrad: output's shape. lastCellStateGrad [B, H] or lastStepStateGrad {output [B, H],
//     cellState [B, H]} (either member may be invalid): incoming gradients of the final state,
//     which with variable time steps is each row's state at its last step (rows past their
//     length carry the gradient back to it). inputGrad (needs calcInputGradients) receives
//     [T, B, I]; bwdIntermediates receives [T, 4, B, H].
//   lstmWU(graph, params, prog, fwdStateInit, fwdIntermediates, bwdIntermediates, weights, input,
//          output, debug, options, cache) -> weight gradients (LstmWeights, shapes as weights)
//     dWi[u] = sum_t x_t^T D_u, dWo[u] = sum_t h_{t-1}^T D_u, db[u] = sum_{t,b} D_u.
//   lstmBwdWithWU(..., outputGrad, lastCellStateGrad* | lastStepStateGrad*, inputGrad*,
//                 weightsGrad&, ...) -> gradient of the initial state; the weight gradients are
//     accumulated while the backward loop runs (every rnnStepsPerWU steps), or in one pass after.
//
// Options (unknown keys and bad values raise invalid_option naming the key and allowed values):
//   inferenceOnly (false), preCalcWeights: one [T*B, I] x [I, 4H] product before the loop, each
//   step then multiplying by Wo alone (default: true when its [T, B, 4H] result fits the memory
//   budget -- popnn's default is false; the results differ by rounding only),
//   partialsType (float|half; default float), weightAccumulatorsType (float|half; default the data
//   type), recomputationMode (none|cellAndTanh|full; default none), availableMemoryProportion
//   ((0, 1], default 0.6), numShards (1..T, shards share tiles when there are more shards than
//   tiles; default estimated from the memory the sequence tensors need), rnnCodeReuse (default:
//   true when numShards > 1), rnnStepsPerWU (any unsigned integer, as popnn: the weight update
//   every k steps inside the backward loop; 0, or T and above, = one weight-update pass after the
//   loop; default chosen from the memory budget), disableWUPartialInterleaving (false; true
//   limits the choice to every step or one pass), hardSigmoidGradient (poplibs|exact, default
//   poplibs: the derivative HARD_SIGMOID takes in the backward cell, as activation or
//   recurrentActivation -- poplibs is PopLibs' rule, 0.2 wherever the output is in [0, 1], so
//   0.2 for saturated inputs too; exact is the true derivative, 0.2 inside (-2.5, 2.5) and 0
//   outside; the C backend and aspen_torch use exact), stepMethod (auto|fused|productThenCell,
//   an Aspen extension; default auto): how a forward step computes. productThenCell is the
//   product h . Wo (or [x_t | h] . [Wi; Wo] without preCalcWeights; a matMul) and then the
//   cell's compute set; fused packs the weights the step multiplies by once a run into panels
//   of 4 units x 4 gates and makes each step one compute set whose vertices multiply h_{t-1}
//   (and x_t) by their panels, finish the cell on the results and read and write the step's
//   part of the sequences themselves (no product output, no slicing, storing or step-control
//   compute sets: one hand-off between threads a step; rnnCodeReuse is ignored). fused needs
//   element-wise activations; auto chooses it then for batches of 2 to 64, and of 1 with
//   inferenceOnly (the weights are packed once, again only when they are written) or when the
//   sequence is long enough to pay for packing every run (T >= H^2 / 6800), when the packed copy
//   (4H^2 floats, 4H(I+H) without preCalcWeights) fits half of the tiles' memory, except on
//   GPU targets. The backward loop is fused too wherever the forward's is and the gate
//   gradients of every step are kept (not with rnnStepsPerWU interleaving the weight update):
//   a step is one compute set multiplying delta_{t+1} by Wo^T (packed every run) and running
//   the backward cell on the result. The two differ by the rounding of the products' sums;
//   the fused steps' results are the same bits for any number of tiles or threads.
//   Results do not depend on numShards, rnnCodeReuse, rnnStepsPerWU or recomputationMode beyond
//   rounding of the weight-gradient sums. direction (forward|reverse, an Aspen extension;
//   default forward): reverse runs each row from its own last step (its length, or T) back to
//   step 0, with the same bits as the forward layer on each row's steps reversed; the outputs
//   stay in the caller's order, the final state is the state after step 0, and the forward,
//   backward and weight update of one layer must all be given it (the intermediates are kept
//   in the order the steps ran). A bidirectional layer is a forward and a reverse call whose
//   outputs are concatenated (docs/recurrent.md), or one lstmStackFwd call (LstmStack.hpp: stacks
//   and both directions in one call).
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/LstmDef.hpp>
#include <aspen/nn/NonLinearityDef.hpp>
#include <aspen/nn/Rnn.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace aspen::nn::lstm {

// {forget, input, candidate, output}
ASPEN_API std::vector<BasicLstmCellUnit> getDefaultBasicLstmCellOrder();

struct ASPEN_API LstmParams {
  rnn::RnnParams rnn;
  // popnn's deprecated copies of rnn's fields, kept equal to them by the constructors.
  Type dataType;
  std::size_t batchSize;
  std::size_t timeSteps;
  std::vector<std::size_t> layerSizes;

  bool outputFullSequence = true;
  // false skips the input's contribution x.Wi entirely (popnn: for benchmarking only).
  bool doInputWeightCalc = true;
  bool calcInputGradients = true;
  // Accepted for popnn compatibility: Aspen always returns each row's state at its last step.
  bool preserveFinalState = false;
  std::vector<BasicLstmCellUnit> cellOrder = getDefaultBasicLstmCellOrder();
  NonLinearityType activation = NonLinearityType::TANH;
  NonLinearityType recurrentActivation = NonLinearityType::SIGMOID;
  // An Aspen extension: the cell state clipped after each step, c_t = min(max(f c_{t-1} + i g,
  // min), max), before h_t = o phi(c_t) and the next step use it (cuDNN's CUDNN_RNN_CLIP_MINMAX;
  // TensorFlow's cell_clip c is [-c, c]; ONNX's LSTM clip is activationClip below, on the
  // activations' inputs). The gradient does not pass a clipped element. The bounds are rounded to dataType;
  // min < max, and both activations element-wise (not a softmax). A NaN stays NaN, or with
  // propagateNan false becomes min.
  struct CellClip {
    bool enabled = false;
    double min = 0.0, max = 0.0;
    bool propagateNan = true;
  } cellClip;
  // An Aspen extension: ONNX's LSTM clip, the inputs of every activation clipped to
  // [-threshold, threshold]: the four gates' pre-activations, and c_t where h_t = o phi(c_t)
  // takes it (c_t itself, carried to the next step, is not changed; cellClip is the clip of
  // c_t). The gradient does not pass a clipped input. threshold > 0, rounded to dataType; both
  // activations element-wise. With it fwdIntermediates' gate slots hold the (clipped)
  // pre-activations rather than the gates, and the steps are products then cells (stepMethod
  // fused and rnnPersistentKernel true are refused).
  struct ActivationClip {
    bool enabled = false;
    double threshold = 0.0;
  } activationClip;
  // The projection's size P (0 < P < H), 0 for none: see the top of this header.
  std::size_t projSize = 0;

  LstmParams(Type dataType, std::size_t batchSize, std::size_t timeSteps,
             std::vector<std::size_t> layerSizes,
             NonLinearityType activation = NonLinearityType::TANH,
             NonLinearityType recurrentActivation = NonLinearityType::SIGMOID);
  LstmParams(Type dataType, std::size_t batchSize, std::size_t maxTimeSteps,
             const Tensor &timeSteps, std::vector<std::size_t> layerSizes,
             NonLinearityType activation = NonLinearityType::TANH,
             NonLinearityType recurrentActivation = NonLinearityType::SIGMOID);
};

struct ASPEN_API LstmState {
  Tensor output;
  Tensor cellState;
  // [2, B, H]: output then cell state.
  Tensor getAsTensor() const;
};

struct LstmWeights {
  Tensor inputWeights;
  Tensor outputWeights;
  Tensor biases;
  Tensor projection; // [H, P] with params.projSize, else invalid
};

// Multiply-adds count two FLOPs; non-linearities are not counted (popnn's convention).
//   fwd: T*B*(2*4H*(I*[doInputWeightCalc] + H) + 4H (biases) + 3H (cell: 2 mul, 1 add) + H (out))
//   bwd: T*B*(2*4H*(H + I*[calcInputGradients]) + 10H (gate gradients))
//   wu:  T*B*(2*4H*(I + H) + 4H (bias sums))
// With a projection the recurrent products are P rather than H wide (the H in each term that
// multiplies by h), plus T*B*2HP for the projection in fwd (m . Wp), bwd (dh . Wp^T) and wu.
ASPEN_API std::uint64_t getBasicLstmCellFwdFlops(const LstmParams &params);
ASPEN_API std::uint64_t getBasicLstmCellBwdFlops(const LstmParams &params);
ASPEN_API std::uint64_t getBasicLstmCellWuFlops(const LstmParams &params);

// The matmuls the layer plans with these options (for preplanMatMuls).
ASPEN_API std::vector<std::pair<linalg::MatMulParams, OptionFlags>>
getMatMulPrePlanParameters(LstmParams params, OptionFlags options);

ASPEN_API Tensor createInput(Graph &graph, const LstmParams &params, const DebugContext &debug,
                             const OptionFlags &options = {},
                             linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor createInitialOutput(Graph &graph, const LstmParams &params,
                                     const DebugContext &debug, const OptionFlags &options = {},
                                     linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor createInitialCellState(Graph &graph, const LstmParams &params,
                                        const DebugContext &debug, const OptionFlags &options = {},
                                        linalg::PlanningCache *cache = nullptr);
ASPEN_API LstmState createInitialState(Graph &graph, const LstmParams &params,
                                       const DebugContext &debug, const OptionFlags &options = {},
                                       linalg::PlanningCache *cache = nullptr);
ASPEN_API void zeroInitialState(Graph &graph, const LstmState &initialState,
                                program::Sequence &prog, const DebugContext &debug = {});

// {inputWeights [4, I, H], outputWeights [4, H, H]}
ASPEN_API std::pair<Tensor, Tensor> createWeightsKernel(Graph &graph, const LstmParams &params,
                                                        const DebugContext &debug,
                                                        const OptionFlags &options = {},
                                                        linalg::PlanningCache *cache = nullptr);
// [H, P] (params.projSize must be non-zero)
ASPEN_API Tensor createWeightsProjection(Graph &graph, const LstmParams &params,
                                         const DebugContext &debug,
                                         const OptionFlags &options = {},
                                         linalg::PlanningCache *cache = nullptr);
// [4, H]
ASPEN_API Tensor createWeightsBiases(Graph &graph, const LstmParams &params,
                                     const DebugContext &debug, const OptionFlags &options = {},
                                     linalg::PlanningCache *cache = nullptr);
ASPEN_API LstmWeights createWeights(Graph &graph, const LstmParams &params,
                                    const DebugContext &debug, const OptionFlags &options = {},
                                    linalg::PlanningCache *cache = nullptr);

ASPEN_API Tensor lstmFwd(Graph &graph, const LstmParams &params, program::Sequence &prog,
                         const LstmState &stateInit, const LstmWeights &weights, const Tensor &in,
                         Tensor *intermediates, const DebugContext &debug = {},
                         const OptionFlags &options = {}, linalg::PlanningCache *cache = nullptr);
ASPEN_API std::pair<Tensor, Tensor> lstmFwd(Graph &graph, const LstmParams &params,
                                            const LstmState &stateInit, const Tensor &in,
                                            const LstmWeights &weights, Tensor *intermediates,
                                            program::Sequence &prog, const DebugContext &debug = {},
                                            const OptionFlags &options = {},
                                            linalg::PlanningCache *cache = nullptr);

ASPEN_API LstmState lstmBwd(Graph &graph, const LstmParams &params, program::Sequence &prog,
                            const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                            const LstmWeights &weights, const Tensor &input, const Tensor &output,
                            const Tensor &outputGrad, const Tensor *lastCellStateGrad,
                            Tensor *inputGrad, Tensor *bwdIntermediates,
                            const DebugContext &debug = {}, const OptionFlags &options = {},
                            linalg::PlanningCache *cache = nullptr);
ASPEN_API LstmState lstmBwd(Graph &graph, const LstmParams &params, program::Sequence &prog,
                            const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                            const LstmWeights &weights, const Tensor &input, const Tensor &output,
                            const Tensor &outputGrad, const LstmState *lastStepStateGrad,
                            Tensor *inputGrad, Tensor *bwdIntermediates,
                            const DebugContext &debug = {}, const OptionFlags &options = {},
                            linalg::PlanningCache *cache = nullptr);
// A literal nullptr for the incoming state gradient.
ASPEN_API LstmState lstmBwd(Graph &graph, const LstmParams &params, program::Sequence &prog,
                            const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                            const LstmWeights &weights, const Tensor &input, const Tensor &output,
                            const Tensor &outputGrad, std::nullptr_t, Tensor *inputGrad,
                            Tensor *bwdIntermediates, const DebugContext &debug = {},
                            const OptionFlags &options = {},
                            linalg::PlanningCache *cache = nullptr);

ASPEN_API LstmWeights lstmWU(Graph &graph, const LstmParams &params, program::Sequence &prog,
                             const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                             const Tensor &bwdIntermediates, const LstmWeights &weights,
                             const Tensor &input, const Tensor &output,
                             const DebugContext &debug = {}, const OptionFlags &options = {},
                             linalg::PlanningCache *cache = nullptr);

ASPEN_API LstmState lstmBwdWithWU(Graph &graph, const LstmParams &params, program::Sequence &prog,
                                  const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                                  const LstmWeights &weights, const Tensor &input,
                                  const Tensor &output, const Tensor &outputGrad,
                                  const Tensor *lastCellStateGrad, Tensor *inputGrad,
                                  LstmWeights &weightsGrad, const DebugContext &debug = {},
                                  const OptionFlags &options = {},
                                  linalg::PlanningCache *cache = nullptr);
ASPEN_API LstmState lstmBwdWithWU(Graph &graph, const LstmParams &params, program::Sequence &prog,
                                  const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                                  const LstmWeights &weights, const Tensor &input,
                                  const Tensor &output, const Tensor &outputGrad,
                                  const LstmState *lastStepStateGrad, Tensor *inputGrad,
                                  LstmWeights &weightsGrad, const DebugContext &debug = {},
                                  const OptionFlags &options = {},
                                  linalg::PlanningCache *cache = nullptr);
ASPEN_API LstmState lstmBwdWithWU(Graph &graph, const LstmParams &params, program::Sequence &prog,
                                  const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                                  const LstmWeights &weights, const Tensor &input,
                                  const Tensor &output, const Tensor &outputGrad, std::nullptr_t,
                                  Tensor *inputGrad, LstmWeights &weightsGrad,
                                  const DebugContext &debug = {}, const OptionFlags &options = {},
                                  linalg::PlanningCache *cache = nullptr);

} // namespace aspen::nn::lstm
