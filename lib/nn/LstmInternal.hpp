// What the LSTM builders share (internal): options, parameter checks, the weight matrices as
// views, the cell vertices and the weight-gradient product.
#pragma once

#include "RnnLoop.hpp"

#include <aspen/BlockCodelets.hpp>
#include <aspen/nn/Lstm.hpp>

#include <array>
#include <optional>
#include <string>

namespace aspen::nn::lstm::detail {

enum class Recomputation { None, CellAndTanh, Full };
// How a forward step computes: the product h . Wo (a matMul) then the cell compute set, or one
// compute set of LstmFusedFwd vertices on weights packed once (program::Cached, LstmFused.cpp).
using rnn::detail::StepMethod;

struct LstmOptions {
  bool inferenceOnly = false;
  bool preCalcWeights = false;
  Type partialsType = FLOAT;
  Type accumulatorsType = FLOAT; // the data type unless given
  Recomputation recomputation = Recomputation::None;
  double availableMemoryProportion = 0.6;
  unsigned numShards = 1;
  bool codeReuse = false;
  std::optional<unsigned> stepsPerWU;
  bool disableWUPartialInterleaving = false;
  NonLinearityGradient hardSigmoidGradient = NonLinearityGradient::Popnn;
  StepMethod stepMethod = StepMethod::Auto;
  rnn::detail::PersistentOptions persistent;
  bool reverse = false; // the direction option
};

// Checks params (sizes, types, cell order, activations, timeSteps) and reads the options;
// `what` names the builder in messages.
LstmOptions parseOptions(const Graph &graph, const LstmParams &params, const OptionFlags &options,
                         const std::string &what);
void checkParams(const LstmParams &params, const std::string &what);
// shape_error / type_error naming `what` unless the tensors have the layer's shapes and type.
void checkWeights(const LstmParams &params, const LstmWeights &weights, const std::string &what);
void checkState(const LstmParams &params, const LstmState &state, const std::string &what);
void checkInput(const LstmParams &params, const Tensor &in, const std::string &what);

// The matmul options of the layer's products.
// The interleaved weight update's cadence k for lstmBwdWithWU / gruBwdWithWU (0: one pass after
// the backward loop): the rnnStepsPerWU option, or the largest window that fits the budget.
unsigned chooseStepsPerWU(const Graph &graph, const LstmParams &params, const LstmOptions &opts);

OptionFlags matMulOptions(const LstmOptions &opts, const char *pass);

// slotOf[gate] = the slot (dim 0 index of the weights) holding canonical gate `gate`.
std::array<unsigned, 4> slotsOf(const LstmParams &params);

// The width of h: params.projSize with a projection, else H.
inline std::size_t recurrentSize(const LstmParams &params) {
  return params.projSize ? params.projSize : params.rnn.layerSizes[1];
}

// Saved forward intermediates per step: the layout of docs/recurrent.md.
struct InterLayout {
  unsigned saveMode = 0; // 0 none, 1 gates, 2 gates + phi(c_t), c_{t-1}
  bool saveM = false;    // m_t = o*phi(c_t) (a projected layer), after the saveMode slots
  bool saveH = false;    // h_t, the last slot (its first P columns with a projection)
  unsigned cellSlots() const { return saveMode == 0 ? 0u : saveMode == 1 ? 4u : 6u; }
  unsigned count() const { return cellSlots() + (saveM ? 1u : 0u) + (saveH ? 1u : 0u); }
  // What the cell vertex writes: its own output (m_t with a projection) as its "h" slot.
  InterLayout cellPart() const { return saveM ? InterLayout{saveMode, false, true} : *this; }
};
InterLayout interLayout(const LstmParams &params, Recomputation mode);
// True when the activation's gradient needs its input: the candidate slot then holds the
// pre-activation and the phi(c_t) slot holds c_t.
bool rawCandidate(const LstmParams &params);
// A cell vertex's rawCandidate and cell-clip fields (cellClipMode, cellClipMin, cellClipMax)
// from params; a clip saves c_t raw (rawCandidate), which its gradient reads.
void setRawAndClip(Graph &graph, const VertexRef &v, const LstmParams &params);
// Why the layer's steps can only be products then cells (a projection, ONNX's activation clip),
// for messages; empty when the fused and persistent forms apply.
std::string perStepOnly(const LstmParams &params);

// Weights as matrices: inputWeights [4,I,H] -> [I, 4H], outputWeights -> [H, 4H] (column block
// s = slot s), biases [4, H].
Tensor asMatrix(const Tensor &weights);
// Reverse of asMatrix for a [n, 4H] matrix: [4, n, H].
Tensor fromMatrix(const Tensor &matrix);

// The fields of the step builder's LSTM vertices (CellSteps.hpp) for the rows `rows`.
// LstmCellFwd: pre [B, 4H] (slot columns), plus preIn of the same shape when valid (the
// pre-weighted input).
void connectCellFwd(Graph &graph, const LstmParams &params, VertexRef v,
                    const std::vector<Interval> &rows, const Tensor &pre, const Tensor &preIn,
                    const Tensor &bias, const Tensor &cState, const Tensor &hState,
                    const Tensor &out, const Tensor &inter, const InterLayout &layout,
                    const Tensor &mask);
// LstmCellBwd: fwd [4, B, H] canonical gates; cell [2, B, H]; delta [4, B, H] in slot order;
// outGrad may be invalid. opts.hardSigmoidGradient picks HARD_SIGMOID's derivative.
void connectCellBwd(Graph &graph, const LstmParams &params, const LstmOptions &opts, VertexRef v,
                    const std::vector<Interval> &rows, const Tensor &fwd, const Tensor &cell,
                    bool rawCell, const Tensor &outGrad, const Tensor &dhMM,
                    const Tensor &dhCarry, const Tensor &dcState, const Tensor &delta,
                    const Tensor &mask);
// The projected layer's steps: h = hNew in the rows whose mask is non-zero (RnnMaskedRows),
// and the gradient reaching h_t from dhMM, dhCarry and outGrad (LstmProjectionGrad; outGrad may
// be invalid), dhCarry updated as LstmCellBwd would.
void connectMaskedRows(Graph &graph, VertexRef v, const std::vector<Interval> &rows,
                       const Tensor &from, const Tensor &to, const Tensor &mask);
void connectProjectionGrad(Graph &graph, VertexRef v, const std::vector<Interval> &rows,
                           const Tensor &outGrad, const Tensor &dhMM, const Tensor &dhCarry,
                           const Tensor &dh, const Tensor &mask);
void addCellRecompute(Graph &graph, const LstmParams &params, ComputeSet cs, const Tensor &fwd,
                      const Tensor &cState, const Tensor &cPrev, const Tensor &cOut,
                      const Tensor &mask);

// acc [I+R+1, 4H] += [x | hPrev | 1]^T . delta over n steps: x [n, B, I] (invalid when the
// input is not weighted), hPrev [n, B, R] (R = recurrentSize), deltaRows [n*B, 4H] (column
// block s = slot s).
void accumulateWeightGrads(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                           const Tensor &x, const Tensor &hPrev, const Tensor &deltaRows,
                           const Tensor &acc, program::Sequence &prog, const DebugContext &debug,
                           linalg::PlanningCache *cache);

// What the forward pass makes before its loop: with preCalc the pre-weighted input [T, B, 4H]
// (x . Wi, one product added to prog), with fullSequence the output sequence [T, B, R], and
// with inter the intermediates [T, count, B, H] (*inter set to them; [T, 0, B, H] when the
// layout keeps none). Each invalid when not made.
struct ForwardSequences {
  Tensor weighted, outSeq, interSeq;
};
ForwardSequences forwardSequences(Graph &graph, const LstmParams &params,
                                  const LstmOptions &opts, const LstmWeights &weights,
                                  const Tensor &in, const InterLayout &layout, Tensor *inter,
                                  bool fullSequence, bool preCalc, program::Sequence &prog,
                                  const DebugContext &debug, linalg::PlanningCache *cache);
// The forward pass; intermediates (layout) written when inter is non-null. Returns
// {output sequence [T,B,H] or final output [B,H], final cell state}.
std::pair<Tensor, Tensor> forward(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                                  const LstmState &stateInit, const LstmWeights &weights,
                                  const Tensor &in, const InterLayout &layout, Tensor *inter,
                                  bool fullSequence, program::Sequence &prog,
                                  const DebugContext &debug, linalg::PlanningCache *cache);

// The fused forward step (LstmFused.cpp). usesFusedStep: whether the forward steps are fused,
// from opts.stepMethod (auto: fused for small batches on targets that are not GPUs whenever it
// applies, as the product on a GPU is a cuBLASLt call and a vertex computes its part on one
// thread, and larger batches are faster through the library product; LstmFused.cpp says
// where the line is). It applies
// to element-wise activations when each step multiplies h by Wo alone (preCalcWeights, or no
// input weights); fused asked for where it does not apply raises invalid_option.
bool usesFusedStep(const Graph &graph, const LstmParams &params, const LstmOptions &opts,
                   const std::string &what);

// The persistent forward (LstmPersistent.cpp): whether the forward loop is one co-resident
// launch of LstmPersistentFwd (option rnnPersistentKernel), its launch shape, whether the
// block's weights are staged in shared memory, and why not when it is not. `true` where the
// kernel cannot run raises invalid_option naming `what` and the limit.
using rnn::detail::PersistentChoice;
// backward: the choice of the backward loop (it stages delta_(t+1), 4H a row, not h).
PersistentChoice persistentChoice(const Graph &graph, const LstmParams &params,
                                  const LstmOptions &opts, const std::string &what,
                                  bool backward = false);
// The whole forward loop as one launch, in place of rnn::Rnn: weighted [T, B, 4H] is the
// pre-weighted input (invalid without input weights); outSeq and interSeq as fusedForward's.
// Returns {outSeq when valid, else the final output [B, H]; the final cell state}.
std::pair<Tensor, Tensor> persistentForward(Graph &graph, const LstmParams &params,
                                            const PersistentChoice &choice,
                                            const LstmState &init, const LstmWeights &weights,
                                            const Tensor &weighted, const Tensor &outSeq,
                                            const Tensor &interSeq, const InterLayout &layout,
                                            program::Sequence &prog, const DebugContext &debug);
// The backward loop as one launch of LstmPersistentBwd, in place of the rnn loop of
// LstmBwd.cpp, with fusedBackward's arguments (the weights rather than Wo^T): deltaRows
// [T, B, 4H] (one variable: the exchange) receives every step's gate gradients, dhCarry and dc
// are updated in place. The caller forms delta_0 . Wo^T after it.
void persistentBackward(Graph &graph, const LstmParams &params, const PersistentChoice &choice,
                        const LstmWeights &weights, const Tensor &gates, const Tensor &cellSeq,
                        const Tensor &outGrad, bool rawCell, bool popnnHardSigmoidGrad,
                        const Tensor &dhCarry, const Tensor &dc, const Tensor &deltaRows,
                        program::Sequence &prog, const DebugContext &debug);
struct FusedBlock {
  unsigned firstUnit, numUnits, tile;
  Tensor packed; // [panels * H * 16] float, on `tile`
};
// The blocks of units the fused step's vertices take, their packed weights filled from Wo
// (and Wi before it when the step weighs its input) by a Cached step added to prog (once, and again when they are written).
std::vector<FusedBlock> packFusedWeights(Graph &graph, const LstmParams &params,
                                         const LstmOptions &opts, const LstmWeights &weights,
                                         program::Sequence &prog, const DebugContext &debug);
// The whole forward loop with fused steps, in place of rnn::Rnn: packs the weights, then per
// shard one compute set a step (LstmFusedFwd and the step's clock). input [T, B, I] is valid
// when the steps weigh it ([x_t | h] . [Wi; Wo] in one product); weighted [T, B, 4H] is the
// pre-weighted input otherwise (invalid without input weights); outSeq [T, B, H] and interSeq
// [T, count, B, H] (layout) are written when valid. Returns {outSeq, or the final output
// [B, H] when outSeq is invalid; the final cell state}.
std::pair<Tensor, Tensor> fusedForward(Graph &graph, const LstmParams &params,
                                       const LstmOptions &opts, const LstmState &init,
                                       const LstmWeights &weights, const Tensor &input,
                                       const Tensor &weighted, const Tensor &outSeq,
                                       const Tensor &interSeq, const InterLayout &layout,
                                       program::Sequence &prog, const DebugContext &debug);

// The fused forward as a lane of a wave loop (rnn::detail::waveLoop; a stack's layers and
// directions in one compute set a step): prepareFusedForward does what fusedForward does before
// its loop (packs the weights, copies the initial state into the lane's h and c buffers),
// addStep adds one step's vertices (the whole sequence one shard; not the clock's). After the
// loop cState holds the final cell state and hBuf[T % 2] the final output.
struct FusedSequences {
  Tensor x;       // [steps, B, I]: the input, when the step weighs it
  Tensor gatesIn; // [steps, B, 4H]
  Tensor out;     // [steps, B, H]
  Tensor inter;   // [steps, count, B, H]
};
struct FusedForwardLane {
  explicit FusedForwardLane(LstmParams p) : params(std::move(p)) {}
  LstmParams params;
  std::vector<FusedBlock> blocks;
  FusedSequences seqs;
  Tensor hBuf, cState, bias;
  InterLayout layout;
  void addStep(Graph &graph, ComputeSet cs, const rnn::detail::FusedClock &clock,
               unsigned parity) const;
};
FusedForwardLane prepareFusedForward(Graph &graph, const LstmParams &params,
                                     const LstmOptions &opts, const LstmState &init,
                                     const LstmWeights &weights, const Tensor &input,
                                     const Tensor &weighted, const Tensor &outSeq,
                                     const Tensor &interSeq, const InterLayout &layout,
                                     program::Sequence &prog, const DebugContext &debug);

// The backward loop with fused steps, in place of the rnn loop of LstmBwd.cpp: Wo^T (wT,
// [4H, H]) packed (each run: the copy is made each run) into 16-unit panels, then one compute set a step of LstmFusedBwd
// vertices and the clock, reverse in time. gates [T, 4, B, H] (canonical) and cellSeq
// [T, 2, B, H] are the saved values the cell reads (rawCell: c_t rather than phi(c_t)),
// outGrad [T, B, H] when valid; dhCarry and dc ([B, H]) are updated in place; deltaRows
// [T, B, 4H] receives every step's gate gradients (slot columns), each step's product input.
void fusedBackward(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                   const Tensor &wT, const Tensor &gates, const Tensor &cellSeq,
                   const Tensor &outGrad, bool rawCell, const Tensor &dhCarry, const Tensor &dc,
                   const Tensor &deltaRows, program::Sequence &prog, const DebugContext &debug);

} // namespace aspen::nn::lstm::detail
