// A stack of GRU layers in one or both directions, in one call (an Aspen extension: popnn has
// one layer and one direction a call). The contract is docs/recurrent.md, "Stacks in one call";
// the LSTM's is LstmStack.hpp, whose options and layouts this follows.
//
// L = numLayers, D = 2 for direction bidirectional (else 1). params describe layer 0:
// layerSizes {I, H}; layer l > 0 takes layer l-1's output, D*H wide. Every layer has params'
// other fields (cell order, resetAfter, activations, activationClip, lengths).
//   input     [T, B, I]
//   weights   one gru::GruWeights per layer and direction, weights[l * D + d] (d = 0 forward,
//             1 reverse), shaped as a single layer of input size I (l = 0) or D*H
//   state     [L*D, B, H], entry l * D + d (PyTorch's h_0 layout)
//   output    [T, B, D*H]: per step the forward direction's h, then the reverse's
// Options: every gruFwd option except direction, given to every layer, plus numLayers,
// direction (forward | reverse | bidirectional), dropout, dropoutSeed and stackSchedule, as the
// LSTM stack's. In the wavefront the layers above the first weigh their input in the step
// (option preCalcWeights false: a step's input product is a compute set of its own before the
// cell's one or two); the results are gruFwd's bits called layer by layer with that option
// above the first layer; stackSchedule auto takes it from 16 rows (the LSTM's from 4). A
// bidirectional layer's two directions run in one compute set a step
// (two with resetAfter false) where both fuse their steps. No attention (AUGRU) in a stack.
// params.outputFullSequence must be true.
//
// gruStackFwd(graph, params, stateInit, in, weights, intermediates*, prog, debug, options,
//             cache) -> {output [T, B, D*H], final state [L*D, B, H]}
// gruStackBwdWithWU(graph, params, prog, stateInit, intermediates, weights, output, outputGrad,
//                   finalStateGrad*, inputGrad*, weightsGrad&, debug, options, cache)
//   -> gradient of the initial state [L*D, B, H]. finalStateGrad [L*D, B, H] (may be null) is
//   the final state's gradient, added to each row's output gradient at its last step (to the
//   initial state's gradient for a row of length 0).
#pragma once

#include <aspen/nn/Gru.hpp>

#include <string>
#include <utility>
#include <vector>

namespace aspen::nn::gru {

// What a training forward keeps for gruStackBwdWithWU (rnn::StackIntermediates).
using GruStackIntermediates = rnn::StackIntermediates;

// The schedule a stack with these params and options runs: "wavefront" or "layerByLayer"
// (stackSchedule, auto resolved). Raises as the stack's functions do for bad options.
ASPEN_API std::string getStackSchedule(const Graph &graph, const GruParams &params,
                                       const OptionFlags &options);
ASPEN_API std::vector<GruWeights> createStackWeights(Graph &graph, const GruParams &params,
                                                     const DebugContext &debug,
                                                     const OptionFlags &options = {},
                                                     linalg::PlanningCache *cache = nullptr);
ASPEN_API Tensor createStackInitialState(Graph &graph, const GruParams &params,
                                         const DebugContext &debug,
                                         const OptionFlags &options = {},
                                         linalg::PlanningCache *cache = nullptr);

ASPEN_API std::pair<Tensor, Tensor>
gruStackFwd(Graph &graph, const GruParams &params, const Tensor &stateInit, const Tensor &in,
            const std::vector<GruWeights> &weights, GruStackIntermediates *intermediates,
            program::Sequence &prog, const DebugContext &debug = {},
            const OptionFlags &options = {}, linalg::PlanningCache *cache = nullptr);

ASPEN_API Tensor gruStackBwdWithWU(Graph &graph, const GruParams &params,
                                   program::Sequence &prog, const Tensor &stateInit,
                                   const GruStackIntermediates &intermediates,
                                   const std::vector<GruWeights> &weights, const Tensor &output,
                                   const Tensor &outputGrad, const Tensor *finalStateGrad,
                                   Tensor *inputGrad, std::vector<GruWeights> &weightsGrad,
                                   const DebugContext &debug = {},
                                   const OptionFlags &options = {},
                                   linalg::PlanningCache *cache = nullptr);

} // namespace aspen::nn::gru
