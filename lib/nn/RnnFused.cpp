// What the fused recurrent loops share (LstmFused.cpp, GruFused.cpp; RnnLoop.hpp): when a layer
// fuses its steps, how its units are split into blocks of packed weights, and the loop itself.
#include "RnnLoop.hpp"

#include <aspen/Error.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>
#include "support/OptionParsing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace aspen::nn::rnn::detail {

using program::Copy;
using program::Repeat;
using program::Sequence;

namespace {

// The largest batch stepMethod auto fuses: up to 64 rows the 8-row packed kernel beat the
// library products (bench_lstm / bench_gru, 2026-12-04, B = 64 T = 25, fused against
// product-then-cell: LSTM inference 9.7-9.9 ms against 14.5-14.6 at H = 256, 140-141 against
// 178-180 at H = 1024; training 33 against 52 and 458 against 588; GRU inference 7.5-8.2
// against 10.7, training 104 against 104 at H = 512). Larger batches were not measured; the
// blocked library product's advantage grows with the rows.
constexpr std::size_t kFusedMaxBatch = 64;
// The packed weights may take at most this share of a tile.
constexpr double kPackedTileShare = 0.5;

Tensor unsignedConstant(Graph &graph, unsigned value, const DebugContext &debug) {
  Tensor t = graph.addConstant<unsigned>(UNSIGNED_INT, {1}, value, debug);
  graph.setTileMapping(t, 0);
  return t;
}

// Blocks of granules: enough that every worker has a granule, and that no tile holds more than
// kPackedTileShare of its memory in packed weights; at most one a granule and one a tile.
unsigned blockCount(const Target &target, std::size_t granules, std::size_t packedBytes) {
  const unsigned workers = std::max(1u, target.getNumWorkerContexts());
  const double share = kPackedTileShare * double(target.getBytesPerTile());
  const auto forMemory = static_cast<unsigned>(
      std::min<double>(double(granules), std::ceil(double(packedBytes) / share)));
  const auto forWorkers = static_cast<unsigned>((granules + workers - 1) / workers);
  return std::max(1u, std::min<unsigned>({target.getNumTiles(), static_cast<unsigned>(granules),
                                          std::max(forWorkers, forMemory)}));
}

} // namespace

void addPersistentOptions(aspen::detail::OptionSpec &spec, PersistentOptions &target) {
  using Mode = PersistentOptions::Mode;
  spec.enumeration("rnnPersistentKernel", target.mode,
                   {{"auto", Mode::Auto}, {"true", Mode::On}, {"false", Mode::Off}})
      .enumeration("rnnPersistentArithmetic", target.arithmetic,
                   {{"auto", PersistentOptions::Arithmetic::Auto},
                    {"exact", PersistentOptions::Arithmetic::Exact},
                    {"tensor", PersistentOptions::Arithmetic::Tensor}})
      .unsignedInteger("rnnPersistentBlocks", target.blocks, 0, 1u << 20)
      .unsignedInteger("rnnPersistentThreadsPerBlock", target.threadsPerBlock, 0, 256);
}

void addStepMethodOption(aspen::detail::OptionSpec &spec, StepMethod &target) {
  spec.enumeration("stepMethod", target,
                   {{"auto", StepMethod::Auto},
                    {"fused", StepMethod::Fused},
                    {"productThenCell", StepMethod::ProductThenCell}});
}

bool chooseFusedStep(const Graph &graph, StepMethod method, NonLinearityType activation,
                     NonLinearityType recurrentActivation, const std::string &what,
                     const std::function<bool()> &paysAndFits) {
  if (method == StepMethod::ProductThenCell)
    return false;
  const bool applies = elementWise(activation) && elementWise(recurrentActivation);
  if (method == StepMethod::Fused) {
    if (!applies)
      throw invalid_option(fmt::format("{}: stepMethod fused needs element-wise activations (not "
                                       "SOFTMAX or SOFTMAX_STABLE); use auto or productThenCell",
                                       what));
    return true;
  }
  return applies && !graph.getTarget().isGpu() && paysAndFits();
}

// Batches up to kFusedMaxBatch. There each step is mostly hand-offs and, for a library product
// of two or more rows, OpenBLAS repacking Wo on every call (the 4-row kernel of 2026-12-03 had
// lost at B = 64; the 8-row one wins there). One row is a matrix-vector product, which repacks nothing, so fusing saves
// the hand-offs (about 30 us a step) and the matrix-vector call's overhead. The packing is a
// Cached step: in inference it runs once for fixed weights, and one row fuses whatever the
// length (bench_lstm / bench_gru, 2026-12-04, inference B = 1, fused against product-then-
// cell with the packing once: LSTM H1024 T25 5.2-6.9 ms against 9.0-11.4, GRU 4.8-5.5
// against 6.3, H512 T100 4.0-4.3 against 5.7-6.2). In training the weight update makes it
// run every run, about 1.1 ns a weight (gates x H^2 of them), so it must be paid by the steps:
// T >= gates H^2 x 1.1 ns / 30 us (LSTM: 10 at H = 256, 154 at H = 1024).
bool fusedStepPays(const RnnParams &params, unsigned gates, bool inference) {
  const std::size_t B = params.batchSize, T = params.maxTimeSteps;
  const double H = double(params.layerSizes[1]);
  if (B > kFusedMaxBatch)
    return false;
  return B > 1 || inference || double(T) * 30e-6 >= gates * H * H * 1.1e-9;
}

std::vector<FusedUnitBlock> fusedUnitBlocks(const Target &target, std::size_t H,
                                            unsigned granuleUnits, std::size_t packedBytes) {
  const std::size_t granules = (H + granuleUnits - 1) / granuleUnits;
  const unsigned count = blockCount(target, granules, packedBytes);
  std::vector<FusedUnitBlock> blocks;
  for (unsigned j = 0; j < count; ++j) {
    const std::size_t g0 = j * granules / count, g1 = (j + 1) * granules / count;
    FusedUnitBlock b;
    b.firstUnit = static_cast<unsigned>(g0 * granuleUnits);
    b.numUnits = static_cast<unsigned>(std::min(g1 * granuleUnits, H)) - b.firstUnit;
    b.tile = static_cast<unsigned>(std::uint64_t(j) * target.getNumTiles() / count);
    blocks.push_back(b);
  }
  return blocks;
}

bool fusedWeightsFit(const Target &target, std::size_t H, unsigned granuleUnits,
                     std::size_t packedBytes) {
  const unsigned count = blockCount(target, (H + granuleUnits - 1) / granuleUnits, packedBytes);
  return double(packedBytes) / count <= kPackedTileShare * double(target.getBytesPerTile());
}

Tensor contiguousOrCopy(Graph &graph, const Tensor &t, Sequence &prog,
                        const DebugContext &debug) {
  if (t.isContiguous())
    return t;
  Tensor c = graph.addVariable(t.elementType(), t.shape(), debug);
  util::mapTensorLinearly(graph, c);
  prog.add(Copy(t, c));
  return c;
}

std::size_t unitPanelBytes(std::size_t K, unsigned gates, std::size_t H) {
  return (H + kUnitPanelUnits - 1) / kUnitPanelUnits * gates * K * kUnitPanelUnits *
         sizeof(float);
}

std::vector<PackedUnitBlock> packUnitPanels(Graph &graph, Type type,
                                            const std::vector<Tensor> &rows, std::size_t K,
                                            unsigned gates, std::size_t H, Sequence &prog,
                                            const DebugContext &debug) {
  ComputeSet cs = graph.addComputeSet({debug, "packWeights"});
  const std::string vertex = util::templateVertex("aspen::nn::PackUnitPanels", type);
  std::vector<PackedUnitBlock> blocks;
  for (const FusedUnitBlock &units : fusedUnitBlocks(graph.getTarget(), H, kUnitPanelUnits,
                                                     unitPanelBytes(K, gates, H))) {
    PackedUnitBlock block{units, {}};
    const std::size_t n = (units.numUnits + kUnitPanelUnits - 1) / kUnitPanelUnits;
    block.packed = graph.addVariable(FLOAT, {n * gates * K * kUnitPanelUnits},
                                     {debug, fmt::format("packedWeights{}", blocks.size())});
    graph.setTileMapping(block.packed, units.tile);
    VertexRef v = graph.addVertex(cs, vertex);
    graph.connect(v["weights"], rows);
    graph.connect(v["packed"], block.packed);
    graph.setTileMapping(v, units.tile);
    graph.setInitialValue(v["K"], static_cast<unsigned>(K));
    graph.setInitialValue(v["gates"], gates);
    graph.setInitialValue(v["firstUnit"], units.firstUnit);
    graph.setInitialValue(v["numUnits"], units.numUnits);
    blocks.push_back(std::move(block));
  }
  // Packed once: later runs skip the pack until the weights are written (program::Cached).
  prog.add(program::Cached(program::Execute(cs), {debug, "packWeights"}));
  return blocks;
}

void addClockVertex(Graph &graph, ComputeSet cs, const FusedClock &clock, unsigned parity) {
  VertexRef v = graph.addVertex(cs, "aspen::nn::RnnAdvanceTime",
                                {{"time", clock.time.slice(parity, parity + 1)},
                                 {"next", clock.time.slice(1 - parity, 2 - parity)}});
  graph.setTileMapping(v, 0);
}

void addStepProduct(Graph &graph, ComputeSet cs, const std::vector<PackedUnitBlock> &blocks,
                    const FusedClock &clock, unsigned parity, const Tensor &x, const Tensor &xw,
                    std::size_t H, unsigned gates) {
  const std::size_t T = xw.dim(0), B = xw.dim(1);
  const std::string type = util::templateVertex("aspen::nn::RnnStepProduct", xw.elementType());
  for (const PackedUnitBlock &block : blocks) {
    const std::size_t u0 = block.units.firstUnit, u1 = u0 + block.units.numUnits;
    std::vector<Tensor> out; // per step and row, each gate's units
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t r = 0; r < B; ++r)
        for (unsigned g = 0; g < gates; ++g)
          out.push_back(xw[t][r].slice(g * H + u0, g * H + u1));
    VertexRef v = graph.addVertex(cs, type);
    graph.setTileMapping(v, block.units.tile);
    graph.connect(v["time"], clock.time.slice(parity, parity + 1));
    graph.connect(v["x"], x.flatten());
    graph.connect(v["packed"], block.packed);
    graph.connect(v["out"], out);
    graph.setInitialValue(v["K"], static_cast<unsigned>(x.dim(2)));
    graph.setInitialValue(v["rows"], static_cast<unsigned>(B));
    graph.setInitialValue(v["gates"], gates);
    graph.setInitialValue(v["numUnits"], block.units.numUnits);
    graph.setInitialValue(v["steps"], static_cast<unsigned>(T));
  }
}

void fusedLoop(Graph &graph, const RnnParams &params, unsigned numShards,
               const std::function<Sequence(const FusedClock &, const FusedShard &, unsigned)>
                   &step,
               Sequence &prog, const DebugContext &debug) {
  const std::size_t T = params.maxTimeSteps;
  FusedClock clock;
  clock.time = graph.addVariable(UNSIGNED_INT, {2}, {debug, "time"});
  graph.setTileMapping(clock.time, 0);
  prog.add(Copy(unsignedConstant(graph, 0, {debug, "zero"}), clock.time.slice(0, 1)));
  clock.lengths = params.varTimeSteps.valid()
                      ? params.varTimeSteps
                      : unsignedConstant(graph, static_cast<unsigned>(T), {debug, "lengths"});
  const std::size_t shardSize = (T + numShards - 1) / numShards;
  for (unsigned s = 0; s < numShards; ++s) {
    const std::size_t b = s * shardSize, e = std::min(T, b + shardSize);
    if (b >= e)
      continue;
    const FusedShard shard{static_cast<unsigned>(b), static_cast<unsigned>(e - b)};
    const DebugContext dbg{debug, fmt::format("shard{}", s)};
    const Sequence even = step(clock, shard, 0), odd = step(clock, shard, 1);
    std::size_t t = b;
    if (t % 2 == 1) {
      prog.add(odd);
      ++t;
    }
    if (const std::size_t pairs = (e - t) / 2; pairs > 0) {
      prog.add(Repeat(static_cast<unsigned>(pairs), Sequence{even, odd}, {dbg, "steps"}));
      t += 2 * pairs;
    }
    if (t < e)
      prog.add(even);
  }
}

} // namespace aspen::nn::rnn::detail
