// aspen::nn::gru: the backward pass and the weight update (GRU and AUGRU).
//
// Backward step (reverse rnn loop, state {dhCarry, dhMM}, dh = dhMM + dhCarry (+ dy_t)):
//   resetAfter false: GruBwdA -> delta_u, delta_c, d(a), dhCarry = dh*u;
//                     d(r*h) = delta_c . Wo_c^T; GruBwdB -> delta_r, dhCarry += d(r*h)*r;
//                     dhMM = [delta_r | delta_u] . [Wo_r | Wo_u]^T
//   resetAfter true:  GruBwdResetAfter -> deltaX = [d_r, d_u, d_c], deltaH = [d_r, d_u, d_c*r],
//                     d(a), dhCarry = dh*u; dhMM = deltaH . Wo^T
// The gate gradients of every step are kept ([T, B, 3H], canonical columns), so the input
// gradient is one product after the loop, and so is the weight update:
//   dWi = X^T deltaX, db(x) = sum deltaX;
//   resetAfter false: dWo_r,u = H_prev^T delta_r,u, dWo_c = (r*H_prev)^T delta_c;
//   resetAfter true:  dWo = H_prev^T deltaH, db(h) = sum deltaH.
#include "CellSteps.hpp"
#include "GruInternal.hpp"

#include "NnWork.hpp"

#include <aspen/Error.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/Cast.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Zero.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace aspen::nn::gru {

using program::Copy;
using program::Execute;
using program::Sequence;

namespace detail {

namespace {

using rnn::detail::addStep;

Tensor gatesOf(const Tensor &rows3) {
  return rows3.reshape({rows3.dim(0), 3, rows3.dim(1) / 3}).dimShuffle({1, 0, 2});
}

struct BwdRequest {
  Tensor *inputGrad = nullptr;
  Tensor *bwdIntermediates = nullptr;
  GruWeights *weightsGrad = nullptr;
  const Tensor *attention = nullptr;
  Tensor *attentionGrad = nullptr;
};

// h_{t-1} for every step: the output sequence (or the saved h_t) shifted by one, h_{-1} = init.
Tensor previousOutputs(Graph &graph, const GruParams &params, const GruOptions &opts,
                       const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                       const Tensor &output, Sequence &prog, const DebugContext &debug) {
  const InterLayout layout = interLayout(params);
  const Tensor hSeq = params.outputFullSequence
                          ? output
                          : fwdIntermediates.slice(layout.hSlot(), layout.hSlot() + 1, 1)
                                .squeeze({1});
  return rnn::shiftRnnTensor(graph, params.rnn, hSeq, fwdOutputInit, prog, opts.numShards,
                             {debug, "hPrev"});
}

// The weight-gradient accumulators (float), canonical columns: [Wi; bx] [I+1, 3H], and
// [Wo; bh] [H+1, 3H] (resetAfter) or [Wo_r | Wo_u] [H, 2H] and Wo_c [H, H].
struct WuAcc {
  Tensor x, h, ru, c;
};

WuAcc zeroAccumulators(Graph &graph, const GruParams &params, Sequence &prog,
                       const DebugContext &debug) {
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  auto acc = [&](std::vector<std::size_t> shape, const char *what) {
    Tensor a = graph.addVariable(FLOAT, shape, {debug, what});
    util::mapTensorLinearly(graph, a);
    ops::zero(graph, a, prog, {debug, what});
    return a;
  };
  WuAcc a;
  a.x = acc({I + 1, 3 * H}, "accX");
  if (params.resetAfter) {
    a.h = acc({H + 1, 3 * H}, "accH");
  } else {
    a.ru = acc({H, 2 * H}, "accRU");
    a.c = acc({H, H}, "accC");
  }
  return a;
}

// acc += the products of n rows: x [n, I], hPrev [n, H], reset [n, H] (resetAfter false),
// deltaX [n, 3H] and deltaH [n, 3H] (resetAfter), canonical columns.
void accumulate(Graph &graph, const GruParams &params, const GruOptions &opts, const WuAcc &acc,
                const Tensor &x, const Tensor &hPrev, const Tensor &reset, const Tensor &deltaX,
                const Tensor &deltaH, Sequence &prog, const DebugContext &debug,
                linalg::PlanningCache *cache) {
  const std::size_t H = params.rnn.layerSizes[1];
  const std::size_t rows = x.dim(0);
  const Type t = params.rnn.dataType;
  const OptionFlags mmOptions = matMulOptions(opts, "TRAINING_WU");
  Tensor ones = graph.addConstant<float>(t, {1, 1}, 1.0f, {debug, "ones"});
  graph.setTileMapping(ones, 0);
  const Tensor onesColumn = ones.broadcast(static_cast<unsigned>(rows), 0);
  // [dWi; dbx] += [X | 1]^T . deltaX
  linalg::matMulAcc(graph, acc.x, 1.0f, concat(x, onesColumn, 1).transpose(), deltaX, prog,
                    {debug, "dWi"}, mmOptions, cache);
  if (params.resetAfter) {
    linalg::matMulAcc(graph, acc.h, 1.0f, concat(hPrev, onesColumn, 1).transpose(), deltaH, prog,
                      {debug, "dWo"}, mmOptions, cache);
  } else {
    // The candidate's recurrent product saw r*h_{t-1}.
    const Tensor rh = ops::mul(graph, reset, hPrev, prog, {debug, "rh"});
    linalg::matMulAcc(graph, acc.ru, 1.0f, hPrev.transpose(), deltaX.slice(0, 2 * H, 1), prog,
                      {debug, "dWoRU"}, mmOptions, cache);
    linalg::matMulAcc(graph, acc.c, 1.0f, rh.transpose(), deltaX.slice(2 * H, 3 * H, 1), prog,
                      {debug, "dWoC"}, mmOptions, cache);
  }
}

// The accumulators as GruWeights in slot order and the data type.
GruWeights finish(Graph &graph, const GruParams &params, const WuAcc &acc, Sequence &prog,
                  const DebugContext &debug) {
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const Type t = params.rnn.dataType;
  // Canonical [n, 3H] -> [3, n, H] in slot order, cast into fresh tensors.
  auto result = [&](const Tensor &matrix, const char *what) {
    const Tensor gates = matrix.reshape({matrix.dim(0), 3, H}).dimShuffle({1, 0, 2});
    const Tensor view = slotGates(params, gates);
    Tensor out = graph.addVariable(t, view.shape(), {debug, what});
    util::mapTensorLinearly(graph, out);
    if (t == FLOAT)
      prog.add(Copy(view, out));
    else
      ops::castWithOutput(graph, view, out, prog, {debug, what});
    return out;
  };
  const Tensor dWo = params.resetAfter ? acc.h.slice(0, H, 0) : concat(acc.ru, acc.c, 1);
  GruWeights grads;
  grads.inputWeights = result(acc.x.slice(0, I, 0), "inputWeightsGrad");
  grads.outputWeights = result(dWo, "outputWeightsGrad");
  const Tensor dbx = result(acc.x.slice(I, I + 1, 0), "biasesGrad").reshape({3, H});
  if (params.resetAfter) {
    const Tensor dbh = result(acc.h.slice(H, H + 1, 0), "recurrentBiasesGrad").reshape({3, H});
    grads.biases = graph.addVariable(t, {3, 2, H}, {debug, "biasesGrad"}); // [g][0], [g][1]
    util::mapTensorLinearly(graph, grads.biases);
    prog.add(Copy(concat(dbx.expand({1}), dbh.expand({1}), 1), grads.biases));
  } else {
    grads.biases = dbx;
  }
  return grads;
}

// The weight gradients from the gate gradients of all steps (rows [T*B, 3H], canonical).
GruWeights weightUpdate(Graph &graph, const GruParams &params, const GruOptions &opts,
                        const Tensor &input, const Tensor &hPrev, const Tensor &fwdIntermediates,
                        const Tensor &deltaX, const Tensor &deltaH, Sequence &prog,
                        const DebugContext &debug, linalg::PlanningCache *cache) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const WuAcc acc = zeroAccumulators(graph, params, prog, debug);
  const Tensor reset = params.resetAfter
                           ? Tensor()
                           : fwdIntermediates.slice(0, 1, 1).squeeze({1}).reshape({T * B, H});
  accumulate(graph, params, opts, acc, input.reshape({T * B, I}), hPrev.reshape({T * B, H}),
             reset, deltaX, deltaH, prog, debug, cache);
  return finish(graph, params, acc, prog, debug);
}


// How the backward runs, and the tensors its phases share.
struct BwdPlan {
  Tensor hPrev, woT; // h_{t-1} for every step; Wo^T [3H, H] (canonical rows)
  OptionFlags mmOptions;
  unsigned k = 0; // the weight update's cadence (0: after the loop)
  bool interleaved = false, popnnHardSigmoidGrad = false;
  PersistentChoice persistent;
  Tensor deltaX, deltaH; // every step's gate gradients [T, B, 3H], when kept
  WuAcc acc;
  Tensor wiT, inputGradSeq;  // the interleaved form's step-by-step input gradient
  Tensor attSeq, attGradSeq; // the AUGRU's attention and its gradient, [T, B]
};

// The backward loop's state {dhCarry, dhMM} at the last step, dy folded in when only the final
// output is.
std::vector<Tensor> initialGradients(Graph &graph, const GruParams &params,
                                     const Tensor &outputGrad, Sequence &prog,
                                     const DebugContext &debug) {
  const std::size_t B = params.rnn.batchSize, H = params.rnn.layerSizes[1];
  auto zeros = [&](const char *what) {
    Tensor z = addStep(graph, params.rnn.dataType, B, H, {debug, what});
    ops::zero(graph, z, prog, {debug, what});
    return z;
  };
  Tensor dhCarry = zeros("dhInit");
  if (!params.outputFullSequence)
    ops::addInPlace(graph, dhCarry, outputGrad, prog, {debug, "outputGrad"});
  Tensor dhMM = zeros("dhMMInit");
  return {dhCarry, dhMM};
}

// The loop's cadence, its kept gate gradients, the interleaved weight update's accumulators and
// the attention as sequences, into p.
void planLoop(Graph &graph, const GruParams &params, const GruOptions &opts,
              const GruWeights &weights, const BwdRequest &req, BwdPlan &p, Sequence &prog,
              const DebugContext &debug) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t H = params.rnn.layerSizes[1];
  const Type t = params.rnn.dataType;
  // The weight update: one pass after the loop over the kept gate gradients, or every k steps
  // inside it (the gather form of the loop: then only k steps of gate gradients are kept, and the
  // input gradient is taken step by step).
  const bool doWU = req.weightsGrad != nullptr;
  p.k = doWU && !req.bwdIntermediates ? chooseStepsPerWU(graph, params, opts) : 0;
  p.interleaved = p.k != 0;
  p.popnnHardSigmoidGrad = opts.hardSigmoidGradient == NonLinearityGradient::Popnn;
  // The persistent backward keeps every step's gate gradients (they are its exchange) and
  // leaves the weight update to the products after it.
  p.persistent = persistentChoice(graph, params, opts, "gru", true);
  if (p.persistent.use && p.interleaved &&
      opts.persistent.mode == rnn::detail::PersistentOptions::Mode::Auto) {
    p.persistent.use = false; // auto: the interleaved update keeps the per-step loop
    p.persistent.refusal = "the weight update is interleaved with the backward loop "
                           "(rnnStepsPerWU); the persistent backward needs it after the loop";
  }
  if (p.persistent.use && p.interleaved)
    throw invalid_option(fmt::format(
        "gru: rnnPersistentKernel is true, but the weight update is interleaved with the "
        "backward loop every {} steps (rnnStepsPerWU); the persistent backward needs it after "
        "the loop: rnnStepsPerWU 0",
        p.k));
  if (p.persistent.use) { // one variable each: read in place by the kernel
    p.deltaX = graph.addVariable(t, {T, B, 3 * H}, {debug, "deltaX"});
    util::mapTensorLinearly(graph, p.deltaX);
    if (params.resetAfter) {
      p.deltaH = graph.addVariable(t, {T, B, 3 * H}, {debug, "deltaH"});
      util::mapTensorLinearly(graph, p.deltaH);
    }
  } else if (!p.interleaved) {
    p.deltaX = rnn::detail::addSequence(graph, t, T, B, 3 * H, opts.numShards, {debug, "deltaX"});
    if (params.resetAfter)
      p.deltaH = rnn::detail::addSequence(graph, t, T, B, 3 * H, opts.numShards,
                                          {debug, "deltaH"});
  }
  if (p.interleaved) {
    p.acc = zeroAccumulators(graph, params, prog, {debug, "wu"});
    if (req.inputGrad) {
      p.wiT = canonicalMatrix(graph, params, weights.inputWeights, true, prog,
                              {debug, "inputWeightsTransposed"});
      p.inputGradSeq = rnn::createInputTensor(graph, params.rnn, opts.numShards,
                                              {debug, "inputGrad"});
    }
  }
  if (req.attention) {
    p.attSeq = graph.addVariable(t, {T, B}, {debug, "attention"});
    rnn::detail::mapSequence(graph, p.attSeq.reshape({T, 1, B}), opts.numShards);
    prog.add(Copy(req.attention->transpose(), p.attSeq));
    p.attGradSeq = graph.addVariable(t, {T, B}, {debug, "attentionGrad"});
    rnn::detail::mapSequence(graph, p.attGradSeq.reshape({T, 1, B}), opts.numShards);
  }
}

// A backward cell's `pre` field: the given slots (a_r = 0, a_u = 1 after the layout's preSlot)
// with the activation clip, else none.
void connectPre(Graph &g, VertexRef v, const GruParams &params, const Tensor &fwd,
                const std::vector<Interval> &rows, std::vector<unsigned> which) {
  const InterLayout layout = interLayout(params);
  for (unsigned &slot : which)
    slot += layout.preSlot();
  g.connect(v["pre"], layout.savePre ? nn::work::gateSegments(fwd, rows, which)
                                     : std::vector<Tensor>{});
}

// The GRU's side of the backward step builder (rnn::detail::backwardStepBody): the step's
// tensors (its gate gradients as [B, 3H] rows, dX, and dH with resetAfter, in the step's
// outputs or the gather form's temporaries) and the fields of GruBwdA and GruBwdB (reset
// before) or GruBwdResetAfter.
class BwdCell final : public rnn::detail::CellSteps {
public:
  BwdCell(const GruParams &params, const BwdPlan &p, bool attention)
      : params_(params), p_(p), attention_(attention) {}

  rnn::detail::StepTensors begin(Graph &, std::vector<Tensor> &state, const rnn::RnnSlice &slice,
                                 const rnn::RnnBatchwiseFlags &flags,
                                 const DebugContext &) const override {
    const std::size_t B = params_.rnn.batchSize, H = params_.rnn.layerSizes[1];
    rnn::detail::StepTensors s;
    s.state = state[0];
    s.stateGrad = state[1];
    s.own.resize(kOwn);
    if (p_.interleaved) {
      const Tensor temps = slice.interimOut; // [3 or 6, B, H]
      s.own[kDGates] = temps.slice(0, 3, 0);
      s.deltaX = s.own[kDGates].dimShuffle({1, 0, 2}).reshape({B, 3 * H});
      if (params_.resetAfter) {
        s.own[kDHGates] = temps.slice(3, 6, 0);
        s.deltaH = s.own[kDHGates].dimShuffle({1, 0, 2}).reshape({B, 3 * H});
      }
    } else {
      s.deltaX = slice.outputs[0];
      s.own[kDGates] = gatesOf(s.deltaX);
      if (params_.resetAfter) {
        s.deltaH = slice.outputs[1];
        s.own[kDHGates] = gatesOf(s.deltaH);
      }
    }
    if (p_.inputGradSeq.valid()) // the input gradient step by step (interleaved WU)
      s.inputGrad = slice.outputs[p_.deltaX.valid() ? 1 : 0];
    s.own[kFwd] = slice.inputs[0];
    s.own[kHPrev] = slice.inputs[1];
    s.own[kOutGrad] = params_.outputFullSequence ? slice.inputs[2] : state[0];
    s.own[kMask] = flags.mask;
    s.own[kAtt] = attention_ ? slice.inputs.back() : flags.mask;
    s.own[kAttGrad] = attention_ ? slice.outputs.back() : flags.inverse;
    return s;
  }

  void connect(unsigned phase, Graph &g, VertexRef v, const std::vector<Interval> &rows,
               const rnn::detail::StepTensors &s) const override {
    if (params_.resetAfter)
      connectResetAfter(g, v, rows, s);
    else if (phase == 0)
      connectA(g, v, rows, s);
    else
      connectB(g, v, rows, s);
  }

private:
  // StepTensors::own: the gate gradients as [3, B, H] (dX's, dH's), the saved forward
  // [n, B, H], h_{t-1}, dy (dhCarry when only the last output is), the mask, the attention
  // and its gradient.
  enum Own { kDGates, kDHGates, kFwd, kHPrev, kOutGrad, kMask, kAtt, kAttGrad, kOwn };

  // The fields GruBwdA and GruBwdResetAfter share.
  void common(Graph &g, VertexRef v, const std::vector<Interval> &rows,
              const rnn::detail::StepTensors &s) const {
    g.connect(v["hPrev"], nn::work::rowList(s.own[kHPrev], rows));
    g.connect(v["outGrad"], nn::work::rowList(s.own[kOutGrad], rows));
    g.connect(v["dhMM"], nn::work::rowList(s.stateGrad, rows));
    g.connect(v["dhCarry"], nn::work::rowList(s.state, rows));
    g.connect(v["mask"], nn::work::rowElements(s.own[kMask], rows));
    g.connect(v["attention"], nn::work::rowElements(s.own[kAtt], rows));
    g.connect(v["attGrad"], nn::work::rowElements(s.own[kAttGrad], rows));
    g.setInitialValue(v["activation"], static_cast<unsigned>(params_.activation));
    g.setInitialValue(v["recurrentActivation"],
                      static_cast<unsigned>(params_.recurrentActivation));
    g.setInitialValue(v["hasAttention"], attention_);
    g.setInitialValue(v["hasOutGrad"], params_.outputFullSequence);
    g.setInitialValue(v["rawCandidate"], rawCandidate(params_));
    g.setInitialValue(v["popnnHardSigmoidGrad"], p_.popnnHardSigmoidGrad);
    g.setInitialValue(v["activationClip"], activationClipOf(params_));
  }
  void connectA(Graph &g, VertexRef v, const std::vector<Interval> &rows,
                const rnn::detail::StepTensors &s) const {
    const Tensor &fwd = s.own[kFwd];
    g.connect(v["fwd"], nn::work::gateSegments(fwd, rows, {0, 1, 2}));
    g.connect(v["delta"], nn::work::gateSegments(s.own[kDGates], rows, {0, 1, 2}));
    connectPre(g, v, params_, fwd, rows, {1});
    common(g, v, rows, s);
  }
  void connectB(Graph &g, VertexRef v, const std::vector<Interval> &rows,
                const rnn::detail::StepTensors &s) const {
    const Tensor &fwd = s.own[kFwd];
    g.connect(v["reset"], nn::work::gateSegments(fwd, rows, {0}));
    g.connect(v["hPrev"], nn::work::rowList(s.own[kHPrev], rows));
    g.connect(v["drh"], nn::work::rowList(s.product[0], rows));
    g.connect(v["mask"], nn::work::rowElements(s.own[kMask], rows));
    g.connect(v["dhCarry"], nn::work::rowList(s.state, rows));
    g.connect(v["delta"], nn::work::gateSegments(s.own[kDGates], rows, {0}));
    g.setInitialValue(v["recurrentActivation"],
                      static_cast<unsigned>(params_.recurrentActivation));
    g.setInitialValue(v["popnnHardSigmoidGrad"], p_.popnnHardSigmoidGrad);
    g.setInitialValue(v["activationClip"], activationClipOf(params_));
    connectPre(g, v, params_, fwd, rows, {0});
  }
  void connectResetAfter(Graph &g, VertexRef v, const std::vector<Interval> &rows,
                         const rnn::detail::StepTensors &s) const {
    const Tensor &fwd = s.own[kFwd];
    g.connect(v["fwd"], nn::work::gateSegments(fwd, rows, {0, 1, 2, interLayout(params_).nSlot()}));
    g.connect(v["deltaX"], nn::work::gateSegments(s.own[kDGates], rows, {0, 1, 2}));
    g.connect(v["deltaH"], nn::work::gateSegments(s.own[kDHGates], rows, {0, 1, 2}));
    connectPre(g, v, params_, fwd, rows, {0, 1});
    common(g, v, rows, s);
  }

  const GruParams &params_;
  const BwdPlan &p_;
  bool attention_;
};

// The backward loop (the gather form when the weight update is interleaved) of the backward
// builder on the GRU's table row. Returns its final state.
std::vector<Tensor> stepLoop(Graph &graph, const GruParams &params, const GruOptions &opts,
                             const BwdPlan &p, const BwdRequest &req, const Tensor &input,
                             const Tensor &fwdIntermediates, const Tensor &outputGrad,
                             const std::vector<Tensor> &init, Sequence &prog,
                             const DebugContext &debug, linalg::PlanningCache *cache) {
  const std::size_t B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  std::vector<Tensor> inputs{fwdIntermediates, p.hPrev};
  if (params.outputFullSequence)
    inputs.push_back(outputGrad);
  if (req.attention)
    inputs.push_back(p.attSeq);
  std::vector<Tensor> outputs;
  for (const Tensor *t : {&p.deltaX, &p.deltaH, &p.inputGradSeq, &p.attGradSeq})
    if (t->valid())
      outputs.push_back(*t);
  rnn::detail::LoopSpec spec{params.rnn};
  spec.initState = init;
  spec.inputs = inputs;
  spec.outputs = outputs;
  spec.numShards = opts.numShards;
  spec.codeReuse = opts.codeReuse;
  if (p.interleaved) {
    spec.numTemps = params.resetAfter ? 6 : 3;
    spec.stepsPerGather = p.k;
    spec.gatherInputs = {input, p.hPrev};
    if (!params.resetAfter)
      spec.gatherInputs.push_back(fwdIntermediates.slice(0, 1, 1).squeeze({1})); // r
    spec.gatherFn = [&](Graph &g, const rnn::RnnSlice &slice, unsigned steps, Sequence *,
                        const DebugContext &dbg) {
      Sequence s;
      const std::size_t rows = std::size_t(steps) * B;
      const Tensor win = slice.interimOut; // [k, 3 or 6, B, H]
      auto gateRows = [&](unsigned first) {
        return win.slice(first, first + 3, 1).dimShuffle({0, 2, 1, 3}).reshape({rows, 3 * H});
      };
      accumulate(g, params, opts, p.acc, slice.inputs[0].reshape({rows, I}),
                 slice.inputs[1].reshape({rows, H}),
                 params.resetAfter ? Tensor() : slice.inputs[2].reshape({rows, H}), gateRows(0),
                 params.resetAfter ? gateRows(3) : Tensor(), s, dbg, cache);
      return s;
    };
  }
  const BwdCell cell(params, p, req.attention != nullptr);
  return rnn::detail::backwardCellLoop(
      graph,
      rnn::detail::cellTable(params.resetAfter ? rnn::detail::CellKind::GruResetAfter
                                               : rnn::detail::CellKind::GruResetBefore),
      spec, {{p.woT, p.wiT, {}}, p.mmOptions, cache}, cell, prog, {debug, "loop"});
}

// The attention's gradient [B, T] from its sequence.
Tensor attentionGradient(Graph &graph, const GruParams &params, const BwdPlan &p,
                         Sequence &prog, const DebugContext &debug) {
  Tensor grad = graph.addVariable(params.rnn.dataType,
                                  {params.rnn.batchSize, params.rnn.maxTimeSteps},
                                  {debug, "attentionGradient"});
  util::mapTensorLinearly(graph, grad);
  prog.add(Copy(p.attGradSeq.transpose(), grad));
  return grad;
}

// After a loop that kept every step's gate gradients: the input gradient, the kept gradients,
// the attention's and the weight update.
void finishBackward(Graph &graph, const GruParams &params, const GruOptions &opts,
                    const BwdPlan &p, const BwdRequest &req, const GruWeights &weights,
                    const Tensor &input, const Tensor &fwdIntermediates, Sequence &prog,
                    const DebugContext &debug, linalg::PlanningCache *cache) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const Tensor deltaRows = p.deltaX.reshape({T * B, 3 * H});
  if (req.inputGrad) {
    const Tensor wiT = canonicalMatrix(graph, params, weights.inputWeights, true, prog,
                                       {debug, "inputWeightsTransposed"});
    Tensor dx = rnn::createInputTensor(graph, params.rnn, opts.numShards, {debug, "inputGrad"});
    linalg::matMulWithOutput(graph, deltaRows, wiT, dx.reshape({T * B, I}), prog,
                             {debug, "inputGrad"}, p.mmOptions, cache);
    *req.inputGrad = dx;
  }
  if (req.bwdIntermediates) // [T, 3, B, H] in slot order
    *req.bwdIntermediates = slotGates(
        params, p.deltaX.reshape({T, B, 3, H}).dimShuffle({2, 0, 1, 3})).dimShuffle({1, 0, 2, 3});
  if (req.attentionGrad)
    *req.attentionGrad = attentionGradient(graph, params, p, prog, debug);
  if (req.weightsGrad)
    *req.weightsGrad = weightUpdate(graph, params, opts, input, p.hPrev, fwdIntermediates,
                                    deltaRows,
                                    p.deltaH.valid() ? p.deltaH.reshape({T * B, 3 * H}) : Tensor(),
                                    prog, {debug, "wu"}, cache);
}

Tensor backward(Graph &graph, const GruParams &params, const GruOptions &opts, Sequence &prog,
                const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                const GruWeights &weights, const Tensor &input, const Tensor &output,
                const Tensor &outputGrad, const BwdRequest &req, const DebugContext &debug,
                linalg::PlanningCache *cache) {
  const std::size_t H = params.rnn.layerSizes[1];
  const bool full = params.outputFullSequence;
  BwdPlan p;
  p.mmOptions = matMulOptions(opts, "TRAINING_BWD");
  p.hPrev = previousOutputs(graph, params, opts, fwdOutputInit, fwdIntermediates, output, prog,
                            debug);
  p.woT = canonicalMatrix(graph, params, weights.outputWeights, true, prog,
                          {debug, "outputWeightsTransposed"});
  std::vector<Tensor> state = initialGradients(graph, params, outputGrad, prog, debug);
  planLoop(graph, params, opts, weights, req, p, prog, debug);
  if (p.persistent.use || (!p.interleaved && usesFusedStep(graph, params, opts, "gru"))) {
    // One launch for the whole loop, or the fused loop (the recurrent products fused with the
    // cells: one compute set a step with resetAfter, two without); then the product of step
    // 0's gate gradients, the gradient reaching the initial output.
    if (p.persistent.use)
      persistentBackward(graph, params, opts, p.persistent, weights, fwdIntermediates, p.hPrev,
                         full ? outputGrad : Tensor(), p.attSeq, p.attGradSeq, state[0],
                         p.deltaX, p.deltaH, prog, {debug, "persistent"});
    else
      fusedBackward(graph, params, opts, p.woT, fwdIntermediates, p.hPrev,
                    full ? outputGrad : Tensor(), p.attSeq, p.attGradSeq, state[0], p.deltaX,
                    p.deltaH, prog, {debug, "fused"});
    if (params.resetAfter)
      linalg::matMulWithOutput(graph, p.deltaH[0], p.woT, state[1], prog,
                               {debug, "initialStateGrad"}, p.mmOptions, cache);
    else
      linalg::matMulWithOutput(graph, p.deltaX[0].slice(0, 2 * H, 1), p.woT.slice(0, 2 * H, 0),
                               state[1], prog, {debug, "initialStateGrad"}, p.mmOptions, cache);
  } else {
    state = stepLoop(graph, params, opts, p, req, input, fwdIntermediates, outputGrad, state, prog,
                     debug, cache);
  }
  if (p.interleaved) {
    if (req.inputGrad)
      *req.inputGrad = p.inputGradSeq;
    *req.weightsGrad = finish(graph, params, p.acc, prog, {debug, "wu"});
    if (req.attentionGrad)
      *req.attentionGrad = attentionGradient(graph, params, p, prog, debug);
  } else {
    finishBackward(graph, params, opts, p, req, weights, input, fwdIntermediates, prog, debug,
                   cache);
  }
  return ops::add(graph, state[1], state[0], prog, {debug, "initialOutputGrad"});
}

void checkBwd(const GruParams &params, const GruOptions &opts, const Tensor &fwdOutputInit,
              const Tensor &fwdIntermediates, const GruWeights &weights, const Tensor &input,
              const Tensor &output, const Tensor *outputGrad, const BwdRequest &req,
              const std::string &what) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const Type t = params.rnn.dataType;
  if (opts.inferenceOnly)
    throw invalid_option(what + ": the option inferenceOnly is true; a backward pass needs a "
                                "training forward pass");
  checkTensor(fwdOutputInit, {B, H}, t, what + ": fwdOutputInit");
  checkTensor(input, {T, B, I}, t, what + ": input");
  checkWeights(params, weights, what);
  const std::vector<std::size_t> outShape =
      params.outputFullSequence ? std::vector<std::size_t>{T, B, H} : std::vector<std::size_t>{B, H};
  checkTensor(output, outShape, t, what + ": output");
  if (outputGrad)
    checkTensor(*outputGrad, outShape, t, what + ": outputGrad");
  checkTensor(fwdIntermediates, {T, interLayout(params).count(), B, H}, t,
              what + ": fwdIntermediates");
  if (req.attention)
    checkTensor(*req.attention, {B, T}, t, what + ": attention");
  if (req.inputGrad && !params.calcInputGradients)
    throw invalid_option(what + ": inputGrad was asked for, but params.calcInputGradients is "
                                "false");
}

Tensor bwdEntry(Graph &graph, const GruParams &params, Sequence &prog,
                const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                const GruWeights &weights, const Tensor &input, const Tensor &output,
                const Tensor &outputGrad, const BwdRequest &req, const DebugContext &debug,
                const OptionFlags &options, linalg::PlanningCache *cache,
                const std::string &what) {
  const auto opts = parseOptions(graph, params, options, what);
  persistentChoice(graph, params, opts, what, true); // true where it cannot run: refused
  checkBwd(params, opts, fwdOutputInit, fwdIntermediates, weights, input, output, &outputGrad,
           req, what);
  // The sequences in the order the forward ran them (reverse: RnnLoop.hpp).
  const rnn::detail::RunOrder order{graph, params.rnn, opts.reverse, prog, debug};
  const bool full = params.outputFullSequence;
  Tensor attention;
  BwdRequest inner = req;
  if (req.attention) {
    attention = order.rows(*req.attention, "attention");
    inner.attention = &attention;
  }
  const Tensor grad = backward(graph, params, opts, prog, fwdOutputInit, fwdIntermediates,
                               weights, order(input, "in"), order.output(output, full, "out"),
                               order.output(outputGrad, full, "outGrad"), inner, debug, cache);
  if (req.inputGrad && req.inputGrad->valid())
    *req.inputGrad = order(*req.inputGrad, "inGrad");
  if (req.attentionGrad && req.attentionGrad->valid())
    *req.attentionGrad = order.rows(*req.attentionGrad, "attentionGrad");
  return grad;
}

GruWeights wuEntry(Graph &graph, const GruParams &params, Sequence &prog,
                   const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                   const Tensor &bwdIntermediates, const GruWeights &weights,
                   const Tensor &input, const Tensor &output, const DebugContext &debug,
                   const OptionFlags &options, linalg::PlanningCache *cache,
                   const std::string &what) {
  const auto opts = parseOptions(graph, params, options, what);
  checkBwd(params, opts, fwdOutputInit, fwdIntermediates, weights, input, output, nullptr, {},
           what);
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t H = params.rnn.layerSizes[1];
  checkTensor(bwdIntermediates, {T, 3, B, H}, params.rnn.dataType, what + ": bwdIntermediates");
  // A reverse layer's sequences in the order its forward ran them (RnnLoop.hpp).
  const rnn::detail::RunOrder order{graph, params.rnn, opts.reverse, prog, debug};
  const Tensor hPrev = previousOutputs(graph, params, opts, fwdOutputInit, fwdIntermediates,
                                       order.output(output, params.outputFullSequence, "out"),
                                       prog, debug);
  // [T, 3, B, H] slot order -> [T*B, 3H] canonical rows.
  const Tensor canon = canonicalGates(params, bwdIntermediates.dimShuffle({1, 0, 2, 3}));
  const Tensor deltaX = canon.dimShuffle({1, 2, 0, 3}).reshape({T * B, 3 * H});
  Tensor deltaH;
  if (params.resetAfter) {
    // The candidate's recurrent part: d(n) = delta_c * r.
    const Tensor reset = fwdIntermediates.slice(0, 1, 1).squeeze({1});
    const Tensor dn = ops::mul(graph, canon[2], reset, prog, {debug, "dn"});
    deltaH = concat({canon[0].expand({0}), canon[1].expand({0}), dn.expand({0})}, 0)
                 .dimShuffle({1, 2, 0, 3})
                 .reshape({T * B, 3 * H});
  }
  return weightUpdate(graph, params, opts, order(input, "in"), hPrev, fwdIntermediates,
                      deltaX, deltaH, prog, debug, cache);
}

} // namespace

// The interleaving cadence k (0: one pass after the loop): the forced value, or one pass when
// the gate gradients of all steps fit the memory budget, else the largest window that does.
unsigned chooseStepsPerWU(const Graph &graph, const GruParams &params, const GruOptions &opts) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  if (opts.stepsPerWU)
    return rnn::detail::stepsPerWUWithin(*opts.stepsPerWU, T);
  const Target &target = graph.getTarget();
  const double budget =
      double(target.getNumTiles()) * target.getBytesPerTile() * opts.availableMemoryProportion;
  const double perStep = double(B) * ((params.resetAfter ? 6 : 3) * H + I + 2 * H) *
                         target.getTypeSize(params.rnn.dataType);
  if (perStep * T <= budget)
    return 0;
  return static_cast<unsigned>(std::clamp(std::floor(budget / perStep), 1.0, double(T - 1)));
}

} // namespace detail

Tensor gruBwd(Graph &graph, const GruParams &params, Sequence &prog, const Tensor &fwdOutputInit,
              const Tensor &fwdIntermediates, const GruWeights &weights, const Tensor &input,
              const Tensor &output, const Tensor &outputGrad, Tensor *inputGrad,
              Tensor *bwdIntermediates, const DebugContext &debug, const OptionFlags &options,
              linalg::PlanningCache *cache) {
  detail::BwdRequest req;
  req.inputGrad = inputGrad;
  req.bwdIntermediates = bwdIntermediates;
  return detail::bwdEntry(graph, params, prog, fwdOutputInit, fwdIntermediates, weights, input,
                          output, outputGrad, req, debug, options, cache, "gru::gruBwd");
}

Tensor gruBwd(Graph &graph, const GruParams &params, Sequence &prog, const Tensor &fwdOutputInit,
              const Tensor &fwdIntermediates, const GruWeights &weights, const Tensor &input,
              const Tensor &realTimeSteps, const Tensor &output, const Tensor &outputGrad,
              Tensor *inputGrad, Tensor *bwdIntermediates, const DebugContext &debug,
              const OptionFlags &options, linalg::PlanningCache *cache) {
  return gruBwd(graph,
                detail::withRealTimeSteps(params, realTimeSteps, options, "gru::gruBwd"), prog,
                fwdOutputInit, fwdIntermediates, weights, input, output, outputGrad, inputGrad,
                bwdIntermediates, debug, options, cache);
}

Tensor auGruBwd(Graph &graph, const GruParams &params, Sequence &prog,
                const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                const GruWeights &weights, const Tensor &input, const Tensor &output,
                const Tensor &outputGrad, Tensor *inputGrad, Tensor *bwdIntermediates,
                const Tensor &attention, Tensor *attentionGrad, const DebugContext &debug,
                const OptionFlags &options, linalg::PlanningCache *cache) {
  detail::BwdRequest req;
  req.inputGrad = inputGrad;
  req.bwdIntermediates = bwdIntermediates;
  req.attention = &attention;
  req.attentionGrad = attentionGrad;
  return detail::bwdEntry(graph, params, prog, fwdOutputInit, fwdIntermediates, weights, input,
                          output, outputGrad, req, debug, options, cache, "gru::auGruBwd");
}

Tensor auGruBwd(Graph &graph, const GruParams &params, Sequence &prog,
                const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                const GruWeights &weights, const Tensor &input, const Tensor &realTimeSteps,
                const Tensor &output, const Tensor &outputGrad, Tensor *inputGrad,
                Tensor *bwdIntermediates, const Tensor &attention, Tensor *attentionGrad,
                const DebugContext &debug, const OptionFlags &options,
                linalg::PlanningCache *cache) {
  return auGruBwd(graph,
                  detail::withRealTimeSteps(params, realTimeSteps, options, "gru::auGruBwd"),
                  prog,
                  fwdOutputInit, fwdIntermediates, weights, input, output, outputGrad, inputGrad,
                  bwdIntermediates, attention, attentionGrad, debug, options, cache);
}

GruWeights gruWU(Graph &graph, const GruParams &params, Sequence &prog,
                 const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                 const Tensor &bwdIntermediates, const GruWeights &weights, const Tensor &input,
                 const Tensor &output, const DebugContext &debug, const OptionFlags &options,
                 linalg::PlanningCache *cache) {
  return detail::wuEntry(graph, params, prog, fwdOutputInit, fwdIntermediates, bwdIntermediates,
                         weights, input, output, debug, options, cache, "gru::gruWU");
}

GruWeights auGruWU(Graph &graph, const GruParams &params, Sequence &prog,
                   const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                   const Tensor &bwdIntermediates, const GruWeights &weights,
                   const Tensor &input, const Tensor &output, const DebugContext &debug,
                   const OptionFlags &options, linalg::PlanningCache *cache) {
  // The saved update gate already has the attention applied: the same products as the GRU's.
  return detail::wuEntry(graph, params, prog, fwdOutputInit, fwdIntermediates, bwdIntermediates,
                         weights, input, output, debug, options, cache, "gru::auGruWU");
}

Tensor gruBwdWithWU(Graph &graph, const GruParams &params, Sequence &prog,
                    const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                    const GruWeights &weights, const Tensor &input, const Tensor &output,
                    const Tensor &outputGrad, Tensor *inputGrad, GruWeights &weightsGrad,
                    const DebugContext &debug, const OptionFlags &options,
                    linalg::PlanningCache *cache) {
  detail::BwdRequest req;
  req.inputGrad = inputGrad;
  req.weightsGrad = &weightsGrad;
  return detail::bwdEntry(graph, params, prog, fwdOutputInit, fwdIntermediates, weights, input,
                          output, outputGrad, req, debug, options, cache, "gru::gruBwdWithWU");
}

Tensor gruBwdWithWU(Graph &graph, const GruParams &params, Sequence &prog,
                    const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                    const GruWeights &weights, const Tensor &input, const Tensor &realTimeSteps,
                    const Tensor &output, const Tensor &outputGrad, Tensor *inputGrad,
                    GruWeights &weightsGrad, const DebugContext &debug,
                    const OptionFlags &options, linalg::PlanningCache *cache) {
  return gruBwdWithWU(graph,
                      detail::withRealTimeSteps(params, realTimeSteps, options,
                                                "gru::gruBwdWithWU"),
                      prog, fwdOutputInit, fwdIntermediates, weights, input, output, outputGrad,
                      inputGrad, weightsGrad, debug, options, cache);
}

Tensor auGruBwdWithWU(Graph &graph, const GruParams &params, Sequence &prog,
                      const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                      const GruWeights &weights, const Tensor &input, const Tensor &output,
                      const Tensor &outputGrad, Tensor *inputGrad, GruWeights &weightsGrad,
                      const Tensor &attention, Tensor *attentionGrad,
                      const DebugContext &debug, const OptionFlags &options,
                      linalg::PlanningCache *cache) {
  detail::BwdRequest req;
  req.inputGrad = inputGrad;
  req.weightsGrad = &weightsGrad;
  req.attention = &attention;
  req.attentionGrad = attentionGrad;
  return detail::bwdEntry(graph, params, prog, fwdOutputInit, fwdIntermediates, weights, input,
                          output, outputGrad, req, debug, options, cache,
                          "gru::auGruBwdWithWU");
}

Tensor auGruBwdWithWU(Graph &graph, const GruParams &params, Sequence &prog,
                      const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                      const GruWeights &weights, const Tensor &input,
                      const Tensor &realTimeSteps, const Tensor &output,
                      const Tensor &outputGrad, Tensor *inputGrad, GruWeights &weightsGrad,
                      const Tensor &attention, Tensor *attentionGrad,
                      const DebugContext &debug, const OptionFlags &options,
                      linalg::PlanningCache *cache) {
  return auGruBwdWithWU(
      graph, detail::withRealTimeSteps(params, realTimeSteps, options, "gru::auGruBwdWithWU"), prog,
      fwdOutputInit, fwdIntermediates, weights, input, output, outputGrad, inputGrad,
      weightsGrad, attention, attentionGrad, debug, options, cache);
}

} // namespace aspen::nn::gru
