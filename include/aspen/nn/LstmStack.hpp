// A stack of LSTM layers in one or both directions, in one call (an Aspen extension: popnn has
// one layer and one direction a call). The contract is docs/recurrent.md, "Stacks in one call";
// this header gives the shapes.
//
// L = numLayers, D = 2 for direction bidirectional (else 1), W = the width of h (params.projSize
// with a projection, else H). params describe layer 0: layerSizes {I, H}; layer l > 0 takes
// layer l-1's output, D*W wide. Every layer has params' other fields (cell order, activations,
// clips, projection, lengths).
//   input     [T, B, I]
//   weights   one lstm::LstmWeights per layer and direction, weights[l * D + d] (d = 0 forward,
//             1 reverse), shaped as a single layer of input size I (l = 0) or D*W
//   state     LstmState{output [L*D, B, W], cellState [L*D, B, H]}, entry l * D + d (PyTorch's
//             h_0 / c_0 layout)
//   output    [T, B, D*W]: per step the forward direction's h, then the reverse's
// A reverse direction runs each row from its own last step back to step 0, as lstmFwd's
// direction reverse does; its final state is the state after step 0. Rows of length 0 give
// their initial state and zero outputs. params.outputFullSequence must be true (the final states
// hold each row's last output).
//
// Options: every lstmFwd option except direction, given to every layer, plus
//   numLayers     1 or more (default 1)
//   direction     forward | reverse | bidirectional (default forward)
//   dropout       [0, 1) (default 0): in training (intermediates asked for) each layer's output
//                 but the last is dropped before the next layer takes it, with the counter-based
//                 mask of rnn::dropoutSequence (layer l's key from dropoutSeed and l); the same
//                 on every device and schedule. Inference applies none.
//   dropoutSeed   an unsigned 64-bit integer (default 0)
//   stackSchedule auto | wavefront | layerByLayer (default auto). wavefront runs layer l at step
//                 t beside layer l+1 at step t-1 (beside the dropout of layer l's step t-1 and
//                 layer l+1's step t-2 when it drops): one compute set a step for the whole
//                 stack. It takes one direction and layers whose steps are fused (stepMethod,
//                 numShards 1); layers above the first then weigh their input inside the step
//                 (preCalcWeights false: their input is not known before the loop). auto takes it
//                 where it applies and the batch has 4 rows or more (below, reading the input
//                 weights every step cost more than the wavefront saved). layerByLayer runs the layers one after another, a
//                 bidirectional layer's two directions in one compute set a step where both
//                 fuse their steps. Both give the same bits as lstmFwd called layer by layer
//                 with the same options (preCalcWeights false above the first layer for the
//                 wavefront), with rnn::dropoutSequence between.
// Errors: the single layer's (naming the layer, "layer l, reverse"), plus invalid_option for a
// bad stack option, a wavefront that cannot run (saying why) or outputFullSequence false, and
// shape_error for a weights vector of the wrong length or states of the wrong shape.
//
// lstmStackFwd(graph, params, stateInit, in, weights, intermediates*, prog, debug, options,
//              cache) -> {output [T, B, D*W], final state (as stateInit)}
// lstmStackBwdWithWU(graph, params, prog, stateInit, intermediates, weights, output,
//                    outputGrad, finalStateGrad*, inputGrad*, weightsGrad&, debug, options,
//                    cache) -> gradient of the initial state (as stateInit)
//   Layer by layer from the top, each direction through lstmBwdWithWU; dropout's gradient is
//   the same mask. finalStateGrad (either member may be invalid) is the gradient of the final
//   state; inputGrad receives [T, B, I]; weightsGrad one LstmWeights a layer and direction.
#pragma once

#include <aspen/nn/Lstm.hpp>

#include <string>
#include <vector>

namespace aspen::nn::lstm {

// What a training forward keeps for lstmStackBwdWithWU (rnn::StackIntermediates).
using LstmStackIntermediates = rnn::StackIntermediates;

// The schedule a stack with these params and options runs: "wavefront" or "layerByLayer"
// (stackSchedule, auto resolved). Raises as the stack's functions do for bad options.
ASPEN_API std::string getStackSchedule(const Graph &graph, const LstmParams &params,
                                       const OptionFlags &options);
ASPEN_API std::vector<LstmWeights> createStackWeights(Graph &graph, const LstmParams &params,
                                                      const DebugContext &debug,
                                                      const OptionFlags &options = {},
                                                      linalg::PlanningCache *cache = nullptr);
ASPEN_API LstmState createStackInitialState(Graph &graph, const LstmParams &params,
                                            const DebugContext &debug,
                                            const OptionFlags &options = {},
                                            linalg::PlanningCache *cache = nullptr);

ASPEN_API std::pair<Tensor, LstmState>
lstmStackFwd(Graph &graph, const LstmParams &params, const LstmState &stateInit, const Tensor &in,
             const std::vector<LstmWeights> &weights, LstmStackIntermediates *intermediates,
             program::Sequence &prog, const DebugContext &debug = {},
             const OptionFlags &options = {}, linalg::PlanningCache *cache = nullptr);

ASPEN_API LstmState lstmStackBwdWithWU(
    Graph &graph, const LstmParams &params, program::Sequence &prog, const LstmState &stateInit,
    const LstmStackIntermediates &intermediates, const std::vector<LstmWeights> &weights,
    const Tensor &output, const Tensor &outputGrad, const LstmState *finalStateGrad,
    Tensor *inputGrad, std::vector<LstmWeights> &weightsGrad, const DebugContext &debug = {},
    const OptionFlags &options = {}, linalg::PlanningCache *cache = nullptr);

} // namespace aspen::nn::lstm
