// The LSTM's fused forward loop (see LstmInternal.hpp and docs/architecture.md): the recurrent
// weights packed once (program::Cached) into panels of 4 units x 4 gates, then each step one compute set of
// LstmFusedFwd vertices that multiply h_{t-1} by their panels, finish the cell in registers and
// read and write the step's place in the sequences themselves, beside the vertex that advances
// the step's clock: one hand-off between the pool's threads a step and nothing else.
#include "LstmInternal.hpp"

#include "NnWork.hpp"

#include <aspen/Error.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace aspen::nn::lstm::detail {

namespace {

constexpr unsigned kPanelUnits = 4;   // units of a packed panel (codelets/nn/PackedProduct.hpp)
constexpr unsigned kPanelColumns = 16; // its columns: 4 gates x 4 units

// The rows of the weights a fused step multiplies by: I + H when it weighs its input (x_t and
// h_{t-1} in one product), else H.
std::size_t productRows(const LstmParams &params, const LstmOptions &opts) {
  const bool weighsInput = params.doInputWeightCalc && !opts.preCalcWeights;
  return (weighsInput ? params.rnn.layerSizes[0] : 0) + params.rnn.layerSizes[1];
}

// The packed weights: 4 H K floats, panels rounded up.
std::size_t packedBytes(const LstmParams &params, const LstmOptions &opts) {
  const std::size_t H = params.rnn.layerSizes[1];
  return (H + kPanelUnits - 1) / kPanelUnits * productRows(params, opts) * kPanelColumns *
         sizeof(float);
}

void setSlots(Graph &graph, VertexRef v, const LstmParams &params) {
  const auto slot = slotsOf(params); // slot[gate]: gates forget, input, candidate, output
  graph.setInitialValue(v["slotF"], slot[0]);
  graph.setInitialValue(v["slotI"], slot[1]);
  graph.setInitialValue(v["slotG"], slot[2]);
  graph.setInitialValue(v["slotO"], slot[3]);
}

} // namespace

bool usesFusedStep(const Graph &graph, const LstmParams &params, const LstmOptions &opts,
                   const std::string &what) {
  if (!perStepOnly(params).empty()) // parseOptions refuses stepMethod fused for it
    return false;
  return rnn::detail::chooseFusedStep(
      graph, opts.stepMethod, params.activation, params.recurrentActivation, what, [&] {
        return rnn::detail::fusedStepPays(params.rnn, 4, opts.inferenceOnly) &&
               rnn::detail::fusedWeightsFit(graph.getTarget(), params.rnn.layerSizes[1],
                                            kPanelUnits, packedBytes(params, opts));
      });
}

std::vector<FusedBlock> packFusedWeights(Graph &graph, const LstmParams &params,
                                         const LstmOptions &opts, const LstmWeights &weights,
                                         program::Sequence &prog, const DebugContext &debug) {
  const unsigned H = static_cast<unsigned>(params.rnn.layerSizes[1]);
  const std::string type = util::templateVertex("aspen::nn::PackLstmWeights", params.dataType);
  ComputeSet cs = graph.addComputeSet({debug, "packWeights"});
  // One edge a row of Wi and Wo as matrices ([I, 4H], [H, 4H]): contiguous in the weights
  // createWeights makes, so the vertices read them in place (a whole non-contiguous view would
  // be gathered).
  const std::size_t K = productRows(params, opts);
  std::vector<Tensor> rows;
  auto addRows = [&](const Tensor &w) {
    const Tensor matrix = asMatrix(w);
    for (std::size_t k = 0; k < matrix.dim(0); ++k)
      rows.push_back(matrix[k]);
  };
  if (K > H)
    addRows(weights.inputWeights);
  addRows(weights.outputWeights);
  std::vector<FusedBlock> blocks;
  for (const rnn::detail::FusedUnitBlock &unitBlock : rnn::detail::fusedUnitBlocks(
           graph.getTarget(), H, kPanelUnits, packedBytes(params, opts))) {
    FusedBlock block;
    block.firstUnit = unitBlock.firstUnit;
    block.numUnits = unitBlock.numUnits;
    block.tile = unitBlock.tile;
    const std::size_t panels = (block.numUnits + kPanelUnits - 1) / kPanelUnits;
    block.packed = graph.addVariable(FLOAT, {panels * K * kPanelColumns},
                                     {debug, fmt::format("packedWeights{}", blocks.size())});
    graph.setTileMapping(block.packed, block.tile);
    VertexRef v = graph.addVertex(cs, type);
    graph.connect(v["weights"], rows);
    graph.connect(v["packed"], block.packed);
    graph.setTileMapping(v, block.tile);
    graph.setInitialValue(v["H"], H);
    graph.setInitialValue(v["K"], static_cast<unsigned>(K));
    graph.setInitialValue(v["firstUnit"], block.firstUnit);
    graph.setInitialValue(v["numUnits"], block.numUnits);
    setSlots(graph, v, params);
    blocks.push_back(std::move(block));
  }
  // Packed once: later runs skip the pack until the weights are written (program::Cached).
  prog.add(program::Cached(program::Execute(cs), {debug, "packWeights"}));
  return blocks;
}

namespace {

// The vertices of one step of `shard` at parity p: h_{t-1} from hBuf[p], h_t to hBuf[1 - p].
void addFusedStep(Graph &graph, const LstmParams &params, ComputeSet cs,
                  const std::vector<FusedBlock> &blocks, const rnn::detail::FusedClock &clock,
                  const rnn::detail::FusedShard &shard, const FusedSequences &seqs, unsigned p,
                  const Tensor &hBuf, const Tensor &bias, const Tensor &cState,
                  const InterLayout &layout) {
  const unsigned H = static_cast<unsigned>(params.rnn.layerSizes[1]);
  const std::size_t B = params.rnn.batchSize;
  const std::string type = util::templateVertex("aspen::nn::LstmFusedFwd", params.dataType);
  const Tensor hPrev = hBuf[p].flatten();
  const bool saving = layout.count() > 0 && seqs.inter.valid();
  for (const FusedBlock &block : blocks) {
    auto units = [&](const Tensor &row) {
      return row.slice(block.firstUnit, block.firstUnit + block.numUnits);
    };
    VertexRef v = graph.addVertex(cs, type);
    graph.setTileMapping(v, block.tile);
    graph.connect(v["time"], clock.time.slice(p, p + 1));
    graph.connect(v["lengths"], clock.lengths);
    graph.connect(v["hPrev"], hPrev);
    graph.connect(v["x"], seqs.x.valid() ? seqs.x.flatten() : hPrev.slice(0, 1));
    graph.connect(v["packed"], block.packed);
    // An unused x or gatesIn is connected to h's first element: never read.
    graph.connect(v["gatesIn"], seqs.gatesIn.valid() ? seqs.gatesIn.flatten() : hPrev.slice(0, 1));
    graph.connect(v["bias"], bias.flatten());
    std::vector<Tensor> c, h, out, inter;
    for (std::size_t r = 0; r < B; ++r) {
      c.push_back(units(cState[r]));
      h.push_back(units(hBuf[1 - p][r]));
    }
    for (unsigned i = 0; i < shard.steps; ++i)
      for (std::size_t r = 0; r < B; ++r) {
        if (seqs.out.valid())
          out.push_back(units(seqs.out[i][r]));
        for (unsigned s = 0; saving && s < layout.count(); ++s)
          inter.push_back(units(seqs.inter[i][s][r]));
      }
    graph.connect(v["cState"], c);
    graph.connect(v["hState"], h);
    graph.connect(v["out"], out);
    graph.connect(v["inter"], inter);
    graph.setInitialValue(v["H"], H);
    graph.setInitialValue(v["inputSize"],
                          seqs.x.valid() ? static_cast<unsigned>(seqs.x.dim(2)) : 0u);
    graph.setInitialValue(v["firstUnit"], block.firstUnit);
    graph.setInitialValue(v["begin"], shard.begin);
    graph.setInitialValue(v["steps"], shard.steps);
    setSlots(graph, v, params);
    graph.setInitialValue(v["activation"], static_cast<unsigned>(params.activation));
    graph.setInitialValue(v["recurrentActivation"],
                          static_cast<unsigned>(params.recurrentActivation));
    graph.setInitialValue(v["saveMode"], saving ? layout.saveMode : 0u);
    graph.setInitialValue(v["saveH"], saving && layout.saveH);
    setRawAndClip(graph, v, params);
    graph.setInitialValue(v["hasGatesIn"], seqs.gatesIn.valid());
  }
}

} // namespace

void FusedForwardLane::addStep(Graph &graph, ComputeSet cs, const rnn::detail::FusedClock &clock,
                               unsigned p) const {
  const rnn::detail::FusedShard whole{0, static_cast<unsigned>(params.rnn.maxTimeSteps)};
  addFusedStep(graph, params, cs, blocks, clock, whole, seqs, p, hBuf, bias, cState, layout);
}

FusedForwardLane prepareFusedForward(Graph &graph, const LstmParams &params,
                                     const LstmOptions &opts, const LstmState &init,
                                     const LstmWeights &weights, const Tensor &input,
                                     const Tensor &weighted, const Tensor &outSeq,
                                     const Tensor &interSeq, const InterLayout &layout,
                                     program::Sequence &prog, const DebugContext &debug) {
  using program::Copy;
  const std::size_t B = params.rnn.batchSize, H = params.rnn.layerSizes[1];
  FusedForwardLane lane(params);
  lane.blocks = packFusedWeights(graph, params, opts, weights, prog, {debug, "fused"});
  if (input.valid())
    lane.seqs.x = rnn::detail::contiguousOrCopy(graph, input, prog, {debug, "input"});
  lane.seqs.gatesIn = weighted;
  lane.seqs.out = outSeq;
  lane.seqs.inter = interSeq;
  // h_t in hBuf[t % 2]; c updated in place.
  lane.hBuf =
      rnn::detail::addStep(graph, params.dataType, 2 * B, H, {debug, "h"}).reshape({2, B, H});
  lane.cState = graph.clone(init.cellState, {debug, "cellState"});
  lane.bias = weights.biases;
  lane.layout = layout;
  prog.add(Copy(init.output, lane.hBuf[0]));
  prog.add(Copy(init.cellState, lane.cState));
  return lane;
}

std::pair<Tensor, Tensor> fusedForward(Graph &graph, const LstmParams &params,
                                       const LstmOptions &opts, const LstmState &init,
                                       const LstmWeights &weights, const Tensor &input,
                                       const Tensor &weighted, const Tensor &outSeq,
                                       const Tensor &interSeq, const InterLayout &layout,
                                       program::Sequence &prog, const DebugContext &debug) {
  const std::size_t T = params.rnn.maxTimeSteps;
  const FusedForwardLane lane = prepareFusedForward(graph, params, opts, init, weights, input,
                                                    weighted, outSeq, interSeq, layout, prog,
                                                    debug);
  auto step = [&](const rnn::detail::FusedClock &clock, const rnn::detail::FusedShard &shard,
                  unsigned p) {
    const std::size_t b = shard.begin, e = b + shard.steps;
    auto part = [&](const Tensor &t) { return t.valid() ? t.slice(b, e, 0) : t; };
    const FusedSequences seqs{part(lane.seqs.x), part(lane.seqs.gatesIn), part(lane.seqs.out),
                              part(lane.seqs.inter)};
    ComputeSet cs =
        graph.addComputeSet({debug, fmt::format("step{}{}", b, p ? "Odd" : "Even")});
    addFusedStep(graph, params, cs, lane.blocks, clock, shard, seqs, p, lane.hBuf, lane.bias,
                 lane.cState, layout);
    rnn::detail::addClockVertex(graph, cs, clock, p);
    return program::Sequence{program::Execute(cs)};
  };
  rnn::detail::fusedLoop(graph, params.rnn, opts.numShards, step, prog, {debug, "loop"});
  if (outSeq.valid())
    return {outSeq, lane.cState};
  const Tensor h = graph.clone(init.output, {debug, "output"});
  prog.add(program::Copy(lane.hBuf[T % 2], h));
  return {h, lane.cState};
}

void fusedBackward(Graph &graph, const LstmParams &params, const LstmOptions &opts,
                   const Tensor &wT, const Tensor &gates, const Tensor &cellSeq,
                   const Tensor &outGrad, bool rawCell, const Tensor &dhCarry, const Tensor &dc,
                   const Tensor &deltaRows, program::Sequence &prog, const DebugContext &debug) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t H = params.rnn.layerSizes[1];
  std::vector<Tensor> rows; // row k of Wo^T: gate column k of Wo, over the units
  for (std::size_t k = 0; k < 4 * H; ++k)
    rows.push_back(wT[k]);
  const auto blocks =
      rnn::detail::packUnitPanels(graph, params.dataType, rows, 4 * H, 1, H, prog, debug);
  const auto slot = slotsOf(params);
  // Read whole by every vertex (row t + 1 of it a step) while they write row t: the loop's own
  // contiguous sequence, so read in place.
  const Tensor deltaAll = deltaRows.flatten();
  const std::string type = util::templateVertex("aspen::nn::LstmFusedBwd", params.dataType);
  auto step = [&](const rnn::detail::FusedClock &clock, const rnn::detail::FusedShard &,
                  unsigned p) {
    ComputeSet cs = graph.addComputeSet({debug, p ? "oddStep" : "evenStep"});
    for (const auto &block : blocks) {
      const std::size_t u0 = block.units.firstUnit, u1 = u0 + block.units.numUnits;
      std::vector<Tensor> fwd, cell, dy, carry, dcs, delta;
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t r = 0; r < B; ++r) {
          for (unsigned g = 0; g < 4; ++g) {
            fwd.push_back(gates[t][g][r].slice(u0, u1));
            delta.push_back(deltaRows[t][r].slice(slot[g] * H + u0, slot[g] * H + u1));
          }
          for (unsigned c = 0; c < 2; ++c)
            cell.push_back(cellSeq[t][c][r].slice(u0, u1));
          if (outGrad.valid())
            dy.push_back(outGrad[t][r].slice(u0, u1));
        }
      for (std::size_t r = 0; r < B; ++r) {
        carry.push_back(dhCarry[r].slice(u0, u1));
        dcs.push_back(dc[r].slice(u0, u1));
      }
      VertexRef v = graph.addVertex(cs, type);
      graph.setTileMapping(v, block.units.tile);
      graph.connect(v["time"], clock.time.slice(p, p + 1));
      graph.connect(v["lengths"], clock.lengths);
      graph.connect(v["deltaAll"], deltaAll);
      graph.connect(v["packed"], block.packed);
      graph.connect(v["fwd"], fwd);
      graph.connect(v["cell"], cell);
      graph.connect(v["outGrad"], dy);
      graph.connect(v["dhCarry"], carry);
      graph.connect(v["dcState"], dcs);
      graph.connect(v["delta"], delta);
      graph.setInitialValue(v["H"], static_cast<unsigned>(H));
      graph.setInitialValue(v["numUnits"], block.units.numUnits);
      graph.setInitialValue(v["steps"], static_cast<unsigned>(T));
      graph.setInitialValue(v["activation"], static_cast<unsigned>(params.activation));
      graph.setInitialValue(v["recurrentActivation"],
                            static_cast<unsigned>(params.recurrentActivation));
      graph.setInitialValue(v["rawCell"], rawCell);
      setRawAndClip(graph, v, params);
      graph.setInitialValue(v["hasOutGrad"], outGrad.valid());
      graph.setInitialValue(v["popnnHardSigmoidGrad"],
                            opts.hardSigmoidGradient == NonLinearityGradient::Popnn);
    }
    rnn::detail::addClockVertex(graph, cs, clock, p);
    return program::Sequence{program::Execute(cs)};
  };
  rnn::detail::fusedLoop(graph, params.rnn, 1, step, prog, {debug, "loop"});
}

} // namespace aspen::nn::lstm::detail
