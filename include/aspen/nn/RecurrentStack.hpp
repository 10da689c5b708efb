// A stack of vanilla RNN layers in one or both directions, in one call, with variable lengths,
// the final state and its gradient (an Aspen extension: popnn's vanilla RNN, Recurrent.hpp, has
// one layer, one direction, no lengths and no options). The contract is docs/recurrent.md,
// "Stacks in one call"; the LSTM's stack (LstmStack.hpp) is the model whose options and
// layouts this follows. PyTorch's torch.nn.RNN computes the same layer with b = b_ih + b_hh.
//
// A layer: y_t = nl(x_t . Wff + y_{t-1} . Wfb + b), y_{-1} = the initial state. With lengths
// (params.rnn.varTimeSteps, [B] or [1]) row b runs steps 0 .. L_b - 1: its outputs past them
// are 0 and its final state is y at its last step (the initial state when L_b = 0); a reverse
// direction starts at each row's own last step.
//
// L = numLayers, D = 2 for direction bidirectional (else 1). params describe layer 0:
// rnn.layerSizes {I, H}; layer l > 0 takes layer l-1's output, D*H wide.
//   input     [T, B, I]
//   weights   one RecurrentWeights per layer and direction, weights[l * D + d] (d = 0 forward,
//             1 reverse): inputWeights Wff [I or D*H, H], feedbackWeights Wfb [H, H],
//             biases b [H] (createStackWeights maps them)
//   state     [L*D, B, H], entry l * D + d (PyTorch's h_0 layout)
//   output    [T, B, D*H]: per step the forward direction's y, then the reverse's
// nonLinearity: as the popnn functions take it (TANH and RELU are PyTorch's; the kinds whose
// gradient needs the forward input are refused with invalid_option).
// Options: numLayers, direction (forward | reverse | bidirectional), dropout, dropoutSeed and
// stackSchedule as the LSTM stack's, and per layer inferenceOnly (true: no intermediates may be
// asked for), partialsType (float | half; half needs half data) and preCalcWeights (Aspen's,
// default true: each layer's input weighed in one product before its loop; false: fused steps
// weigh it step by step, RnnStepProduct, as the wavefront's layers above the first do).
// Steps are fused (one compute set a step on Wfb packed once) where popnn's forwardIterate
// fuses them; a bidirectional layer's two directions then run in one compute set a step when
// no lengths are given. stackSchedule wavefront (one direction, fused steps, no lengths: else
// invalid_option saying why) runs layer l at step t beside layer l + 1 at step t - 1, with the
// bits of the layers' own calls with preCalcWeights false above the first; auto does not take
// it (it lost at small batches and was level from 16 rows: docs/performance.md). The results of one forward layer without
// lengths are rnnFwdSequence's and rnnBwdSequence's bits.
//
// rnnStackFwd(graph, params, stateInit, in, weights, intermediates*, prog, debug, options,
//             cache) -> {output [T, B, D*H], final state [L*D, B, H]}; intermediates (null for
//             inference) keep what the backward takes.
// rnnStackBwdWithWU(graph, params, prog, stateInit, intermediates, weights, output, outputGrad,
//                   finalStateGrad*, inputGrad*, weightsGrad&, debug, options, cache)
//   -> gradient of the initial state [L*D, B, H]. finalStateGrad [L*D, B, H] (may be null) is
//   the final state's gradient; inputGrad (may be null; needs params.calcInputGradients) gets
//   the input's [T, B, I]; weightsGrad gets one RecurrentWeights of gradients per entry.
// Errors: shape_error / type_error naming the stack, the layer ("layer 1, reverse") and the
// argument; invalid_option for unknown or refused options.
#pragma once

#include <aspen/nn/NonLinearityDef.hpp>
#include <aspen/nn/Recurrent.hpp>
#include <aspen/nn/Rnn.hpp>

#include <string>
#include <utility>
#include <vector>

namespace aspen::nn::rnn {

struct ASPEN_API RecurrentParams {
  RnnParams rnn;
  NonLinearityType nonLinearity = NonLinearityType::TANH;
  // Whether rnnStackBwdWithWU may give the input's gradient.
  bool calcInputGradients = true;
  // A stack's output is always the full sequence; false is refused (the LSTM's field).
  bool outputFullSequence = true;

  RecurrentParams(RnnParams rnn, NonLinearityType nonLinearity = NonLinearityType::TANH)
      : rnn(std::move(rnn)), nonLinearity(nonLinearity) {}
};

struct ASPEN_API RecurrentWeights {
  Tensor inputWeights;    // Wff [I, H]
  Tensor feedbackWeights; // Wfb [H, H]
  Tensor biases;          // b [H]
};

// What a training forward keeps for rnnStackBwdWithWU.
using RecurrentStackIntermediates = StackIntermediates;

// The schedule a stack with these params and options runs: "layerByLayer" (stackSchedule auto
// resolved). Raises as the stack's functions do for bad options.
ASPEN_API std::string getStackSchedule(const Graph &graph, const RecurrentParams &params,
                                       const OptionFlags &options);
ASPEN_API std::vector<RecurrentWeights>
createStackWeights(Graph &graph, const RecurrentParams &params, const DebugContext &debug,
                   const OptionFlags &options = {}, linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor createStackInitialState(Graph &graph, const RecurrentParams &params,
                                         const DebugContext &debug,
                                         const OptionFlags &options = {},
                                         linalg::PlanningCache *cache = nullptr);

ASPEN_API std::pair<Tensor, Tensor>
rnnStackFwd(Graph &graph, const RecurrentParams &params, const Tensor &stateInit,
            const Tensor &in, const std::vector<RecurrentWeights> &weights,
            RecurrentStackIntermediates *intermediates, program::Sequence &prog,
            const DebugContext &debug = {}, const OptionFlags &options = {},
            linalg::PlanningCache *cache = nullptr);

ASPEN_API Tensor rnnStackBwdWithWU(Graph &graph, const RecurrentParams &params,
                                   program::Sequence &prog, const Tensor &stateInit,
                                   const RecurrentStackIntermediates &intermediates,
                                   const std::vector<RecurrentWeights> &weights,
                                   const Tensor &output, const Tensor &outputGrad,
                                   const Tensor *finalStateGrad, Tensor *inputGrad,
                                   std::vector<RecurrentWeights> &weightsGrad,
                                   const DebugContext &debug = {},
                                   const OptionFlags &options = {},
                                   linalg::PlanningCache *cache = nullptr);

} // namespace aspen::nn::rnn
