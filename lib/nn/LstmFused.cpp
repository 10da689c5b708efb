// The LSTM's fused forward step (see LstmInternal.hpp and docs/architecture.md): the recurrent
// weights packed once a run into panels of 4 units x 4 gates, then each step one compute set of
// LstmFusedFwd vertices that multiply h_{t-1} by their panels and finish the cell in registers.
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
constexpr std::size_t kFusedMaxBatch = 16; // the largest batch stepMethod auto fuses
constexpr unsigned kPanelColumns = 16; // its columns: 4 gates x 4 units

bool elementWise(NonLinearityType t) {
  return t != NonLinearityType::SOFTMAX && t != NonLinearityType::SOFTMAX_STABLE;
}

// Whether auto fuses: small batches only. There each step is mostly hand-offs and, for a
// library product of two or more rows, OpenBLAS repacking Wo on every call; at B = 64 the
// blocked library product was faster than the 4-row kernel (bench_lstm on 2 cores,
// 2026-12-03: H = 512 to 1024 up to 25% slower fused). One row is a matrix-vector product,
// which repacks nothing, so fusing saves only the hand-off a step (about 30 us) and costs the
// packing, about 1.1 ns a weight (4H^2 of them) once a run: it pays from T >= 4H^2 x 1.1 ns /
// 30 us steps (10 at H = 256, 154 at H = 1024; H = 1024, T = 25 ran 20 ms unfused, 26-30 fused).
bool fusedPays(const LstmParams &params) {
  const std::size_t B = params.rnn.batchSize, T = params.rnn.maxTimeSteps;
  const double H = double(params.rnn.layerSizes[1]);
  if (B > kFusedMaxBatch)
    return false;
  return B > 1 || double(T) * 30e-6 >= 4 * H * H * 1.1e-9;
}

// The packed weights (4 H^2 floats, panels rounded up) may take at most this share of a tile.
constexpr double kPackedTileShare = 0.5;

std::size_t packedBytes(const LstmParams &params) {
  const std::size_t H = params.rnn.layerSizes[1];
  return (H + kPanelUnits - 1) / kPanelUnits * H * kPanelColumns * sizeof(float);
}

// Blocks of panels: enough that every worker has a panel, and that no tile holds more than
// kPackedTileShare of its memory in packed weights; at most one a panel and one a tile.
unsigned fusedBlocks(const Target &target, const LstmParams &params) {
  const std::size_t H = params.rnn.layerSizes[1];
  const unsigned panels = static_cast<unsigned>((H + kPanelUnits - 1) / kPanelUnits);
  const unsigned workers = std::max(1u, target.getNumWorkerContexts());
  const double share = kPackedTileShare * double(target.getBytesPerTile());
  const auto forMemory = static_cast<unsigned>(
      std::min<double>(panels, std::ceil(double(packedBytes(params)) / share)));
  const unsigned forWorkers = (panels + workers - 1) / workers;
  return std::max(1u, std::min({target.getNumTiles(), panels, std::max(forWorkers, forMemory)}));
}

// Whether the packed weights fit the tiles fusedBlocks spreads them over.
bool packedFits(const Target &target, const LstmParams &params) {
  return double(packedBytes(params)) / fusedBlocks(target, params) <=
         kPackedTileShare * double(target.getBytesPerTile());
}

void setSlots(Graph &graph, VertexRef v, const LstmParams &params) {
  const auto slot = slotsOf(params); // slot[gate]: gates forget, input, candidate, output
  graph.setInitialValue(v["slotF"], slot[0]);
  graph.setInitialValue(v["slotI"], slot[1]);
  graph.setInitialValue(v["slotG"], slot[2]);
  graph.setInitialValue(v["slotO"], slot[3]);
}

// row r of t [R, H], units [first, first + n), for each r.
std::vector<Tensor> unitSegments(const Tensor &t, const FusedBlock &block) {
  std::vector<Tensor> segments;
  for (std::size_t r = 0; r < t.dim(0); ++r)
    segments.push_back(t[r].slice(block.firstUnit, block.firstUnit + block.numUnits));
  return segments;
}

} // namespace

bool usesFusedStep(const Graph &graph, const LstmParams &params, const LstmOptions &opts,
                   const std::string &what) {
  if (opts.stepMethod == StepMethod::ProductThenCell)
    return false;
  const bool applies = (opts.preCalcWeights || !params.doInputWeightCalc) &&
                       elementWise(params.activation) && elementWise(params.recurrentActivation);
  if (opts.stepMethod == StepMethod::Fused) {
    if (!applies)
      throw invalid_option(fmt::format(
          "{}: stepMethod fused needs element-wise activations (not SOFTMAX or SOFTMAX_STABLE) "
          "and each step multiplying h by the recurrent weights alone (preCalcWeights true, or "
          "no input weights); use auto or productThenCell",
          what));
    return true;
  }
  return applies && !graph.getTarget().isGpu() && fusedPays(params) &&
         packedFits(graph.getTarget(), params);
}

std::vector<FusedBlock> packFusedWeights(Graph &graph, const LstmParams &params,
                                         const Tensor &outputWeights, program::Sequence &prog,
                                         const DebugContext &debug) {
  const Target &target = graph.getTarget();
  const unsigned H = static_cast<unsigned>(params.rnn.layerSizes[1]);
  const unsigned panels = (H + kPanelUnits - 1) / kPanelUnits;
  const unsigned numBlocks = fusedBlocks(target, params);
  const std::string type = util::templateVertex("aspen::nn::PackLstmWeights", params.dataType);
  ComputeSet cs = graph.addComputeSet({debug, "packWeights"});
  // One edge a row of Wo as a matrix ([H, 4H]): contiguous in the weights createWeights makes,
  // so the vertices read them in place (a whole non-contiguous view would be gathered).
  const Tensor matrix = asMatrix(outputWeights);
  std::vector<Tensor> rows;
  for (std::size_t k = 0; k < H; ++k)
    rows.push_back(matrix[k]);
  std::vector<FusedBlock> blocks;
  for (unsigned j = 0; j < numBlocks; ++j) {
    const unsigned p0 = j * panels / numBlocks, p1 = (j + 1) * panels / numBlocks;
    FusedBlock block;
    block.firstUnit = p0 * kPanelUnits;
    block.numUnits = std::min(p1 * kPanelUnits, H) - block.firstUnit;
    block.tile = static_cast<unsigned>(std::uint64_t(j) * target.getNumTiles() / numBlocks);
    block.packed = graph.addVariable(FLOAT, {std::size_t(p1 - p0) * H * kPanelColumns},
                                     {debug, fmt::format("packedWeights{}", j)});
    graph.setTileMapping(block.packed, block.tile);
    VertexRef v = graph.addVertex(cs, type);
    graph.connect(v["weights"], rows);
    graph.connect(v["packed"], block.packed);
    graph.setTileMapping(v, block.tile);
    graph.setInitialValue(v["H"], H);
    graph.setInitialValue(v["firstUnit"], block.firstUnit);
    graph.setInitialValue(v["numUnits"], block.numUnits);
    setSlots(graph, v, params);
    blocks.push_back(std::move(block));
  }
  prog.add(program::Execute(cs));
  return blocks;
}

void addFusedCellFwd(Graph &graph, const LstmParams &params, ComputeSet cs,
                     const std::vector<FusedBlock> &blocks, const Tensor &hPrev,
                     const Tensor &preIn, const Tensor &bias, const Tensor &cState,
                     const Tensor &hState, const Tensor &out, const Tensor &inter,
                     const InterLayout &layout, const Tensor &mask) {
  const unsigned H = static_cast<unsigned>(params.rnn.layerSizes[1]);
  const std::string type = util::templateVertex("aspen::nn::LstmFusedFwd", params.dataType);
  for (const FusedBlock &block : blocks) {
    VertexRef v = graph.addVertex(cs, type);
    graph.setTileMapping(v, block.tile);
    graph.connect(v["hPrev"], hPrev.flatten());
    graph.connect(v["packed"], block.packed);
    // An unused gatesIn is connected to the output rows' first element: never read.
    graph.connect(v["gatesIn"], preIn.valid() ? preIn.flatten() : hPrev.flatten().slice(0, 1));
    graph.connect(v["bias"], bias.flatten());
    graph.connect(v["mask"], mask);
    graph.connect(v["cState"], unitSegments(cState, block));
    graph.connect(v["hState"], unitSegments(hState, block));
    graph.connect(v["out"], unitSegments(out, block));
    std::vector<Tensor> interSegments;
    if (layout.count() > 0 && inter.valid())
      for (std::size_t r = 0; r < inter.dim(1); ++r)
        for (unsigned s = 0; s < layout.count(); ++s)
          interSegments.push_back(inter[s][r].slice(block.firstUnit,
                                                    block.firstUnit + block.numUnits));
    graph.connect(v["inter"], interSegments);
    graph.setInitialValue(v["H"], H);
    graph.setInitialValue(v["firstUnit"], block.firstUnit);
    setSlots(graph, v, params);
    graph.setInitialValue(v["activation"], static_cast<unsigned>(params.activation));
    graph.setInitialValue(v["recurrentActivation"],
                          static_cast<unsigned>(params.recurrentActivation));
    const bool saving = layout.count() > 0 && inter.valid();
    graph.setInitialValue(v["saveMode"], saving ? layout.saveMode : 0u);
    graph.setInitialValue(v["saveH"], saving && layout.saveH);
    graph.setInitialValue(v["rawCandidate"], rawCandidate(params));
    graph.setInitialValue(v["hasGatesIn"], preIn.valid());
  }
}

} // namespace aspen::nn::lstm::detail
