// A stack of vanilla RNN layers in one call (aspen/nn/RecurrentStack.hpp): the vanilla RNN as a
// cell of rnn::detail::StackBuilder (RnnStackBuilder.hpp).
//
// A layer in one direction runs on its input in run order (the builder reverses a reverse
// layer's rows over their own lengths): one product x . Wff, forwardIterate's loop over every
// step (fused where popnn's functions fuse), then each row's steps past its length zeroed.
// Those steps come last in run order, so the state they compute is never read: the final state
// is the output at the row's last step (finalOutputState). The backward zeroes dy past each
// row's length and adds the final state's gradient at the row's last step, then runs
// rnnBwdSequence's loop: past a row's length dy_t and delta_{t+1} are 0, so delta_t is 0 there
// and nothing reaches the row's last step but what the model carries.
#include <aspen/nn/RecurrentStack.hpp>

#include "RecurrentInternal.hpp"
#include "RnnStackBuilder.hpp"

#include <aspen/ops/Expr.hpp>
#include <aspen/util/TileMapping.hpp>

#include <limits>
#include <numeric>

namespace aspen::nn::rnn {

namespace {

using program::Sequence;

struct VanillaOptions {
  bool inferenceOnly = false;
  Type partialsType = FLOAT;
  bool reverse = false;       // set by the stack for each direction
  bool preCalcWeights = true; // false: fused steps weigh their input (the wavefront's layers)
};

// The params of a loop that runs every step (forwardIterate's and rnnBwdSequence's).
RnnParams everyStep(const RnnParams &p) {
  return RnnParams(p.dataType, p.batchSize, p.maxTimeSteps, p.layerSizes);
}

// seq [T, B, W] with each row's steps from its length on replaced by 0 (params' lengths): in
// place, or into a new tensor (`copy`). seq itself when every row runs T steps and !copy.
Tensor zeroPastLengths(Graph &graph, const RnnParams &params, const Tensor &seq, bool copy,
                       Sequence &prog, const DebugContext &debug) {
  if (!params.variableTimeSteps())
    return copy ? ops::map(graph, ops::expr::_1, {seq}, prog, debug) : seq;
  const std::size_t T = seq.dim(0), B = seq.dim(1), W = seq.dim(2);
  std::vector<unsigned> steps(T);
  std::iota(steps.begin(), steps.end(), 0u);
  Tensor t = graph.addConstant<unsigned>(UNSIGNED_INT, {T}, steps, {debug, "steps"});
  graph.setTileMapping(t, 0);
  const Tensor &lengths = params.varTimeSteps; // [B] or [1]
  const std::size_t n = lengths.numElements();
  const Tensor stepOf = t.reshape({T, 1, 1}).broadcast(unsigned(B), 1).broadcast(unsigned(W), 2);
  const Tensor lengthOf = lengths.reshape({1, n, 1})
                              .broadcast(unsigned(T), 0)
                              .broadcast(unsigned(B / n), 1)
                              .broadcast(unsigned(W), 2);
  using namespace ops::expr;
  const auto kept = Select(_1, Const(0), _2 < _3);
  if (!copy) {
    ops::mapInPlace(graph, kept, {seq, stepOf, lengthOf}, prog, debug);
    return seq;
  }
  return ops::map(graph, kept, {seq, stepOf, lengthOf}, prog, debug);
}

struct VanillaCell {
  using Params = RecurrentParams;
  using Weights = RecurrentWeights;
  using Options = VanillaOptions;
  // stackSchedule auto never takes the vanilla RNN's wavefront: it lost at 1 and 4 rows and
  // was within the noise from 16 (bench/torch_modules.py --kinds rnn --layers 3, H = 256,
  // T = 50, inference, 2 cores, 2026-12-07: ratio to torch.nn wavefront / layer by layer B = 1
  // 2.11 / 2.40, B = 4 2.54 / 2.68, B = 16 2.35 / 2.26, B = 64 1.60 / 1.60; an earlier
  // alternating run had it slower at 16 and 64 too). A vanilla step is cheap, so the in-step
  // input product costs about what the hand-offs save.
  static constexpr std::size_t kWavefrontMinBatch = std::numeric_limits<std::size_t>::max();

  static void checkParams(const Params &p, const std::string &what) {
    detail::checkParams(p.rnn, what);
    detail::checkVanillaNonLinearity(p.nonLinearity, what);
  }
  static std::vector<std::size_t> stateSizes(const Params &p) { return {p.rnn.layerSizes[1]}; }
  static std::size_t width(const Params &p) { return p.rnn.layerSizes[1]; }
  static void setInputSize(Params &p, std::size_t I) { p.rnn.layerSizes[0] = I; }
  static Options parse(const Graph &, const Params &p, const OptionFlags &options,
                       const std::string &what) {
    Options o;
    aspen::detail::OptionSpec spec(what);
    spec.boolean("inferenceOnly", o.inferenceOnly)
        .enumeration("partialsType", o.partialsType, {{"float", FLOAT}, {"half", HALF}});
    detail::addDirectionOption(spec, o.reverse);
    spec.boolean("preCalcWeights", o.preCalcWeights);
    spec.parse(options);
    if (o.partialsType == HALF && p.rnn.dataType == FLOAT)
      throw invalid_option(
          fmt::format("{}: partialsType half needs half data, but dataType is float", what));
    return o;
  }
  // The directions of a layer without lengths run as lanes of one wave loop where its steps
  // fuse (with lengths each runs alone, its padding zeroed after its loop).
  static bool fuses(const Graph &graph, const Params &p, const Options &, const std::string &) {
    return !p.rnn.variableTimeSteps() &&
           detail::vanillaFuses(graph, everyStep(p.rnn), p.nonLinearity);
  }
  static std::string wavefrontRefusal(const Params &p) {
    if (p.rnn.variableTimeSteps())
      return "a vanilla RNN stack with lengths runs layer by layer (each layer's padding is "
             "zeroed after its loop)";
    return {};
  }

  static void checkWeights(const Params &p, const Weights &w, const std::string &what) {
    const std::size_t I = p.rnn.layerSizes[0], H = p.rnn.layerSizes[1];
    detail::checkStackTensor(w.inputWeights, {I, H}, p.rnn.dataType, what + ": inputWeights");
    detail::checkStackTensor(w.feedbackWeights, {H, H}, p.rnn.dataType,
                             what + ": feedbackWeights");
    detail::checkStackTensor(w.biases, {H}, p.rnn.dataType, what + ": biases");
  }
  static Weights createWeights(Graph &graph, const Params &p, const DebugContext &debug,
                               const OptionFlags &options, linalg::PlanningCache *cache) {
    const Options o = parse(graph, p, options, "rnn::createStackWeights");
    const auto T = unsigned(p.rnn.maxTimeSteps), B = unsigned(p.rnn.batchSize);
    const auto I = unsigned(p.rnn.layerSizes[0]), H = unsigned(p.rnn.layerSizes[1]);
    const Type t = p.rnn.dataType;
    Weights w;
    w.inputWeights = createWeightsInput(graph, T, B, I, H, t, o.partialsType, o.inferenceOnly,
                                        {debug, "inputWeights"}, cache);
    w.feedbackWeights = createWeightsFeedback(graph, B, H, t, o.partialsType, o.inferenceOnly,
                                              {debug, "feedbackWeights"}, cache);
    w.biases = graph.addVariable(t, {H}, {debug, "biases"});
    util::mapTensorLinearly(graph, w.biases);
    return w;
  }

  // The layer on x (its run order) as a fused lane at lanes.next (no lengths): its input
  // weighed first (one product), or with preCalcWeights false step by step.
  static detail::StackLayerResult
  lane(Graph &graph, const Params &p, const Options &opts, const std::vector<Tensor> &init,
       const Weights &weights, const Tensor &x, bool training, detail::StackLanes &lanes,
       Sequence &prog, const DebugContext &debug, linalg::PlanningCache *cache) {
    const RnnParams params = everyStep(p.rnn);
    const std::size_t T = params.maxTimeSteps, B = params.batchSize, H = params.layerSizes[1];
    const Tensor xw = opts.preCalcWeights
                          ? forwardWeightInput(graph, x, weights.inputWeights, prog,
                                               opts.partialsType, opts.inferenceOnly,
                                               {debug, "weighInput"}, cache)
                          : detail::addSequence(graph, params.dataType, T, B, H, 1, {debug, "xw"});
    const Tensor out = createOutputTensor(graph, params, 1, {debug, "output"});
    const detail::VanillaFusedLane lane = detail::prepareVanillaFused(
        graph, params, xw, init[0], weights.feedbackWeights, weights.biases, out,
        p.nonLinearity, prog, {debug, "fused"}, opts.preCalcWeights ? Tensor() : x,
        weights.inputWeights);
    lanes.lanes.push_back({lanes.next, lane.phases(),
                           [&graph, lane](ComputeSet cs, unsigned phase,
                                          const detail::FusedClock &clock, unsigned parity) {
                             lane.addStep(graph, cs, phase, clock, parity);
                           }});
    detail::StackLayerResult r;
    r.runOutput = out;
    if (training)
      r.inter = out;
    return r;
  }

  // The layer on x (its run order) as forwardIterate runs it, its padding zeroed; with
  // preCalcWeights false and fused steps, as its wavefront lane (a wave loop of one lane), whose
  // bits the wavefront's are.
  static detail::StackLayerResult
  alone(Graph &graph, const Params &p, const Options &opts, const std::vector<Tensor> &init,
        const Weights &weights, const Tensor &x, bool training, Sequence &prog,
        const DebugContext &debug, linalg::PlanningCache *cache) {
    if (!opts.preCalcWeights && fuses(graph, p, opts, "")) {
      detail::StackLanes lanes;
      detail::StackLayerResult r =
          lane(graph, p, opts, init, weights, x, training, lanes, prog, debug, cache);
      detail::waveLoop(graph, everyStep(p.rnn), lanes.lanes, prog, {debug, "loop"});
      return r;
    }
    const Tensor y = rnnFwdSequence(graph, prog, init[0], nullptr, weights.biases,
                                    weights.inputWeights, weights.feedbackWeights, x,
                                    p.nonLinearity, opts.partialsType, opts.inferenceOnly, debug,
                                    cache);
    detail::StackLayerResult r;
    r.runOutput = zeroPastLengths(graph, p.rnn, y, false, prog, {debug, "padding"});
    if (training)
      r.inter = r.runOutput;
    return r;
  }

  static std::vector<Tensor> backward(Graph &graph, const Params &p, Sequence &prog,
                                      const std::vector<Tensor> &init, const Tensor &inter,
                                      const Weights &weights, const Tensor &input, const Tensor &,
                                      const Tensor &dy, const std::vector<Tensor> *last,
                                      Tensor *dx, Weights &grad, bool reverse,
                                      const DebugContext &debug, const OptionFlags &options,
                                      linalg::PlanningCache *cache) {
    const Options opts = parse(graph, p, options, "rnn::rnnStackBwdWithWU");
    const detail::RunOrder order{graph, p.rnn, reverse, prog, debug};
    const Tensor x = order(input, "input"), y = inter;
    Tensor dyRun = order(dy, "outputGrad"), rest;
    if (p.rnn.variableTimeSteps()) // a reverse layer's is a copy already
      dyRun = zeroPastLengths(graph, p.rnn, dyRun, !reverse, prog, {debug, "outputGradPadding"});
    if (last && (*last)[0].valid()) // in run order a row's last step is its length - 1
      std::tie(dyRun, rest) = detail::foldFinalStateGrad(graph, p.rnn, dyRun, (*last)[0], false,
                                                         prog, debug);
    const RnnParams params = everyStep(p.rnn);
    const Tensor deltas = detail::vanillaDeltas(graph, params, weights.feedbackWeights, y, dyRun,
                                                p.nonLinearity, opts.partialsType, prog, debug,
                                                cache);
    auto [dxRun, dWff, dWfb, db] =
        detail::vanillaGradients(graph, deltas, x, init[0], y, weights.inputWeights,
                                 dx != nullptr, true, opts.partialsType, prog, debug, cache);
    if (dx)
      *dx = order(dxRun, "inputGrad");
    grad = {dWff, dWfb, db};
    // dL/dy_{-1} = delta_0 . Wfb^T, and the final state's gradient of rows of length 0.
    const Tensor initGrad = linalg::matMul(
        graph, deltas[0], weights.feedbackWeights.transpose(), prog, {debug, "initialStateGrad"},
        {{"partialsType", opts.partialsType == HALF ? "half" : "float"},
         {"fullyConnectedPass", "TRAINING_BWD"}},
        cache);
    if (rest.valid())
      ops::addInPlace(graph, initGrad, rest, prog, {debug, "initialStateGrad"});
    return {initGrad};
  }
};

using Builder = detail::StackBuilder<VanillaCell>;

} // namespace

std::string getStackSchedule(const Graph &graph, const RecurrentParams &params,
                             const OptionFlags &options) {
  return Builder(graph, params, options, "rnn::getStackSchedule").schedule();
}

std::vector<RecurrentWeights> createStackWeights(Graph &graph, const RecurrentParams &params,
                                                 const DebugContext &debug,
                                                 const OptionFlags &options,
                                                 linalg::PlanningCache *cache) {
  return Builder(graph, params, options, "rnn::createStackWeights")
      .createWeights(graph, debug, cache);
}

Tensor createStackInitialState(Graph &graph, const RecurrentParams &params,
                               const DebugContext &debug, const OptionFlags &options,
                               linalg::PlanningCache *) {
  return Builder(graph, params, options, "rnn::createStackInitialState")
      .createState(graph, {debug, "initial"})[0];
}

std::pair<Tensor, Tensor> rnnStackFwd(Graph &graph, const RecurrentParams &params,
                                      const Tensor &stateInit, const Tensor &in,
                                      const std::vector<RecurrentWeights> &weights,
                                      RecurrentStackIntermediates *intermediates, Sequence &prog,
                                      const DebugContext &debug, const OptionFlags &options,
                                      linalg::PlanningCache *cache) {
  const Builder b(graph, params, options, "rnn::rnnStackFwd");
  const auto [out, final] =
      b.forward(graph, {stateInit}, in, weights, intermediates, prog, debug, cache);
  return {out, final[0]};
}

Tensor rnnStackBwdWithWU(Graph &graph, const RecurrentParams &params, Sequence &prog,
                         const Tensor &stateInit, const RecurrentStackIntermediates &intermediates,
                         const std::vector<RecurrentWeights> &weights, const Tensor &output,
                         const Tensor &outputGrad, const Tensor *finalStateGrad,
                         Tensor *inputGrad, std::vector<RecurrentWeights> &weightsGrad,
                         const DebugContext &debug, const OptionFlags &options,
                         linalg::PlanningCache *cache) {
  const Builder b(graph, params, options, "rnn::rnnStackBwdWithWU");
  const Builder::State finalGrad =
      finalStateGrad ? Builder::State{*finalStateGrad} : Builder::State{};
  return b.backward(graph, {stateInit}, intermediates, weights, output, outputGrad,
                    finalStateGrad ? &finalGrad : nullptr, inputGrad, weightsGrad, prog, debug,
                    cache)[0];
}

} // namespace aspen::nn::rnn
