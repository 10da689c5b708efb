// aspen::nn::lstm: tensor creation, FLOP counts and the forward pass.
//
// Forward step (one body of the rnn loop, state {h, c}):
//   pre = [x_t | h] . [Wi; Wo]          one product of [B, I+H] x [I+H, 4H] (the default), or
//   pre = XW_t + h . Wo                 preCalcWeights: XW = X . Wi for all steps before the loop
//   LstmCellFwd(pre, biases, c, h) ->   h, c in place, the step's output and intermediates
#include "CellSteps.hpp"
#include "LstmInternal.hpp"

#include <aspen/Error.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/Zero.hpp>
#include <aspen/util/TileMapping.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>

namespace aspen::nn::lstm {

using program::Copy;
using program::Execute;
using program::Sequence;

namespace {

std::size_t inputSize(const LstmParams &p) { return p.rnn.layerSizes[0]; }
std::size_t outputSize(const LstmParams &p) { return p.rnn.layerSizes[1]; }
// The width of h (the projection's size, or H).
std::size_t hSize(const LstmParams &p) { return detail::recurrentSize(p); }
// params.rnn with h's width as the layer's output size: the sequences and states of h.
rnn::RnnParams hParams(const LstmParams &p) {
  rnn::RnnParams r = p.rnn;
  r.layerSizes[1] = hSize(p);
  return r;
}

} // namespace

std::uint64_t getBasicLstmCellFwdFlops(const LstmParams &params) {
  const std::uint64_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::uint64_t I = params.rnn.layerSizes.at(0), H = params.rnn.layerSizes.at(1);
  const std::uint64_t R = hSize(params), P = params.projSize;
  const std::uint64_t products = 2 * 4 * H * ((params.doInputWeightCalc ? I : 0) + R);
  return T * B * (products + 4 * H + 3 * H + H + 2 * H * P);
}

std::uint64_t getBasicLstmCellBwdFlops(const LstmParams &params) {
  const std::uint64_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::uint64_t I = params.rnn.layerSizes.at(0), H = params.rnn.layerSizes.at(1);
  const std::uint64_t R = hSize(params), P = params.projSize;
  const std::uint64_t products = 2 * 4 * H * (R + (params.calcInputGradients ? I : 0));
  return T * B * (products + 10 * H + 2 * H * P);
}

std::uint64_t getBasicLstmCellWuFlops(const LstmParams &params) {
  const std::uint64_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::uint64_t I = params.rnn.layerSizes.at(0), H = params.rnn.layerSizes.at(1);
  const std::uint64_t R = hSize(params), P = params.projSize;
  return T * B * (2 * 4 * H * (I + R) + 4 * H + 2 * H * P);
}

std::vector<std::pair<linalg::MatMulParams, OptionFlags>>
getMatMulPrePlanParameters(LstmParams params, OptionFlags options) {
  detail::checkParams(params, "lstm::getMatMulPrePlanParameters");
  const Type t = params.rnn.dataType;
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = inputSize(params), H = outputSize(params), R = hSize(params);
  bool inferenceOnly = false;
  std::optional<bool> preCalc; // when not given the layer chooses (by memory): list both forms
  std::string partials = "float";
  for (const auto &[key, value] : options) {
    if (key == "inferenceOnly")
      inferenceOnly = value == "true" || value == "1";
    if (key == "preCalcWeights")
      preCalc = value == "true" || value == "1";
    if (key == "partialsType")
      partials = value;
  }
  auto mm = [&](std::vector<std::size_t> a, std::vector<std::size_t> b, const char *pass) {
    linalg::MatMulParams p;
    p.inputType = t;
    p.outputType = t;
    p.aShape = std::move(a);
    p.bShape = std::move(b);
    return std::pair<linalg::MatMulParams, OptionFlags>(
        p, OptionFlags{{"partialsType", partials},
                       {"fullyConnectedPass", inferenceOnly ? "INFERENCE_FWD" : pass}});
  };
  std::vector<std::pair<linalg::MatMulParams, OptionFlags>> out;
  const std::size_t weighed = params.doInputWeightCalc ? I : 0;
  if (!preCalc || !*preCalc)
    out.push_back(mm({B, weighed + R}, {weighed + R, 4 * H}, "TRAINING_FWD"));
  if ((!preCalc || *preCalc) && params.doInputWeightCalc) {
    out.push_back(mm({T * B, I}, {I, 4 * H}, "TRAINING_FWD"));
    out.push_back(mm({B, R}, {R, 4 * H}, "TRAINING_FWD"));
  }
  if (params.projSize) // h_t = m_t . Wp
    out.push_back(mm({B, H}, {H, R}, "TRAINING_FWD"));
  if (!inferenceOnly) {
    // Each backward step: delta . Wo^T (and Wi^T when the input gradient is taken in the loop);
    // the input gradient of all steps at once; the weight update over all steps.
    out.push_back(mm({B, 4 * H}, {4 * H, R}, "TRAINING_BWD"));
    if (params.calcInputGradients) {
      out.push_back(mm({B, 4 * H}, {4 * H, I + R}, "TRAINING_BWD"));
      out.push_back(mm({T * B, 4 * H}, {4 * H, I}, "TRAINING_BWD"));
    }
    out.push_back(mm({I + R + 1, T * B}, {T * B, 4 * H}, "TRAINING_WU"));
    if (params.projSize) { // dm = dh . Wp^T a step; dWp = M^T . dH after the loop
      out.push_back(mm({B, R}, {R, H}, "TRAINING_BWD"));
      out.push_back(mm({H, T * B}, {T * B, R}, "TRAINING_WU"));
    }
  }
  return out;
}

namespace {

detail::LstmOptions creationOptions(const Graph &graph, const LstmParams &params,
                                    const OptionFlags &options, const char *what) {
  return detail::parseOptions(graph, params, options, what);
}

} // namespace

Tensor createInput(Graph &graph, const LstmParams &params, const DebugContext &debug,
                   const OptionFlags &options, linalg::PlanningCache *) {
  const auto opts = creationOptions(graph, params, options, "lstm::createInput");
  return rnn::createInputTensor(graph, params.rnn, opts.numShards, debug);
}

Tensor createInitialOutput(Graph &graph, const LstmParams &params, const DebugContext &debug,
                           const OptionFlags &options, linalg::PlanningCache *) {
  const auto opts = creationOptions(graph, params, options, "lstm::createInitialOutput");
  return rnn::createInitialState(graph, hParams(params), true, 1, opts.numShards, debug)[0];
}

Tensor createInitialCellState(Graph &graph, const LstmParams &params, const DebugContext &debug,
                              const OptionFlags &options, linalg::PlanningCache *) {
  const auto opts = creationOptions(graph, params, options, "lstm::createInitialCellState");
  return rnn::createInitialState(graph, params.rnn, true, 1, opts.numShards, debug)[0];
}

LstmState createInitialState(Graph &graph, const LstmParams &params, const DebugContext &debug,
                             const OptionFlags &options, linalg::PlanningCache *cache) {
  return {createInitialOutput(graph, params, {debug, "initialOutput"}, options, cache),
          createInitialCellState(graph, params, {debug, "initialCellState"}, options, cache)};
}

void zeroInitialState(Graph &graph, const LstmState &initialState, Sequence &prog,
                      const DebugContext &debug) {
  ops::zero(graph, concat(initialState.output.flatten(), initialState.cellState.flatten()), prog,
            debug);
}

std::pair<Tensor, Tensor> createWeightsKernel(Graph &graph, const LstmParams &params,
                                              const DebugContext &debug,
                                              const OptionFlags &options,
                                              linalg::PlanningCache *) {
  const auto opts = creationOptions(graph, params, options, "lstm::createWeightsKernel");
  const std::size_t I = inputSize(params), H = outputSize(params), R = hSize(params);
  const Type t = params.rnn.dataType;
  if (opts.preCalcWeights) {
    Tensor wi = graph.addVariable(t, {I, 4 * H}, {debug, "inputWeights"});
    Tensor wo = graph.addVariable(t, {R, 4 * H}, {debug, "outputWeights"});
    util::mapTensorLinearly(graph, wi);
    util::mapTensorLinearly(graph, wo);
    return {detail::fromMatrix(wi), detail::fromMatrix(wo)};
  }
  Tensor w = graph.addVariable(t, {I + R, 4 * H}, {debug, "weights"});
  util::mapTensorLinearly(graph, w);
  return {detail::fromMatrix(w.slice(0, I, 0)), detail::fromMatrix(w.slice(I, I + R, 0))};
}

Tensor createWeightsProjection(Graph &graph, const LstmParams &params, const DebugContext &debug,
                               const OptionFlags &options, linalg::PlanningCache *) {
  creationOptions(graph, params, options, "lstm::createWeightsProjection");
  if (params.projSize == 0)
    throw invalid_option("lstm::createWeightsProjection: params.projSize is 0, so the layer has "
                         "no projection");
  Tensor p = graph.addVariable(params.rnn.dataType, {outputSize(params), params.projSize},
                               {debug, "projection"});
  util::mapTensorLinearly(graph, p);
  return p;
}

Tensor createWeightsBiases(Graph &graph, const LstmParams &params, const DebugContext &debug,
                           const OptionFlags &options, linalg::PlanningCache *) {
  creationOptions(graph, params, options, "lstm::createWeightsBiases");
  Tensor b = graph.addVariable(params.rnn.dataType, {4, outputSize(params)}, {debug, "biases"});
  util::mapTensorLinearly(graph, b);
  return b;
}

LstmWeights createWeights(Graph &graph, const LstmParams &params, const DebugContext &debug,
                          const OptionFlags &options, linalg::PlanningCache *cache) {
  auto [wi, wo] = createWeightsKernel(graph, params, debug, options, cache);
  LstmWeights w{wi, wo, createWeightsBiases(graph, params, debug, options, cache), Tensor()};
  if (params.projSize)
    w.projection = createWeightsProjection(graph, params, debug, options, cache);
  return w;
}

namespace detail {

namespace {

void checkShape(const Tensor &t, const std::vector<std::size_t> &shape, const Type &type,
                const std::string &what) {
  if (!t.valid())
    throw shape_error(what + " is not a valid tensor");
  if (t.shape() != shape)
    throw shape_error(fmt::format("{} must have shape {{{}}}, not {}", what,
                                  fmt::join(shape, ","), t.shapeToString()));
  if (t.elementType() != type)
    throw type_error(fmt::format("{} must be of type {}, not {}", what, type.toString(),
                                 t.elementType().toString()));
}

} // namespace

void checkWeights(const LstmParams &params, const LstmWeights &w, const std::string &what) {
  const std::size_t I = inputSize(params), H = outputSize(params);
  const Type t = params.rnn.dataType;
  checkShape(w.inputWeights, {4, I, H}, t, what + ": weights.inputWeights");
  checkShape(w.outputWeights, {4, hSize(params), H}, t, what + ": weights.outputWeights");
  checkShape(w.biases, {4, H}, t, what + ": weights.biases");
  if (params.projSize)
    checkShape(w.projection, {H, params.projSize}, t, what + ": weights.projection");
  else if (w.projection.valid())
    throw invalid_option(what + ": weights.projection is given, but params.projSize is 0 (no "
                                "projection)");
}

void checkState(const LstmParams &params, const LstmState &s, const std::string &what) {
  const std::size_t B = params.rnn.batchSize, H = outputSize(params);
  checkShape(s.output, {B, hSize(params)}, params.rnn.dataType, what + ".output");
  checkShape(s.cellState, {B, H}, params.rnn.dataType, what + ".cellState");
}

void checkInput(const LstmParams &params, const Tensor &in, const std::string &what) {
  checkShape(in, {params.rnn.maxTimeSteps, params.rnn.batchSize, inputSize(params)},
             params.rnn.dataType, what);
}

ForwardSequences forwardSequences(Graph &graph, const LstmParams &params,
                                  const LstmOptions &opts, const LstmWeights &weights,
                                  const Tensor &in, const InterLayout &layout, Tensor *inter, bool fullSequence,
                                  bool preCalc, Sequence &prog, const DebugContext &debug,
                                  linalg::PlanningCache *cache) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = inputSize(params), H = outputSize(params);
  const Type t = params.rnn.dataType;
  ForwardSequences s;
  if (preCalc) {
    s.weighted = rnn::detail::addSequence(graph, t, T, B, 4 * H, opts.numShards,
                                          {debug, "weightedInput"});
    linalg::matMulWithOutput(graph, in.reshape({T * B, I}),
                             asMatrix(weights.inputWeights), s.weighted.reshape({T * B, 4 * H}),
                             prog, {debug, "weighInput"}, matMulOptions(opts, "TRAINING_FWD"),
                             cache);
  }
  if (fullSequence)
    s.outSeq = rnn::createOutputTensor(graph, hParams(params), opts.numShards, {debug, "output"});
  if (inter && layout.count() > 0) {
    s.interSeq = rnn::detail::addSequence(graph, t, T * layout.count(), B, H, opts.numShards,
                                          {debug, "intermediates"})
                     .reshape({T, layout.count(), B, H});
    *inter = s.interSeq;
  } else if (inter) {
    *inter = graph.addVariable(t, {T, 0, B, H}, {debug, "intermediates"});
  }
  return s;
}

namespace {

// The LSTM's side of the forward step builder (rnn::detail::forwardStepBody): the step's
// tensors and the fields of LstmCellFwd and, projected, of RnnMaskedRows. A projected step's
// cell writes m_t (mState, and mOut, zero past a row's length, the scratch the projection
// reads); h_t = mOut . Wp is taken into the state h by the rows still running.
class FwdCell final : public rnn::detail::CellSteps {
public:
  FwdCell(const LstmParams &params, Tensor bias, bool full, bool stepWeighsInput, bool preCalc,
          InterLayout saved, Tensor scratchOut, Graph &graph, const DebugContext &debug)
      : params_(params), bias_(std::move(bias)), full_(full), stepWeighsInput_(stepWeighsInput),
        preCalc_(preCalc), saved_(saved), scratchOut_(std::move(scratchOut)) {
    if (!projected())
      return;
    const std::size_t B = params.rnn.batchSize, H = outputSize(params);
    mState_ = rnn::detail::addStep(graph, params.rnn.dataType, B, H, {debug, "cellOutputState"});
    mOut_ = rnn::detail::addStep(graph, params.rnn.dataType, B, H, {debug, "cellOutput"});
  }

  bool projected() const override { return params_.projSize != 0; }

  rnn::detail::StepTensors begin(Graph &, std::vector<Tensor> &state, const rnn::RnnSlice &slice,
                                 const rnn::RnnBatchwiseFlags &flags,
                                 const DebugContext &) const override {
    rnn::detail::StepTensors s;
    s.state = state[0];
    if (stepWeighsInput_)
      s.input = slice.inputs[0];
    s.out = full_ ? slice.outputs[0] : scratchOut_;
    s.scratch = {mOut_, Tensor()};
    s.own = {state[1], preCalc_ ? slice.interimIn : Tensor(),
             saved_.count() > 0 ? slice.interimOut : Tensor(), flags.mask};
    return s;
  }

  Tensor rowsOf(unsigned phase, const rnn::detail::StepTensors &s) const override {
    return phase == 0 && projected() ? mState_ : s.state;
  }

  void connect(unsigned phase, Graph &g, VertexRef v, const std::vector<Interval> &rows,
               const rnn::detail::StepTensors &s) const override {
    const Tensor &c = s.own[0], &preIn = s.own[1], &inter = s.own[2], &mask = s.own[3];
    if (phase == 1) {
      connectMaskedRows(g, v, rows, s.out, s.state, mask);
      return;
    }
    const InterLayout cellPart = saved_.cellPart();
    connectCellFwd(g, params_, v, rows, s.product[0], preIn, bias_, c,
                   projected() ? mState_ : s.state, projected() ? mOut_ : s.out,
                   inter.valid() ? inter.slice(0, cellPart.count(), 0) : inter, cellPart, mask);
  }

  // A projected step keeps h_t in the first P columns of its slot.
  void finish(Graph &, const rnn::detail::StepTensors &s, Sequence &step,
              const DebugContext &) const override {
    const Tensor &inter = s.own[2];
    if (projected() && inter.valid() && saved_.saveH)
      step.add(Copy(s.out, inter[saved_.count() - 1].slice(0, params_.projSize, 1)));
  }

private:
  const LstmParams &params_;
  Tensor bias_;
  bool full_, stepWeighsInput_, preCalc_;
  InterLayout saved_;
  Tensor scratchOut_, mState_, mOut_;
};

} // namespace

std::pair<Tensor, Tensor> forward(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                                  const LstmState &stateInit, const LstmWeights &weights,
                                  const Tensor &in, const InterLayout &layout, Tensor *inter,
                                  bool fullSequence, Sequence &prog, const DebugContext &debug,
                                  linalg::PlanningCache *cache) {
  const std::size_t B = params.rnn.batchSize;
  const Type t = params.rnn.dataType;
  const OptionFlags mmOptions = matMulOptions(opts, "TRAINING_FWD");
  const Tensor wi = asMatrix(weights.inputWeights), wo = asMatrix(weights.outputWeights);
  const bool weighInput = params.doInputWeightCalc;
  // The persistent kernel takes the input weighed for every step before its launch.
  const PersistentChoice persistent = persistentChoice(graph, params, opts, "lstm");
  const bool preCalc = (opts.preCalcWeights || persistent.use) && weighInput;

  ForwardSequences seqs = forwardSequences(graph, params, opts, weights, in, layout, inter,
                                           fullSequence, preCalc, prog, debug, cache);
  const Tensor &weighted = seqs.weighted, &outSeq = seqs.outSeq;
  Tensor &interSeq = seqs.interSeq;
  if (persistent.use)
    return persistentForward(graph, params, persistent, stateInit, weights,
                             preCalc ? weighted : Tensor(), outSeq, interSeq,
                             inter ? layout : InterLayout{}, prog, debug);
  if (usesFusedStep(graph, params, opts, "lstm"))
    return fusedForward(graph, params, opts, stateInit, weights,
                        weighInput && !preCalc ? in : Tensor(), preCalc ? weighted : Tensor(),
                        outSeq, interSeq, inter ? layout : InterLayout{}, prog, debug);
  Tensor scratchOut; // the step's output h_t when the sequence is not kept
  if (!fullSequence)
    scratchOut = rnn::detail::addStep(graph, t, B, hSize(params), {debug, "stepOutput"});
  const FwdCell cell(params, weights.biases, fullSequence, weighInput && !preCalc, preCalc,
                     inter ? layout : InterLayout{}, scratchOut, graph, debug);
  rnn::detail::LoopSpec spec{params.rnn};
  spec.initState = {stateInit.output, stateInit.cellState};
  if (weighInput && !preCalc)
    spec.inputs.push_back(in);
  spec.interimIn = preCalc ? &weighted : nullptr;
  spec.interimOut = inter && layout.count() > 0 ? &interSeq : nullptr;
  if (fullSequence)
    spec.outputs.push_back(outSeq);
  spec.numShards = opts.numShards;
  spec.codeReuse = opts.codeReuse;
  const auto finalState = rnn::detail::forwardCellLoop(
      graph, rnn::detail::cellTable(rnn::detail::CellKind::Lstm), spec,
      {{wo, wi, weights.projection}, mmOptions, cache}, cell, prog, debug);
  return {fullSequence ? outSeq : finalState[0], finalState[1]};
}

} // namespace detail

std::pair<Tensor, Tensor> lstmFwd(Graph &graph, const LstmParams &params,
                                  const LstmState &stateInit, const Tensor &in,
                                  const LstmWeights &weights, Tensor *intermediates,
                                  Sequence &prog, const DebugContext &debug,
                                  const OptionFlags &options, linalg::PlanningCache *cache) {
  const std::string what = "lstm::lstmFwd";
  const auto opts = detail::parseOptions(graph, params, options, what);
  detail::checkState(params, stateInit, what + ": stateInit");
  detail::checkWeights(params, weights, what);
  detail::checkInput(params, in, what + ": input");
  if (opts.inferenceOnly && intermediates)
    throw invalid_option(what + ": intermediates were asked for, but the option inferenceOnly is "
                                "true (an inference pass keeps none)");
  const auto layout = detail::interLayout(params, opts.recomputation);
  // The reverse direction is the forward machinery on each row's steps in reverse order.
  const rnn::detail::RunOrder order{graph, params.rnn, opts.reverse, prog, debug};
  auto result = detail::forward(graph, params, opts, stateInit, weights, order(in, "in"), layout,
                                intermediates, params.outputFullSequence, prog, debug, cache);
  result.first = order.output(result.first, params.outputFullSequence, "out");
  return result;
}

Tensor lstmFwd(Graph &graph, const LstmParams &params, Sequence &prog, const LstmState &stateInit,
               const LstmWeights &weights, const Tensor &in, Tensor *intermediates,
               const DebugContext &debug, const OptionFlags &options,
               linalg::PlanningCache *cache) {
  return lstmFwd(graph, params, stateInit, in, weights, intermediates, prog, debug, options, cache)
      .first;
}

} // namespace aspen::nn::lstm
