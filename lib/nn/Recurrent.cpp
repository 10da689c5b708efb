// The vanilla RNN (popnn's Recurrent functions): built from matMul, ops' additions and nn's
// non-linearities; the sequences run as rnn loops inside the device program. forwardIterate's
// steps are fused (the product, additions and non-linearity in one compute set a step, on
// weights packed once) where the LSTM's and the GRU's stepMethod auto would fuse them.
#include "CellSteps.hpp"
#include "NnWork.hpp"
#include "RecurrentInternal.hpp"

#include <aspen/Error.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/nn/Recurrent.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/ops/Zero.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace aspen::nn::rnn {

using program::Copy;
using program::Sequence;

namespace {

void checkShape(const Tensor &t, const std::vector<std::size_t> &shape, const Type &type,
                const std::string &what) {
  if (!t.valid())
    throw shape_error(what + " is not a valid tensor");
  if (t.shape() != shape)
    throw shape_error(fmt::format("{} must have shape {{{}}}, not {}", what, fmt::join(shape, ","),
                                  t.shapeToString()));
  if (t.elementType() != type)
    throw type_error(fmt::format("{} must be of type {}, not {}", what, type.toString(),
                                 t.elementType().toString()));
}

void checkType(const Type &t, const std::string &what) {
  if (t != FLOAT && t != HALF)
    throw type_error(fmt::format("{}: the data type must be float or half, not {}", what,
                                 t.toString()));
}

void checkNonLinearity(NonLinearityType nl, const std::string &what) {
  if (gradientTakesInput(nl) || nl == NonLinearityType::SOFTMAX_SCALED)
    throw invalid_option(fmt::format("{}: nonLinearityType {} is not allowed: the RNN keeps only "
                                     "its outputs, so the kind's gradient must follow from them "
                                     "(SIGMOID, HARD_SIGMOID, RELU, TANH, SOFTMAX or "
                                     "SOFTMAX_STABLE)",
                                     what, nn::asString(nl)));
}

OptionFlags mmOptions(const Type &partialsType, bool inferenceOnly, const char *pass) {
  return {{"partialsType", partialsType == HALF ? "half" : "float"},
          {"fullyConnectedPass", inferenceOnly ? "INFERENCE_FWD" : pass}};
}

Tensor mapped(Graph &graph, const Type &t, std::vector<std::size_t> shape,
              const DebugContext &debug) {
  Tensor v = graph.addVariable(t, shape, debug);
  util::mapTensorLinearly(graph, v);
  return v;
}

// [n, B, m] rows times a [m, k] matrix -> [n, B, k].
Tensor multiplySteps(Graph &graph, const Tensor &seq, const Tensor &matrix, Sequence &prog,
                     const OptionFlags &options, const DebugContext &debug,
                     linalg::PlanningCache *cache) {
  const std::size_t n = seq.dim(0), B = seq.dim(1);
  return linalg::matMul(graph, seq.reshape({n * B, seq.dim(2)}), matrix, prog, debug, options,
                        cache)
      .reshape({n, B, matrix.dim(1)});
}

} // namespace

std::vector<std::pair<linalg::MatMulParams, OptionFlags>>
getMatMulPrePlanParameters(std::size_t numSteps, std::size_t batchSize, std::size_t inputSize,
                           std::size_t outputSize, const Type &dType, const Type &partialsType,
                           bool inferenceOnly, bool hasFeedforwardWeights) {
  auto mm = [&](std::vector<std::size_t> a, std::vector<std::size_t> b, const char *pass) {
    linalg::MatMulParams p;
    p.inputType = dType;
    p.outputType = dType;
    p.aShape = std::move(a);
    p.bShape = std::move(b);
    return std::pair{p, mmOptions(partialsType, inferenceOnly, pass)};
  };
  const std::size_t T = numSteps, B = batchSize, I = inputSize, H = outputSize;
  std::vector<std::pair<linalg::MatMulParams, OptionFlags>> out;
  if (hasFeedforwardWeights)
    out.push_back(mm({T * B, I}, {I, H}, "TRAINING_FWD"));
  out.push_back(mm({B, H}, {H, H}, "TRAINING_FWD"));
  if (!inferenceOnly) {
    out.push_back(mm({B, H}, {H, H}, "TRAINING_BWD"));
    out.push_back(mm({T * B, H}, {H, I}, "TRAINING_BWD"));
    out.push_back(mm({I, T * B}, {T * B, H}, "TRAINING_WU"));
    out.push_back(mm({H, T * B}, {T * B, H}, "TRAINING_WU"));
  }
  return out;
}

std::uint64_t getFwdFlops(unsigned sequenceSize, unsigned batchSize, unsigned inputSize,
                          unsigned outputSize, bool weightInput) {
  const std::uint64_t T = sequenceSize, B = batchSize, I = inputSize, H = outputSize;
  return T * B * ((weightInput ? 2 * I * H : 0) + 2 * H * H + 2 * H);
}

std::uint64_t getBwdFlops(unsigned sequenceSize, unsigned batchSize, unsigned inputSize,
                          unsigned outputSize, bool calcInputGrad) {
  const std::uint64_t T = sequenceSize, B = batchSize, I = inputSize, H = outputSize;
  return T * B * (2 * H * H + H + (calcInputGrad ? 2 * I * H : 0));
}

std::uint64_t getWuFlops(unsigned sequenceSize, unsigned batchSize, unsigned inputSize,
                         unsigned outputSize) {
  const std::uint64_t T = sequenceSize, B = batchSize, I = inputSize, H = outputSize;
  return T * B * (2 * I * H + 2 * H * H + H);
}

Tensor createInput(Graph &graph, unsigned numSteps, unsigned batchSize, unsigned inputSize,
                   unsigned outputSize, const Type &dType, const Type &, bool,
                   const DebugContext &debug, linalg::PlanningCache *) {
  checkType(dType, "rnn::createInput");
  RnnParams params(dType, batchSize, numSteps, {inputSize, outputSize});
  return createInputTensor(graph, params, 1, debug);
}

Tensor createFwdState(Graph &graph, const Type &dType, unsigned batchSize, unsigned outputSize,
                      Sequence &prog, bool initState, bool, const DebugContext &debug,
                      linalg::PlanningCache *) {
  checkType(dType, "rnn::createFwdState");
  Tensor state = detail::addStep(graph, dType, batchSize, outputSize, debug);
  if (initState)
    ops::zero(graph, state, prog, {debug, "zero"});
  return state;
}

Tensor getOutputFromFwdState(const Tensor &fwdState) { return fwdState; }

Tensor createWeightsInput(Graph &graph, unsigned, unsigned, unsigned inputSize,
                          unsigned outputSize, const Type &dType, const Type &, bool,
                          const DebugContext &debug, linalg::PlanningCache *) {
  checkType(dType, "rnn::createWeightsInput");
  return mapped(graph, dType, {inputSize, outputSize}, debug);
}

Tensor createWeightsFeedback(Graph &graph, unsigned, unsigned outputSize, const Type &dType,
                             const Type &, bool, const DebugContext &debug,
                             linalg::PlanningCache *) {
  checkType(dType, "rnn::createWeightsFeedback");
  return mapped(graph, dType, {outputSize, outputSize}, debug);
}

Tensor forwardWeightInput(Graph &graph, const Tensor &actIn, const Tensor &weights,
                          Sequence &prog, const Type &partialsType, bool inferenceOnly,
                          const DebugContext &debug, linalg::PlanningCache *cache) {
  const std::string what = "rnn::forwardWeightInput";
  if (actIn.rank() != 3 || weights.rank() != 2 || actIn.dim(2) != weights.dim(0))
    throw shape_error(fmt::format("{}: actIn must be [T, B, I] and weights [I, H]; got {} and {}",
                                  what, actIn.shapeToString(), weights.shapeToString()));
  checkType(actIn.elementType(), what);
  return multiplySteps(graph, actIn, weights, prog,
                       mmOptions(partialsType, inferenceOnly, "TRAINING_FWD"), debug, cache);
}

namespace detail {

void checkVanillaNonLinearity(NonLinearityType nl, const std::string &what) {
  checkNonLinearity(nl, what);
}

// popnn's signature says nothing of training: the rule that pays for packing every run.
bool vanillaFuses(const Graph &graph, const RnnParams &params, NonLinearityType nl) {
  const std::size_t H = params.layerSizes[1];
  return chooseFusedStep(graph, StepMethod::Auto, nl, nl, "rnn::forwardIterate", [&] {
    return fusedStepPays(params, 1, false) &&
           fusedWeightsFit(graph.getTarget(), H, kUnitPanelUnits, unitPanelBytes(H, 1, H));
  });
}

VanillaFusedLane prepareVanillaFused(Graph &graph, const RnnParams &params,
                                     const Tensor &feedFwdIn, const Tensor &initState,
                                     const Tensor &feedbackWeights, const Tensor &biases,
                                     const Tensor &out, NonLinearityType nl, Sequence &prog,
                                     const DebugContext &debug, const Tensor &stepInput,
                                     const Tensor &feedFwdWeights) {
  VanillaFusedLane lane;
  if (stepInput.valid()) { // Wff's I rows of [H], read in place
    lane.I = params.layerSizes[0];
    std::vector<Tensor> rows;
    for (std::size_t k = 0; k < lane.I; ++k)
      rows.push_back(feedFwdWeights[k]);
    lane.inputBlocks =
        packUnitPanels(graph, params.dataType, rows, lane.I, 1, params.layerSizes[1], prog,
                       {debug, "input"});
    lane.stepInput = contiguousOrCopy(graph, stepInput, prog, {debug, "stepInput"});
  }
  lane.T = params.maxTimeSteps;
  lane.B = params.batchSize;
  lane.H = params.layerSizes[1];
  lane.nl = nl;
  std::vector<Tensor> rows;
  for (std::size_t k = 0; k < lane.H; ++k)
    rows.push_back(feedbackWeights[k]);
  lane.blocks = packUnitPanels(graph, params.dataType, rows, lane.H, 1, lane.H, prog, debug);
  lane.x = contiguousOrCopy(graph, feedFwdIn, prog, {debug, "input"}).flatten();
  lane.bias = contiguousOrCopy(graph, biases, prog, {debug, "biases"});
  lane.hBuf = addStep(graph, params.dataType, 2 * lane.B, lane.H, {debug, "h"})
                  .reshape({2, lane.B, lane.H});
  prog.add(Copy(initState, lane.hBuf[0]));
  lane.out = out;
  return lane;
}

void VanillaFusedLane::addStep(Graph &graph, ComputeSet cs, unsigned phase,
                               const FusedClock &clock, unsigned p) const {
  if (stepInput.valid() && phase == 0) {
    addInputProduct(graph, cs, clock, p);
    return;
  }
  addRecurrentStep(graph, cs, clock, p);
}

// Step t's x_t . Wff into row t of x, the units of each input block.
void VanillaFusedLane::addInputProduct(Graph &graph, ComputeSet cs, const FusedClock &clock,
                                       unsigned p) const {
  addStepProduct(graph, cs, inputBlocks, clock, p, stepInput.reshape({T, B, I}),
                 x.reshape({T, B, H}), H, 1);
}

// Step t (parity p = t % 2) reads h_{t-1} from hBuf[p] and writes h_t to hBuf[1 - p].
void VanillaFusedLane::addRecurrentStep(Graph &graph, ComputeSet cs, const FusedClock &clock,
                                        unsigned p) const {
  const std::string type = util::templateVertex("aspen::nn::RnnFusedFwd", x.elementType());
  for (const auto &block : blocks) {
    auto units = [&](const Tensor &row) {
      return row.slice(block.units.firstUnit, block.units.firstUnit + block.units.numUnits);
    };
    std::vector<Tensor> h, o;
    for (std::size_t r = 0; r < B; ++r)
      h.push_back(units(hBuf[1 - p][r]));
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t r = 0; r < B; ++r)
        o.push_back(units(out[i][r]));
    VertexRef v = graph.addVertex(cs, type);
    graph.setTileMapping(v, block.units.tile);
    graph.connect(v["time"], clock.time.slice(p, p + 1));
    graph.connect(v["hPrev"], hBuf[p].flatten());
    graph.connect(v["packed"], block.packed);
    graph.connect(v["x"], x);
    graph.connect(v["bias"], bias);
    graph.connect(v["hState"], h);
    graph.connect(v["out"], o);
    graph.setInitialValue(v["H"], static_cast<unsigned>(H));
    graph.setInitialValue(v["firstUnit"], block.units.firstUnit);
    graph.setInitialValue(v["numUnits"], block.units.numUnits);
    graph.setInitialValue(v["steps"], static_cast<unsigned>(T));
    graph.setInitialValue(v["nonLinearity"], static_cast<unsigned>(nl));
  }
}

} // namespace detail

namespace {

// forwardIterate's loop with fused steps: Wfb packed once (program::Cached) into 16-unit
// panels, then one compute set a step of RnnFusedFwd vertices (the product, x_t, b and the
// non-linearity) and the clock (RnnFused.cpp's loop).
void fusedIterate(Graph &graph, const RnnParams &params, const Tensor &feedFwdIn,
                  const Tensor &initState, const Tensor &feedbackWeights, const Tensor &biases,
                  const Tensor &out, NonLinearityType nl, Sequence &prog,
                  const DebugContext &debug) {
  const detail::VanillaFusedLane lane = detail::prepareVanillaFused(
      graph, params, feedFwdIn, initState, feedbackWeights, biases, out, nl, prog, debug);
  auto step = [&](const detail::FusedClock &clock, const detail::FusedShard &, unsigned p) {
    ComputeSet cs = graph.addComputeSet({debug, p ? "oddStep" : "evenStep"});
    lane.addStep(graph, cs, 0, clock, p);
    detail::addClockVertex(graph, cs, clock, p);
    return Sequence{program::Execute(cs)};
  };
  detail::fusedLoop(graph, params, 1, step, prog, {debug, "loop"});
}

// The vanilla RNN's side of the step builders (rnn::detail::forwardStepBody, backwardStepBody):
// the fields of RnnCellFwd (forward: x_t, the biases, the non-linearity) and RnnCellBwd
// (backward: y_t, dy_t; the loop's state is dhMM = delta_{t+1} . Wfb^T, zero at the last step).
class VanillaCell final : public detail::CellSteps {
public:
  VanillaCell(bool forward, Tensor bias, NonLinearityType nl)
      : forward_(forward), bias_(std::move(bias)), nl_(nl) {}

  detail::StepTensors begin(Graph &, std::vector<Tensor> &state, const RnnSlice &slice,
                            const RnnBatchwiseFlags &, const DebugContext &) const override {
    detail::StepTensors s;
    s.state = state[0];
    if (forward_) {
      s.out = slice.outputs[0];
    } else {
      s.stateGrad = state[0];
      s.deltaX = slice.outputs[0];
    }
    s.own = slice.inputs; // forward {x}; backward {dy, y}
    return s;
  }

  void connect(unsigned, Graph &g, VertexRef v, const std::vector<Interval> &rows,
               const detail::StepTensors &s) const override {
    g.setInitialValue(v["nonLinearity"], static_cast<unsigned>(nl_));
    g.setInitialValue(v["softmax"], !isSoftmax(nl_) ? 0u : isStableSoftmax(nl_) ? 2u : 1u);
    if (forward_) {
      g.setInitialValue(v["outputScale"], getNonLinearityScaling(nl_));
      g.connect(v["pre"], nn::work::rowList(s.product[0], rows));
      g.connect(v["x"], nn::work::rowList(s.own[0], rows));
      g.connect(v["bias"], bias_);
      g.connect(v["hState"], nn::work::rowList(s.state, rows));
      g.connect(v["out"], nn::work::rowList(s.out, rows));
      return;
    }
    g.connect(v["y"], nn::work::rowList(s.own[1], rows));
    g.connect(v["dy"], nn::work::rowList(s.own[0], rows));
    g.connect(v["dhMM"], nn::work::rowList(s.stateGrad, rows));
    g.connect(v["delta"], nn::work::rowList(s.deltaX, rows));
  }

private:
  bool forward_;
  Tensor bias_;
  NonLinearityType nl_;
};

// rnnBwdSequence's loop, unfused: the backward step builder on the vanilla RNN's table row.
void backwardLoop(Graph &graph, const RnnParams &params, const Tensor &wfbT,
                  const Tensor &fwdState, const Tensor &outGradient, const Tensor &deltas,
                  const Tensor &state0, NonLinearityType nl, const OptionFlags &options,
                  Sequence &prog, const DebugContext &debug, linalg::PlanningCache *cache) {
  const VanillaCell cell(false, Tensor(), nl);
  detail::LoopSpec spec{params};
  spec.initState = {state0};
  spec.inputs = {outGradient, fwdState};
  spec.outputs = {deltas};
  detail::backwardCellLoop(graph, detail::cellTable(detail::CellKind::Vanilla), spec,
                           {{wfbT, {}, {}}, options, cache}, cell, prog, {debug, "loop"});
}

// rnnBwdSequence's loop with fused steps: Wfb^T packed (again whenever Wfb^T is written) into 16-unit panels, then one
// compute set a step of RnnFusedBwd vertices (the product of the kept delta_{t+1}, + dy_t and
// the gradient) and the clock, reverse in time.
void fusedBackward(Graph &graph, const RnnParams &params, const Tensor &wfbT,
                   const Tensor &fwdState, const Tensor &outGradient, const Tensor &deltas,
                   NonLinearityType nl, Sequence &prog, const DebugContext &debug) {
  const std::size_t T = params.maxTimeSteps, B = params.batchSize, H = params.layerSizes[1];
  std::vector<Tensor> rows;
  for (std::size_t k = 0; k < H; ++k)
    rows.push_back(wfbT[k]);
  const auto blocks = detail::packUnitPanels(graph, params.dataType, rows, H, 1, H, prog, debug);
  const std::string type = util::templateVertex("aspen::nn::RnnFusedBwd", params.dataType);
  auto step = [&](const detail::FusedClock &clock, const detail::FusedShard &, unsigned p) {
    ComputeSet cs = graph.addComputeSet({debug, p ? "oddStep" : "evenStep"});
    for (const auto &block : blocks) {
      const std::size_t u0 = block.units.firstUnit, u1 = u0 + block.units.numUnits;
      std::vector<Tensor> y, dy, delta;
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t r = 0; r < B; ++r) {
          y.push_back(fwdState[t][r].slice(u0, u1));
          dy.push_back(outGradient[t][r].slice(u0, u1));
          delta.push_back(deltas[t][r].slice(u0, u1));
        }
      VertexRef v = graph.addVertex(cs, type);
      graph.setTileMapping(v, block.units.tile);
      graph.connect(v["time"], clock.time.slice(p, p + 1));
      // Read whole by every vertex (row t + 1 a step) while they write row t: the loop's own
      // contiguous sequence, so read in place.
      graph.connect(v["deltaAll"], deltas.flatten());
      graph.connect(v["packed"], block.packed);
      graph.connect(v["y"], y);
      graph.connect(v["dy"], dy);
      graph.connect(v["delta"], delta);
      graph.setInitialValue(v["H"], static_cast<unsigned>(H));
      graph.setInitialValue(v["numUnits"], block.units.numUnits);
      graph.setInitialValue(v["steps"], static_cast<unsigned>(T));
      graph.setInitialValue(v["rows"], static_cast<unsigned>(B));
      graph.setInitialValue(v["nonLinearity"], static_cast<unsigned>(nl));
    }
    detail::addClockVertex(graph, cs, clock, p);
    return Sequence{program::Execute(cs)};
  };
  detail::fusedLoop(graph, params, 1, step, prog, {debug, "loop"});
}

} // namespace

namespace detail {

Tensor vanillaDeltas(Graph &graph, const RnnParams &params, const Tensor &feedbackWeights,
                     const Tensor &y, const Tensor &dy, NonLinearityType nl,
                     const Type &partialsType, Sequence &prog, const DebugContext &debug,
                     linalg::PlanningCache *cache) {
  const Type t = params.dataType;
  const auto B = static_cast<unsigned>(params.batchSize);
  const auto H = static_cast<unsigned>(params.layerSizes[1]);
  // delta_t for every step, in a reverse loop whose state is delta_{t+1}.
  Tensor deltas = createOutputTensor(graph, params, 1, {debug, "delta"});
  const Tensor state0 = createBwdState(graph, t, B, H, prog, {debug, "bwdState"});
  const Tensor wfbT = graph.clone(feedbackWeights.transpose(), {debug, "feedbackTransposed"});
  prog.add(Copy(feedbackWeights.transpose(), wfbT));
  if (vanillaFuses(graph, params, nl))
    fusedBackward(graph, params, wfbT, y, dy, deltas, nl, prog, {debug, "fused"});
  else
    backwardLoop(graph, params, wfbT, y, dy, deltas, state0, nl,
                 mmOptions(partialsType, false, "TRAINING_BWD"), prog, debug, cache);
  return deltas;
}

std::tuple<Tensor, Tensor, Tensor, Tensor>
vanillaGradients(Graph &graph, const Tensor &deltas, const Tensor &x, const Tensor &y0,
                 const Tensor &y, const Tensor &feedFwdWeights, bool wantDx, bool doWU,
                 const Type &partialsType, Sequence &prog, const DebugContext &debug,
                 linalg::PlanningCache *cache) {
  const std::size_t T = deltas.dim(0), B = deltas.dim(1), H = deltas.dim(2), I = x.dim(2);
  const Tensor deltaRows = deltas.reshape({T * B, H});
  Tensor dx;
  if (wantDx)
    dx = linalg::matMul(graph, deltaRows, feedFwdWeights.transpose(), prog, {debug, "inputGrad"},
                        mmOptions(partialsType, false, "TRAINING_BWD"), cache)
             .reshape({T, B, I});
  Tensor dWff, dWfb, db;
  if (doWU) {
    const OptionFlags wu = mmOptions(partialsType, false, "TRAINING_WU");
    dWff = linalg::matMul(graph, x.reshape({T * B, I}).transpose(), deltaRows, prog,
                          {debug, "inputWeightsGrad"}, wu, cache);
    // y_{t-1}: the initial state, then the outputs of steps 0..T-2.
    const Tensor prev = T > 1 ? concat(y0.expand({0}), y.slice(0, T - 1, 0), 0) : y0.expand({0});
    dWfb = linalg::matMul(graph, prev.reshape({T * B, H}).transpose(), deltaRows, prog,
                          {debug, "feedbackWeightsGrad"}, wu, cache);
    db = ops::reduce(graph, deltaRows, deltas.elementType(), {0}, {ops::Operation::ADD}, prog,
                     {debug, "biasesGrad"});
  }
  return {dx, dWff, dWfb, db};
}

} // namespace detail

Tensor forwardIterate(Graph &graph, const Tensor &feedFwdIn, const Tensor &initState,
                      const Tensor &feedbackWeights, const Tensor &biases, Sequence &prog,
                      NonLinearityType nl, const Type &partialsType, bool inferenceOnly,
                      const DebugContext &debug, linalg::PlanningCache *cache) {
  const std::string what = "rnn::forwardIterate";
  checkNonLinearity(nl, what);
  if (feedFwdIn.rank() != 3)
    throw shape_error(fmt::format("{}: feedFwdIn must be [T, B, H], not {}", what,
                                  feedFwdIn.shapeToString()));
  const std::size_t T = feedFwdIn.dim(0), B = feedFwdIn.dim(1), H = feedFwdIn.dim(2);
  const Type t = feedFwdIn.elementType();
  checkType(t, what);
  checkShape(initState, {B, H}, t, what + ": initState");
  checkShape(feedbackWeights, {H, H}, t, what + ": feedbackWeights");
  checkShape(biases, {H}, t, what + ": biases");
  RnnParams params(t, B, T, {H, H});
  const OptionFlags options = mmOptions(partialsType, inferenceOnly, "TRAINING_FWD");
  Tensor out = createOutputTensor(graph, params, 1, {debug, "output"});
  if (detail::vanillaFuses(graph, params, nl)) {
    fusedIterate(graph, params, feedFwdIn, initState, feedbackWeights, biases, out, nl, prog,
                 {debug, "fused"});
    return out;
  }
  const VanillaCell cell(true, biases, nl);
  detail::LoopSpec spec{params};
  spec.initState = {initState};
  spec.inputs = {feedFwdIn};
  spec.outputs = {out};
  detail::forwardCellLoop(graph, detail::cellTable(detail::CellKind::Vanilla), spec,
                          {{feedbackWeights, {}, {}}, options, cache}, cell, prog, debug);
  return out;
}

Tensor createBwdState(Graph &graph, const Type &dType, unsigned batchSize, unsigned outputSize,
                      Sequence &prog, const DebugContext &debug, linalg::PlanningCache *) {
  checkType(dType, "rnn::createBwdState");
  Tensor state = detail::addStep(graph, dType, batchSize, outputSize, debug);
  ops::zero(graph, state, prog, {debug, "zero"});
  return state;
}

namespace {

// delta_t = nl'(y_t) * (dy_t + delta_{t+1} . Wfb^T)
Tensor gradientAtAdder(Graph &graph, const Tensor &nextLayerGrad, const Tensor &bwdState,
                       const Tensor &actOut, const Tensor &weightsFeedback, Sequence &prog,
                       NonLinearityType nl, const OptionFlags &options,
                       const DebugContext &debug, linalg::PlanningCache *cache) {
  const Tensor g = linalg::matMul(graph, bwdState, weightsFeedback.transpose(), prog,
                                  {debug, "feedback"}, options, cache);
  ops::addInPlace(graph, g, nextLayerGrad, prog, {debug, "outputGrad"});
  return nn::nonLinearityInputGradient(graph, nl, actOut, g, NonLinearityGradient::Exact, prog,
                                       {debug, "nonLinearity"});
}

void checkStep(const Tensor &nextLayerGrad, const Tensor &bwdState, const Tensor &actOut,
               const Tensor &weightsFeedback, NonLinearityType nl, const std::string &what) {
  checkNonLinearity(nl, what);
  if (nextLayerGrad.rank() != 2)
    throw shape_error(fmt::format("{}: nextLayerGrad must be [B, H], not {}", what,
                                  nextLayerGrad.shapeToString()));
  const Type t = nextLayerGrad.elementType();
  checkType(t, what);
  const std::size_t B = nextLayerGrad.dim(0), H = nextLayerGrad.dim(1);
  checkShape(bwdState, {B, H}, t, what + ": bwdState");
  checkShape(actOut, {B, H}, t, what + ": actOut");
  checkShape(weightsFeedback, {H, H}, t, what + ": weightsFeedback");
}

} // namespace

std::pair<Tensor, Tensor> backwardGradientStep(Graph &graph, const Tensor &nextLayerGrad,
                                               const Tensor &bwdState, const Tensor &actOut,
                                               const Tensor &weightsInput,
                                               const Tensor &weightsFeedback, Sequence &prog,
                                               NonLinearityType nl, const Type &partialsType,
                                               const DebugContext &debug,
                                               linalg::PlanningCache *cache) {
  const std::string what = "rnn::backwardGradientStep";
  checkStep(nextLayerGrad, bwdState, actOut, weightsFeedback, nl, what);
  if (weightsInput.rank() != 2 || weightsInput.dim(1) != nextLayerGrad.dim(1))
    throw shape_error(fmt::format("{}: weightsInput must be [I, {}], not {}", what,
                                  nextLayerGrad.dim(1), weightsInput.shapeToString()));
  const OptionFlags options = mmOptions(partialsType, false, "TRAINING_BWD");
  const Tensor delta = gradientAtAdder(graph, nextLayerGrad, bwdState, actOut, weightsFeedback,
                                       prog, nl, options, debug, cache);
  const Tensor dx = linalg::matMul(graph, delta, weightsInput.transpose(), prog,
                                   {debug, "inputGrad"}, options, cache);
  return {dx, delta};
}

Tensor backwardGradientStep(Graph &graph, const Tensor &nextLayerGrad, const Tensor &bwdState,
                            const Tensor &actOut, const Tensor &weightsFeedback, Sequence &prog,
                            NonLinearityType nl, const Type &partialsType,
                            const DebugContext &debug, linalg::PlanningCache *cache) {
  checkStep(nextLayerGrad, bwdState, actOut, weightsFeedback, nl, "rnn::backwardGradientStep");
  return gradientAtAdder(graph, nextLayerGrad, bwdState, actOut, weightsFeedback, prog, nl,
                         mmOptions(partialsType, false, "TRAINING_BWD"), debug, cache);
}

void paramDeltaUpdate(Graph &graph, const Tensor &bwdState, const Tensor &actIn,
                      const Tensor &prevOut, Tensor &weightsInputDeltasAcc,
                      Tensor &weightsFeedbackDeltasAcc, Tensor &biasDeltasAcc, Sequence &prog,
                      const Type &partialsType, const DebugContext &debug,
                      linalg::PlanningCache *cache) {
  const std::string what = "rnn::paramDeltaUpdate";
  if (bwdState.rank() != 2 || actIn.rank() != 2)
    throw shape_error(fmt::format("{}: bwdState must be [B, H] and actIn [B, I]; got {} and {}",
                                  what, bwdState.shapeToString(), actIn.shapeToString()));
  const std::size_t B = bwdState.dim(0), H = bwdState.dim(1), I = actIn.dim(1);
  const Type t = bwdState.elementType();
  checkShape(actIn, {B, I}, t, what + ": actIn");
  checkShape(prevOut, {B, H}, t, what + ": prevOut");
  checkShape(weightsInputDeltasAcc, {I, H}, weightsInputDeltasAcc.elementType(),
             what + ": weightsInputDeltasAcc");
  checkShape(weightsFeedbackDeltasAcc, {H, H}, weightsFeedbackDeltasAcc.elementType(),
             what + ": weightsFeedbackDeltasAcc");
  checkShape(biasDeltasAcc, {H}, biasDeltasAcc.elementType(), what + ": biasDeltasAcc");
  const OptionFlags options = mmOptions(partialsType, false, "TRAINING_WU");
  linalg::matMulAcc(graph, weightsInputDeltasAcc, 1.0f, actIn.transpose(), bwdState, prog,
                    {debug, "inputWeights"}, options, cache);
  linalg::matMulAcc(graph, weightsFeedbackDeltasAcc, 1.0f, prevOut.transpose(), bwdState, prog,
                    {debug, "feedbackWeights"}, options, cache);
  const Tensor sum = ops::reduce(graph, bwdState, biasDeltasAcc.elementType(), {0},
                                 {ops::Operation::ADD}, prog, {debug, "biases"});
  ops::addInPlace(graph, biasDeltasAcc, sum, prog, {debug, "biases"});
}

Tensor rnnFwdSequence(Graph &graph, Sequence &prog, const Tensor &fwdStateInit,
                      const Tensor *weightedIn, const Tensor &biases,
                      const Tensor &feedFwdWeights, const Tensor &feedbackWeights,
                      const Tensor &prevLayerActs, const NonLinearityType &nl,
                      const Type &partialsType, bool inferenceOnly, const DebugContext &debug,
                      linalg::PlanningCache *cache) {
  const Tensor ff = weightedIn ? *weightedIn
                               : forwardWeightInput(graph, prevLayerActs, feedFwdWeights, prog,
                                                    partialsType, inferenceOnly,
                                                    {debug, "weighInput"}, cache);
  return forwardIterate(graph, ff, fwdStateInit, feedbackWeights, biases, prog, nl, partialsType,
                        inferenceOnly, debug, cache);
}

std::tuple<Tensor, Tensor, Tensor, Tensor>
rnnBwdSequence(Graph &graph, bool doWU, bool ignoreInputGradientCalc, Sequence &prog,
               const Tensor &fwdStateInit, const Tensor &fwdState, const Tensor &biases,
               const Tensor &feedFwdWeights, const Tensor &feedbackWeights,
               const Tensor &outGradient, const Tensor &actIn, const NonLinearityType &nl,
               const Type &partialsType, const DebugContext &debug,
               linalg::PlanningCache *cache) {
  const std::string what = "rnn::rnnBwdSequence";
  checkNonLinearity(nl, what);
  if (fwdState.rank() != 3 || actIn.rank() != 3)
    throw shape_error(fmt::format("{}: fwdState must be [T, B, H] and actIn [T, B, I]; got {} "
                                  "and {}",
                                  what, fwdState.shapeToString(), actIn.shapeToString()));
  const std::size_t T = fwdState.dim(0), B = fwdState.dim(1), H = fwdState.dim(2);
  const std::size_t I = actIn.dim(2);
  const Type t = fwdState.elementType();
  checkType(t, what);
  checkShape(fwdStateInit, {B, H}, t, what + ": fwdStateInit");
  checkShape(outGradient, {T, B, H}, t, what + ": outGradient");
  checkShape(actIn, {T, B, I}, t, what + ": actIn");
  checkShape(feedFwdWeights, {I, H}, t, what + ": feedFwdWeights");
  checkShape(feedbackWeights, {H, H}, t, what + ": feedbackWeights");
  checkShape(biases, {H}, t, what + ": biases");
  RnnParams params(t, B, T, {I, H});
  const Tensor deltas = detail::vanillaDeltas(graph, params, feedbackWeights, fwdState,
                                              outGradient, nl, partialsType, prog, debug, cache);
  return detail::vanillaGradients(graph, deltas, actIn, fwdStateInit, fwdState, feedFwdWeights,
                                  !ignoreInputGradientCalc, doWU, partialsType, prog, debug,
                                  cache);
}

} // namespace aspen::nn::rnn
