// The vanilla RNN (popnn's Recurrent.hpp): y_t = nl(x_t . Wff + y_{t-1} . Wfb + b).
//
// T = steps, B = batch, I = input size, H = output size. Shapes (docs/recurrent.md):
//   input x [T, B, I], weights Wff ("weightsInput") [I, H], Wfb ("weightsFeedback") [H, H],
//   biases b [H], state y [B, H], outputs (the forward state of every step) [T, B, H].
// nonLinearityType: SIGMOID, HARD_SIGMOID, RELU, TANH or a softmax kind (over H); the kinds whose
// gradient needs the forward input (GELU, GELU_ERF, SWISH) are refused: the layer keeps only
// its outputs. All tensors of one type, FLOAT or HALF.
//
//   forwardWeightInput(x, Wff) -> x . Wff [T, B, H], one product for all steps
//   forwardIterate(ff [T, B, H], y0 [B, H], Wfb, b, nl) -> y [T, B, H], a loop in the device
//     program. Where the LSTM's and the GRU's stepMethod auto would fuse (an element-wise nl,
//     batches of 2 to 64, or 1 over enough steps, on a target that is not a GPU, packed
//     weights that fit), each step is one compute set on Wfb packed once (the product,
//     the additions and nl fused; the same roundings, the product's sums in another order).
//     rnnBwdSequence's loop is fused on the same condition (delta_{t+1} . Wfb^T, + dy_t and
//     nl' in one compute set a step, on Wfb^T packed once a run).
//   rnnFwdSequence(y0, weightedIn* (ff, or null to weigh x here), b, Wff, Wfb, x, nl) -> y
//   backwardGradientStep(dy_t [B, H], bwdState, y_t, [Wff,] Wfb, nl) -> [{dx_t [B, I],}] delta_t:
//     bwdState is delta_{t+1}, the gradient at the adder of the next step (zero for the last
//     one, createBwdState); delta_t = nl'(y_t) * (dy_t + delta_{t+1} . Wfb^T), and
//     dx_t = delta_t . Wff^T.
//   paramDeltaUpdate(delta_t, x_t, y_{t-1}, dWff, dWfb, db): dWff += x_t^T delta_t,
//     dWfb += y_{t-1}^T delta_t, db += sum_b delta_t (the caller zeroes the accumulators first)
//   rnnBwdSequence(doWU, ignoreInputGradientCalc, y0, y, b, Wff, Wfb, dy [T, B, H], x, nl)
//     -> {dx [T, B, I] (invalid when ignored), dWff, dWfb, db (invalid without doWU)}: the whole
//     backward pass, a reverse loop in the device program, then one product each for dx and
//     the weight gradients.
// Errors: shape_error / type_error naming the argument, invalid_option for a refused kind.
// Lengths, directions, final states and stacks: RecurrentStack.hpp (rnn::rnnStackFwd), an Aspen
// extension (docs/recurrent.md, "Stacks in one call").
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/NonLinearityDef.hpp>

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

namespace aspen::nn::rnn {

ASPEN_API std::vector<std::pair<linalg::MatMulParams, OptionFlags>>
getMatMulPrePlanParameters(std::size_t numSteps, std::size_t batchSize, std::size_t inputSize,
                           std::size_t outputSize, const Type &dType,
                           const Type &partialsType = FLOAT, bool inferenceOnly = false,
                           bool hasFeedforwardWeights = true);

// Multiply-adds count two FLOPs; the non-linearity is not counted.
//   fwd: T*B*(2*I*H*[weightInput] + 2*H*H + 2H (the two additions))
//   bwd: T*B*(2*H*H + H + 2*I*H*[calcInputGrad])
//   wu:  T*B*(2*I*H + 2*H*H + H)
ASPEN_API std::uint64_t getFwdFlops(unsigned sequenceSize, unsigned batchSize, unsigned inputSize,
                                    unsigned outputSize, bool weightInput = true);
ASPEN_API std::uint64_t getBwdFlops(unsigned sequenceSize, unsigned batchSize, unsigned inputSize,
                                    unsigned outputSize, bool calcInputGrad = true);
ASPEN_API std::uint64_t getWuFlops(unsigned sequenceSize, unsigned batchSize, unsigned inputSize,
                                   unsigned outputSize);

ASPEN_API Tensor createInput(Graph &graph, unsigned numSteps, unsigned batchSize,
                             unsigned inputSize, unsigned outputSize, const Type &dType,
                             const Type &partialsType = FLOAT, bool inferenceOnly = false,
                             const DebugContext &debug = {},
                             linalg::PlanningCache *cache = nullptr);
// [B, H]; zeroed in prog when initState.
ASPEN_API Tensor createFwdState(Graph &graph, const Type &dType, unsigned batchSize,
                                unsigned outputSize, program::Sequence &prog, bool initState,
                                bool inferenceOnly, const DebugContext &debug = {},
                                linalg::PlanningCache *cache = nullptr);
// The previous output held by a forward state: the state itself (a [B, H] view).
ASPEN_API Tensor getOutputFromFwdState(const Tensor &fwdState);
// [I, H]
ASPEN_API Tensor createWeightsInput(Graph &graph, unsigned sequenceSize, unsigned batchSize,
                                    unsigned inputSize, unsigned outputSize, const Type &dType,
                                    const Type &partialsType = FLOAT, bool inferenceOnly = false,
                                    const DebugContext &debug = {},
                                    linalg::PlanningCache *cache = nullptr);
// [H, H]
ASPEN_API Tensor createWeightsFeedback(Graph &graph, unsigned batchSize, unsigned outputSize,
                                       const Type &dType, const Type &partialsType = FLOAT,
                                       bool inferenceOnly = false, const DebugContext &debug = {},
                                       linalg::PlanningCache *cache = nullptr);

ASPEN_API Tensor forwardWeightInput(Graph &graph, const Tensor &actIn, const Tensor &weights,
                                    program::Sequence &prog, const Type &partialsType = FLOAT,
                                    bool inferenceOnly = false, const DebugContext &debug = {},
                                    linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor forwardIterate(Graph &graph, const Tensor &feedFwdIn, const Tensor &initState,
                                const Tensor &feedbackWeights, const Tensor &biases,
                                program::Sequence &prog, NonLinearityType nonLinearityType,
                                const Type &partialsType = FLOAT, bool inferenceOnly = false,
                                const DebugContext &debug = {},
                                linalg::PlanningCache *cache = nullptr);

// [B, H], zeroed in prog.
ASPEN_API Tensor createBwdState(Graph &graph, const Type &dType, unsigned batchSize,
                                unsigned outputSize, program::Sequence &prog,
                                const DebugContext &debug = {},
                                linalg::PlanningCache *cache = nullptr);
ASPEN_API std::pair<Tensor, Tensor>
backwardGradientStep(Graph &graph, const Tensor &nextLayerGrad, const Tensor &bwdState,
                     const Tensor &actOut, const Tensor &weightsInput,
                     const Tensor &weightsFeedback, program::Sequence &prog,
                     NonLinearityType nonLinearityType, const Type &partialsType = FLOAT,
                     const DebugContext &debug = {}, linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor backwardGradientStep(Graph &graph, const Tensor &nextLayerGrad,
                                      const Tensor &bwdState, const Tensor &actOut,
                                      const Tensor &weightsFeedback, program::Sequence &prog,
                                      NonLinearityType nonLinearityType,
                                      const Type &partialsType = FLOAT,
                                      const DebugContext &debug = {},
                                      linalg::PlanningCache *cache = nullptr);
ASPEN_API void paramDeltaUpdate(Graph &graph, const Tensor &bwdState, const Tensor &actIn,
                                const Tensor &prevOut, Tensor &weightsInputDeltasAcc,
                                Tensor &weightsFeedbackDeltasAcc, Tensor &biasDeltasAcc,
                                program::Sequence &prog, const Type &partialsType = FLOAT,
                                const DebugContext &debug = {},
                                linalg::PlanningCache *cache = nullptr);

ASPEN_API Tensor rnnFwdSequence(Graph &graph, program::Sequence &prog, const Tensor &fwdStateInit,
                                const Tensor *weightedIn, const Tensor &biases,
                                const Tensor &feedFwdWeights, const Tensor &feedbackWeights,
                                const Tensor &prevLayerActs,
                                const NonLinearityType &nonLinearityType, const Type &partialsType,
                                bool inferenceOnly, const DebugContext &debug = {},
                                linalg::PlanningCache *cache = nullptr);
ASPEN_API std::tuple<Tensor, Tensor, Tensor, Tensor>
rnnBwdSequence(Graph &graph, bool doWU, bool ignoreInputGradientCalc, program::Sequence &prog,
               const Tensor &fwdStateInit, const Tensor &fwdState, const Tensor &biases,
               const Tensor &feedFwdWeights, const Tensor &feedbackWeights,
               const Tensor &outGradient, const Tensor &actIn,
               const NonLinearityType &nonLinearityType, const Type &partialsType,
               const DebugContext &debug = {}, linalg::PlanningCache *cache = nullptr);

} // namespace aspen::nn::rnn
