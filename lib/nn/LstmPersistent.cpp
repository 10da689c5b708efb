// The LSTM's persistent forward (see LstmInternal.hpp and docs/architecture.md "Persistent
// recurrent kernels"): the input weighed for every step in one product before the loop, then
// the whole recurrence as one co-resident launch of LstmPersistentFwd (codelets/nn/
// persistent.cpp), whose blocks keep their slice of Wo in shared memory for the whole sequence
// and hand each other h_t through a buffer filled with -0.0 (the write-once sentinel protocol).
// The intermediates keep the per-step layout, so any backward pairs with it.
//
// The choice (option rnnPersistentKernel): false never; true always where the kernel can run,
// else invalid_option naming the limit; auto keeps the per-step path on CPU targets (OpenBLAS's
// products are faster there) and on GPUs takes the kernel where the cost model of
// RnnPersistent.cpp estimates it faster (its constants are still to be measured on a GPU:
// research note persistent-rnn.md, section 7).
#include "LstmInternal.hpp"

#include <aspen/Error.hpp>
#include <aspen/ops/Fill.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace aspen::nn::lstm::detail {

PersistentChoice persistentChoice(const Graph &graph, const LstmParams &params,
                                  const LstmOptions &opts, const std::string &what,
                                  bool backward) {
  if (const std::string why = perStepOnly(params); !why.empty()) {
    PersistentChoice none; // parseOptions refuses rnnPersistentKernel true for it
    none.refusal = why + " runs products then cells";
    return none;
  }
  const std::size_t B = params.rnn.batchSize, H = params.rnn.layerSizes[1];
  // Forward: h_(t-1) staged; backward: delta_(t+1), 4H a row.
  return rnn::detail::choosePersistent(
      graph, opts.persistent,
      {params.activation, params.recurrentActivation, params.rnn.dataType, B, H, 4,
       backward ? 1u : 4u, backward ? 4 * H : H, 1, B * H * (backward ? 4 : 1),
       backward ? "delta_(t+1)" : "h_(t-1)", [](std::size_t) { return std::size_t(0); }},
      what);
}

std::pair<Tensor, Tensor> persistentForward(Graph &graph, const LstmParams &params,
                                            const PersistentChoice &choice,
                                            const LstmState &init, const LstmWeights &weights,
                                            const Tensor &weighted, const Tensor &outSeq,
                                            const Tensor &interSeq, const InterLayout &layout,
                                            program::Sequence &prog, const DebugContext &debug) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t H = params.rnn.layerSizes[1];
  const Type type = params.rnn.dataType;
  // The exchange: h_t as the blocks publish it, -0.0 (unpublished) before every run.
  const Tensor exchange = graph.addVariable(type, {T, B, H}, {debug, "exchange"});
  graph.setTileMapping(exchange, 0);
  ops::fill(graph, exchange, prog, -0.0f, {debug, "unpublish"});
  const Tensor hLast = graph.clone(init.output, {debug, "output"});
  const Tensor cLast = graph.clone(init.cellState, {debug, "cellState"});
  const Tensor lengths =
      params.rnn.varTimeSteps.valid()
          ? params.rnn.varTimeSteps
          : graph.addConstant(UNSIGNED_INT, {1}, unsigned(T), {debug, "lengths"});
  if (!params.rnn.varTimeSteps.valid())
    graph.setTileMapping(lengths, 0);
  // A field the layer does not use is connected to an element of its own it never touches.
  auto unused = [&](const char *name) {
    const Tensor t = graph.addVariable(type, {1}, {debug, name});
    graph.setTileMapping(t, 0);
    return t;
  };

  ComputeSet cs = graph.addComputeSet({debug, "persistent"});
  VertexRef v =
      graph.addVertex(cs, util::templateVertex("aspen::nn::LstmPersistentFwd", type));
  graph.setTileMapping(v, 0);
  graph.connect(v["weights"], asMatrix(weights.outputWeights).flatten());
  graph.connect(v["gatesIn"], weighted.valid() ? weighted.flatten() : unused("noGatesIn"));
  graph.connect(v["bias"], weights.biases.flatten());
  graph.connect(v["h0"], init.output.flatten());
  graph.connect(v["c0"], init.cellState.flatten());
  graph.connect(v["lengths"], lengths.flatten());
  graph.connect(v["exchange"], exchange.flatten());
  graph.connect(v["out"], outSeq.valid() ? outSeq.flatten() : unused("noOut"));
  graph.connect(v["inter"],
                interSeq.valid() && layout.count() > 0 ? interSeq.flatten() : unused("noInter"));
  graph.connect(v["hLast"], hLast.flatten());
  graph.connect(v["cLast"], cLast.flatten());
  graph.setInitialValue(v["H"], unsigned(H));
  graph.setInitialValue(v["B"], unsigned(B));
  graph.setInitialValue(v["steps"], unsigned(T));
  const auto slot = slotsOf(params); // slot[gate]: gates forget, input, candidate, output
  graph.setInitialValue(v["slotF"], slot[0]);
  graph.setInitialValue(v["slotI"], slot[1]);
  graph.setInitialValue(v["slotG"], slot[2]);
  graph.setInitialValue(v["slotO"], slot[3]);
  graph.setInitialValue(v["activation"], unsigned(params.activation));
  graph.setInitialValue(v["recurrentActivation"], unsigned(params.recurrentActivation));
  const bool saving = interSeq.valid() && layout.count() > 0;
  graph.setInitialValue(v["saveMode"], saving ? layout.saveMode : 0u);
  graph.setInitialValue(v["saveH"], saving && layout.saveH);
  setRawAndClip(graph, v, params);
  graph.setInitialValue(v["hasGatesIn"], weighted.valid());
  graph.setInitialValue(v["hasOut"], outSeq.valid());
  graph.setInitialValue(v["weightsInShared"], choice.weightsInShared);
  graph.setInitialValue(v["tensor"], choice.tensor);
  graph.setInitialValue(v["splits"], choice.splits);
  prog.add(program::Launch(cs, choice.launch, {debug, "persistentLoop"}));
  return {outSeq.valid() ? outSeq : hLast, cLast};
}

void persistentBackward(Graph &graph, const LstmParams &params, const PersistentChoice &choice,
                        const LstmWeights &weights, const Tensor &gates, const Tensor &cellSeq,
                        const Tensor &outGrad, bool rawCell, bool popnnHardSigmoidGrad,
                        const Tensor &dhCarry, const Tensor &dc, const Tensor &deltaRows,
                        program::Sequence &prog, const DebugContext &debug) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t H = params.rnn.layerSizes[1];
  const Type type = params.rnn.dataType;
  ops::fill(graph, deltaRows, prog, -0.0f, {debug, "unpublish"});
  const Tensor lengths =
      params.rnn.varTimeSteps.valid()
          ? params.rnn.varTimeSteps
          : graph.addConstant(UNSIGNED_INT, {1}, unsigned(T), {debug, "lengths"});
  if (!params.rnn.varTimeSteps.valid())
    graph.setTileMapping(lengths, 0);
  ComputeSet cs = graph.addComputeSet({debug, "persistent"});
  VertexRef v =
      graph.addVertex(cs, util::templateVertex("aspen::nn::LstmPersistentBwd", type));
  graph.setTileMapping(v, 0);
  graph.connect(v["weights"], asMatrix(weights.outputWeights).flatten());
  graph.connect(v["fwd"], gates.flatten());
  graph.connect(v["cell"], cellSeq.flatten());
  if (outGrad.valid()) {
    graph.connect(v["outGrad"], outGrad.flatten());
  } else {
    const Tensor none = graph.addVariable(type, {1}, {debug, "noOutGrad"});
    graph.setTileMapping(none, 0);
    graph.connect(v["outGrad"], none);
  }
  graph.connect(v["lengths"], lengths.flatten());
  graph.connect(v["dhCarry"], dhCarry.flatten());
  graph.connect(v["dcState"], dc.flatten());
  graph.connect(v["delta"], deltaRows.flatten());
  graph.setInitialValue(v["H"], unsigned(H));
  graph.setInitialValue(v["B"], unsigned(B));
  graph.setInitialValue(v["steps"], unsigned(T));
  const auto slot = slotsOf(params);
  graph.setInitialValue(v["slotF"], slot[0]);
  graph.setInitialValue(v["slotI"], slot[1]);
  graph.setInitialValue(v["slotG"], slot[2]);
  graph.setInitialValue(v["slotO"], slot[3]);
  graph.setInitialValue(v["activation"], unsigned(params.activation));
  graph.setInitialValue(v["recurrentActivation"], unsigned(params.recurrentActivation));
  graph.setInitialValue(v["rawCell"], rawCell);
  setRawAndClip(graph, v, params);
  graph.setInitialValue(v["hasOutGrad"], outGrad.valid());
  graph.setInitialValue(v["popnnHardSigmoidGrad"], popnnHardSigmoidGrad);
  graph.setInitialValue(v["weightsInShared"], choice.weightsInShared);
  graph.setInitialValue(v["tensor"], choice.tensor);
  graph.setInitialValue(v["splits"], choice.splits);
  prog.add(program::Launch(cs, choice.launch, {debug, "persistentLoop"}));
}

} // namespace aspen::nn::lstm::detail
