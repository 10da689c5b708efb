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

// The weight gradients from the gate gradients of all steps (rows [T*B, 3H], canonical).
GruWeights weightUpdate(Graph &graph, const GruParams &params, const GruOptions &opts,
                        const Tensor &input, const Tensor &hPrev, const Tensor &fwdIntermediates,
                        const Tensor &deltaX, const Tensor &deltaH, Sequence &prog,
                        const DebugContext &debug, linalg::PlanningCache *cache) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const Type t = params.rnn.dataType;
  const std::size_t rows = T * B;
  const OptionFlags mmOptions = matMulOptions(opts, "TRAINING_WU");
  Tensor ones = graph.addConstant<float>(t, {1, 1}, 1.0f, {debug, "ones"});
  graph.setTileMapping(ones, 0);
  const Tensor onesColumn = ones.broadcast(static_cast<unsigned>(rows), 0);
  // [dWi; dbx] = [X | 1]^T . deltaX
  const Tensor xAndOne = concat(input.reshape({rows, I}), onesColumn, 1);
  const Tensor accX = linalg::matMul(graph, xAndOne.transpose(), deltaX, prog, {debug, "dWi"},
                                     mmOptions, cache); // [I+1, 3H]
  const Tensor hRows = hPrev.reshape({rows, H});
  Tensor dWo, dbh;                                       // dWo [H, 3H] canonical columns
  if (params.resetAfter) {
    const Tensor accH = linalg::matMul(graph, concat(hRows, onesColumn, 1).transpose(), deltaH,
                                       prog, {debug, "dWo"}, mmOptions, cache); // [H+1, 3H]
    dWo = accH.slice(0, H, 0);
    dbh = accH.slice(H, H + 1, 0);
  } else {
    // The candidate's recurrent product saw r*h_{t-1}.
    const Tensor reset = fwdIntermediates.slice(0, 1, 1).squeeze({1}).reshape({rows, H});
    const Tensor rh = ops::mul(graph, reset, hRows, prog, {debug, "rh"});
    const Tensor dWoRU = linalg::matMul(graph, hRows.transpose(), deltaX.slice(0, 2 * H, 1), prog,
                                        {debug, "dWoRU"}, mmOptions, cache);
    const Tensor dWoC = linalg::matMul(graph, rh.transpose(), deltaX.slice(2 * H, 3 * H, 1), prog,
                                       {debug, "dWoC"}, mmOptions, cache);
    dWo = concat(dWoRU, dWoC, 1);
  }
  // Canonical [n, 3H] -> [3, n, H] in slot order, copied into fresh tensors.
  auto result = [&](const Tensor &matrix, const char *what) {
    const Tensor gates = matrix.reshape({matrix.dim(0), 3, H}).dimShuffle({1, 0, 2});
    const Tensor view = slotGates(params, gates);
    Tensor out = graph.addVariable(t, view.shape(), {debug, what});
    util::mapTensorLinearly(graph, out);
    prog.add(Copy(view, out));
    return out;
  };
  GruWeights grads;
  grads.inputWeights = result(accX.slice(0, I, 0), "inputWeightsGrad");
  grads.outputWeights = result(dWo, "outputWeightsGrad");
  const Tensor dbx = result(accX.slice(I, I + 1, 0), "biasesGrad")
                         .reshape({3, H}); // [3, 1, H] -> [3, H]
  if (params.resetAfter) {
    const Tensor dbhSlots = result(dbh, "recurrentBiasesGrad").reshape({3, H});
    grads.biases = graph.addVariable(t, {3, 2, H}, {debug, "biasesGrad"}); // [g][0], [g][1]
    util::mapTensorLinearly(graph, grads.biases);
    prog.add(Copy(concat(dbx.expand({1}), dbhSlots.expand({1}), 1), grads.biases));
  } else {
    grads.biases = dbx;
  }
  return grads;
}

Tensor backward(Graph &graph, const GruParams &params, const GruOptions &opts, Sequence &prog,
                const Tensor &fwdOutputInit, const Tensor &fwdIntermediates,
                const GruWeights &weights, const Tensor &input, const Tensor &output,
                const Tensor &outputGrad, const BwdRequest &req, const DebugContext &debug,
                linalg::PlanningCache *cache) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const Type t = params.rnn.dataType;
  const bool full = params.outputFullSequence;
  const InterLayout layout = interLayout(params);
  const OptionFlags mmOptions = matMulOptions(opts, "TRAINING_BWD");

  const Tensor hPrev = previousOutputs(graph, params, opts, fwdOutputInit, fwdIntermediates,
                                       output, prog, debug);
  // The products read the recurrent weights transposed ([3H, H], canonical rows).
  const Tensor woT = canonicalMatrix(graph, params, weights.outputWeights, true, prog,
                                     {debug, "outputWeightsTransposed"});
  auto zeros = [&](const char *what) {
    Tensor z = addStep(graph, t, B, H, {debug, what});
    ops::zero(graph, z, prog, {debug, what});
    return z;
  };
  Tensor dhCarry = zeros("dhInit");
  if (!full)
    ops::addInPlace(graph, dhCarry, outputGrad, prog, {debug, "outputGrad"});
  Tensor dhMM = zeros("dhMMInit");

  Tensor deltaX = rnn::detail::addSequence(graph, t, T, B, 3 * H, opts.numShards,
                                           {debug, "deltaX"});
  Tensor deltaH;
  if (params.resetAfter)
    deltaH = rnn::detail::addSequence(graph, t, T, B, 3 * H, opts.numShards, {debug, "deltaH"});
  Tensor attGradSeq;
  std::vector<Tensor> inputs{fwdIntermediates, hPrev};
  if (full)
    inputs.push_back(outputGrad);
  if (req.attention) {
    Tensor attSeq = graph.addVariable(t, {T, B}, {debug, "attention"});
    rnn::detail::mapSequence(graph, attSeq.reshape({T, 1, B}), opts.numShards);
    prog.add(Copy(req.attention->transpose(), attSeq));
    inputs.push_back(attSeq);
    attGradSeq = graph.addVariable(t, {T, B}, {debug, "attentionGrad"});
    rnn::detail::mapSequence(graph, attGradSeq.reshape({T, 1, B}), opts.numShards);
  }
  std::vector<Tensor> outputs{deltaX};
  if (deltaH.valid())
    outputs.push_back(deltaH);
  if (attGradSeq.valid())
    outputs.push_back(attGradSeq);

  auto body = [&](Graph &g, const rnn::TimeStepState &, const rnn::RnnBatchwiseFlags &flags,
                  std::vector<Tensor> &state, const rnn::RnnSlice &slice, std::vector<Tensor> &,
                  Sequence *, const DebugContext &dbg) {
    Sequence step;
    const Tensor &carry = state[0], &mm = state[1];
    const Tensor fwd = slice.inputs[0]; // [n, B, H]
    const Tensor hp = slice.inputs[1];
    const Tensor dy = full ? slice.inputs[2] : carry;
    const Tensor att = req.attention ? slice.inputs.back() : flags.mask;
    const Tensor dX = slice.outputs[0];            // [B, 3H]
    const Tensor attGrad = req.attention ? slice.outputs.back() : flags.inverse;
    const auto common = [&](VertexRef v, const std::vector<Interval> &rows) {
      g.connect(v["mask"], nn::work::rowElements(flags.mask, rows));
      g.connect(v["attention"], nn::work::rowElements(att, rows));
      g.connect(v["attGrad"], nn::work::rowElements(attGrad, rows));
      g.setInitialValue(v["activation"], static_cast<unsigned>(params.activation));
      g.setInitialValue(v["recurrentActivation"],
                        static_cast<unsigned>(params.recurrentActivation));
      g.setInitialValue(v["hasAttention"], req.attention != nullptr);
      g.setInitialValue(v["hasOutGrad"], full);
      g.setInitialValue(v["rawCandidate"], rawCandidate(params));
    };
    if (!params.resetAfter) {
      const Tensor dGates = gatesOf(dX);
      ComputeSet csA = g.addComputeSet({dbg, "gradA"});
      addCellVertices(g, csA, util::templateVertex("aspen::nn::GruBwdA", t), carry,
                      [&](VertexRef v, const std::vector<Interval> &rows) {
                        g.connect(v["fwd"], nn::work::gateSegments(fwd, rows, {0, 1, 2}));
                        g.connect(v["hPrev"], nn::work::rowList(hp, rows));
                        g.connect(v["outGrad"], nn::work::rowList(dy, rows));
                        g.connect(v["dhMM"], nn::work::rowList(mm, rows));
                        g.connect(v["dhCarry"], nn::work::rowList(carry, rows));
                        g.connect(v["delta"], nn::work::gateSegments(dGates, rows, {0, 1, 2}));
                        common(v, rows);
                      });
      step.add(Execute(csA));
      const Tensor drh = linalg::matMul(g, dX.slice(2 * H, 3 * H, 1), woT.slice(2 * H, 3 * H, 0),
                                        step, {dbg, "drh"}, mmOptions, cache);
      ComputeSet csB = g.addComputeSet({dbg, "gradB"});
      addCellVertices(g, csB, util::templateVertex("aspen::nn::GruBwdB", t), carry,
                      [&](VertexRef v, const std::vector<Interval> &rows) {
                        g.connect(v["reset"], nn::work::gateSegments(fwd, rows, {0}));
                        g.connect(v["hPrev"], nn::work::rowList(hp, rows));
                        g.connect(v["drh"], nn::work::rowList(drh, rows));
                        g.connect(v["mask"], nn::work::rowElements(flags.mask, rows));
                        g.connect(v["dhCarry"], nn::work::rowList(carry, rows));
                        g.connect(v["delta"], nn::work::gateSegments(dGates, rows, {0}));
                        g.setInitialValue(v["recurrentActivation"],
                                          static_cast<unsigned>(params.recurrentActivation));
                      });
      step.add(Execute(csB));
      linalg::matMulWithOutput(g, dX.slice(0, 2 * H, 1), woT.slice(0, 2 * H, 0), mm, step,
                               {dbg, "dhMM"}, mmOptions, cache);
    } else {
      const Tensor dH = slice.outputs[1];
      ComputeSet cs = g.addComputeSet({dbg, "grad"});
      addCellVertices(g, cs, util::templateVertex("aspen::nn::GruBwdResetAfter", t), carry,
                      [&](VertexRef v, const std::vector<Interval> &rows) {
                        g.connect(v["fwd"], nn::work::gateSegments(fwd, rows, {0, 1, 2, layout.nSlot()}));
                        g.connect(v["hPrev"], nn::work::rowList(hp, rows));
                        g.connect(v["outGrad"], nn::work::rowList(dy, rows));
                        g.connect(v["dhMM"], nn::work::rowList(mm, rows));
                        g.connect(v["dhCarry"], nn::work::rowList(carry, rows));
                        g.connect(v["deltaX"], nn::work::gateSegments(gatesOf(dX), rows, {0, 1, 2}));
                        g.connect(v["deltaH"], nn::work::gateSegments(gatesOf(dH), rows, {0, 1, 2}));
                        common(v, rows);
                      });
      step.add(Execute(cs));
      linalg::matMulWithOutput(g, dH, woT, mm, step, {dbg, "dhMM"}, mmOptions, cache);
    }
    return step;
  };
  OptionFlags rnnOptions{{"codeReuse", opts.codeReuse ? "true" : "false"}};
  const auto finalState =
      rnn::Rnn(graph, params.rnn, true, {dhCarry, dhMM}, {}, inputs, nullptr, nullptr, outputs,
               {}, prog, body, opts.numShards, rnnOptions, {debug, "loop"});

  const Tensor deltaRows = deltaX.reshape({T * B, 3 * H});
  if (req.inputGrad) {
    const Tensor wiT = canonicalMatrix(graph, params, weights.inputWeights, true, prog,
                                       {debug, "inputWeightsTransposed"});
    Tensor dx = rnn::createInputTensor(graph, params.rnn, opts.numShards, {debug, "inputGrad"});
    linalg::matMulWithOutput(graph, deltaRows, wiT, dx.reshape({T * B, I}), prog,
                             {debug, "inputGrad"}, mmOptions, cache);
    *req.inputGrad = dx;
  }
  if (req.bwdIntermediates) // [T, 3, B, H] in slot order
    *req.bwdIntermediates = slotGates(
        params, deltaX.reshape({T, B, 3, H}).dimShuffle({2, 0, 1, 3})).dimShuffle({1, 0, 2, 3});
  if (req.attentionGrad) {
    Tensor grad = graph.addVariable(t, {B, T}, {debug, "attentionGradient"});
    util::mapTensorLinearly(graph, grad);
    prog.add(Copy(attGradSeq.transpose(), grad));
    *req.attentionGrad = grad;
  }
  if (req.weightsGrad)
    *req.weightsGrad = weightUpdate(graph, params, opts, input, hPrev, fwdIntermediates,
                                    deltaRows,
                                    deltaH.valid() ? deltaH.reshape({T * B, 3 * H}) : Tensor(),
                                    prog, {debug, "wu"}, cache);
  return ops::add(graph, finalState[1], finalState[0], prog, {debug, "initialOutputGrad"});
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
  checkBwd(params, opts, fwdOutputInit, fwdIntermediates, weights, input, output, &outputGrad,
           req, what);
  return backward(graph, params, opts, prog, fwdOutputInit, fwdIntermediates, weights, input,
                  output, outputGrad, req, debug, cache);
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
  const Tensor hPrev = previousOutputs(graph, params, opts, fwdOutputInit, fwdIntermediates,
                                       output, prog, debug);
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
  return weightUpdate(graph, params, opts, input, hPrev, fwdIntermediates, deltaX, deltaH, prog,
                      debug, cache);
}

} // namespace

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
  return gruBwd(graph, detail::withRealTimeSteps(params, realTimeSteps, "gru::gruBwd"), prog,
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
  return auGruBwd(graph, detail::withRealTimeSteps(params, realTimeSteps, "gru::auGruBwd"), prog,
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
                      detail::withRealTimeSteps(params, realTimeSteps, "gru::gruBwdWithWU"),
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
      graph, detail::withRealTimeSteps(params, realTimeSteps, "gru::auGruBwdWithWU"), prog,
      fwdOutputInit, fwdIntermediates, weights, input, output, outputGrad, inputGrad,
      weightsGrad, attention, attentionGrad, debug, options, cache);
}

} // namespace aspen::nn::gru
