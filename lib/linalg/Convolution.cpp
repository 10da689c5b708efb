// Convolutions (include/aspen/linalg/Convolution.hpp): tensor creation, checks, the plan and the
// "gemm" method's products over the lowering's views (ConvLowering.hpp).
#include "linalg/ConvLowering.hpp"
#include "linalg/ConvOptions.hpp"

#include "support/ConvTables.hpp"
#include "support/Json.hpp"

#include <aspen/Error.hpp>
#include <aspen/Kernels.hpp>
#include <aspen/linalg/ConvUtil.hpp>
#include <aspen/linalg/Convolution.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/ops/Zero.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <optional>
#include <ostream>
#include <sstream>
#include <vector>

namespace aspen::linalg {

namespace json = aspen::support::json;
using detail::ConvLowering;
using detail::ConvOptions;

namespace {

using Shape = std::vector<std::size_t>;

Shape activationsShape(const ConvParams &p, std::size_t channelsPerGroup,
                       const Shape &field) {
  Shape s = {p.batchSize, p.numConvGroups * channelsPerGroup};
  s.insert(s.end(), field.begin(), field.end());
  return s;
}
Shape inputShape(const ConvParams &p) {
  return activationsShape(p, p.inputChannelsPerConvGroup, p.inputFieldShape);
}
Shape outputShape(const ConvParams &p) {
  return activationsShape(p, p.outputChannelsPerConvGroup, p.getOutputFieldShape());
}
// [G, first, second, K...]
Shape weightsShape(const ConvParams &p, std::size_t first, std::size_t second) {
  Shape s = {p.numConvGroups, first, second};
  s.insert(s.end(), p.kernelShape.begin(), p.kernelShape.end());
  return s;
}
Shape weightsShape(const ConvParams &p) {
  return weightsShape(p, p.outputChannelsPerConvGroup, p.inputChannelsPerConvGroup);
}

std::string describe(const ConvParams &p) {
  return fmt::format("B={} G={} Ci={} Co={} field [{}] kernel [{}]", p.batchSize,
                     p.numConvGroups, p.inputChannelsPerConvGroup, p.outputChannelsPerConvGroup,
                     fmt::join(p.inputFieldShape, ","), fmt::join(p.kernelShape, ","));
}

void checkTensor(const char *function, const char *name, const Tensor &t, const Shape &shape,
                 Type type, const ConvParams &p) {
  if (!t.valid())
    throw shape_error(fmt::format("{}: {} is an invalid tensor", function, name));
  if (t.shape() != shape)
    throw shape_error(fmt::format("{}: {} {} has shape [{}]; the parameters ({}) give [{}]",
                                  function, name, t.getDebugStr(), fmt::join(t.shape(), ","),
                                  describe(p), fmt::join(shape, ",")));
  if (t.elementType() != type)
    throw type_error(fmt::format("{}: {} {} is {}; the parameters give {}", function, name,
                                 t.getDebugStr(), t.elementType().toString(), type.toString()));
}

Tensor mappedVariable(Graph &graph, Type type, const Shape &shape, const DebugContext &debug) {
  Tensor t = graph.addVariable(type, shape, debug);
  util::mapTensorLinearly(graph, t);
  return t;
}

// Images [begin, end) of each serial chunk: `chunks` balanced parts of B (none empty).
std::vector<std::pair<std::size_t, std::size_t>> batchChunks(std::size_t B, std::size_t chunks) {
  std::vector<std::pair<std::size_t, std::size_t>> result;
  for (std::size_t c = 0, begin = 0; c < chunks; ++c) {
    const std::size_t size = B / chunks + (c < B % chunks ? 1 : 0);
    result.push_back({begin, begin + size});
    begin += size;
  }
  return result;
}

// The MACs of a pass: per field dimension, the (output, kernel) index pairs that meet an input
// element, times the images and channel pairs.
std::uint64_t multiplyAdds(const ConvParams &p) {
  p.validate();
  std::uint64_t macs = std::uint64_t(p.batchSize) * p.numConvGroups *
                       p.inputChannelsPerConvGroup * p.outputChannelsPerConvGroup;
  for (unsigned d = 0; d < p.getNumFieldDims() && macs; ++d) {
    std::uint64_t pairs = 0;
    for (std::size_t o = 0; o < p.getOutputSize(d); ++o)
      for (std::size_t k = 0; k < p.kernelShape[d]; ++k)
        pairs += getInputIndex(d, o, k, p).has_value();
    macs *= pairs;
  }
  return macs;
}

// Whether executors of this target run the convolution calls (ConvPlan.hpp): the CPU and CUDA
// executors do; the IPU models plan portably.
bool hasConvCalls(const Target &target) {
  return target.getTargetType() == TargetType::CPU || target.getTargetType() == TargetType::GPU ||
         target.getTargetArchString() == "generic";
}

// The direct method's bound: input channels x kernel taps a group at most this.
constexpr std::size_t kDirectMaxTerms = 64;

// `weightUpdate`: the plan of a weight update, which the direct method does not compute.
ConvPlan planConvolution(const Target &target, const ConvParams &p, const ConvOptions &o,
                         PlanningCache *cache, bool weightUpdate = false) {
  std::size_t P = 1, T = 1;
  for (unsigned d = 0; d < p.getNumFieldDims(); ++d) {
    P *= p.getOutputSize(d);
    T *= p.getTruncatedKernelSize(d);
  }
  const std::size_t B = p.batchSize, G = p.numConvGroups, K = p.inputChannelsPerConvGroup * T;
  const std::size_t imageBytes = P * G * K * target.getTypeSize(p.inputType);
  const double macRate = double(target.getMatMulMacsPerCycle(p.inputType)) * target.getNumTiles();
  const double byteRate = double(target.getExchangeBytesPerCycle()) * target.getNumTiles();
  const double loweringCycles = double(B * imageBytes) / std::max(byteRate, 1.0);
  const double macs = double(multiplyAdds(p));

  const bool libraryRuns = hasConvCalls(target) && p.inputType == p.outputType;
  if (o.method == "library" && !libraryRuns)
    throw invalid_option(fmt::format(
        "planConstraints.method = \"library\": {}; pin \"gemm\"",
        hasConvCalls(target)
            ? "the convolution calls take one element type, and this convolution has " +
                  p.inputType.toString() + " in and " + p.outputType.toString() + " out"
            : "target '" + target.getName() +
                  "' has no convolution calls (IPU models plan the portable methods)"));
  const bool gemmPinned = o.method == "gemm" || o.batchSerial || !o.matMulConstraints.empty();
  // Direct vertices: pinned, or chosen by cost where there are no convolution calls (a CPU
  // target's calls are the vectorised path for every shape).
  const bool directRuns = !weightUpdate && K <= kDirectMaxTerms;
  const bool directCandidate = directRuns && !libraryRuns;
  if (o.method == "direct" && !weightUpdate && !directRuns)
    throw invalid_option(fmt::format(
        "planConstraints.method = \"direct\": the direct method sums at most {} input channels "
        "x kernel taps a group, and this convolution has {} x {}",
        kDirectMaxTerms, p.inputChannelsPerConvGroup, T));
  ConvPlan direct;
  direct.method = "direct";
  direct.batchPerChunk = B;
  // One multiply-add a worker-cycle (no matmul units), plus reading the input once.
  direct.estimatedCycles =
      macs /
          std::max(1.0, double(target.getNumTiles()) * target.getNumWorkerContexts()) +
      double(B * G * p.inputChannelsPerConvGroup) * double(std::accumulate(
          p.inputFieldShape.begin(), p.inputFieldShape.end(), std::size_t(1),
          std::multiplies<>())) * double(target.getTypeSize(p.inputType)) /
          std::max(byteRate, 1.0);
  if (o.method == "direct" && directRuns) {
    direct.reason = "pinned by planConstraints";
    return direct;
  }

  ConvPlan library;
  library.method = "library";
  library.batchPerChunk = B;
  library.loweredBytes = std::min<std::size_t>(imageBytes / std::max<std::size_t>(G, 1),
                                               512 * 1024);
  library.estimatedCycles = macs / std::max(macRate, 1.0) + loweringCycles;
  if (o.method == "library") {
    library.reason = "pinned by planConstraints";
    return library;
  }

  ConvPlan gemm;
  gemm.budgetBytes = std::size_t(o.availableMemoryProportion * double(target.getMemoryBytes()));
  if (o.batchSerial) {
    if (*o.batchSerial > std::max<std::size_t>(B, 1))
      throw invalid_option(fmt::format(
          "planConstraints.serial.batch = {}: the batch is {}, and no chunk may be empty",
          *o.batchSerial, B));
    gemm.batchSerial = *o.batchSerial;
  } else if (B > 0) {
    const std::size_t perChunk =
        std::max<std::size_t>(1, gemm.budgetBytes / std::max<std::size_t>(imageBytes, 1));
    gemm.batchSerial = (B + perChunk - 1) / perChunk;
  }
  gemm.batchPerChunk = B == 0 ? 0 : (B + gemm.batchSerial - 1) / gemm.batchSerial;
  gemm.loweredBytes = gemm.batchPerChunk * imageBytes;
  const std::size_t M = gemm.batchPerChunk * P, N = p.outputChannelsPerConvGroup;
  if (G && M && K && N)
    gemm.matMul = planMatMul(target, {p.inputType, p.outputType, {G, M, K}, {G, K, N}},
                             o.matMulOptions(), cache);
  gemm.estimatedCycles =
      double(gemm.matMul.estimatedCycles) * double(gemm.batchSerial) + loweringCycles;

  if (gemmPinned || o.method == "direct") {
    gemm.reason = o.method == "direct" ? "the direct method computes no weight update"
                                       : "pinned by planConstraints";
    return gemm;
  }
  // The cheapest of the methods that run here (library first on a tie, then gemm).
  std::vector<ConvPlan *> candidates;
  if (libraryRuns)
    candidates.push_back(&library);
  candidates.push_back(&gemm);
  if (directCandidate)
    candidates.push_back(&direct);
  ConvPlan *best = candidates.front();
  for (ConvPlan *c : candidates)
    if (c->estimatedCycles < best->estimatedCycles)
      best = c;
  std::string others;
  for (ConvPlan *c : candidates)
    if (c != best)
      others += fmt::format("{}{} {:.0f}", others.empty() ? "" : ", ", c->method,
                            c->estimatedCycles);
  best->reason = fmt::format("estimated {:.0f} cycles against {}{}", best->estimatedCycles,
                             others.empty() ? "nothing else" : others,
                             libraryRuns ? ""
                                         : hasConvCalls(target)
                                               ? "; the convolution calls take one element type"
                                               : "; target '" + target.getName() +
                                                     "' has no convolution calls");
  return *best;
}

// One vertex an image, group and output channel (ConvDirect in codelets/linalg/matmul.cpp),
// spread over the tiles in order, reading the flattened index table.
void directConvolution(Graph &graph, const Tensor &in, const Tensor &kernel, const Tensor &out,
                       const ConvParams &p, const ConvLowering &lowering,
                       program::Sequence &prog, const DebugContext &debug) {
  const program::ConvGeometry geo = lowering.geometry();
  const std::size_t dims = geo.inputField.size(), B = p.batchSize, G = p.numConvGroups,
                    Ci = p.inputChannelsPerConvGroup, Co = p.outputChannelsPerConvGroup;
  std::size_t F = 1, P = 1, T = 1;
  for (std::size_t d = 0; d < dims; ++d)
    F *= geo.inputField[d], P *= geo.outputField[d], T *= geo.taps[d];
  if (Ci * F > std::size_t(INT32_MAX))
    throw shape_error(fmt::format("convolution (direct): an image's group of {} input elements "
                                  "is more than the method indexes (2^31 - 1); plan gemm",
                                  Ci * F));
  std::vector<int> offsets; // flatInputOffsets, which fit an int: Ci * F does
  for (std::int64_t offset : aspen::detail::flatInputOffsets(geo))
    offsets.push_back(int(offset));
  const Tensor table = graph.addConstant<int>(INT, {T * P}, offsets, {debug, "offsets"});
  graph.setTileMapping(table, 0);
  const std::string vertex =
      util::templateVertex("aspen::linalg::ConvDirect", p.inputType, p.outputType);
  ComputeSet cs = graph.addComputeSet({debug, "direct"});
  const Tensor images = in.reshape({B, G, Ci * F}), outputs = out.reshape({B * G * Co, P});
  const std::size_t count = B * G * Co, tiles = graph.getTarget().getNumTiles();
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t b = i / (G * Co), g = (i / Co) % G, co = i % Co;
    VertexRef v = graph.addVertex(cs, vertex,
                                  {{"in", images[b][g]},
                                   {"weights", kernel[g][co]},
                                   {"offsets", table},
                                   {"out", outputs[i]}});
    graph.setInitialValue(v["inChans"], unsigned(Ci));
    graph.setInitialValue(v["taps"], unsigned(T));
    graph.setInitialValue(v["fieldSize"], unsigned(F));
    graph.setTileMapping(v, unsigned(i * tiles / count));
  }
  prog.add(program::Execute(cs, {debug, "direct"}));
}

// When p is getGradientParams(fwd) of some fwd (its own gradient parameters lead back to it),
// that fwd: the convolution with transposed, flipped weights is fwd's backward data.
std::optional<ConvParams> forwardOfGradient(const ConvParams &p) {
  const ConvParams fwd = getGradientParams(p);
  if (getGradientParams(fwd) != p || fwd.getOutputFieldShape() != p.inputFieldShape ||
      fwd.inputFieldShape != p.getOutputFieldShape() || fwd.inputType != p.inputType)
    return std::nullopt;
  return fwd;
}

// A library call's tables with what the options give it: its scratch bound (the planner's
// memory budget) and whether float products may use TF32.
program::ConvGeometry callGeometry(const ConvLowering &lowering, const ConvOptions &o,
                                   const Target &target) {
  program::ConvGeometry g = lowering.geometry();
  g.workspaceBytes =
      std::uint64_t(o.availableMemoryProportion * double(target.getMemoryBytes()));
  g.allowTF32 = o.allowTF32;
  return g;
}

// The forward product into out (checked), any weights orientation.
void convolve(Graph &graph, const Tensor &in, const Tensor &weights, const Tensor &out,
              const ConvParams &p, bool transposeAndFlipWeights, program::Sequence &prog,
              const DebugContext &debug, const OptionFlags &options, PlanningCache *cache) {
  const char *fn = "convolution";
  p.validate();
  const ConvOptions o = detail::parseConvOptions(options, p.inputType);
  checkTensor(fn, "in", in, inputShape(p), p.inputType, p);
  checkTensor(fn, "weights", weights,
              transposeAndFlipWeights
                  ? weightsShape(p, p.inputChannelsPerConvGroup, p.outputChannelsPerConvGroup)
                  : weightsShape(p),
              p.inputType, p);
  checkTensor(fn, "out", out, outputShape(p), p.outputType, p);
  const ConvPlan plan = planConvolution(graph.getTarget(), p, o, cache);
  if (out.numElements() == 0)
    return;
  ConvLowering lowering(graph, p, debug);
  if (p.inputChannelsPerConvGroup * lowering.keptTaps() == 0) { // nothing to sum
    ops::zero(graph, out, prog, {debug, "zero"});
    return;
  }
  if (plan.method == "library") {
    // The backward call writes its input gradient in the weights' type.
    if (transposeAndFlipWeights && out.elementType() == p.inputType)
      if (const std::optional<ConvParams> fwd = forwardOfGradient(p)) {
        const ConvLowering forward(graph, *fwd, debug);
        prog.add(program::ConvBackwardData(in, forward.kernelMatrix(weights, false), out,
                                           callGeometry(forward, o, graph.getTarget()),
                                           {debug, "convBackwardData"}));
        return;
      }
    prog.add(program::ConvForward(in, lowering.kernelMatrix(weights, transposeAndFlipWeights),
                                  out, callGeometry(lowering, o, graph.getTarget()),
                                  {debug, "convForward"}));
    return;
  }
  if (plan.method == "direct") {
    directConvolution(graph, in, lowering.kernelMatrix(weights, transposeAndFlipWeights), out, p,
                      lowering, prog, debug);
    return;
  }
  const std::size_t P = lowering.outputElements();
  const Tensor col = lowering.loweredInput(in);
  const Tensor w = lowering.weightMatrix(weights, transposeAndFlipWeights);
  const Tensor outMatrix = lowering.outputMatrix(out);
  for (const auto &[begin, end] : batchChunks(p.batchSize, plan.batchSerial))
    matMulGroupedWithOutput(graph, col.slice(begin * P, end * P, 1), w,
                            outMatrix.slice(begin * P, end * P, 1), prog,
                            {debug, fmt::format("images{}to{}", begin, end)}, o.matMulOptions(),
                            cache);
}

// weights(kept taps) = (accumulate ? weights + scale * dW : dW), dW over every chunk.
void weightProducts(Graph &graph, const Tensor &zDeltas, const Tensor &activations,
                    const Tensor &target, const ConvParams &p, const Tensor *scale,
                    program::Sequence &prog, const DebugContext &debug,
                    const OptionFlags &options, PlanningCache *cache) {
  const char *fn = scale ? "convolutionWeightUpdate" : "calculateWeightDeltas";
  p.validate();
  const ConvOptions o = detail::parseConvOptions(options, p.inputType);
  checkTensor(fn, "zDeltas", zDeltas, outputShape(p), p.outputType, p);
  checkTensor(fn, "activations", activations, inputShape(p), p.inputType, p);
  checkTensor(fn, "weights", target, weightsShape(p), p.inputType, p);
  const ConvPlan plan = planConvolution(graph.getTarget(), p, o, cache, true);
  ConvLowering lowering(graph, p, debug);
  const std::size_t P = lowering.outputElements();
  const bool anyProduct = p.batchSize * P > 0 && lowering.keptTaps() > 0;
  const std::size_t kernelElements = std::accumulate(
      p.kernelShape.begin(), p.kernelShape.end(), std::size_t(1), std::multiplies<>());
  // Deltas of truncated kernel elements, or of every element when nothing is summed, are 0.
  if (!scale && (!anyProduct || lowering.keptTaps() < kernelElements))
    ops::zero(graph, target, prog, {debug, "zero"});
  if (!anyProduct || target.numElements() == 0)
    return;
  if (plan.method == "library") {
    program::ConvBackwardFilterOptions call;
    call.accumulate = scale != nullptr;
    if (scale)
      call.scale = *scale;
    prog.add(program::ConvBackwardFilter(zDeltas, activations, lowering.keptKernel(target),
                                         callGeometry(lowering, o, graph.getTarget()), call,
                                         {debug, fn}));
    return;
  }
  const Tensor col = lowering.loweredInput(activations);
  const Tensor dz = lowering.gradientMatrix(zDeltas);
  const Tensor kept = lowering.keptKernel(target);
  bool first = !scale;
  for (const auto &[begin, end] : batchChunks(p.batchSize, plan.batchSerial)) {
    const DebugContext chunk(debug, fmt::format("images{}to{}", begin, end));
    const Tensor a = dz.slice(begin * P, end * P, 2), b = col.slice(begin * P, end * P, 1);
    if (first)
      matMulGroupedWithOutput(graph, a, b, kept, prog, chunk, o.matMulOptions(), cache);
    else if (scale)
      matMulGroupedAcc(graph, kept, *scale, a, b, prog, chunk, o.matMulOptions(), cache);
    else
      matMulGroupedAcc(graph, kept, 1.0f, a, b, prog, chunk, o.matMulOptions(), cache);
    first = false;
  }
}

Tensor floatConstant(Graph &graph, float value, const DebugContext &debug) {
  Tensor c = graph.addConstant(FLOAT, {}, value, {debug, "scale"});
  graph.setTileMapping(c, 0);
  return c;
}

} // namespace

std::string ConvPlan::toJson() const {
  json::Value root = json::Value::object();
  root.set("method", json::Value::string(method));
  root.set("serial", json::Value::object({{"batch", json::Value::number(std::uint64_t(batchSerial))}}));
  root.set("batchPerChunk", json::Value::number(std::uint64_t(batchPerChunk)));
  root.set("loweredBytes", json::Value::number(std::uint64_t(loweredBytes)));
  root.set("budgetBytes", json::Value::number(std::uint64_t(budgetBytes)));
  root.set("estimatedCycles", json::Value::number(estimatedCycles));
  root.set("reason", json::Value::string(reason));
  if (method == "gemm")
    root.set("matMul", json::parse(matMul.toJson(), "the matmul plan"));
  return root.write();
}

Tensor createInput(Graph &graph, const ConvParams &params, const DebugContext &debug,
                   const OptionFlags &options, PlanningCache *) {
  params.validate();
  detail::parseConvOptions(options, params.inputType);
  return mappedVariable(graph, params.inputType, inputShape(params), {debug, "input"});
}

Tensor createWeights(Graph &graph, const ConvParams &params, const DebugContext &debug,
                     const OptionFlags &options, PlanningCache *) {
  params.validate();
  detail::parseConvOptions(options, params.inputType);
  return mappedVariable(graph, params.inputType, weightsShape(params), {debug, "weights"});
}

Tensor createConvOutput(Graph &graph, const ConvParams &params, const DebugContext &debug,
                        const OptionFlags &options, PlanningCache *) {
  params.validate();
  detail::parseConvOptions(options, params.inputType);
  return mappedVariable(graph, params.outputType, outputShape(params), {debug, "output"});
}

Tensor createBiases(Graph &graph, const Tensor &acts, const DebugContext &debug) {
  if (!acts.valid() || acts.rank() < 2)
    throw shape_error(fmt::format("createBiases: acts must be [B, C, field...]; it is {}",
                                  acts.valid() ? acts.shapeToString() : "invalid"));
  return mappedVariable(graph, acts.elementType(), {acts.dim(1)}, debug);
}

Tensor createBiases(Graph &graph, const Tensor &acts, const ConvParams &params,
                    const DebugContext &debug, const OptionFlags &options, PlanningCache *) {
  params.validate();
  detail::parseConvOptions(options, params.inputType);
  checkTensor("createBiases", "acts", acts, outputShape(params), params.outputType, params);
  return createBiases(graph, acts, debug);
}

Tensor convolution(Graph &graph, const Tensor &in, const Tensor &weights, const ConvParams &params,
                   bool transposeAndFlipWeights, program::Sequence &prog, const DebugContext &debug,
                   const OptionFlags &options, PlanningCache *cache) {
  params.validate();
  const Tensor out =
      mappedVariable(graph, params.outputType, outputShape(params), {debug, "output"});
  convolve(graph, in, weights, out, params, transposeAndFlipWeights, prog, debug, options, cache);
  return out;
}

void convolutionWithOutput(Graph &graph, const Tensor &in, const Tensor &weights, const Tensor &out,
                           const ConvParams &params, bool transposeAndFlipWeights,
                           program::Sequence &prog, const DebugContext &debug,
                           const OptionFlags &options, PlanningCache *cache) {
  convolve(graph, in, weights, out, params, transposeAndFlipWeights, prog, debug, options, cache);
}

void weightsTransposeChansFlipXY(Graph &graph, const Tensor &weightsIn, const Tensor &weightsOut,
                                 program::Sequence &prog, const DebugContext &debug) {
  (void)graph;
  const char *fn = "weightsTransposeChansFlipXY";
  if (!weightsIn.valid() || !weightsOut.valid() || weightsIn.rank() < 3)
    throw shape_error(fmt::format("{}: weightsIn must be [G, Co, Ci, K...]", fn));
  Shape expected = weightsIn.shape();
  std::swap(expected[1], expected[2]);
  if (weightsOut.shape() != expected)
    throw shape_error(fmt::format("{}: weightsOut has shape {}; weightsIn {} needs [{}]", fn,
                                  weightsOut.shapeToString(), weightsIn.shapeToString(),
                                  fmt::join(expected, ",")));
  if (weightsOut.elementType() != weightsIn.elementType())
    throw type_error(fmt::format("{}: weightsIn is {} and weightsOut {}", fn,
                                 weightsIn.elementType().toString(),
                                 weightsOut.elementType().toString()));
  std::vector<unsigned> order(weightsIn.rank());
  std::iota(order.begin(), order.end(), 0u);
  std::swap(order[1], order[2]);
  Tensor view = weightsIn.dimShuffle(order);
  for (unsigned axis = 3; axis < view.rank(); ++axis)
    view = view.reverse(axis);
  prog.add(program::Copy(view, weightsOut, false, {debug, fn}));
}

Tensor calculateWeightDeltas(Graph &graph, const Tensor &zDeltas, const Tensor &activations,
                             const ConvParams &params, program::Sequence &prog,
                             const DebugContext &debug, const OptionFlags &options,
                             PlanningCache *cache) {
  params.validate();
  const Tensor deltas =
      mappedVariable(graph, params.inputType, weightsShape(params), {debug, "weightDeltas"});
  weightProducts(graph, zDeltas, activations, deltas, params, nullptr, prog, debug, options,
                 cache);
  return deltas;
}

void convolutionWeightUpdate(Graph &graph, const Tensor &zDeltas, const Tensor &weights,
                             const Tensor &activations, const ConvParams &params,
                             const Tensor &scale, program::Sequence &prog,
                             const DebugContext &debug, const OptionFlags &options,
                             PlanningCache *cache) {
  if (!scale.valid() || scale.numElements() != 1 || scale.elementType() != FLOAT)
    throw type_error(fmt::format("convolutionWeightUpdate: scale must be a one-element FLOAT "
                                 "tensor; it is {}",
                                 scale.valid() ? scale.elementType().toString() + " " +
                                                     scale.shapeToString()
                                               : "invalid"));
  weightProducts(graph, zDeltas, activations, weights, params, &scale, prog, debug, options,
                 cache);
}

void convolutionWeightUpdate(Graph &graph, const Tensor &zDeltas, const Tensor &weights,
                             const Tensor &activations, const ConvParams &params, float scale,
                             program::Sequence &prog, const DebugContext &debug,
                             const OptionFlags &options, PlanningCache *cache) {
  convolutionWeightUpdate(graph, zDeltas, weights, activations, params,
                          floatConstant(graph, scale, debug), prog, debug, options, cache);
}

void convolutionBiasUpdate(Graph &graph, const Tensor &zDeltas, const Tensor &biases,
                           const Tensor &scale, const OptionFlags &options,
                           program::Sequence &prog, const DebugContext &debug) {
  const char *fn = "convolutionBiasUpdate";
  if (!zDeltas.valid() || zDeltas.rank() < 2)
    throw shape_error(fmt::format("{}: zDeltas must be [B, C, field...]", fn));
  detail::parseConvOptions(options, zDeltas.elementType());
  if (!biases.valid() || biases.shape() != Shape{zDeltas.dim(1)})
    throw shape_error(fmt::format("{}: biases has shape {}; zDeltas {} needs [{}]", fn,
                                  biases.valid() ? biases.shapeToString() : "(invalid)",
                                  zDeltas.shapeToString(), zDeltas.dim(1)));
  if (!scale.valid() || scale.numElements() != 1 || scale.elementType() != FLOAT)
    throw type_error(fmt::format("{}: scale must be a one-element FLOAT tensor", fn));
  if (biases.numElements() == 0)
    return;
  const Tensor grads = zDeltas.reshape({zDeltas.dim(0), zDeltas.dim(1),
                                        zDeltas.numElements() /
                                            std::max<std::size_t>(1, zDeltas.dim(0) * zDeltas.dim(1))});
  ops::reduceWithOutput(graph, grads, biases, {0, 2},
                        ops::ReduceParams(ops::Operation::ADD, true, scale.reshape({})), prog,
                        {debug, fn});
}

void convolutionBiasUpdate(Graph &graph, const Tensor &zDeltas, const Tensor &biases, float scale,
                           const OptionFlags &options, program::Sequence &prog,
                           const DebugContext &debug) {
  convolutionBiasUpdate(graph, zDeltas, biases, floatConstant(graph, scale, debug), options, prog,
                        debug);
}

void addBias(Graph &graph, const Tensor &acts, const Tensor &biases, program::Sequence &prog,
             const DebugContext &debug) {
  if (!acts.valid() || acts.rank() < 2)
    throw shape_error("addBias: acts must be [B, C, field...]");
  if (!biases.valid() || biases.shape() != Shape{acts.dim(1)})
    throw shape_error(fmt::format("addBias: biases has shape {}; acts {} needs [{}]",
                                  biases.valid() ? biases.shapeToString() : "(invalid)",
                                  acts.shapeToString(), acts.dim(1)));
  Shape perChannel(acts.rank() - 1, 1);
  perChannel[0] = acts.dim(1);
  ops::addInPlace(graph, acts, biases.reshape(perChannel), prog, {debug, "addBias"});
}

std::uint64_t getFwdFlops(const ConvParams &params) { return 2 * multiplyAdds(params); }
std::uint64_t getBwdFlops(const ConvParams &params) { return 2 * multiplyAdds(params); }
std::uint64_t getWuFlops(const ConvParams &params) { return 2 * multiplyAdds(params); }

double getFwdPerfectCycleCount(const Graph &graph, const ConvParams &params) {
  const Target &target = graph.getTarget();
  return double(multiplyAdds(params)) /
         (double(target.getMatMulMacsPerCycle(params.inputType)) * target.getNumTiles());
}
double getBwdPerfectCycleCount(const Graph &graph, const ConvParams &params) {
  return getFwdPerfectCycleCount(graph, params);
}
double getWuPerfectCycleCount(const Graph &graph, const ConvParams &params) {
  return getFwdPerfectCycleCount(graph, params);
}

void convolutionValidateOptions(const OptionFlags &options) {
  // HALF inputs: every option value that any convolution accepts is accepted here.
  detail::parseConvOptions(options, HALF);
}

ConvPlan getConvPlan(const Graph &graph, const ConvParams &params, const OptionFlags &options,
                     PlanningCache *cache) {
  params.validate();
  return planConvolution(graph.getTarget(), params,
                         detail::parseConvOptions(options, params.inputType), cache);
}

void preplan(const std::set<ConvPlanParams> &convs, const std::set<MatMulPlanParams> &matmuls,
             PlanningCache &cache) {
  for (const auto &[target, params, options] : convs) {
    params.validate();
    planConvolution(*target, params,
                    detail::parseConvOptions(options ? *options : OptionFlags{},
                                             params.inputType),
                    &cache);
  }
  preplanMatMuls(matmuls, cache);
}

void reportPlanInfo(std::ostream &out, const Graph &graph, const ConvParams &params,
                    const OptionFlags &options, PlanningCache *cache) {
  const ConvPlan plan = getConvPlan(graph, params, options, cache);
  out << fmt::format("Convolution {}: output [{}]\n", describe(params),
                     fmt::join(params.getOutputFieldShape(), ","));
  if (plan.method == "direct") {
    out << fmt::format("  method:        direct (a vertex an image, group and output channel; "
                       "{})\n",
                       plan.reason);
  } else if (plan.method == "library") {
    out << fmt::format("  method:        library (one convolution call a pass; {})\n",
                       plan.reason);
    out << fmt::format("  lowering:      inside the call, {} bytes at a time\n",
                       plan.loweredBytes);
  } else {
    out << fmt::format("  method:        gemm (lowered input [G, B*P, Ci*T] as views, one grouped "
                       "product per batch chunk; {})\n",
                       plan.reason);
    out << fmt::format("  serial batch:  {} chunk(s) of up to {} image(s); lowered input {} "
                       "bytes a chunk, budget {} bytes\n",
                       plan.batchSerial, plan.batchPerChunk, plan.loweredBytes, plan.budgetBytes);
    out << "  product:\n" << plan.matMul.toString();
  }
  out << fmt::format("  estimate:      {:.0f} cycles\n", plan.estimatedCycles);
}

} // namespace aspen::linalg
