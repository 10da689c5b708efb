// What the GRU builders share (internal): options, checks, the weights in canonical gate order
// and the cell vertices.
//
// Internally every [., 3H] matrix and [3, ...] gate tensor is in the canonical order (reset,
// update, candidate); the public tensors (weights, biases, their gradients, bwdIntermediates) are
// in params.cellOrder, converted by views (slotView) or one copy per run (canonicalMatrix).
#pragma once

#include "RnnLoop.hpp"

#include <aspen/nn/Gru.hpp>

#include <array>
#include <functional>
#include <optional>
#include <string>

namespace aspen::nn::gru::detail {

struct GruOptions {
  bool inferenceOnly = false;
  Type partialsType = FLOAT;
  double availableMemoryProportion = 0.6;
  unsigned numShards = 1;
  bool codeReuse = false;
  // The weight update every k steps inside the backward loop (0: one pass after it); chosen
  // from the memory budget unless given.
  std::optional<unsigned> stepsPerWU;
  NonLinearityGradient hardSigmoidGradient = NonLinearityGradient::Popnn;
  rnn::detail::StepMethod stepMethod = rnn::detail::StepMethod::Auto;
  rnn::detail::PersistentOptions persistent; // accepted; true is refused (no GRU kernel yet)
  bool reverse = false; // the direction option
  // preCalcWeights (an Aspen extension for the GRU; default true): x . Wi for every step in one
  // product before the loop; false: fused steps weigh their input in the step (an
  // RnnStepProduct phase first), as a stack's wavefront needs; other loops ignore it.
  bool preCalcWeights = true;
};

void checkParams(const GruParams &params, const std::string &what);
GruOptions parseOptions(const Graph &graph, const GruParams &params, const OptionFlags &options,
                        const std::string &what);
// The interleaved weight update's cadence k for lstmBwdWithWU / gruBwdWithWU (0: one pass after
// the backward loop): the rnnStepsPerWU option, or the largest window that fits the budget.
unsigned chooseStepsPerWU(const Graph &graph, const GruParams &params, const GruOptions &opts);

OptionFlags matMulOptions(const GruOptions &opts, const char *pass);
// params with realTimeSteps as its lengths (error when params has lengths already, or when
// options' direction is reverse: see Gru.hpp).
GruParams withRealTimeSteps(const GruParams &params, const Tensor &realTimeSteps,
                            const OptionFlags &options, const std::string &what);

// slot[g] = the slot of canonical gate g.
std::array<unsigned, 3> slotsOf(const GruParams &params);
// t [3, ...] in slot order -> the same in canonical order (a view).
Tensor canonicalGates(const GruParams &params, const Tensor &t);
// t [3, ...] in canonical order -> slot order (a view).
Tensor slotGates(const GruParams &params, const Tensor &t);
// weights [3, n, H] in slot order -> a new [n, 3H] matrix in canonical column order (copied in
// `prog`), optionally transposed ([3H, n]).
Tensor canonicalMatrix(Graph &graph, const GruParams &params, const Tensor &weights,
                       bool transposed, program::Sequence &prog, const DebugContext &debug);

// Saved intermediates: [r, u, c, (h), (n), (a_r, a_u)]; the last two, the clipped
// pre-activations of r and u, with the activation clip.
struct InterLayout {
  bool saveH = false;
  bool saveN = false;
  bool savePre = false;
  unsigned count() const { return preSlot() + (savePre ? 2u : 0u); }
  unsigned hSlot() const { return 3; }
  unsigned nSlot() const { return 3 + (saveH ? 1u : 0u); }
  unsigned preSlot() const { return 3 + (saveH ? 1u : 0u) + (saveN ? 1u : 0u); }
};
InterLayout interLayout(const GruParams &params);
bool rawCandidate(const GruParams &params);
// Why the layer's steps can only be products then cells (ONNX's activation clip), for
// messages; empty when the fused and persistent forms apply.
std::string perStepOnly(const GruParams &params);
// The activationClip field of the cell vertices: the threshold rounded to the data type, or 0.
float activationClipOf(const GruParams &params);

// One cell vertex per tile owning rows of `state` ([B, H]); connect(v, the tile's rows).
void addCellVertices(Graph &graph, ComputeSet cs, const std::string &type, const Tensor &state,
                     const std::function<void(VertexRef, const std::vector<Interval> &)> &connect);

void checkWeights(const GruParams &params, const GruWeights &w, const std::string &what);

// The fused forward loop (GruFused.cpp). usesFusedStep: whether the forward steps are fused,
// from opts.stepMethod (auto: for small batches on targets that are not GPUs, with element-wise
// activations, when the packed weights fit; fused asked for with a softmax activation raises
// invalid_option naming `what`).
using rnn::detail::StepMethod;
bool usesFusedStep(const Graph &graph, const GruParams &params, const GruOptions &opts,
                   const std::string &what);
// Whether the forward's steps weigh their input themselves: preCalcWeights false, fused steps,
// not the persistent loop.
bool weighsInStep(const Graph &graph, const GruParams &params, const GruOptions &opts);
// The whole forward loop with fused steps, in place of rnn::Rnn: packs Wo, then per shard one
// compute set a step (resetAfter true) or two. xw [T, B, 3H] and bias ([3, H], or [6, H] with
// resetAfter) in canonical order; attention [T, B] when valid (AUGRU); outSeq [T, B, H] and
// interSeq [T, count, B, H] written when valid. Returns outSeq, or the final output [B, H] when
// outSeq is invalid.
Tensor fusedForward(Graph &graph, const GruParams &params, const GruOptions &opts,
                    const Tensor &stateInit, const GruWeights &weights, const Tensor &xw,
                    const Tensor &bias, const Tensor &attention, const Tensor &outSeq,
                    const Tensor &interSeq, const InterLayout &layout, program::Sequence &prog,
                    const DebugContext &debug, const Tensor &stepInput = Tensor());
void checkTensor(const Tensor &t, const std::vector<std::size_t> &shape, Type type,
                 const std::string &what);
struct ForwardResult {
  Tensor output;       // [T, B, H] or [B, H]
  Tensor finalState;   // [B, H]
};

// What the forward's step forms share: the input weighed for every step, the biases in
// canonical order, the attention as a sequence, the output and the intermediates.
struct FwdPlan {
  OptionFlags mmOptions;
  InterLayout layout;
  Tensor xw;       // [T, B, 3H]: X . Wi, canonical columns
  Tensor bias;     // [3, H], or [6, H] with resetAfter (input r, u, c, recurrent r, u, c)
  Tensor attSeq;   // [T, B] (AUGRU), else invalid
  Tensor outSeq;   // [T, B, H] with outputFullSequence
  Tensor interSeq; // [T, n, B, H] when the intermediates are kept
  Tensor stepInput; // [T, B, I] when the fused steps weigh it (xw is then written step by step)
};

FwdPlan prepareForward(Graph &graph, const GruParams &params, const GruOptions &opts,
                       const Tensor &in, const GruWeights &weights, Tensor *intermediates,
                       const Tensor *attention, program::Sequence &prog,
                       const DebugContext &debug, linalg::PlanningCache *cache);
// The forward pass on `in` in run order (the direction applied by the caller).
ForwardResult forward(Graph &graph, const GruParams &params, const GruOptions &opts,
                      const Tensor &stateInit, const Tensor &in, const GruWeights &weights,
                      Tensor *intermediates, const Tensor *attention, program::Sequence &prog,
                      const DebugContext &debug, linalg::PlanningCache *cache);

// The fused forward as a lane of a wave loop (rnn::detail::waveLoop; a stack's directions in
// one compute set a step): prepareFusedForward does what fusedForward does before its loop
// (packs Wo, copies the biases and the initial state), addStep adds one phase of a step's
// vertices (not the clock's); after the loop tensors.hBuf[T % 2] holds the final output.
struct FusedLoopTensors { // what every phase of the loop reads and writes (invalid: not kept)
  Tensor xw;        // [T, B, 3H] canonical
  Tensor attention; // [T, B]
  Tensor bias;      // [3 H] or [6 H], canonical (input then recurrent with resetAfter)
  Tensor hBuf;      // [2, B, H]: h_t in hBuf[t % 2]
  Tensor rh;        // [B, H]: r*h of the step (resetAfter false)
  Tensor out;       // [T, B, H]
  Tensor inter;     // [T, count, B, H], or [1, count, B, H] when not kept (interPerStep false)
  bool interPerStep = false;
};
struct GruFusedLane {
  explicit GruFusedLane(GruParams p) : params(std::move(p)) {}
  GruParams params;
  std::vector<rnn::detail::PackedUnitBlock> blocks;
  FusedLoopTensors tensors;
  InterLayout layout;
  // When the steps weigh their input (stepInput valid, [T, B, I] contiguous): Wi packed, the
  // first phase of a step writing xw's step t (RnnStepProduct).
  Tensor stepInput;
  std::vector<rnn::detail::PackedUnitBlock> inputBlocks;
  // The compute sets a step takes: 1 with resetAfter, else 2 (the candidate's product needs
  // r*h of every unit), and 1 before them when the step weighs its input.
  unsigned phases() const { return (params.resetAfter ? 1u : 2u) + (stepInput.valid() ? 1u : 0u); }
  void addStep(Graph &graph, ComputeSet cs, unsigned phase, const rnn::detail::FusedClock &clock,
               const rnn::detail::FusedShard &shard, unsigned parity) const;
  void addInputProduct(Graph &graph, ComputeSet cs, const rnn::detail::FusedClock &clock,
                       const rnn::detail::FusedShard &shard, unsigned parity) const;
};
GruFusedLane prepareFusedForward(Graph &graph, const GruParams &params, const GruOptions &opts,
                                 const Tensor &stateInit, const GruWeights &weights,
                                 const Tensor &xw, const Tensor &bias, const Tensor &attention,
                                 const Tensor &outSeq, const Tensor &interSeq,
                                 const InterLayout &layout, program::Sequence &prog,
                                 const DebugContext &debug, const Tensor &stepInput = Tensor());


// The persistent loops (GruPersistent.cpp): the choice (option rnnPersistentKernel, as the
// LSTM's; backward: the backward loop's), and each loop as one launch, with fusedForward's and
// fusedBackward's arguments (the weights rather than Wo^T; deltaX and deltaH each one variable,
// the exchange read in place).
using rnn::detail::PersistentChoice;
PersistentChoice persistentChoice(const Graph &graph, const GruParams &params,
                                  const GruOptions &opts, const std::string &what,
                                  bool backward = false);
void persistentBackward(Graph &graph, const GruParams &params, const GruOptions &opts,
                        const PersistentChoice &choice, const GruWeights &weights,
                        const Tensor &fwdIntermediates, const Tensor &hPrev,
                        const Tensor &outGrad, const Tensor &attention,
                        const Tensor &attentionGrad, const Tensor &dhCarry, const Tensor &deltaX,
                        const Tensor &deltaH, program::Sequence &prog,
                        const DebugContext &debug);
Tensor persistentForward(Graph &graph, const GruParams &params, const PersistentChoice &choice,
                         const Tensor &stateInit, const GruWeights &weights, const Tensor &xw,
                         const Tensor &bias, const Tensor &attention, const Tensor &outSeq,
                         const Tensor &interSeq, const InterLayout &layout,
                         program::Sequence &prog, const DebugContext &debug);

// The backward loop with fused steps, in place of the rnn loop of
// GruBwd.cpp: Wo^T (woT [3H, H], canonical) packed (each run: the copy is made each run) into 16-unit panels, then, reverse
// in time, one compute set a step of GruFusedBwd vertices and the clock (resetAfter), or two
// (GruFusedBwd's phases 1 and 2: the gates, then the reset's gradient). hPrev and outGrad (when valid) are
// [T, B, H]; dhCarry [B, H] is updated in place; deltaX and, with resetAfter, deltaH [T, B, 3H]
// receive every step's gate gradients (deltaH, or deltaX's r and u without resetAfter, is each
// step's product input). After it the gradient reaching the initial output is deltaH_0 . Wo^T
// (resetAfter) or [delta_r | delta_u]_0 . [Wo_r | Wo_u]^T, plus dhCarry. An AUGRU's attention
// [T, B] (when valid) scales the update gates; attentionGrad [T, B] receives d(a), each row's
// sum over its 16-unit blocks' sums.
void fusedBackward(Graph &graph, const GruParams &params, const GruOptions &opts,
                   const Tensor &woT, const Tensor &fwdIntermediates, const Tensor &hPrev,
                   const Tensor &outGrad, const Tensor &attention, const Tensor &attentionGrad,
                   const Tensor &dhCarry, const Tensor &deltaX, const Tensor &deltaH,
                   program::Sequence &prog, const DebugContext &debug);

} // namespace aspen::nn::gru::detail
