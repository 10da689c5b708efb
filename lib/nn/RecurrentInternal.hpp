// The vanilla RNN's loops (Recurrent.cpp), shared by popnn's functions (aspen/nn/Recurrent.hpp)
// and the stack in one call (RecurrentStack.cpp; internal).
#pragma once

#include "RnnLoop.hpp"

#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/NonLinearityDef.hpp>

#include <tuple>
#include <vector>

namespace aspen::nn::rnn::detail {

// Raise invalid_option naming `what` for a non-linearity whose gradient needs the forward input.
void checkVanillaNonLinearity(NonLinearityType nl, const std::string &what);

// Whether the vanilla RNN's loops fuse their steps (as the LSTM's and GRU's stepMethod auto
// does; popnn's signatures have no options): an element-wise nl, a batch the fused step pays
// for, packed weights that fit, a target that is not a GPU. params: without lengths.
bool vanillaFuses(const Graph &graph, const RnnParams &params, NonLinearityType nl);

// The fused forward loop's step (RnnFusedFwd vertices on Wfb packed once) for every step t of
// feedFwdIn [T, B, H] (x_t . Wff) into out [T, B, H]: prepared once, then added to a compute
// set a step, by fusedLoop (forwardIterate) or as a lane of a wave loop (a stack's directions
// and layers). With stepInput ([T, B, I]) the steps weigh their input themselves: Wff packed in
// 16-unit panels, and a phase before each step writes x_t . Wff (RnnStepProduct: float sums in
// a fixed order, rounded once) into feedFwdIn, a [T, B, H] variable (a stack's layers above the
// first in the wavefront, and with preCalcWeights false).
struct VanillaFusedLane {
  std::vector<PackedUnitBlock> blocks, inputBlocks;
  Tensor x, bias, hBuf, out, stepInput;
  std::size_t T = 0, B = 0, H = 0, I = 0;
  NonLinearityType nl = NonLinearityType::TANH;
  unsigned phases() const { return stepInput.valid() ? 2u : 1u; }
  void addStep(Graph &graph, ComputeSet cs, unsigned phase, const FusedClock &clock,
               unsigned parity) const;

private:
  void addInputProduct(Graph &graph, ComputeSet cs, const FusedClock &clock,
                       unsigned parity) const;
  void addRecurrentStep(Graph &graph, ComputeSet cs, const FusedClock &clock,
                        unsigned parity) const;
};
VanillaFusedLane prepareVanillaFused(Graph &graph, const RnnParams &params,
                                     const Tensor &feedFwdIn, const Tensor &initState,
                                     const Tensor &feedbackWeights, const Tensor &biases,
                                     const Tensor &out, NonLinearityType nl,
                                     program::Sequence &prog, const DebugContext &debug,
                                     const Tensor &stepInput = Tensor(),
                                     const Tensor &feedFwdWeights = Tensor());

// delta_t = nl'(y_t) * (dy_t + delta_{t+1} . Wfb^T) for every step (delta_T = 0), in a
// reverse loop, fused where vanillaFuses says. params: without lengths.
Tensor vanillaDeltas(Graph &graph, const RnnParams &params, const Tensor &feedbackWeights,
                     const Tensor &y, const Tensor &dy, NonLinearityType nl,
                     const Type &partialsType, program::Sequence &prog, const DebugContext &debug,
                     linalg::PlanningCache *cache);

// From the deltas [T, B, H]: dx = delta . Wff^T [T, B, I] (when wantDx), and with doWU
// dWff = x^T delta, dWfb = y_prev^T delta (y_prev: y0, then y_0 .. y_{T-2}), db = sum delta.
std::tuple<Tensor, Tensor, Tensor, Tensor>
vanillaGradients(Graph &graph, const Tensor &deltas, const Tensor &x, const Tensor &y0,
                 const Tensor &y, const Tensor &feedFwdWeights, bool wantDx, bool doWU,
                 const Type &partialsType, program::Sequence &prog, const DebugContext &debug,
                 linalg::PlanningCache *cache);

} // namespace aspen::nn::rnn::detail
