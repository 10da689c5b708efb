// The LSTM's persistent forward (see LstmInternal.hpp and docs/architecture.md "Persistent
// recurrent kernels"): the input weighed for every step in one product before the loop, then
// the whole recurrence as one co-resident launch of LstmPersistentFwd (codelets/nn/
// persistent.cpp), whose blocks keep their slice of Wo in shared memory for the whole sequence
// and hand each other h_t through a buffer filled with -0.0 (the write-once sentinel protocol).
// The intermediates keep the per-step layout, so any backward pairs with it.
//
// The choice (option rnnPersistentKernel): false never; true always where the kernel can run,
// else invalid_option naming the limit; auto keeps the per-step path for now: on CPU targets
// OpenBLAS's products are faster, and on GPUs the cost model's constants (grid sync, exchange
// bandwidth) are still to be measured (research note persistent-rnn.md, section 7).
#include "LstmInternal.hpp"

#include <aspen/Error.hpp>
#include <aspen/ops/Fill.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace aspen::nn::lstm::detail {

namespace {

// Non-GPU targets run a launch as fibers of the host: a few blocks of one warp's width.
constexpr unsigned kHostBlocks = 4, kHostThreads = 32;
constexpr unsigned kGpuThreads = 256; // LstmPersistentFwd's maxThreadsPerBlock
constexpr std::size_t kHostSharedBytes = 232448; // Verify.cpp's limit for targets not GPUs

std::size_t sharedLimit(const Target &target) {
  return target.isGpu() ? target.getGpuProperties().sharedMemoryPerBlockOptin : kHostSharedBytes;
}

} // namespace

PersistentChoice persistentChoice(const Graph &graph, const LstmParams &params,
                                  const LstmOptions &opts, const std::string &what,
                                  bool backward) {
  using Mode = rnn::detail::PersistentOptions::Mode;
  PersistentChoice choice;
  const Target &target = graph.getTarget();
  const std::size_t B = params.rnn.batchSize, H = params.rnn.layerSizes[1];
  if (opts.persistent.mode == Mode::Off) {
    choice.launch.blocks = 0;
    choice.refusal = "rnnPersistentKernel is false";
    return choice;
  }
  // What the kernel cannot do, whatever the mode.
  std::string cannot;
  if (!rnn::detail::elementWise(params.activation) ||
      !rnn::detail::elementWise(params.recurrentActivation))
    cannot = "the activations must be element-wise (a softmax reduces over H units that "
             "several blocks own)";
  const unsigned blocks =
      opts.persistent.blocks != 0
          ? opts.persistent.blocks
          : unsigned(std::min<std::size_t>(
                H, target.isGpu() ? target.getGpuProperties().multiProcessorCount : kHostBlocks));
  const unsigned threads = opts.persistent.threadsPerBlock != 0 ? opts.persistent.threadsPerBlock
                           : target.isGpu()                    ? kGpuThreads
                                                               : kHostThreads;
  const std::size_t units = (H + blocks - 1) / std::max(1u, blocks);
  // The vector every block stages a step: h_(t-1) forward, delta_(t+1) (4H a row) backward.
  const std::size_t stageBytes = B * H * (backward ? 4 : 1) * sizeof(float);
  const char *staged = backward ? "delta_(t+1)" : "h_(t-1)";
  const std::size_t weightBytes = 4 * units * H * sizeof(float);
  const std::size_t limit = sharedLimit(target);
  if (cannot.empty() && stageBytes > limit)
    cannot = fmt::format("{}, staged whole in every block ({} rows x {} of float, {} bytes), "
                         "exceeds the {} bytes of shared memory a block of target '{}' has",
                         staged, B, (backward ? 4 : 1) * H, stageBytes, limit, target.getName());
  if (cannot.empty() && target.isGpu() && stageBytes + weightBytes > limit)
    cannot = fmt::format("the weights of a block ({} units x 4 gates x {} as float, {} bytes) "
                         "and the staged {} ({} bytes) exceed the {} bytes of shared memory "
                         "a block of target '{}' has: the weights do not fit on chip",
                         units, H, weightBytes, staged, stageBytes, limit, target.getName());
  if (cannot.empty()) { // the launch it takes (or would take, under auto)
    choice.weightsInShared = stageBytes + weightBytes <= limit;
    choice.launch.blocks = blocks;
    choice.launch.threadsPerBlock = threads;
    choice.launch.sharedBytes = stageBytes + (choice.weightsInShared ? weightBytes : 0);
    choice.launch.coResident = true;
  } else {
    choice.launch.blocks = 0;
  }
  if (opts.persistent.mode == Mode::Auto) {
    choice.refusal = !cannot.empty() ? cannot
                     : target.isGpu()
                         ? "auto keeps the per-step path until the persistent kernel's cost "
                           "model is calibrated on a GPU"
                         : "auto keeps the per-step path on targets that are not GPUs (the "
                           "library products are faster there)";
    return choice;
  }
  if (!cannot.empty())
    throw invalid_option(fmt::format("{}: rnnPersistentKernel is true, but {}", what, cannot));
  choice.use = true;
  return choice;
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
  graph.setInitialValue(v["rawCandidate"], rawCandidate(params));
  graph.setInitialValue(v["hasGatesIn"], weighted.valid());
  graph.setInitialValue(v["hasOut"], outSeq.valid());
  graph.setInitialValue(v["weightsInShared"], choice.weightsInShared);
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
  graph.setInitialValue(v["rawCandidate"], rawCandidate(params));
  graph.setInitialValue(v["hasOutGrad"], outGrad.valid());
  graph.setInitialValue(v["popnnHardSigmoidGrad"], popnnHardSigmoidGrad);
  graph.setInitialValue(v["weightsInShared"], choice.weightsInShared);
  prog.add(program::Launch(cs, choice.launch, {debug, "persistentLoop"}));
}

} // namespace aspen::nn::lstm::detail
