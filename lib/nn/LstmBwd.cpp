// aspen::nn::lstm: the backward pass and the weight update.
//
// Backward step (reverse loop, state {dhCarry, dc, dhMM}; dh = dhMM + dhCarry):
//   LstmCellBwd(saved gates, [phi(c_t) | c_t, c_{t-1}], dh (+ dy_t), dc) -> delta (slot order),
//                                          dc = dc * f, dhCarry = 0 (masked rows carry dh, dc)
//   [dx_t | dhMM] = delta . [Wi; Wo]^T      one product of [B, 4H] x [4H, I+H]
// Weight update: acc [I+H+1, 4H] += [x_t | h_{t-1} | 1]^T . delta_t, over all steps after the loop
// (rnnStepsPerWU = 0) or every k steps inside it (gathered windows of k steps); the rows of acc
// are then the gradients of Wi, Wo and the biases.
#include "CellSteps.hpp"
#include "LstmInternal.hpp"

#include <aspen/Error.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/Cast.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Zero.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace aspen::nn::lstm {

using program::Copy;
using program::Execute;
using program::Sequence;

namespace detail {

void accumulateWeightGrads(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                           const Tensor &x, const Tensor &hPrev, const Tensor &deltaRows,
                           const Tensor &acc, Sequence &prog, const DebugContext &debug,
                           linalg::PlanningCache *cache) {
  const std::size_t B = params.rnn.batchSize, n = deltaRows.dim(0) / B;
  const std::size_t I = params.rnn.layerSizes[0], R = recurrentSize(params);
  const Type t = params.rnn.dataType;
  const std::size_t rows = n * B;
  auto constant = [&](float value, std::size_t cols, const char *what) {
    Tensor c = graph.addConstant<float>(t, {1, 1}, value, {debug, what});
    graph.setTileMapping(c, 0);
    return c.broadcast(static_cast<unsigned>(rows), 0).broadcast(static_cast<unsigned>(cols), 1);
  };
  const Tensor xPart = x.valid() ? x.reshape({rows, I}) : constant(0.0f, I, "noInput");
  const Tensor a = concat({xPart, hPrev.reshape({rows, R}), constant(1.0f, 1, "ones")}, 1);
  linalg::matMulAcc(graph, acc, 1.0f, a.transpose(), deltaRows, prog, {debug, "weightUpdate"},
                    matMulOptions(opts, "TRAINING_WU"), cache);
}

namespace {

struct BwdRequest {
  const Tensor *lastOutputGrad = nullptr;
  const Tensor *lastCellGrad = nullptr;
  Tensor *inputGrad = nullptr;
  Tensor *bwdIntermediates = nullptr;
  // Weight update: accumulated into *weightsGrad when set.
  LstmWeights *weightsGrad = nullptr;
};

void checkBwdArguments(const LstmParams &params, const LstmOptions &opts,
                       const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                       const LstmWeights &weights, const Tensor &input, const Tensor &output,
                       const Tensor *outputGrad, const BwdRequest &req, const std::string &what) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t H = params.rnn.layerSizes[1], R = recurrentSize(params);
  checkState(params, fwdStateInit, what + ": fwdStateInit");
  checkWeights(params, weights, what);
  checkInput(params, input, what + ": input");
  const std::vector<std::size_t> outShape = params.outputFullSequence
                                               ? std::vector<std::size_t>{T, B, R}
                                               : std::vector<std::size_t>{B, R};
  auto checkLike = [&](const Tensor &t, const std::vector<std::size_t> &shape,
                       const std::string &name) {
    if (!t.valid() || t.shape() != shape || t.elementType() != params.rnn.dataType)
      throw shape_error(fmt::format("{}: {} must be a {} tensor of shape {{{}}}{}", what, name,
                                    params.rnn.dataType.toString(), fmt::format("{}", shape.size() == 3
                                        ? fmt::format("{},{},{}", shape[0], shape[1], shape[2])
                                        : fmt::format("{},{}", shape[0], shape[1])),
                                    t.valid() ? ", not " + t.shapeToString() + " (" +
                                                    t.elementType().toString() + ")"
                                              : ", but it is not valid"));
  };
  checkLike(output, outShape, "output");
  if (outputGrad)
    checkLike(*outputGrad, outShape, "outputGrad");
  const auto layout = interLayout(params, opts.recomputation);
  const std::vector<std::size_t> interShape{T, layout.count(), B, H};
  if (!fwdIntermediates.valid() || fwdIntermediates.shape() != interShape)
    throw shape_error(fmt::format("{}: fwdIntermediates must have shape {{{},{},{},{}}} for "
                                  "recomputationMode {} and outputFullSequence {}, not {}",
                                  what, T, layout.count(), B, H,
                                  opts.recomputation == Recomputation::None        ? "none"
                                  : opts.recomputation == Recomputation::CellAndTanh ? "cellAndTanh"
                                                                                     : "full",
                                  params.outputFullSequence,
                                  fwdIntermediates.valid() ? fwdIntermediates.shapeToString()
                                                           : "an invalid tensor"));
  if (req.inputGrad && !params.calcInputGradients)
    throw invalid_option(what + ": inputGrad was asked for, but params.calcInputGradients is "
                                "false");
  if (req.lastOutputGrad)
    checkLike(*req.lastOutputGrad, {B, R}, "lastStepStateGrad.output");
  if (req.lastCellGrad)
    checkLike(*req.lastCellGrad, {B, H}, "the last cell state's gradient");
}


// m^T as a new [cols, rows] variable: bands of its rows on each tile, written by TransposeBand
// vertices (a blocked transpose; a strided copy of the weights was 6x slower).
Tensor transposeOnce(Graph &graph, const Tensor &m, Sequence &prog, const DebugContext &debug) {
  const std::size_t rows = m.dim(0), cols = m.dim(1);
  Tensor mt = graph.addVariable(m.elementType(), {cols, rows}, debug);
  const unsigned tiles = graph.getTarget().getNumTiles();
  const std::size_t bands = std::max<std::size_t>(1, std::min<std::size_t>(tiles, cols));
  ComputeSet cs = graph.addComputeSet(debug);
  const Tensor in = m.flatten();
  for (std::size_t b = 0; b < bands; ++b) {
    const std::size_t lo = b * cols / bands, hi = (b + 1) * cols / bands;
    if (lo == hi)
      continue;
    const Tensor band = mt.slice(lo, hi, 0);
    graph.setTileMapping(band, static_cast<unsigned>(b));
    VertexRef v = graph.addVertex(
        cs, util::templateVertex("aspen::nn::TransposeBand", m.elementType()),
        {{"in", in}, {"out", band.flatten()}});
    graph.setInitialValue(v["rows"], static_cast<unsigned>(rows));
    graph.setInitialValue(v["cols"], static_cast<unsigned>(cols));
    graph.setInitialValue(v["first"], static_cast<unsigned>(lo));
    graph.setTileMapping(v, static_cast<unsigned>(b));
  }
  prog.add(Execute(cs));
  return mt;
}

// h_t of every step from the intermediates of a layer that keeps only its last output: their
// last slot ([T, B, H]; its first P columns with a projection).
Tensor savedOutputs(const LstmParams &params, const InterLayout &layout, const Tensor &inter) {
  return inter.slice(layout.count() - 1, layout.count(), 1)
      .squeeze({1})
      .slice(0, recurrentSize(params), 2);
}

// What the backward cell reads of the forward: the gates [T, 4, B, H], the cell values
// [T, 2, B, H] (phi(c_t) or, rawCell, c_t; then c_{t-1}) and h_t for every step.
struct SavedForward {
  Tensor gates, cellSeq, hSeq;
  Tensor mSeq; // [T, B, H]: m_t = o*phi(c_t), with a projection
  bool rawCell = false;
};

// cellAndTanh: c_t and c_{t-1} rebuilt from the saved gates, forwards in time ([T, 2, B, H]).
Tensor recomputeCells(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                      const Tensor &gates, const Tensor &c0, Sequence &prog,
                      const DebugContext &debug) {
  Tensor cOut = rnn::createOutputTensor(graph, params.rnn, opts.numShards, {debug, "cOut"});
  Tensor cPrev = rnn::createOutputTensor(graph, params.rnn, opts.numShards, {debug, "cPrev"});
  auto body = [&](Graph &g, const rnn::TimeStepState &, const rnn::RnnBatchwiseFlags &flags,
                  std::vector<Tensor> &state, const rnn::RnnSlice &slice, std::vector<Tensor> &,
                  Sequence *, const DebugContext &dbg) {
    ComputeSet cs = g.addComputeSet({dbg, "recomputeCell"});
    addCellRecompute(g, params, cs, slice.inputs[0], state[0], slice.outputs[1],
                     slice.outputs[0], flags.mask);
    return Sequence{Execute(cs)};
  };
  OptionFlags rnnOptions{{"codeReuse", opts.codeReuse ? "true" : "false"}};
  rnn::Rnn(graph, params.rnn, false, {c0}, {}, {gates}, nullptr, nullptr, {cOut, cPrev}, {},
           prog, body, opts.numShards, rnnOptions, {debug, "recomputeCell"});
  return concat({cOut.expand({1}), cPrev.expand({1})}, 1);
}

SavedForward savedForward(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                          Sequence &prog, const LstmState &fwdStateInit,
                          const Tensor &fwdIntermediates, const LstmWeights &weights,
                          const Tensor &input, const Tensor &output, const DebugContext &debug,
                          linalg::PlanningCache *cache) {
  const auto layout = interLayout(params, opts.recomputation);
  SavedForward saved;
  saved.rawCell = rawCandidate(params);
  if (opts.recomputation == Recomputation::Full) {
    // Run the forward pass again, keeping everything, before going backwards.
    Tensor inter;
    const InterLayout keepAll{2, params.projSize != 0, false};
    auto fwd = forward(graph, params, opts, fwdStateInit, weights, input, keepAll, &inter, true,
                       prog, {debug, "recompute"}, cache);
    saved.gates = inter.slice(0, 4, 1);
    saved.cellSeq = inter.slice(4, 6, 1);
    if (keepAll.saveM)
      saved.mSeq = inter.slice(6, 7, 1).squeeze({1});
    saved.hSeq = fwd.first;
    return saved;
  }
  if (layout.saveM)
    saved.mSeq = fwdIntermediates.slice(layout.cellSlots(), layout.cellSlots() + 1, 1).squeeze({1});
  saved.gates = fwdIntermediates.slice(0, 4, 1);
  if (layout.saveMode == 2) {
    saved.cellSeq = fwdIntermediates.slice(4, 6, 1);
  } else {
    saved.rawCell = true;
    saved.cellSeq =
        recomputeCells(graph, params, opts, saved.gates, fwdStateInit.cellState, prog, debug);
  }
  saved.hSeq = params.outputFullSequence ? output : savedOutputs(params, layout, fwdIntermediates);
  return saved;
}

// The backward loop's state {dhCarry, dc, dhMM} at the last step: the final-state gradients
// given, dy folded in when only the final output is.
std::vector<Tensor> initialGradients(Graph &graph, const LstmParams &params,
                                     const Tensor &outputGrad, const BwdRequest &req,
                                     Sequence &prog, const DebugContext &debug) {
  const std::size_t B = params.rnn.batchSize, H = params.rnn.layerSizes[1];
  const std::size_t R = recurrentSize(params);
  auto zeros = [&](const char *what, std::size_t size) {
    Tensor z = rnn::detail::addStep(graph, params.rnn.dataType, B, size, {debug, what});
    ops::zero(graph, z, prog, {debug, what});
    return z;
  };
  Tensor dhCarry = zeros("dhInit", R);
  if (req.lastOutputGrad)
    prog.add(Copy(*req.lastOutputGrad, dhCarry));
  if (!params.outputFullSequence)
    ops::addInPlace(graph, dhCarry, outputGrad, prog, {debug, "outputGrad"});
  Tensor dc = zeros("dcInit", H);
  if (req.lastCellGrad)
    prog.add(Copy(*req.lastCellGrad, dc));
  Tensor dhMM = zeros("dhMMInit", R);
  if (params.projSize == 0)
    return {dhCarry, dc, dhMM};
  // A projected layer's cell takes dm = dh . Wp^T as its dhMM and this as its dhCarry, which
  // stays zero (LstmProjectionGrad carries dh past a row's length instead).
  return {dhCarry, dc, dhMM, zeros("dmCarry", H)};
}

// How the backward runs, and the tensors its phases share.
struct BwdPlan {
  bool wantInputGrad = false, weighInput = false, doWU = false, interleaved = false;
  unsigned k = 0; // the weight update's cadence (0: after the loop)
  bool productWithInput = false, inputGradAfterLoop = false, inputGradInLoop = false;
  PersistentChoice persistent;
  Tensor inputGradSeq, acc, hPrevSeq, deltaRowsSeq, wT;
  // A projected layer: Wp^T [P, H], every step's dh_t [T, B, P] when it is kept (for dWp or
  // bwdIntermediates), and the step's dm = dh . Wp^T.
  Tensor projT, dhSeq, dm;
  OptionFlags mmOptions;
};

BwdPlan planBackward(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                     const BwdRequest &req, const SavedForward &saved,
                     const LstmState &fwdStateInit, const LstmWeights &weights, Sequence &prog,
                     const DebugContext &debug) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const std::size_t R = recurrentSize(params);
  const Type t = params.rnn.dataType;
  BwdPlan p;
  p.wantInputGrad = req.inputGrad != nullptr;
  p.weighInput = params.doInputWeightCalc;
  if (p.wantInputGrad)
    p.inputGradSeq =
        rnn::createInputTensor(graph, params.rnn, opts.numShards, {debug, "inputGrad"});

  // The weight update's cadence and its accumulator.
  p.doWU = req.weightsGrad != nullptr;
  p.k = p.doWU ? chooseStepsPerWU(graph, params, opts) : 0;
  if (p.doWU) {
    p.acc = graph.addVariable(opts.accumulatorsType, {I + R + 1, 4 * H}, {debug, "weightGrads"});
    util::mapTensorLinearly(graph, p.acc);
    ops::zero(graph, p.acc, prog, {debug, "zeroWeightGrads"});
    p.hPrevSeq = rnn::shiftRnnTensor(graph, params.rnn, saved.hSeq, fwdStateInit.output, prog,
                                     opts.numShards, {debug, "hPrev"});
  }
  p.interleaved = p.doWU && p.k != 0;
  // The persistent backward keeps every step's gate gradients (they are its exchange) and
  // leaves the weight update to the products after it.
  p.persistent = persistentChoice(graph, params, opts, "lstm", true);
  if (p.persistent.use && p.interleaved &&
      opts.persistent.mode == rnn::detail::PersistentOptions::Mode::Auto) {
    p.persistent.use = false; // auto: the interleaved update keeps the per-step loop
    p.persistent.refusal = "the weight update is interleaved with the backward loop "
                           "(rnnStepsPerWU); the persistent backward needs it after the loop";
  }
  if (p.persistent.use && p.interleaved)
    throw invalid_option(fmt::format(
        "lstm: rnnPersistentKernel is true, but the weight update is interleaved with the "
        "backward loop every {} steps (rnnStepsPerWU); the persistent backward needs it after "
        "the loop: rnnStepsPerWU 0",
        p.k));
  // The gate gradients of all steps, kept as [T, B, 4H] (a step is the rows of the product
  // delta . W^T) and handed out as the [T, 4, B, H] view docs/recurrent.md gives them.
  if (p.persistent.use) { // one variable: the kernel's exchange, read in place
    p.deltaRowsSeq = graph.addVariable(t, {T, B, 4 * H}, {debug, "delta"});
    util::mapTensorLinearly(graph, p.deltaRowsSeq);
  } else if (req.bwdIntermediates || (p.doWU && !p.interleaved)) {
    p.deltaRowsSeq = rnn::detail::addSequence(graph, t, T, B, 4 * H, opts.numShards,
                                              {debug, "delta"});
  }

  p.mmOptions = matMulOptions(opts, "TRAINING_BWD");
  p.productWithInput = p.wantInputGrad && p.weighInput;
  // With the gate gradients of every step kept, the input gradient is one product after the
  // loop ([T*B, 4H] x [4H, I]) and each step multiplies by Wo^T only; otherwise each step's
  // product covers [Wi; Wo]^T.
  p.inputGradAfterLoop = p.productWithInput && p.deltaRowsSeq.valid();
  p.inputGradInLoop = p.productWithInput && !p.inputGradAfterLoop;
  // The products read the weights transposed: transpose them once before the loop so that every
  // step reads rows in place instead of gathering columns.
  p.wT = transposeOnce(graph,
                       p.inputGradInLoop ? concat(asMatrix(weights.inputWeights),
                                                  asMatrix(weights.outputWeights), 0)
                                         : asMatrix(weights.outputWeights),
                       prog, {debug, "weightsTransposed"});
  if (params.projSize) {
    p.projT = transposeOnce(graph, weights.projection, prog, {debug, "projectionTransposed"});
    p.dm = rnn::detail::addStep(graph, t, B, H, {debug, "dm"});
    if (p.doWU || req.bwdIntermediates)
      p.dhSeq = rnn::detail::addSequence(graph, t, T, B, R, opts.numShards, {debug, "dh"});
  }
  return p;
}

// The backward loop's spec around the step body: the saved gates and cell states (and dy)
// read each step, reverse, the gather form's weight update when interleaved. deltaRowsSeq: the
// gate gradients' sequence runLoop fills (the spec points at it), or invalid.
rnn::detail::LoopSpec backwardLoopSpec(const LstmParams &params, const LstmOptions &opts,
                                       const BwdPlan &p, const SavedForward &saved,
                                       const Tensor &input, const Tensor &outputGrad,
                                       const std::vector<Tensor> &init, Tensor &deltaRowsSeq,
                                       linalg::PlanningCache *cache) {
  const std::size_t B = params.rnn.batchSize, H = params.rnn.layerSizes[1];
  std::vector<Tensor> inputs{saved.gates, saved.cellSeq};
  if (params.outputFullSequence)
    inputs.push_back(outputGrad);
  rnn::detail::LoopSpec spec{params.rnn};
  spec.initState = init;
  spec.inputs = inputs;
  if (p.inputGradInLoop)
    spec.outputs.push_back(p.inputGradSeq);
  spec.numShards = opts.numShards;
  spec.codeReuse = opts.codeReuse;
  if (p.interleaved) {
    spec.numTemps = 4;
    spec.stepsPerGather = p.k;
    if (p.weighInput)
      spec.gatherInputs = {p.hPrevSeq, input};
    else
      spec.gatherInputs = {p.hPrevSeq};
    spec.gatherFn = [&params, &opts, &p, cache, B, H](Graph &g, const rnn::RnnSlice &slice,
                                                       unsigned, Sequence *,
                                                       const DebugContext &dbg) {
      Sequence s;
      const Tensor window = slice.interimOut; // [k, 4, B, H]
      accumulateWeightGrads(g, params, opts, p.weighInput ? slice.inputs[1] : Tensor(),
                            slice.inputs[0],
                            window.dimShuffle({0, 2, 1, 3}).reshape({window.dim(0) * B, 4 * H}),
                            p.acc, s, dbg, cache);
      return s;
    };
    if (p.deltaRowsSeq.valid())
      spec.outputs.push_back(p.deltaRowsSeq); // the body copies its temporary there
  } else if (deltaRowsSeq.valid()) {
    spec.interimOut = &deltaRowsSeq;
  }
  if (p.dhSeq.valid())
    spec.outputs.push_back(p.dhSeq); // the last output: the body writes dh_t there
  return spec;
}

// The LSTM's side of the backward step builder (rnn::detail::backwardStepBody): the step's
// tensors and the fields of LstmCellBwd and, projected, of LstmProjectionGrad. The cell's
// incoming gradient is dh (outGrad + dhMM + dhCarry), or with a projection dm = dh . Wp^T, dh
// formed (and kept) first.
class BwdCell final : public rnn::detail::CellSteps {
public:
  BwdCell(const LstmParams &params, const LstmOptions &opts, const BwdPlan &p, bool rawCell)
      : params_(params), opts_(opts), p_(p), rawCell_(rawCell) {}

  bool projected() const override { return params_.projSize != 0; }

  rnn::detail::StepTensors begin(Graph &g, std::vector<Tensor> &state, const rnn::RnnSlice &slice,
                                 const rnn::RnnBatchwiseFlags &flags,
                                 const DebugContext &dbg) const override {
    const std::size_t B = params_.rnn.batchSize, H = params_.rnn.layerSizes[1];
    const Type t = params_.rnn.dataType;
    rnn::detail::StepTensors s;
    s.state = state[0];
    s.stateGrad = state[2];
    if (p_.inputGradInLoop)
      s.inputGrad = slice.outputs[0];
    // delta: the step's gate gradients as [B, 4H] rows, or the gather form's [4, B, H]
    // temporary.
    Tensor deltaGates;
    if (p_.interleaved) {
      deltaGates = slice.interimOut;
      s.deltaX = deltaGates.dimShuffle({1, 0, 2}).reshape({B, 4 * H});
    } else {
      s.deltaX = slice.interimOut.valid() ? slice.interimOut
                                          : rnn::detail::addStep(g, t, B, 4 * H, {dbg, "delta"});
      deltaGates = s.deltaX.reshape({B, 4, H}).dimShuffle({1, 0, 2});
    }
    if (projected())
      s.scratch = {p_.dhSeq.valid() ? slice.outputs.back()
                                    : rnn::detail::addStep(g, t, B, params_.projSize, {dbg, "dh"}),
                   p_.dm};
    const Tensor outGrad = params_.outputFullSequence ? slice.inputs[2] : Tensor();
    s.own = {deltaGates, slice.inputs[0], slice.inputs[1], outGrad, state[1], flags.mask,
             projected() ? state[3] : Tensor(),
             p_.interleaved && p_.deltaRowsSeq.valid()
                 ? slice.outputs[p_.inputGradInLoop ? 1 : 0]
                 : Tensor()};
    return s;
  }

  Tensor rowsOf(unsigned phase, const rnn::detail::StepTensors &s) const override {
    return phase == 0 ? s.state : s.own[kDcState];
  }

  void connect(unsigned phase, Graph &g, VertexRef v, const std::vector<Interval> &rows,
               const rnn::detail::StepTensors &s) const override {
    const Tensor &outGrad = s.own[kOutGrad], &mask = s.own[kMask];
    if (phase == 0) {
      connectProjectionGrad(g, v, rows, outGrad, s.stateGrad, s.state, s.scratch[0], mask);
      return;
    }
    connectCellBwd(g, params_, opts_, v, rows, s.own[kFwd], s.own[kCell], rawCell_,
                   projected() ? Tensor() : outGrad, projected() ? s.scratch[1] : s.stateGrad,
                   projected() ? s.own[kCellCarry] : s.state, s.own[kDcState],
                   s.own[kDeltaGates], mask);
  }

  // The gather form keeps every step's gate gradients when they are asked for.
  void finish(Graph &, const rnn::detail::StepTensors &s, Sequence &step,
              const DebugContext &) const override {
    if (s.own[kKeptDelta].valid())
      step.add(Copy(s.deltaX, s.own[kKeptDelta]));
  }

private:
  enum Own { kDeltaGates, kFwd, kCell, kOutGrad, kDcState, kMask, kCellCarry, kKeptDelta };
  const LstmParams &params_;
  const LstmOptions &opts_;
  const BwdPlan &p_;
  bool rawCell_;
};

// The backward loop (the gather form when the weight update is interleaved) of the backward
// builder on the LSTM's table row. Returns the final state.
std::vector<Tensor> stepLoop(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                             const BwdPlan &p, const SavedForward &saved, const Tensor &input,
                             const Tensor &outputGrad, const std::vector<Tensor> &init,
                             Sequence &prog, const DebugContext &debug,
                             linalg::PlanningCache *cache) {
  const BwdCell cell(params, opts, p, saved.rawCell);
  Tensor deltaRowsSeq = p.deltaRowsSeq; // the loop fills it (the spec points at it)
  const rnn::detail::LoopSpec spec = backwardLoopSpec(params, opts, p, saved, input, outputGrad,
                                                      init, deltaRowsSeq, cache);
  return rnn::detail::backwardCellLoop(graph, rnn::detail::cellTable(rnn::detail::CellKind::Lstm),
                                       spec, {{p.wT, {}, p.projT}, p.mmOptions, cache}, cell,
                                       prog, {debug, "loop"});
}

// A projected layer's bwdIntermediates slot 4, [T, 1, B, H]: dh_t [T, B, P] in the first P
// columns, zeros after.
Tensor projectedGradSlot(Graph &graph, const LstmParams &params, const Tensor &dhSeq,
                         const DebugContext &debug) {
  const std::size_t T = dhSeq.dim(0), B = dhSeq.dim(1), H = params.rnn.layerSizes[1];
  Tensor zero = graph.addConstant<float>(params.rnn.dataType, {1, 1, 1, 1}, 0.0f,
                                         {debug, "projectedGradPadding"});
  graph.setTileMapping(zero, 0);
  const Tensor padding = zero.broadcast(static_cast<unsigned>(T), 0)
                             .broadcast(static_cast<unsigned>(B), 2)
                             .broadcast(static_cast<unsigned>(H - params.projSize), 3);
  return concat(dhSeq.expand({1}), padding, 3);
}

// dWp = sum_t m_t^T dh_t [H, P], accumulated in the weight accumulators' type: mSeq [T, B, H],
// dhSeq [T, B, P] (zero past each row's length).
Tensor projectionGrad(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                      const Tensor &mSeq, const Tensor &dhSeq, Sequence &prog,
                      const DebugContext &debug, linalg::PlanningCache *cache) {
  const std::size_t rows = mSeq.dim(0) * mSeq.dim(1), H = params.rnn.layerSizes[1];
  const std::size_t P = params.projSize;
  const Type t = params.rnn.dataType;
  Tensor acc = graph.addVariable(opts.accumulatorsType, {H, P}, {debug, "projectionGradAcc"});
  util::mapTensorLinearly(graph, acc);
  ops::zero(graph, acc, prog, {debug, "projectionGradAcc"});
  linalg::matMulAcc(graph, acc, 1.0f, mSeq.reshape({rows, H}).transpose(),
                    dhSeq.reshape({rows, P}), prog, {debug, "projectionGrad"},
                    matMulOptions(opts, "TRAINING_WU"), cache);
  if (acc.elementType() == t)
    return acc;
  return ops::cast(graph, acc, t, prog, {debug, "projectionGrad"});
}

// After the loop: the input gradient, the kept gate gradients and the weight update's results.
void finishBackward(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                    const BwdPlan &p, const BwdRequest &req, const SavedForward &saved,
                    const LstmWeights &weights, const Tensor &input, Sequence &prog,
                    const DebugContext &debug, linalg::PlanningCache *cache) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const std::size_t R = recurrentSize(params);
  const Type t = params.rnn.dataType;
  if (p.wantInputGrad) {
    if (p.inputGradAfterLoop) {
      const Tensor wiT = transposeOnce(graph, asMatrix(weights.inputWeights), prog,
                                       {debug, "inputWeightsTransposed"});
      linalg::matMulWithOutput(graph, p.deltaRowsSeq.reshape({T * B, 4 * H}), wiT,
                               p.inputGradSeq.reshape({T * B, I}), prog, {debug, "inputGrad"},
                               p.mmOptions, cache);
    } else if (!p.productWithInput) {
      ops::zero(graph, p.inputGradSeq, prog, {debug, "inputGrad"}); // x did not contribute
    }
    *req.inputGrad = p.inputGradSeq;
  }
  if (req.bwdIntermediates) // [T, B, 4H] -> [T, 4, B, H] (and dh_t: projectedGradSlot)
    *req.bwdIntermediates = p.deltaRowsSeq.reshape({T, B, 4, H}).dimShuffle({0, 2, 1, 3});
  if (req.bwdIntermediates && params.projSize)
    *req.bwdIntermediates =
        concat(*req.bwdIntermediates, projectedGradSlot(graph, params, p.dhSeq, debug), 1);
  if (!p.doWU)
    return;
  if (!p.interleaved)
    accumulateWeightGrads(graph, params, opts, p.weighInput ? input : Tensor(), p.hPrevSeq,
                          p.deltaRowsSeq.reshape({T * B, 4 * H}), p.acc, prog, {debug, "wu"},
                          cache);
  auto result = [&](const Tensor &rowsOfAcc, std::vector<std::size_t> shape, const char *what) {
    Tensor out = graph.addVariable(t, shape, {debug, what});
    util::mapTensorLinearly(graph, out);
    const Tensor view = shape.size() == 3 ? fromMatrix(rowsOfAcc) : rowsOfAcc.reshape({4, H});
    if (p.acc.elementType() == t)
      prog.add(Copy(view, out));
    else
      ops::castWithOutput(graph, view, out, prog, {debug, what});
    return out;
  };
  req.weightsGrad->inputWeights = result(p.acc.slice(0, I, 0), {4, I, H}, "inputWeightsGrad");
  req.weightsGrad->outputWeights =
      result(p.acc.slice(I, I + R, 0), {4, R, H}, "outputWeightsGrad");
  req.weightsGrad->biases = result(p.acc.slice(I + R, I + R + 1, 0), {4, H}, "biasesGrad");
  if (params.projSize)
    req.weightsGrad->projection =
        projectionGrad(graph, params, opts, saved.mSeq, p.dhSeq, prog, debug, cache);
}

LstmState backward(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                   Sequence &prog, const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                   const LstmWeights &weights, const Tensor &input, const Tensor &output,
                   const Tensor &outputGrad, const BwdRequest &req, const DebugContext &debug,
                   linalg::PlanningCache *cache) {
  const bool full = params.outputFullSequence;
  const SavedForward saved = savedForward(graph, params, opts, prog, fwdStateInit,
                                          fwdIntermediates, weights, input, output, debug, cache);
  std::vector<Tensor> state = initialGradients(graph, params, outputGrad, req, prog, debug);
  const BwdPlan p =
      planBackward(graph, params, opts, req, saved, fwdStateInit, weights, prog, debug);
  const Tensor &dhCarry = state[0], &dc = state[1], &dhMM = state[2];
  const bool fused = !p.persistent.use && usesFusedStep(graph, params, opts, "lstm") &&
                     p.deltaRowsSeq.valid() && !p.interleaved && !p.inputGradInLoop;
  if (p.persistent.use || fused) {
    // One launch for the whole loop (LstmPersistentBwd), or the fused loop (LstmFusedBwd: the
    // product delta_{t+1} . Wo^T fused with the cell, one compute set a step) where the
    // forward's would fuse, the gate gradients of every step are kept (they are the next
    // step's product input) and each step multiplies by Wo^T alone.
    if (p.persistent.use)
      persistentBackward(graph, params, p.persistent, weights, saved.gates, saved.cellSeq,
                         full ? outputGrad : Tensor(), saved.rawCell,
                         opts.hardSigmoidGradient == NonLinearityGradient::Popnn, dhCarry, dc,
                         p.deltaRowsSeq, prog, {debug, "persistent"});
    else
      fusedBackward(graph, params, opts, p.wT, saved.gates, saved.cellSeq,
                    full ? outputGrad : Tensor(), saved.rawCell, dhCarry, dc, p.deltaRowsSeq,
                    prog, {debug, "fused"});
    // The last product, delta_0 . Wo^T: the gradient reaching the initial output.
    linalg::matMulWithOutput(graph, p.deltaRowsSeq[0], p.wT, dhMM, prog,
                             {debug, "initialStateGrad"}, p.mmOptions, cache);
  } else {
    state = stepLoop(graph, params, opts, p, saved, input, outputGrad, state, prog, debug, cache);
  }
  finishBackward(graph, params, opts, p, req, saved, weights, input, prog, debug, cache);
  Tensor initialOutputGrad =
      ops::add(graph, state[2], state[0], prog, {debug, "initialOutputGrad"});
  return {initialOutputGrad, state[1]};
}

LstmState bwdEntry(Graph &graph, const LstmParams &params, Sequence &prog,
                   const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                   const LstmWeights &weights, const Tensor &input, const Tensor &output,
                   const Tensor &outputGrad, BwdRequest req, const DebugContext &debug,
                   const OptionFlags &options, linalg::PlanningCache *cache,
                   const std::string &what) {
  const auto opts = parseOptions(graph, params, options, what);
  if (opts.inferenceOnly)
    throw invalid_option(what + ": the option inferenceOnly is true; a backward pass needs a "
                                "training forward pass");
  persistentChoice(graph, params, opts, what, true); // true where it cannot run: refused
  checkBwdArguments(params, opts, fwdStateInit, fwdIntermediates, weights, input, output,
                    &outputGrad, req, what);
  // The sequences in the order the forward ran them (reverse: RnnLoop.hpp).
  const rnn::detail::RunOrder order{graph, params.rnn, opts.reverse, prog, debug};
  const bool full = params.outputFullSequence;
  const LstmState grads =
      backward(graph, params, opts, prog, fwdStateInit, fwdIntermediates, weights,
               order(input, "in"), order.output(output, full, "out"),
               order.output(outputGrad, full, "outGrad"), req, debug, cache);
  if (req.inputGrad && req.inputGrad->valid())
    *req.inputGrad = order(*req.inputGrad, "inGrad");
  return grads;
}

BwdRequest lastStateRequest(const LstmState *lastStepStateGrad) {
  BwdRequest req;
  if (lastStepStateGrad) {
    if (lastStepStateGrad->output.valid())
      req.lastOutputGrad = &lastStepStateGrad->output;
    if (lastStepStateGrad->cellState.valid())
      req.lastCellGrad = &lastStepStateGrad->cellState;
  }
  return req;
}

} // namespace

// Chooses the interleaving cadence k (0 = one pass after the loop): the forced value, or the
// largest window of gate gradients and gathered operands that fits the memory budget.
unsigned chooseStepsPerWU(const Graph &graph, const LstmParams &params, const LstmOptions &opts) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  if (params.projSize != 0) // a projected layer's weight update runs after the loop
    return 0;
  if (opts.stepsPerWU) {
    const unsigned k = rnn::detail::stepsPerWUWithin(*opts.stepsPerWU, T);
    if (opts.disableWUPartialInterleaving && k > 1)
      throw invalid_option(fmt::format("lstm: rnnStepsPerWU = {} interleaves the weight update "
                                       "partially, which disableWUPartialInterleaving forbids "
                                       "(allowed: 0, 1, or {} or more)",
                                       k, T));
    return k;
  }
  const Target &target = graph.getTarget();
  const double budget =
      double(target.getNumTiles()) * target.getBytesPerTile() * opts.availableMemoryProportion;
  const double perStep = double(B) * (4 * H + I + H + 1) * target.getTypeSize(params.dataType);
  if (perStep * T <= budget)
    return 0; // everything fits: one product over all steps after the loop
  if (opts.disableWUPartialInterleaving)
    return 1;
  const double fit = std::floor(budget / perStep);
  return static_cast<unsigned>(std::clamp(fit, 1.0, double(T - 1)));
}

} // namespace detail

LstmState lstmBwd(Graph &graph, const LstmParams &params, Sequence &prog,
                  const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                  const LstmWeights &weights, const Tensor &input, const Tensor &output,
                  const Tensor &outputGrad, const LstmState *lastStepStateGrad, Tensor *inputGrad,
                  Tensor *bwdIntermediates, const DebugContext &debug, const OptionFlags &options,
                  linalg::PlanningCache *cache) {
  auto req = detail::lastStateRequest(lastStepStateGrad);
  req.inputGrad = inputGrad;
  req.bwdIntermediates = bwdIntermediates;
  return detail::bwdEntry(graph, params, prog, fwdStateInit, fwdIntermediates, weights, input,
                          output, outputGrad, req, debug, options, cache, "lstm::lstmBwd");
}

LstmState lstmBwd(Graph &graph, const LstmParams &params, Sequence &prog,
                  const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                  const LstmWeights &weights, const Tensor &input, const Tensor &output,
                  const Tensor &outputGrad, const Tensor *lastCellStateGrad, Tensor *inputGrad,
                  Tensor *bwdIntermediates, const DebugContext &debug, const OptionFlags &options,
                  linalg::PlanningCache *cache) {
  LstmState last;
  if (lastCellStateGrad)
    last.cellState = *lastCellStateGrad;
  return lstmBwd(graph, params, prog, fwdStateInit, fwdIntermediates, weights, input, output,
                 outputGrad, lastCellStateGrad ? &last : nullptr, inputGrad, bwdIntermediates,
                 debug, options, cache);
}

LstmState lstmBwd(Graph &graph, const LstmParams &params, Sequence &prog,
                  const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                  const LstmWeights &weights, const Tensor &input, const Tensor &output,
                  const Tensor &outputGrad, std::nullptr_t, Tensor *inputGrad,
                  Tensor *bwdIntermediates, const DebugContext &debug, const OptionFlags &options,
                  linalg::PlanningCache *cache) {
  return lstmBwd(graph, params, prog, fwdStateInit, fwdIntermediates, weights, input, output,
                 outputGrad, static_cast<const LstmState *>(nullptr), inputGrad, bwdIntermediates,
                 debug, options, cache);
}

LstmWeights lstmWU(Graph &graph, const LstmParams &params, Sequence &prog,
                   const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                   const Tensor &bwdIntermediates, const LstmWeights &weights,
                   const Tensor &input, const Tensor &output, const DebugContext &debug,
                   const OptionFlags &options, linalg::PlanningCache *cache) {
  const std::string what = "lstm::lstmWU";
  const auto opts = detail::parseOptions(graph, params, options, what);
  detail::checkBwdArguments(params, opts, fwdStateInit, fwdIntermediates, weights, input, output,
                            nullptr, {}, what);
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const std::size_t R = detail::recurrentSize(params), slots = params.projSize ? 5 : 4;
  if (!bwdIntermediates.valid() ||
      bwdIntermediates.shape() != std::vector<std::size_t>{T, slots, B, H})
    throw shape_error(fmt::format("{}: bwdIntermediates must have shape {{{},{},{},{}}}{}, not {}",
                                  what, T, slots, B, H,
                                  params.projSize ? " (a projected layer's)" : "",
                                  bwdIntermediates.valid() ? bwdIntermediates.shapeToString()
                                                           : "an invalid tensor"));
  const auto layout = detail::interLayout(params, opts.recomputation);
  const rnn::detail::RunOrder order{graph, params.rnn, opts.reverse, prog, debug};
  const Tensor hSeq = params.outputFullSequence
                          ? order(output, "out")
                          : detail::savedOutputs(params, layout, fwdIntermediates);
  const Tensor hPrev = rnn::shiftRnnTensor(graph, params.rnn, hSeq, fwdStateInit.output, prog,
                                           opts.numShards, {debug, "hPrev"});
  Tensor acc = graph.addVariable(opts.accumulatorsType, {I + R + 1, 4 * H}, {debug, "acc"});
  util::mapTensorLinearly(graph, acc);
  ops::zero(graph, acc, prog, {debug, "zero"});
  const Tensor x = params.doInputWeightCalc ? order(input, "in") : Tensor();
  detail::accumulateWeightGrads(graph, params, opts, x,
                                hPrev,
                                bwdIntermediates.slice(0, 4, 1).dimShuffle({0, 2, 1, 3})
                                    .reshape({T * B, 4 * H}),
                                acc, prog, debug, cache);
  LstmWeights grads;
  auto result = [&](const Tensor &view, std::vector<std::size_t> shape, const char *name) {
    Tensor out = graph.addVariable(params.rnn.dataType, shape, {debug, name});
    util::mapTensorLinearly(graph, out);
    if (acc.elementType() == params.rnn.dataType)
      prog.add(Copy(view, out));
    else
      ops::castWithOutput(graph, view, out, prog, {debug, name});
    return out;
  };
  grads.inputWeights = result(detail::fromMatrix(acc.slice(0, I, 0)), {4, I, H}, "inputWeightsGrad");
  grads.outputWeights =
      result(detail::fromMatrix(acc.slice(I, I + R, 0)), {4, R, H}, "outputWeightsGrad");
  grads.biases = result(acc.slice(I + R, I + R + 1, 0).reshape({4, H}), {4, H}, "biasesGrad");
  if (params.projSize) {
    const std::size_t m = layout.cellSlots();
    grads.projection = detail::projectionGrad(
        graph, params, opts, fwdIntermediates.slice(m, m + 1, 1).squeeze({1}),
        bwdIntermediates.slice(4, 5, 1).squeeze({1}).slice(0, params.projSize, 2), prog, debug,
        cache);
  }
  return grads;
}

LstmState lstmBwdWithWU(Graph &graph, const LstmParams &params, Sequence &prog,
                        const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                        const LstmWeights &weights, const Tensor &input, const Tensor &output,
                        const Tensor &outputGrad, const LstmState *lastStepStateGrad,
                        Tensor *inputGrad, LstmWeights &weightsGrad, const DebugContext &debug,
                        const OptionFlags &options, linalg::PlanningCache *cache) {
  auto req = detail::lastStateRequest(lastStepStateGrad);
  req.inputGrad = inputGrad;
  req.weightsGrad = &weightsGrad;
  return detail::bwdEntry(graph, params, prog, fwdStateInit, fwdIntermediates, weights, input,
                          output, outputGrad, req, debug, options, cache, "lstm::lstmBwdWithWU");
}

LstmState lstmBwdWithWU(Graph &graph, const LstmParams &params, Sequence &prog,
                        const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                        const LstmWeights &weights, const Tensor &input, const Tensor &output,
                        const Tensor &outputGrad, const Tensor *lastCellStateGrad,
                        Tensor *inputGrad, LstmWeights &weightsGrad, const DebugContext &debug,
                        const OptionFlags &options, linalg::PlanningCache *cache) {
  LstmState last;
  if (lastCellStateGrad)
    last.cellState = *lastCellStateGrad;
  return lstmBwdWithWU(graph, params, prog, fwdStateInit, fwdIntermediates, weights, input,
                       output, outputGrad, lastCellStateGrad ? &last : nullptr, inputGrad,
                       weightsGrad, debug, options, cache);
}

LstmState lstmBwdWithWU(Graph &graph, const LstmParams &params, Sequence &prog,
                        const LstmState &fwdStateInit, const Tensor &fwdIntermediates,
                        const LstmWeights &weights, const Tensor &input, const Tensor &output,
                        const Tensor &outputGrad, std::nullptr_t, Tensor *inputGrad,
                        LstmWeights &weightsGrad, const DebugContext &debug,
                        const OptionFlags &options, linalg::PlanningCache *cache) {
  return lstmBwdWithWU(graph, params, prog, fwdStateInit, fwdIntermediates, weights, input,
                       output, outputGrad, static_cast<const LstmState *>(nullptr), inputGrad,
                       weightsGrad, debug, options, cache);
}

} // namespace aspen::nn::lstm
