// A stack of LSTM layers in one call (aspen/nn/LstmStack.hpp): the LSTM as a cell of
// rnn::detail::StackBuilder (RnnStackBuilder.hpp), each layer and direction set up as lstmFwd
// sets up one layer, its fused steps a lane of a wave loop.
#include <aspen/nn/LstmStack.hpp>

#include "LstmInternal.hpp"
#include "RnnStackBuilder.hpp"

namespace aspen::nn::lstm {

namespace {

struct LstmCell {
  using Params = LstmParams;
  using Weights = LstmWeights;
  using Options = detail::LstmOptions;
  // Above the first layer a wavefront step reads Wi as well as Wo (its input is not known
  // before the loop), where layer by layer weighs the whole input in one product first: at one
  // row that reading cost more than the hand-offs between steps the wavefront saves, from 4
  // rows on it did not (bench_lstm_stack, 3 layers, 2 cores, 2026-12-07: inference H = 256
  // T = 50 B = 1 1.8-1.9 ms against 1.4-1.5 layer by layer, B = 4 2.3-2.9 against 2.6-3.3,
  // B = 16 8.3 against 10.0, B = 64 31.9 against 41.3; training B = 4 12.4-14.3 against
  // 14.0-16.3).
  static constexpr std::size_t kWavefrontMinBatch = 4;

  static void checkParams(const Params &p, const std::string &what) {
    detail::checkParams(p, what);
  }
  static std::vector<std::size_t> stateSizes(const Params &p) {
    return {detail::recurrentSize(p), p.rnn.layerSizes[1]};
  }
  static std::size_t width(const Params &p) { return detail::recurrentSize(p); }
  static void setInputSize(Params &p, std::size_t I) {
    p.rnn.layerSizes[0] = I;
    p.layerSizes = p.rnn.layerSizes; // popnn's deprecated copy
  }
  static Options parse(const Graph &graph, const Params &p, const OptionFlags &options,
                       const std::string &what) {
    return detail::parseOptions(graph, p, options, what);
  }
  static bool fuses(const Graph &graph, const Params &p, const Options &opts,
                    const std::string &what) {
    return opts.numShards == 1 && !detail::persistentChoice(graph, p, opts, what).use &&
           detail::usesFusedStep(graph, p, opts, what);
  }
  static std::string wavefrontRefusal(const Params &) { return {}; }
  static void checkWeights(const Params &p, const Weights &w, const std::string &what) {
    detail::checkWeights(p, w, what);
  }
  static Weights createWeights(Graph &graph, const Params &p, const DebugContext &debug,
                               const OptionFlags &options, linalg::PlanningCache *cache) {
    return lstm::createWeights(graph, p, debug, options, cache);
  }

  // The layer on x (its run order) as a fused lane at lanes.next.
  static rnn::detail::StackLayerResult
  lane(Graph &graph, const Params &p, const Options &opts, const std::vector<Tensor> &init,
       const Weights &weights, const Tensor &x, bool training, rnn::detail::StackLanes &lanes,
       program::Sequence &prog, const DebugContext &debug, linalg::PlanningCache *cache) {
    const auto layout = detail::interLayout(p, opts.recomputation);
    const bool weighInput = p.doInputWeightCalc;
    const bool preCalc = opts.preCalcWeights && weighInput;
    rnn::detail::StackLayerResult r;
    const auto seqs = detail::forwardSequences(graph, p, opts, weights, x, layout,
                                               training ? &r.inter : nullptr, true, preCalc,
                                               prog, debug, cache);
    const detail::FusedForwardLane lane = detail::prepareFusedForward(
        graph, p, opts, {init[0], init[1]}, weights, weighInput && !preCalc ? x : Tensor(),
        preCalc ? seqs.weighted : Tensor(), seqs.outSeq, seqs.interSeq,
        training ? layout : detail::InterLayout{}, prog, debug);
    lanes.lanes.push_back({lanes.next, 1,
                           [&graph, lane](ComputeSet cs, unsigned,
                                          const rnn::detail::FusedClock &clock, unsigned parity) {
                             lane.addStep(graph, cs, clock, parity);
                           }});
    r.runOutput = seqs.outSeq;
    r.cell = lane.cState;
    return r;
  }

  // The layer on x (its run order) as lstmFwd runs it.
  static rnn::detail::StackLayerResult
  alone(Graph &graph, const Params &p, const Options &opts, const std::vector<Tensor> &init,
        const Weights &weights, const Tensor &x, bool training, program::Sequence &prog,
        const DebugContext &debug, linalg::PlanningCache *cache) {
    const auto layout = detail::interLayout(p, opts.recomputation);
    rnn::detail::StackLayerResult r;
    std::tie(r.runOutput, r.cell) =
        detail::forward(graph, p, opts, {init[0], init[1]}, weights, x, layout,
                        training ? &r.inter : nullptr, true, prog, debug, cache);
    return r;
  }

  static std::vector<Tensor> backward(Graph &graph, const Params &p, program::Sequence &prog,
                                      const std::vector<Tensor> &init, const Tensor &inter,
                                      const Weights &weights, const Tensor &input,
                                      const Tensor &output, const Tensor &dy,
                                      const std::vector<Tensor> *last, Tensor *dx,
                                      Weights &grad, bool, const DebugContext &debug,
                                      const OptionFlags &options, linalg::PlanningCache *cache) {
    const LstmState lastGrad = last ? LstmState{(*last)[0], (*last)[1]} : LstmState{};
    const LstmState g = lstmBwdWithWU(graph, p, prog, {init[0], init[1]}, inter, weights, input,
                                      output, dy, last ? &lastGrad : nullptr, dx, grad, debug,
                                      options, cache);
    return {g.output, g.cellState};
  }
};

using Builder = rnn::detail::StackBuilder<LstmCell>;

LstmState asState(const Builder::State &s) { return {s[0], s[1]}; }

} // namespace

std::string getStackSchedule(const Graph &graph, const LstmParams &params,
                             const OptionFlags &options) {
  return Builder(graph, params, options, "lstm::getStackSchedule").schedule();
}

std::vector<LstmWeights> createStackWeights(Graph &graph, const LstmParams &params,
                                            const DebugContext &debug, const OptionFlags &options,
                                            linalg::PlanningCache *cache) {
  return Builder(graph, params, options, "lstm::createStackWeights")
      .createWeights(graph, debug, cache);
}

LstmState createStackInitialState(Graph &graph, const LstmParams &params,
                                  const DebugContext &debug, const OptionFlags &options,
                                  linalg::PlanningCache *) {
  return asState(Builder(graph, params, options, "lstm::createStackInitialState")
                     .createState(graph, {debug, "initial"}));
}

std::pair<Tensor, LstmState>
lstmStackFwd(Graph &graph, const LstmParams &params, const LstmState &stateInit, const Tensor &in,
             const std::vector<LstmWeights> &weights, LstmStackIntermediates *intermediates,
             program::Sequence &prog, const DebugContext &debug, const OptionFlags &options,
             linalg::PlanningCache *cache) {
  const Builder b(graph, params, options, "lstm::lstmStackFwd");
  const auto [out, final] = b.forward(graph, {stateInit.output, stateInit.cellState}, in, weights,
                                      intermediates, prog, debug, cache);
  return {out, asState(final)};
}

LstmState lstmStackBwdWithWU(Graph &graph, const LstmParams &params, program::Sequence &prog,
                             const LstmState &stateInit,
                             const LstmStackIntermediates &intermediates,
                             const std::vector<LstmWeights> &weights, const Tensor &output,
                             const Tensor &outputGrad, const LstmState *finalStateGrad,
                             Tensor *inputGrad, std::vector<LstmWeights> &weightsGrad,
                             const DebugContext &debug, const OptionFlags &options,
                             linalg::PlanningCache *cache) {
  const Builder b(graph, params, options, "lstm::lstmStackBwdWithWU");
  const Builder::State finalGrad =
      finalStateGrad ? Builder::State{finalStateGrad->output, finalStateGrad->cellState}
                     : Builder::State{};
  return asState(b.backward(graph, {stateInit.output, stateInit.cellState}, intermediates,
                            weights, output, outputGrad, finalStateGrad ? &finalGrad : nullptr,
                            inputGrad, weightsGrad, prog, debug, cache));
}

} // namespace aspen::nn::lstm
