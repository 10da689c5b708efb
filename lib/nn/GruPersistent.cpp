// The GRU's (and AUGRU's) persistent forward (see GruInternal.hpp and docs/architecture.md
// "Persistent recurrent kernels"): the input weighed for every step in one product before the
// loop, as the per-step path does, then the whole recurrence as one co-resident launch of
// GruPersistentFwd (codelets/nn/persistent.cpp). Without resetAfter a step exchanges r*h too:
// the candidate's product needs it whole. The intermediates keep the per-step layout.
#include "GruInternal.hpp"

#include <aspen/Error.hpp>
#include <aspen/ops/Fill.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/util/VertexTemplates.hpp>

namespace aspen::nn::gru::detail {

PersistentChoice persistentChoice(const Graph &graph, const GruParams &params,
                                  const GruOptions &opts, const std::string &what,
                                  bool backward) {
  const std::size_t B = params.rnn.batchSize, H = params.rnn.layerSizes[1];
  if (const std::string why = perStepOnly(params); !why.empty()) {
    PersistentChoice none; // parseOptions refuses rnnPersistentKernel true for it
    none.refusal = why + " runs products then cells";
    return none;
  }
  const Type type = params.rnn.dataType;
  const unsigned exchanges = params.resetAfter ? 1 : 2;
  if (backward) // the staged gate gradients: 3H a row with resetAfter, else 2H then H
    return rnn::detail::choosePersistent(
        graph, opts.persistent,
        {params.activation, params.recurrentActivation, type, B, H, 3, 1,
         (params.resetAfter ? 3 : 2) * H, exchanges, B * H * (params.resetAfter ? 3 : 2),
         "delta_(t+1)", [](std::size_t) { return std::size_t(0); },
         params.resetAfter ? 0u : 1u, params.resetAfter ? 0 : H, {12, 4}},
        what);
  const bool two = !params.resetAfter; // h_(t-1) and r*h staged, u kept between them
  return rnn::detail::choosePersistent(
      graph, opts.persistent,
      {params.activation, params.recurrentActivation, type, B, H, 3, 3, H, exchanges,
       B * H * (two ? 2 : 1), two ? "h_(t-1) and r*h" : "h_(t-1)",
       [=](std::size_t units) { return two ? B * units : std::size_t(0); }, two ? 1u : 0u,
       two ? H : 0, {12, 4}},
      what);
}

Tensor persistentForward(Graph &graph, const GruParams &params, const PersistentChoice &choice,
                         const Tensor &stateInit, const GruWeights &weights, const Tensor &xw,
                         const Tensor &bias, const Tensor &attention, const Tensor &outSeq,
                         const Tensor &interSeq, const InterLayout &layout,
                         program::Sequence &prog, const DebugContext &debug) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t H = params.rnn.layerSizes[1];
  const Type type = params.rnn.dataType;
  const Tensor wo =
      canonicalMatrix(graph, params, weights.outputWeights, false, prog, {debug, "outputWeights"});
  auto exchangeOf = [&](const char *name) {
    const Tensor t = graph.addVariable(type, {T, B, H}, {debug, name});
    graph.setTileMapping(t, 0);
    ops::fill(graph, t, prog, -0.0f, {debug, std::string("unpublish") + name});
    return t;
  };
  auto unused = [&](const char *name) {
    const Tensor t = graph.addVariable(type, {1}, {debug, name});
    graph.setTileMapping(t, 0);
    return t;
  };
  const Tensor exchange = exchangeOf("exchange");
  const Tensor rhExchange = params.resetAfter ? unused("noRh") : exchangeOf("rhExchange");
  const Tensor hLast = graph.clone(stateInit, {debug, "output"});
  const Tensor lengths =
      params.rnn.varTimeSteps.valid()
          ? params.rnn.varTimeSteps
          : graph.addConstant(UNSIGNED_INT, {1}, unsigned(T), {debug, "lengths"});
  if (!params.rnn.varTimeSteps.valid())
    graph.setTileMapping(lengths, 0);
  ComputeSet cs = graph.addComputeSet({debug, "persistent"});
  VertexRef v = graph.addVertex(cs, util::templateVertex("aspen::nn::GruPersistentFwd", type));
  graph.setTileMapping(v, 0);
  graph.connect(v["weights"], wo.flatten());
  graph.connect(v["xw"], xw.flatten());
  graph.connect(v["bias"], bias.flatten());
  graph.connect(v["attention"], attention.valid() ? attention.flatten() : unused("noAttention"));
  graph.connect(v["h0"], stateInit.flatten());
  graph.connect(v["lengths"], lengths.flatten());
  graph.connect(v["exchange"], exchange.flatten());
  graph.connect(v["rhExchange"], rhExchange.flatten());
  graph.connect(v["out"], outSeq.valid() ? outSeq.flatten() : unused("noOut"));
  graph.connect(v["inter"], interSeq.valid() ? interSeq.flatten() : unused("noInter"));
  graph.connect(v["hLast"], hLast.flatten());
  graph.setInitialValue(v["H"], unsigned(H));
  graph.setInitialValue(v["B"], unsigned(B));
  graph.setInitialValue(v["steps"], unsigned(T));
  graph.setInitialValue(v["activation"], unsigned(params.activation));
  graph.setInitialValue(v["recurrentActivation"], unsigned(params.recurrentActivation));
  graph.setInitialValue(v["resetAfter"], params.resetAfter);
  graph.setInitialValue(v["hasAttention"], attention.valid());
  graph.setInitialValue(v["hasOut"], outSeq.valid());
  graph.setInitialValue(v["hasInter"], interSeq.valid());
  graph.setInitialValue(v["rawCandidate"], rawCandidate(params));
  graph.setInitialValue(v["saveH"], layout.saveH);
  graph.setInitialValue(v["saveN"], layout.saveN);
  graph.setInitialValue(v["weightsInShared"], choice.weightsInShared);
  graph.setInitialValue(v["tensor"], choice.tensor);
  graph.setInitialValue(v["splits"], choice.splits);
  prog.add(program::Launch(cs, choice.launch, {debug, "persistentLoop"}));
  return outSeq.valid() ? outSeq : hLast;
}

void persistentBackward(Graph &graph, const GruParams &params, const GruOptions &opts,
                        const PersistentChoice &choice, const GruWeights &weights,
                        const Tensor &fwdIntermediates, const Tensor &hPrev,
                        const Tensor &outGrad, const Tensor &attention,
                        const Tensor &attentionGrad, const Tensor &dhCarry, const Tensor &deltaX,
                        const Tensor &deltaH, program::Sequence &prog,
                        const DebugContext &debug) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t H = params.rnn.layerSizes[1];
  const Type type = params.rnn.dataType;
  const InterLayout layout = interLayout(params);
  const Tensor wo =
      canonicalMatrix(graph, params, weights.outputWeights, false, prog, {debug, "outputWeights"});
  // The exchange: deltaH with resetAfter, else deltaX.
  ops::fill(graph, params.resetAfter ? deltaH : deltaX, prog, -0.0f, {debug, "unpublish"});
  auto unused = [&](Type t, const char *name) {
    const Tensor u = graph.addVariable(t, {1}, {debug, name});
    graph.setTileMapping(u, 0);
    return u;
  };
  const Tensor lengths =
      params.rnn.varTimeSteps.valid()
          ? params.rnn.varTimeSteps
          : graph.addConstant(UNSIGNED_INT, {1}, unsigned(T), {debug, "lengths"});
  if (!params.rnn.varTimeSteps.valid())
    graph.setTileMapping(lengths, 0);
  Tensor partial; // each element's d(attention), summed over the units after the launch
  if (attention.valid()) {
    partial = graph.addVariable(FLOAT, {T, B, H}, {debug, "attentionPartials"});
    graph.setTileMapping(partial, 0);
  }
  ComputeSet cs = graph.addComputeSet({debug, "persistent"});
  VertexRef v = graph.addVertex(cs, util::templateVertex("aspen::nn::GruPersistentBwd", type));
  graph.setTileMapping(v, 0);
  graph.connect(v["weights"], wo.flatten());
  graph.connect(v["fwd"], fwdIntermediates.flatten());
  graph.connect(v["hPrev"], hPrev.flatten());
  graph.connect(v["outGrad"], outGrad.valid() ? outGrad.flatten() : unused(type, "noOutGrad"));
  graph.connect(v["attention"],
                attention.valid() ? attention.flatten() : unused(type, "noAttention"));
  graph.connect(v["lengths"], lengths.flatten());
  graph.connect(v["dhCarry"], dhCarry.flatten());
  graph.connect(v["deltaX"], deltaX.flatten());
  graph.connect(v["deltaH"], deltaH.valid() ? deltaH.flatten() : unused(type, "noDeltaH"));
  graph.connect(v["attPartial"], partial.valid() ? partial.flatten() : unused(FLOAT, "noPartial"));
  graph.setInitialValue(v["H"], unsigned(H));
  graph.setInitialValue(v["B"], unsigned(B));
  graph.setInitialValue(v["steps"], unsigned(T));
  graph.setInitialValue(v["numInter"], layout.count());
  graph.setInitialValue(v["nSlot"], layout.nSlot());
  graph.setInitialValue(v["activation"], unsigned(params.activation));
  graph.setInitialValue(v["recurrentActivation"], unsigned(params.recurrentActivation));
  graph.setInitialValue(v["resetAfter"], params.resetAfter);
  graph.setInitialValue(v["hasOutGrad"], outGrad.valid());
  graph.setInitialValue(v["hasAttention"], attention.valid());
  graph.setInitialValue(v["rawCandidate"], rawCandidate(params));
  graph.setInitialValue(v["popnnHardSigmoidGrad"],
                        opts.hardSigmoidGradient == NonLinearityGradient::Popnn);
  graph.setInitialValue(v["weightsInShared"], choice.weightsInShared);
  graph.setInitialValue(v["tensor"], choice.tensor);
  graph.setInitialValue(v["splits"], choice.splits);
  prog.add(program::Launch(cs, choice.launch, {debug, "persistentLoop"}));
  if (attention.valid())
    ops::reduceWithOutput(graph, partial, attentionGrad, {2}, {ops::Operation::ADD}, prog,
                          {debug, "attentionGrad"});
}

} // namespace aspen::nn::gru::detail
