// A stack of GRU layers in one call (aspen/nn/GruStack.hpp): the GRU as a cell of
// rnn::detail::StackBuilder (RnnStackBuilder.hpp), each layer and direction set up as gruFwd
// sets up one layer, its fused steps a lane of a wave loop (the wavefront's layers above the
// first weighing their input in the step: preCalcWeights false).
#include <aspen/nn/GruStack.hpp>

#include "GruInternal.hpp"
#include "RnnStackBuilder.hpp"

namespace aspen::nn::gru {

namespace {

struct GruCell {
  using Params = GruParams;
  using Weights = GruWeights;
  using Options = detail::GruOptions;
  // As the LSTM's, but the GRU's wavefront step adds a compute set (its input product) to its
  // one or two: at 4 rows it lost a little (bench_lstm_stack --cell gru, 3 layers, H = 256,
  // T = 50, 2 cores, 2026-12-07: inference 2.91 ms against 2.74 layer by layer, training 11.8
  // against 10.0), from 16 it gained (inference B = 16 7.7 against 9.4, B = 64 T = 25 16.1
  // against 16.5 with torch.nn's same-run ratio 2.77 against 2.45; training even to 10% better).
  static constexpr std::size_t kWavefrontMinBatch = 16;

  static void checkParams(const Params &p, const std::string &what) {
    detail::checkParams(p, what);
  }
  static std::vector<std::size_t> stateSizes(const Params &p) { return {p.rnn.layerSizes[1]}; }
  static std::size_t width(const Params &p) { return p.rnn.layerSizes[1]; }
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
    return gru::createWeights(graph, p, debug, options, cache);
  }

  // The layer on x (its run order) as a fused lane at lanes.next.
  static rnn::detail::StackLayerResult
  lane(Graph &graph, const Params &p, const Options &opts, const std::vector<Tensor> &init,
       const Weights &weights, const Tensor &x, bool training, rnn::detail::StackLanes &lanes,
       program::Sequence &prog, const DebugContext &debug, linalg::PlanningCache *cache) {
    rnn::detail::StackLayerResult r;
    const detail::FwdPlan plan = detail::prepareForward(
        graph, p, opts, x, weights, training ? &r.inter : nullptr, nullptr, prog, debug, cache);
    const detail::GruFusedLane lane =
        detail::prepareFusedForward(graph, p, opts, init[0], weights, plan.xw, plan.bias,
                                    plan.attSeq, plan.outSeq, plan.interSeq, plan.layout, prog,
                                    debug, plan.stepInput);
    const rnn::detail::FusedShard whole{0, static_cast<unsigned>(p.rnn.maxTimeSteps)};
    lanes.lanes.push_back({lanes.next, lane.phases(),
                           [&graph, lane, whole](ComputeSet cs, unsigned phase,
                                                 const rnn::detail::FusedClock &clock,
                                                 unsigned parity) {
                             lane.addStep(graph, cs, phase, clock, whole, parity);
                           }});
    r.runOutput = plan.outSeq;
    return r;
  }

  // The layer on x (its run order) as gruFwd runs it.
  static rnn::detail::StackLayerResult
  alone(Graph &graph, const Params &p, const Options &opts, const std::vector<Tensor> &init,
        const Weights &weights, const Tensor &x, bool training, program::Sequence &prog,
        const DebugContext &debug, linalg::PlanningCache *cache) {
    rnn::detail::StackLayerResult r;
    r.runOutput = detail::forward(graph, p, opts, init[0], x, weights,
                                  training ? &r.inter : nullptr, nullptr, prog, debug, cache)
                      .output;
    return r;
  }

  static std::vector<Tensor> backward(Graph &graph, const Params &p, program::Sequence &prog,
                                      const std::vector<Tensor> &init, const Tensor &inter,
                                      const Weights &weights, const Tensor &input,
                                      const Tensor &output, const Tensor &dy,
                                      const std::vector<Tensor> *last, Tensor *dx,
                                      Weights &grad, bool reverse, const DebugContext &debug,
                                      const OptionFlags &options, linalg::PlanningCache *cache) {
    // gruBwdWithWU takes no final-state gradient: it joins the output's at each row's last
    // step, or the initial state's for a row of length 0.
    Tensor outGrad = dy, rest;
    if (last && (*last)[0].valid()) {
      std::tie(outGrad, rest) = rnn::detail::foldFinalStateGrad(graph, p.rnn, dy, (*last)[0],
                                                                reverse, prog, debug);
    }
    const Tensor g = gruBwdWithWU(graph, p, prog, init[0], inter, weights, input, output,
                                  outGrad, dx, grad, debug, options, cache);
    if (rest.valid())
      ops::addInPlace(graph, g, rest, prog, {debug, "initialStateGrad"});
    return {g};
  }
};

using Builder = rnn::detail::StackBuilder<GruCell>;

} // namespace

std::string getStackSchedule(const Graph &graph, const GruParams &params,
                             const OptionFlags &options) {
  return Builder(graph, params, options, "gru::getStackSchedule").schedule();
}

std::vector<GruWeights> createStackWeights(Graph &graph, const GruParams &params,
                                           const DebugContext &debug, const OptionFlags &options,
                                           linalg::PlanningCache *cache) {
  return Builder(graph, params, options, "gru::createStackWeights")
      .createWeights(graph, debug, cache);
}

Tensor createStackInitialState(Graph &graph, const GruParams &params, const DebugContext &debug,
                               const OptionFlags &options, linalg::PlanningCache *) {
  return Builder(graph, params, options, "gru::createStackInitialState")
      .createState(graph, {debug, "initial"})[0];
}

std::pair<Tensor, Tensor> gruStackFwd(Graph &graph, const GruParams &params,
                                      const Tensor &stateInit, const Tensor &in,
                                      const std::vector<GruWeights> &weights,
                                      GruStackIntermediates *intermediates,
                                      program::Sequence &prog, const DebugContext &debug,
                                      const OptionFlags &options, linalg::PlanningCache *cache) {
  const Builder b(graph, params, options, "gru::gruStackFwd");
  const auto [out, final] =
      b.forward(graph, {stateInit}, in, weights, intermediates, prog, debug, cache);
  return {out, final[0]};
}

Tensor gruStackBwdWithWU(Graph &graph, const GruParams &params, program::Sequence &prog,
                         const Tensor &stateInit, const GruStackIntermediates &intermediates,
                         const std::vector<GruWeights> &weights, const Tensor &output,
                         const Tensor &outputGrad, const Tensor *finalStateGrad,
                         Tensor *inputGrad, std::vector<GruWeights> &weightsGrad,
                         const DebugContext &debug, const OptionFlags &options,
                         linalg::PlanningCache *cache) {
  const Builder b(graph, params, options, "gru::gruStackBwdWithWU");
  const Builder::State finalGrad =
      finalStateGrad ? Builder::State{*finalStateGrad} : Builder::State{};
  return b.backward(graph, {stateInit}, intermediates, weights, output, outputGrad,
                    finalStateGrad ? &finalGrad : nullptr, inputGrad, weightsGrad, prog, debug,
                    cache)[0];
}

} // namespace aspen::nn::gru
