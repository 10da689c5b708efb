// The GRU's fused forward loop (see GruInternal.hpp and docs/architecture.md): the recurrent
// weights packed once (program::Cached) into panels of 16 units of one gate, then each step one compute set
// of GruFusedFwd vertices (resetAfter true) or two (resetAfter false: the candidate's product
// needs r*h of every unit, so the gates and the candidate are a compute set each) that multiply
// by their panels, finish the cell in registers and read and write the step's place in the
// sequences themselves, beside the vertex that advances the step's clock.
#include "GruInternal.hpp"

#include <aspen/Error.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

namespace aspen::nn::gru::detail {

namespace {

using rnn::detail::kUnitPanelUnits;
using FusedBlock = rnn::detail::PackedUnitBlock;

// Wo's rows in canonical gate order, read in place from the public weights.
std::vector<FusedBlock> packWeights(Graph &graph, const GruParams &params,
                                    const Tensor &outputWeights, program::Sequence &prog,
                                    const DebugContext &debug) {
  const std::size_t H = params.rnn.layerSizes[1];
  const Tensor canon = canonicalGates(params, outputWeights); // [3, H, H], canonical gates
  std::vector<Tensor> rows; // row g * H + k: Wo_g's row k
  for (unsigned g = 0; g < 3; ++g)
    for (std::size_t k = 0; k < H; ++k)
      rows.push_back(canon[g][k]);
  return rnn::detail::packUnitPanels(graph, params.dataType, rows, H, 3, H, prog, debug);
}

// One phase (GruFusedFwd's) of one step of `shard` at parity p, a vertex a block, in cs.
void addPhase(Graph &graph, const GruParams &params, ComputeSet cs, unsigned phase,
              const std::vector<FusedBlock> &blocks, const rnn::detail::FusedClock &clock,
              const rnn::detail::FusedShard &shard, unsigned p, const FusedLoopTensors &l,
              const InterLayout &layout) {
  const std::size_t B = params.rnn.batchSize, H = params.rnn.layerSizes[1];
  const std::size_t b = shard.begin, e = b + shard.steps;
  const std::string type = util::templateVertex("aspen::nn::GruFusedFwd", params.dataType);
  const Tensor hPrev = l.hBuf[p].flatten();
  const Tensor unused = hPrev.slice(0, 1); // fields a phase never reads
  const Tensor xw = l.xw.slice(b, e, 0).flatten();
  const Tensor out = l.out.valid() && phase != 1 ? l.out.slice(b, e, 0) : Tensor();
  const Tensor inter = l.interPerStep ? l.inter.slice(b, e, 0) : l.inter;
  for (const FusedBlock &block : blocks) {
    auto units = [&](const Tensor &row) {
      return row.slice(block.units.firstUnit, block.units.firstUnit + block.units.numUnits);
    };
    VertexRef v = graph.addVertex(cs, type);
    graph.setTileMapping(v, block.units.tile);
    graph.connect(v["time"], clock.time.slice(p, p + 1));
    graph.connect(v["lengths"], clock.lengths);
    graph.connect(v["hPrev"], hPrev);
    graph.connect(v["rhAll"], phase == 2 ? l.rh.flatten() : unused);
    graph.connect(v["packed"], block.packed);
    graph.connect(v["xw"], xw);
    graph.connect(v["attention"],
                  l.attention.valid() ? l.attention.slice(b, e, 0).flatten() : unused);
    graph.connect(v["bias"], l.bias);
    std::vector<Tensor> h, rh, outs, inters;
    for (std::size_t r = 0; r < B; ++r) {
      if (phase == 1)
        rh.push_back(units(l.rh[r]));
      else
        h.push_back(units(l.hBuf[1 - p][r]));
    }
    for (std::size_t i = 0; out.valid() && i < shard.steps; ++i)
      for (std::size_t r = 0; r < B; ++r)
        outs.push_back(units(out[i][r]));
    for (std::size_t i = 0; i < inter.dim(0); ++i)
      for (std::size_t r = 0; r < B; ++r)
        for (unsigned s = 0; s < layout.count(); ++s)
          inters.push_back(units(inter[i][s][r]));
    graph.connect(v["hState"], h);
    graph.connect(v["rh"], rh);
    graph.connect(v["out"], outs);
    graph.connect(v["inter"], inters);
    graph.setInitialValue(v["H"], static_cast<unsigned>(H));
    graph.setInitialValue(v["firstUnit"], block.units.firstUnit);
    graph.setInitialValue(v["numUnits"], block.units.numUnits);
    graph.setInitialValue(v["begin"], shard.begin);
    graph.setInitialValue(v["steps"], shard.steps);
    graph.setInitialValue(v["rows"], static_cast<unsigned>(B));
    graph.setInitialValue(v["phase"], phase);
    graph.setInitialValue(v["activation"], static_cast<unsigned>(params.activation));
    graph.setInitialValue(v["recurrentActivation"],
                          static_cast<unsigned>(params.recurrentActivation));
    graph.setInitialValue(v["hasAttention"], l.attention.valid());
    graph.setInitialValue(v["rawCandidate"], rawCandidate(params));
    graph.setInitialValue(v["saveH"], layout.saveH);
    graph.setInitialValue(v["saveN"], layout.saveN);
    graph.setInitialValue(v["interPerStep"], l.interPerStep);
  }
}

} // namespace

bool usesFusedStep(const Graph &graph, const GruParams &params, const GruOptions &opts,
                   const std::string &what) {
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  if (!perStepOnly(params).empty()) // parseOptions refuses stepMethod fused for it
    return false;
  // Wo packed, and Wi too when the steps weigh their input.
  const std::size_t packed = rnn::detail::unitPanelBytes(H, 3, H) +
                             (opts.preCalcWeights ? 0 : rnn::detail::unitPanelBytes(I, 3, H));
  return rnn::detail::chooseFusedStep(
      graph, opts.stepMethod, params.activation, params.recurrentActivation, what, [&] {
        return rnn::detail::fusedStepPays(params.rnn, 3, opts.inferenceOnly) &&
               rnn::detail::fusedWeightsFit(graph.getTarget(), H, kUnitPanelUnits, packed);
      });
}

bool weighsInStep(const Graph &graph, const GruParams &params, const GruOptions &opts) {
  return !opts.preCalcWeights && opts.numShards == 1 &&
         usesFusedStep(graph, params, opts, "gru") &&
         !persistentChoice(graph, params, opts, "gru").use;
}

GruFusedLane prepareFusedForward(Graph &graph, const GruParams &params, const GruOptions &opts,
                                 const Tensor &stateInit, const GruWeights &weights,
                                 const Tensor &xw, const Tensor &bias, const Tensor &attention,
                                 const Tensor &outSeq, const Tensor &interSeq,
                                 const InterLayout &layout, program::Sequence &prog,
                                 const DebugContext &debug, const Tensor &stepInput) {
  using program::Copy;
  const std::size_t B = params.rnn.batchSize, H = params.rnn.layerSizes[1];
  const Type type = params.rnn.dataType;
  GruFusedLane lane(params);
  lane.blocks = packWeights(graph, params, weights.outputWeights, prog, {debug, "fused"});
  if (stepInput.valid()) { // Wi's rows in canonical gate order, read in place
    const std::size_t I = params.rnn.layerSizes[0];
    const Tensor canon = canonicalGates(params, weights.inputWeights); // [3, I, H]
    std::vector<Tensor> rows;
    for (unsigned g = 0; g < 3; ++g)
      for (std::size_t k = 0; k < I; ++k)
        rows.push_back(canon[g][k]);
    lane.inputBlocks = rnn::detail::packUnitPanels(graph, params.dataType, rows, I, 3, H, prog,
                                                   {debug, "fusedInput"});
    lane.stepInput =
        rnn::detail::contiguousOrCopy(graph, stepInput, prog, {debug, "stepInput"});
  }
  lane.layout = layout;
  FusedLoopTensors &l = lane.tensors;
  l.xw = xw;
  l.attention = attention;
  // The biases copied once a run where every vertex reads them in place (the resetAfter form
  // is a view of two slices).
  l.bias = graph.addVariable(type, {bias.numElements()}, {debug, "biases"});
  graph.setTileMapping(l.bias, 0);
  prog.add(Copy(bias.flatten(), l.bias));
  l.hBuf = rnn::detail::addStep(graph, type, 2 * B, H, {debug, "h"}).reshape({2, B, H});
  prog.add(Copy(stateInit, l.hBuf[0]));
  if (!params.resetAfter)
    l.rh = rnn::detail::addStep(graph, type, B, H, {debug, "rh"});
  l.out = outSeq;
  l.interPerStep = interSeq.valid();
  l.inter = interSeq.valid()
                ? interSeq
                : rnn::detail::addStep(graph, type, layout.count() * B, H, {debug, "scratch"})
                      .reshape({1, layout.count(), B, H});
  return lane;
}

void GruFusedLane::addStep(Graph &graph, ComputeSet cs, unsigned phase,
                           const rnn::detail::FusedClock &clock,
                           const rnn::detail::FusedShard &shard, unsigned p) const {
  if (stepInput.valid()) {
    if (phase == 0) {
      addInputProduct(graph, cs, clock, shard, p);
      return;
    }
    --phase;
  }
  // resetAfter: one phase (0); else the gates (1), then the candidate and the state (2).
  addPhase(graph, params, cs, params.resetAfter ? 0 : phase + 1, blocks, clock, shard, p,
           tensors, layout);
}

void GruFusedLane::addInputProduct(Graph &graph, ComputeSet cs,
                                   const rnn::detail::FusedClock &clock,
                                   const rnn::detail::FusedShard &shard, unsigned p) const {
  const std::size_t B = params.rnn.batchSize, H = params.rnn.layerSizes[1];
  const std::size_t I = params.rnn.layerSizes[0];
  if (shard.begin != 0 || shard.steps != params.rnn.maxTimeSteps)
    throw error("gru: internal: a step that weighs its input takes the whole sequence (one "
                "shard)");
  rnn::detail::addStepProduct(graph, cs, inputBlocks, clock, p,
                              stepInput.reshape({params.rnn.maxTimeSteps, B, I}), tensors.xw, H,
                              3);
}

Tensor fusedForward(Graph &graph, const GruParams &params, const GruOptions &opts,
                    const Tensor &stateInit, const GruWeights &weights, const Tensor &xw,
                    const Tensor &bias, const Tensor &attention, const Tensor &outSeq,
                    const Tensor &interSeq, const InterLayout &layout, program::Sequence &prog,
                    const DebugContext &debug, const Tensor &stepInput) {
  const std::size_t T = params.rnn.maxTimeSteps;
  const GruFusedLane lane = prepareFusedForward(graph, params, opts, stateInit, weights, xw,
                                                bias, attention, outSeq, interSeq, layout, prog,
                                                debug, stepInput);
  auto step = [&](const rnn::detail::FusedClock &clock, const rnn::detail::FusedShard &shard,
                  unsigned p) {
    const std::string at = fmt::format("step{}{}", shard.begin, p ? "Odd" : "Even");
    program::Sequence s;
    for (unsigned k = 0; k < lane.phases(); ++k) {
      // The input product first when the step weighs it, then the gates and the state (one
      // compute set for both with resetAfter).
      const unsigned cell = lane.stepInput.valid() ? k - (k > 0 ? 1 : 0) : k;
      const char *name = lane.stepInput.valid() && k == 0 ? "Input"
                         : lane.params.resetAfter       ? ""
                         : cell == 0                    ? "Gates"
                                                        : "State";
      ComputeSet cs = graph.addComputeSet({debug, at + name});
      lane.addStep(graph, cs, k, clock, shard, p);
      if (k + 1 == lane.phases())
        rnn::detail::addClockVertex(graph, cs, clock, p);
      s.add(program::Execute(cs));
    }
    return s;
  };
  rnn::detail::fusedLoop(graph, params.rnn, opts.numShards, step, prog, {debug, "loop"});
  if (outSeq.valid())
    return outSeq;
  const Tensor h = graph.clone(stateInit, {debug, "output"});
  prog.add(program::Copy(lane.tensors.hBuf[T % 2], h));
  return h;
}

namespace {

// What every GruFusedBwd vertex of the fused backward loop reads: the packed Wo^T blocks, the
// saved values and gradients, and the attention's partial sums.
struct FusedBwdLoop {
  const GruParams &params;
  const GruOptions &opts;
  std::vector<rnn::detail::PackedUnitBlock> blocks;
  std::vector<std::size_t> firstBlock; // each vertex's first 16-unit block
  std::vector<unsigned> slots;         // the saved r, u, c (and n with resetAfter)
  std::string type;
  Tensor fwdIntermediates, hPrev, outGrad, attention, dhCarry, deltaX, deltaH;
  Tensor productIn; // the product's input, read whole by every vertex
  Tensor partial;   // with attention: [T, B, blocks] partial sums of d(a)
};

// The sequences' parts vertex bi reads and writes: [T][B] of its units.
struct BlockParts {
  std::vector<Tensor> fwd, hp, dy, carry, dx, dh, att;
};

BlockParts blockParts(const FusedBwdLoop &l, std::size_t bi, bool withAttention) {
  const std::size_t T = l.params.rnn.maxTimeSteps, B = l.params.rnn.batchSize;
  const std::size_t H = l.params.rnn.layerSizes[1];
  const auto &block = l.blocks[bi];
  const std::size_t u0 = block.units.firstUnit, u1 = u0 + block.units.numUnits;
  const std::size_t b0 = l.firstBlock[bi],
                    b1 = b0 + (block.units.numUnits + kUnitPanelUnits - 1) / kUnitPanelUnits;
  BlockParts parts;
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t r = 0; r < B; ++r) {
      if (withAttention)
        parts.att.push_back(l.partial[t][r].slice(b0, b1));
      for (unsigned slot : l.slots)
        parts.fwd.push_back(l.fwdIntermediates[t][slot][r].slice(u0, u1));
      for (unsigned g = 0; g < 3; ++g) {
        parts.dx.push_back(l.deltaX[t][r].slice(g * H + u0, g * H + u1));
        if (l.params.resetAfter)
          parts.dh.push_back(l.deltaH[t][r].slice(g * H + u0, g * H + u1));
      }
      parts.hp.push_back(l.hPrev[t][r].slice(u0, u1));
      if (l.outGrad.valid())
        parts.dy.push_back(l.outGrad[t][r].slice(u0, u1));
    }
  for (std::size_t r = 0; r < B; ++r)
    parts.carry.push_back(l.dhCarry[r].slice(u0, u1));
  return parts;
}

// One phase of a step (0: resetAfter's single one; 1 and 2: the gates, then the reset) on
// clock parity p: a vertex per block of units.
void addBwdPhase(Graph &graph, const FusedBwdLoop &l, ComputeSet cs,
                 const rnn::detail::FusedClock &clock, unsigned p, unsigned phase) {
  const GruParams &params = l.params;
  const bool withAttention = l.attention.valid() && phase != 2;
  for (std::size_t bi = 0; bi < l.blocks.size(); ++bi) {
    const BlockParts parts = blockParts(l, bi, withAttention);
    VertexRef v = graph.addVertex(cs, l.type);
    graph.setTileMapping(v, l.blocks[bi].units.tile);
    graph.connect(v["time"], clock.time.slice(p, p + 1));
    graph.connect(v["lengths"], clock.lengths);
    graph.connect(v["next"], l.productIn.flatten());
    graph.connect(v["packed"], l.blocks[bi].packed);
    graph.connect(v["fwd"], parts.fwd);
    graph.connect(v["hPrev"], parts.hp);
    graph.connect(v["outGrad"], parts.dy);
    graph.connect(v["dhCarry"], parts.carry);
    graph.connect(v["deltaX"], parts.dx);
    graph.connect(v["deltaH"], parts.dh);
    // (one element of h_{t-1} where the phase never reads it)
    graph.connect(v["attention"],
                  withAttention ? l.attention.flatten() : l.hPrev.flatten().slice(0, 1));
    graph.connect(v["attPartial"], parts.att);
    graph.setInitialValue(v["hasAttention"], withAttention);
    graph.setInitialValue(v["phase"], phase);
    graph.setInitialValue(v["H"], static_cast<unsigned>(params.rnn.layerSizes[1]));
    graph.setInitialValue(v["numUnits"], l.blocks[bi].units.numUnits);
    graph.setInitialValue(v["steps"], static_cast<unsigned>(params.rnn.maxTimeSteps));
    graph.setInitialValue(v["activation"], static_cast<unsigned>(params.activation));
    graph.setInitialValue(v["recurrentActivation"],
                          static_cast<unsigned>(params.recurrentActivation));
    graph.setInitialValue(v["hasOutGrad"], l.outGrad.valid());
    graph.setInitialValue(v["rawCandidate"], rawCandidate(params));
    graph.setInitialValue(v["popnnHardSigmoidGrad"],
                          l.opts.hardSigmoidGradient == NonLinearityGradient::Popnn);
  }
}

} // namespace

void fusedBackward(Graph &graph, const GruParams &params, const GruOptions &opts,
                   const Tensor &woT, const Tensor &fwdIntermediates, const Tensor &hPrev,
                   const Tensor &outGrad, const Tensor &attention, const Tensor &attentionGrad,
                   const Tensor &dhCarry, const Tensor &deltaX, const Tensor &deltaH,
                   program::Sequence &prog, const DebugContext &debug) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t H = params.rnn.layerSizes[1];
  std::vector<Tensor> rows; // row k of Wo^T (canonical gate columns), over the units
  for (std::size_t k = 0; k < 3 * H; ++k)
    rows.push_back(woT[k]);
  FusedBwdLoop l{params, opts,
                 rnn::detail::packUnitPanels(graph, params.dataType, rows, 3 * H, 1, H, prog,
                                             debug),
                 {}, {0, 1, 2},
                 util::templateVertex("aspen::nn::GruFusedBwd", params.dataType),
                 fwdIntermediates, hPrev, outGrad, attention, dhCarry, deltaX, deltaH,
                 // Read whole by every vertex (row t + 1 a step, and without resetAfter row
                 // t's candidate gradients in phase 2) while they write their units of row t:
                 // the loop's own contiguous sequence, so read in place.
                 params.resetAfter ? deltaH : deltaX, {}};
  if (params.resetAfter)
    l.slots.push_back(interLayout(params).nSlot());
  // With attention: each block's sum of d(a) for every step and row, [T, B, 16-unit blocks],
  // each vertex's blocks on its tile; summed over the blocks after the loop.
  std::size_t numBlocks = 0;
  for (const auto &block : l.blocks) {
    l.firstBlock.push_back(numBlocks);
    numBlocks += (block.units.numUnits + kUnitPanelUnits - 1) / kUnitPanelUnits;
  }
  if (attention.valid()) {
    l.partial = graph.addVariable(FLOAT, {T, B, numBlocks}, {debug, "attentionPartials"});
    for (std::size_t v = 0; v < l.blocks.size(); ++v) {
      const std::size_t n = (l.blocks[v].units.numUnits + kUnitPanelUnits - 1) / kUnitPanelUnits;
      graph.setTileMapping(l.partial.slice(l.firstBlock[v], l.firstBlock[v] + n, 2),
                           l.blocks[v].units.tile);
    }
  }
  auto step = [&](const rnn::detail::FusedClock &clock, const rnn::detail::FusedShard &,
                  unsigned p) {
    const std::string at = p ? "oddStep" : "evenStep";
    program::Sequence s;
    if (params.resetAfter) {
      ComputeSet cs = graph.addComputeSet({debug, at});
      addBwdPhase(graph, l, cs, clock, p, 0);
      rnn::detail::addClockVertex(graph, cs, clock, p);
      s.add(program::Execute(cs));
      return s;
    }
    // Without resetAfter the reset's gradient needs d(r*h) = delta_c . Wo_c^T of every unit
    // first: two compute sets, the clock advancing in the second.
    ComputeSet gates = graph.addComputeSet({debug, at + "Gates"});
    addBwdPhase(graph, l, gates, clock, p, 1);
    ComputeSet reset = graph.addComputeSet({debug, at + "Reset"});
    addBwdPhase(graph, l, reset, clock, p, 2);
    rnn::detail::addClockVertex(graph, reset, clock, p);
    s.add(program::Execute(gates));
    s.add(program::Execute(reset));
    return s;
  };
  rnn::detail::fusedLoop(graph, params.rnn, 1, step, prog, {debug, "loop"});
  if (attention.valid())
    ops::reduceWithOutput(graph, l.partial, attentionGrad, {2}, {ops::Operation::ADD}, prog,
                          {debug, "attentionGrad"});
}

} // namespace aspen::nn::gru::detail
