// Pooling (Pooling.hpp): parameters, the window tables, and one compute set a pass whose
// vertices (codelets/nn/pooling.cpp) each take the channels of one tile.
#include "NnWork.hpp"
#include "support/OptionParsing.hpp"

#include <aspen/Error.hpp>
#include <aspen/nn/Pooling.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace aspen::nn {

namespace pooling {

const char *asString(const PoolingType &method) {
  switch (method) {
  case PoolingType::MAX: return "MAX";
  case PoolingType::AVG: return "AVG";
  case PoolingType::SUM: return "SUM";
  }
  throw invalid_option("PoolingType " + std::to_string(int(method)) +
                       " is not MAX, AVG or SUM");
}

} // namespace pooling

std::ostream &operator<<(std::ostream &os, const PoolingType &method) {
  return os << pooling::asString(method);
}

namespace pooling {

namespace {

using program::Execute;
using program::Sequence;

struct PoolOptions {
  bool avgIncludePadding = false;
  unsigned maxRule = 0; // 0 every tie, 2 the first (1: every tie, scaled, from the argument)
};

PoolOptions parseOptions(const OptionFlags &options) {
  PoolOptions parsed;
  bool first = false, introspective = true;
  aspen::detail::OptionSpec("pool")
      .boolean("avgIncludePadding", parsed.avgIncludePadding)
      .enumeration("maxPoolGradient", first, {{"all", false}, {"first", true}})
      .boolean("poolUseIntrospectiveMapping", introspective)
      .parse(options);
  parsed.maxRule = first ? 2 : 0;
  return parsed;
}

std::size_t product(const std::vector<std::size_t> &v) {
  std::size_t n = 1;
  for (std::size_t x : v)
    n *= x;
  return n;
}

// The windows as the vertices read them (codelets/nn/pooling.cpp): offsets [T, P], readers
// [T, F], scales [P], and for the windows inside the field, origins [P] and deltas [T].
struct Windows {
  std::size_t F = 1, P = 1, T = 1;
  std::vector<int> offsets, readers, origins, deltas;
  std::vector<float> scales;
};

Windows windowsOf(const PoolParams &p, bool avgIncludePadding) {
  const std::vector<std::size_t> out = p.getOutputFieldShape();
  const std::size_t dims = p.getNumFieldDims();
  Windows w;
  w.F = product(p.inputFieldShape), w.P = product(out), w.T = product(p.kernelShape);
  if (w.F > std::size_t(INT_MAX) || w.P > std::size_t(INT_MAX))
    throw invalid_option(fmt::format("pool: a channel of {} input and {} output elements is more "
                                     "than the vertices index (2^31 - 1)",
                                     w.F, w.P));
  w.offsets.assign(w.T * w.P, -1);
  w.readers.assign(w.T * w.F, -1);
  w.scales.assign(w.P, 1.0f);
  w.origins.assign(w.P, -1);
  w.deltas.assign(w.T, 0);
  std::vector<std::size_t> o(dims, 0), k(dims, 0);
  // Kernel position t of a window is the window's first element plus deltas[t] in the flattened
  // field (row-major, as the taps).
  for (std::size_t t = 0; t < w.T; ++t) {
    std::size_t rest = t;
    std::int64_t delta = 0, step = 1;
    for (std::size_t d = dims; d-- > 0;) {
      delta += std::int64_t(rest % p.kernelShape[d]) * step;
      rest /= p.kernelShape[d];
      step *= std::int64_t(p.inputFieldShape[d]);
    }
    w.deltas[t] = int(delta);
  }
  for (std::size_t pIndex = 0; pIndex < w.P; ++pIndex) {
    std::size_t rest = pIndex;
    for (std::size_t d = dims; d-- > 0;)
      o[d] = rest % out[d], rest /= out[d];
    std::size_t used = 0;
    for (std::size_t t = 0; t < w.T; ++t) {
      rest = t;
      for (std::size_t d = dims; d-- > 0;)
        k[d] = rest % p.kernelShape[d], rest /= p.kernelShape[d];
      // Position o * stride + k of the padded field is input element that minus the lower
      // padding (plus the lower truncation); real when inside what truncation leaves.
      std::int64_t flat = 0;
      bool real = true;
      for (std::size_t d = 0; d < dims && real; ++d) {
        const std::int64_t i = std::int64_t(o[d] * p.stride[d] + k[d]) -
                               p.inputTruncationOrPaddingLower[d];
        const std::int64_t upper = std::int64_t(p.inputFieldShape[d]) -
                                   std::max(0, -p.inputTruncationOrPaddingUpper[d]);
        real = i >= std::max(0, -p.inputTruncationOrPaddingLower[d]) && i < upper;
        flat = flat * std::int64_t(p.inputFieldShape[d]) + i;
      }
      if (!real)
        continue;
      ++used;
      w.offsets[t * w.P + pIndex] = int(flat);
      w.readers[t * w.F + std::size_t(flat)] = int(pIndex);
    }
    if (used == w.T) // every position real: the window is its origin plus the deltas
      w.origins[pIndex] = w.offsets[pIndex];
    if (p.poolingType == PoolingType::AVG) {
      const std::size_t divisor = avgIncludePadding ? w.T : used;
      w.scales[pIndex] = divisor == 0 ? 0.0f : float(1.0 / double(divisor));
    }
  }
  return w;
}

std::string paramsText(const PoolParams &p) {
  std::ostringstream os;
  os << p;
  return os.str();
}

// Checks t is [batchSize, numChannels, field...] of dType.
void checkTensor(const char *fn, const char *role, const Tensor &t, const PoolParams &p,
                 const std::vector<std::size_t> &field) {
  std::vector<std::size_t> shape = {p.batchSize, p.numChannels};
  shape.insert(shape.end(), field.begin(), field.end());
  if (t.shape() != shape)
    throw shape_error(fmt::format("{}: {} {} must have shape [{}], as the parameters ({}) give",
                                  fn, role, work::describe(t), fmt::join(shape, ","),
                                  paramsText(p)));
  if (t.elementType() != p.dType)
    throw type_error(fmt::format("{}: {} {} must be {}, the parameters' dType", fn, role,
                                 work::describe(t), p.dType.toString()));
}

struct Tables {
  Tensor offsets, readers, scales, origins, deltas;
};

Tables addTables(Graph &graph, const Windows &w, const DebugContext &debug) {
  Tables t;
  t.offsets = graph.addConstant<int>(INT, {w.offsets.size()}, w.offsets, {debug, "offsets"});
  t.readers = graph.addConstant<int>(INT, {w.readers.size()}, w.readers, {debug, "readers"});
  t.scales = graph.addConstant<float>(FLOAT, {w.scales.size()}, w.scales, {debug, "scales"});
  t.origins = graph.addConstant<int>(INT, {w.origins.size()}, w.origins, {debug, "origins"});
  t.deltas = graph.addConstant<int>(INT, {w.deltas.size()}, w.deltas, {debug, "deltas"});
  for (const Tensor &table : {t.offsets, t.readers, t.scales, t.origins, t.deltas})
    graph.setTileMapping(table, 0);
  return t;
}

// A [B*C, perRow] result mapped like `rows`' channels, returned as [B, C, field...].
Tensor addChannelResult(Graph &graph, const PoolParams &p,
                        const std::vector<std::vector<Interval>> &tileRows,
                        const std::vector<std::size_t> &field, const DebugContext &debug) {
  const std::size_t perRow = product(field);
  Tensor result =
      work::addRowResult(graph, p.dType, tileRows, p.batchSize * p.numChannels, perRow, debug);
  std::vector<std::size_t> shape = {p.batchSize, p.numChannels};
  shape.insert(shape.end(), field.begin(), field.end());
  return result.reshape(shape);
}

Tensor channelRows(const Tensor &t, std::size_t perRow) {
  return t.reshape({t.dim(0) * t.dim(1), perRow});
}

// The gradient of AVG or SUM pooling (from pooledGradient alone), or of MAX with rule `rule`.
Tensor inputGradient(Graph &graph, const PoolParams &p, const Tensor *in, const Tensor *pooled,
                     const Tensor &pooledGradient, unsigned rule, bool avgIncludePadding,
                     Sequence &prog, const DebugContext &debug) {
  const Windows w = windowsOf(p, avgIncludePadding);
  const std::size_t rows = p.batchSize * p.numChannels;
  // The gradient lives where the forward input does (or, without it, its gradient's rows).
  const Tensor placed = in ? channelRows(*in, w.F) : channelRows(pooledGradient, w.P);
  const auto tileRows =
      rows == 0 ? std::vector<std::vector<Interval>>() : work::rowsByTile(graph, placed);
  Tensor inGrad = addChannelResult(graph, p, tileRows, p.inputFieldShape, {debug, "inGradient"});
  if (rows == 0)
    return inGrad;
  const Tables tables = addTables(graph, w, debug);
  const bool max = p.poolingType == PoolingType::MAX;
  // MAX in float off the GPU: window by window, a worker a row (codelets/nn/pooling.cpp).
  const bool byWindow = max && p.dType == FLOAT && !graph.getTarget().isGpu();
  ComputeSet cs = graph.addComputeSet({debug, "poolInputGradient"});
  const std::string vertex = util::templateVertex(
      byWindow ? "aspen::nn::MaxPoolGradRows"
               : (max ? "aspen::nn::MaxPoolGrad" : "aspen::nn::SumPoolGrad"),
      p.dType);
  const Tensor dyRows = channelRows(pooledGradient, w.P), dxRows = channelRows(inGrad, w.F);
  work::addRowVertices(graph, cs, vertex, tileRows, [&](VertexRef v, const auto &intervals) {
    graph.connect(v["pooledGrad"], work::rowList(dyRows, intervals));
    graph.connect(v["inGrad"], work::rowList(dxRows, intervals));
    if (!byWindow)
      graph.connect(v["readers"], tables.readers);
    graph.setInitialValue(v["taps"], unsigned(w.T));
    if (max) {
      graph.connect(v["in"], work::rowList(channelRows(*in, w.F), intervals));
      graph.connect(v["pooled"], work::rowList(channelRows(*pooled, w.P), intervals));
      graph.connect(v["offsets"], tables.offsets);
      if (byWindow) {
        graph.connect(v["origins"], tables.origins);
        graph.connect(v["deltas"], tables.deltas);
      }
      graph.setInitialValue(v["rule"], rule);
    } else {
      graph.connect(v["scales"], tables.scales);
    }
  });
  prog.add(Execute(cs, {debug, "poolInputGradient"}));
  return inGrad;
}

} // namespace

PoolParams::PoolParams(PoolingType poolingType, std::vector<std::size_t> inputFieldShape,
                       std::vector<std::size_t> kernelShape, std::vector<unsigned> stride,
                       std::vector<int> inputTruncationOrPaddingLower,
                       std::vector<int> inputTruncationOrPaddingUpper, std::size_t numChannels,
                       std::size_t batchSize, Type dType)
    : poolingType(poolingType), inputFieldShape(std::move(inputFieldShape)),
      kernelShape(std::move(kernelShape)), stride(std::move(stride)),
      inputTruncationOrPaddingLower(std::move(inputTruncationOrPaddingLower)),
      inputTruncationOrPaddingUpper(std::move(inputTruncationOrPaddingUpper)),
      numChannels(numChannels), batchSize(batchSize), dType(dType) {}

void PoolParams::validate() const {
  const std::string what = "PoolParams " + paramsText(*this);
  asString(poolingType);
  const std::size_t dims = getNumFieldDims();
  if (kernelShape.size() != dims || stride.size() != dims ||
      inputTruncationOrPaddingLower.size() != dims || inputTruncationOrPaddingUpper.size() != dims)
    throw invalid_option(what + ": kernelShape, stride and both paddings need one entry a field "
                                "dimension (" + std::to_string(dims) + ")");
  if (dType != FLOAT && dType != HALF)
    throw invalid_option(what + ": dType must be float or half, not " + dType.toString());
  for (std::size_t d = 0; d < dims; ++d) {
    const std::int64_t F = std::int64_t(inputFieldShape[d]),
                       lower = inputTruncationOrPaddingLower[d],
                       upper = inputTruncationOrPaddingUpper[d];
    if (kernelShape[d] == 0 || stride[d] == 0)
      throw invalid_option(fmt::format("{}: dimension {} has a kernel of {} and a stride of {}; "
                                       "both must be at least 1",
                                       what, d, kernelShape[d], stride[d]));
    if (F + std::min<std::int64_t>(lower, 0) + std::min<std::int64_t>(upper, 0) < 1)
      throw invalid_option(fmt::format("{}: dimension {} truncates all of its {} input elements",
                                       what, d, F));
    if (F + lower + upper < std::int64_t(kernelShape[d]))
      throw invalid_option(fmt::format("{}: dimension {} has {} positions after padding and "
                                       "truncation, fewer than the kernel's {}: no output",
                                       what, d, F + lower + upper, kernelShape[d]));
  }
}

std::vector<std::size_t> PoolParams::getOutputFieldShape() const {
  validate();
  std::vector<std::size_t> out;
  for (std::size_t d = 0; d < getNumFieldDims(); ++d)
    out.push_back(std::size_t(std::int64_t(inputFieldShape[d]) + inputTruncationOrPaddingLower[d] +
                              inputTruncationOrPaddingUpper[d] - std::int64_t(kernelShape[d])) /
                      stride[d] +
                  1);
  return out;
}

std::ostream &operator<<(std::ostream &os, const PoolParams &p) {
  os << "{" << (int(p.poolingType) >= 0 && int(p.poolingType) <= 2 ? asString(p.poolingType) : "?")
     << ", field " << fmt::format("{}", fmt::join(p.inputFieldShape, "x")) << ", kernel "
     << fmt::format("{}", fmt::join(p.kernelShape, "x")) << ", stride "
     << fmt::format("{}", fmt::join(p.stride, "x")) << ", padding "
     << fmt::format("{}/{}", fmt::join(p.inputTruncationOrPaddingLower, ","),
                    fmt::join(p.inputTruncationOrPaddingUpper, ","))
     << ", " << p.numChannels << " channels, batch " << p.batchSize << ", " << p.dType << "}";
  return os;
}

std::vector<std::size_t> getOutputFieldShape(const PoolParams &params) {
  return params.getOutputFieldShape();
}

namespace {
// Window elements read (each one operation) and, for AVG, one division an output.
std::uint64_t windowOperations(const PoolParams &p) {
  const Windows w = windowsOf(p, false);
  std::uint64_t reads = 0;
  for (int o : w.offsets)
    reads += o >= 0;
  const std::uint64_t perChannel = reads + (p.poolingType == PoolingType::AVG ? w.P : 0);
  return perChannel * p.batchSize * p.numChannels;
}
double perfectCycles(const Graph &graph, const PoolParams &p, std::uint64_t operations) {
  const Target &target = graph.getTarget();
  const double lanes = double(target.getVectorWidth(p.dType)) * target.getNumWorkerContexts() *
                       target.getNumTiles();
  return double(operations) / std::max(lanes, 1.0);
}
} // namespace

std::uint64_t getFwdFlops(const PoolParams &params) { return windowOperations(params); }
std::uint64_t getBwdFlops(const PoolParams &params) { return windowOperations(params); }
double getFwdPerfectCycleCount(const Graph &graph, const PoolParams &params) {
  return perfectCycles(graph, params, getFwdFlops(params));
}
double getBwdPerfectCycleCount(const Graph &graph, const PoolParams &params) {
  return perfectCycles(graph, params, getBwdFlops(params));
}

Tensor pool(Graph &graph, const PoolParams &params, const Tensor &in, Sequence &prog,
            const DebugContext &debug, const OptionFlags &options) {
  const char *fn = "pool";
  const PoolOptions o = parseOptions(options);
  const std::vector<std::size_t> out = params.getOutputFieldShape();
  checkTensor(fn, "in", in, params, params.inputFieldShape);
  const Windows w = windowsOf(params, o.avgIncludePadding);
  const std::size_t rows = params.batchSize * params.numChannels;
  const Tensor inRows = channelRows(in, w.F);
  const auto tileRows =
      rows == 0 ? std::vector<std::vector<Interval>>() : work::rowsByTile(graph, inRows);
  Tensor result = addChannelResult(graph, params, tileRows, out, {debug, "pooled"});
  if (rows == 0)
    return result;
  const Tables tables = addTables(graph, w, debug);
  ComputeSet cs = graph.addComputeSet({debug, "pool"});
  const Tensor outRows = channelRows(result, w.P);
  work::addRowVertices(graph, cs, util::templateVertex("aspen::nn::PoolForward", params.dType),
                       tileRows, [&](VertexRef v, const auto &intervals) {
                         graph.connect(v["in"], work::rowList(inRows, intervals));
                         graph.connect(v["out"], work::rowList(outRows, intervals));
                         graph.connect(v["offsets"], tables.offsets);
                         graph.connect(v["origins"], tables.origins);
                         graph.connect(v["deltas"], tables.deltas);
                         graph.connect(v["scales"], tables.scales);
                         graph.setInitialValue(v["taps"], unsigned(w.T));
                         graph.setInitialValue(
                             v["kind"], params.poolingType == PoolingType::MAX ? 0u : 1u);
                       });
  prog.add(Execute(cs, {debug, "pool"}));
  return result;
}

Tensor poolInputGradient(Graph &graph, const PoolParams &params, const Tensor &in,
                         const Tensor &pooled, const Tensor &pooledGradient,
                         bool useScaledGradient, Sequence &prog, const DebugContext &debug,
                         const OptionFlags &options) {
  const char *fn = "poolInputGradient";
  const PoolOptions o = parseOptions(options);
  const std::vector<std::size_t> out = params.getOutputFieldShape();
  checkTensor(fn, "in", in, params, params.inputFieldShape);
  checkTensor(fn, "pooled", pooled, params, out);
  checkTensor(fn, "pooledGradient", pooledGradient, params, out);
  const unsigned rule = o.maxRule == 2 ? 2u : useScaledGradient ? 1u : 0u;
  return inputGradient(graph, params, &in, &pooled, pooledGradient, rule, o.avgIncludePadding,
                       prog, debug);
}

Tensor poolInputGradient(Graph &graph, const PoolParams &params, unsigned fwdChansPerGroup,
                         const Tensor &pooledGradient, Sequence &prog, const DebugContext &debug,
                         const OptionFlags &options) {
  const char *fn = "poolInputGradient";
  const PoolOptions o = parseOptions(options);
  const std::vector<std::size_t> out = params.getOutputFieldShape();
  if (params.poolingType == PoolingType::MAX)
    throw invalid_option(std::string(fn) + ": MAX pooling's gradient needs the forward's input "
                                           "and output; call the form that takes them");
  if (fwdChansPerGroup == 0 || params.numChannels % fwdChansPerGroup != 0)
    throw invalid_option(fmt::format("{}: fwdChansPerGroup = {} must divide the {} channels", fn,
                                     fwdChansPerGroup, params.numChannels));
  checkTensor(fn, "pooledGradient", pooledGradient, params, out);
  return inputGradient(graph, params, nullptr, nullptr, pooledGradient, 0, o.avgIncludePadding,
                       prog, debug);
}

} // namespace pooling

} // namespace aspen::nn
