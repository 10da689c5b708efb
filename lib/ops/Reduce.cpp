// reduce, reduceWithOutput, reduceMany: checks, then the two compute sets of ReducePlan.hpp.
#include "ReducePlan.hpp"
#include "support/OptionParsing.hpp"

#include <aspen/ops/Reduce.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <algorithm>
#include <iterator>
#include <string>

namespace aspen::ops {

const char *toString(Operation op) {
  switch (op) {
#define ASPEN_REDUCE_OPERATION_NAME(name, identity, types, compensated)                            \
  case Operation::name:                                                                            \
    return #name;
    ASPEN_FOR_EACH_REDUCE_OPERATION(ASPEN_REDUCE_OPERATION_NAME)
#undef ASPEN_REDUCE_OPERATION_NAME
  }
  return "?";
}

namespace {

enum class TypeRule { Numeric, Logical, Floating };
struct OperationInfo {
  TypeRule types;
  bool compensated;
};
constexpr OperationInfo kOperations[] = {
#define ASPEN_REDUCE_OPERATION_INFO(name, identity, types, compensated)                            \
  {TypeRule::types, compensated},
    ASPEN_FOR_EACH_REDUCE_OPERATION(ASPEN_REDUCE_OPERATION_INFO)
#undef ASPEN_REDUCE_OPERATION_INFO
};
static_assert(std::size(kOperations) == kNumOperations);

const OperationInfo &info(Operation op) { return kOperations[static_cast<unsigned>(op)]; }

Type accumulatorType(Type in) { return in.isFloatingPoint() ? FLOAT : in; }
unsigned stateWidth(Operation op, Type in) {
  return info(op).compensated && accumulatorType(in) == FLOAT ? 2 : 1;
}

struct Options {
  unsigned minElementsPerWorker = 256;
};
Options parseOptions(const OptionFlags &options) {
  Options parsed;
  aspen::detail::OptionSpec("reduce")
      .unsignedInteger("minElementsPerWorker", parsed.minElementsPerWorker, 1)
      .parse(options);
  return parsed;
}

// One checked reduction; out is invalid until build() creates it.
struct Reduction {
  Tensor in, out;
  Type outType;
  std::vector<std::size_t> dims, outShape;
  ReduceParams params;
  std::string name;
};

std::string what(const Reduction &r) {
  return "reduce " + std::string(toString(r.params.op)) +
         (r.name.empty() ? "" : " '" + r.name + "'") + " of " + r.in.getDebugStr();
}

void checkTypes(const Reduction &r) {
  const Type in = r.in.elementType();
  bool inOk = false;
  const char *allowed = "";
  switch (info(r.params.op).types) {
  case TypeRule::Numeric:
    inOk = in == FLOAT || in == HALF || in == INT || in == UNSIGNED_INT;
    allowed = "float, half, int or unsigned int";
    break;
  case TypeRule::Floating:
    inOk = in == FLOAT || in == HALF;
    allowed = "float or half";
    break;
  case TypeRule::Logical:
    inOk = in == BOOL;
    allowed = "bool";
    break;
  }
  if (!inOk)
    throw type_error(what(r) + ": input type " + in.toString() + " is not allowed (" + allowed +
                     ")");
  const bool outOk =
      in.isFloatingPoint() ? r.outType == FLOAT || r.outType == HALF : r.outType == in;
  if (!outOk)
    throw type_error(what(r) + ": output type " + r.outType.toString() +
                     " does not fit input type " + in.toString() + " (" +
                     (in.isFloatingPoint() ? std::string("float or half") : in.toString()) + ")");
}

void checkDims(Reduction &r) {
  const auto shape = r.in.shape();
  for (std::size_t i = 0; i < r.dims.size(); ++i) {
    if (r.dims[i] >= shape.size())
      throw index_error(what(r) + ": dimension " + std::to_string(r.dims[i]) +
                        " is out of range for rank " + std::to_string(shape.size()));
    if (std::find(r.dims.begin(), r.dims.begin() + i, r.dims[i]) != r.dims.begin() + i)
      throw index_error(what(r) + ": dimension " + std::to_string(r.dims[i]) + " is listed twice");
  }
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (std::find(r.dims.begin(), r.dims.end(), d) == r.dims.end())
      r.outShape.push_back(shape[d]);
}

void checkScale(const Reduction &r) {
  if (!r.params.useScale)
    return;
  const Tensor &s = r.params.scale;
  if (!s.valid())
    throw shape_error(what(r) + ": useScale is set but the scale tensor is invalid");
  if (s.numElements() != 1)
    throw shape_error(what(r) + ": scale " + s.getDebugStr() + " must have one element");
  if (s.elementType() != FLOAT)
    throw type_error(what(r) + ": scale " + s.getDebugStr() + " has type " +
                     s.elementType().toString() + ", not float");
  if (info(r.params.op).types == TypeRule::Logical)
    throw type_error(what(r) + ": a scale does not apply to " + toString(r.params.op));
}

std::string shapeString(const std::vector<std::size_t> &shape) {
  std::string s = "{";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "}";
}

Reduction check(const Graph &graph, Tensor in, Tensor out, Type outType,
                std::vector<std::size_t> dims, ReduceParams params, std::string name) {
  Reduction r{std::move(in),     std::move(out), outType, std::move(dims), {},
              std::move(params), std::move(name)};
  if (!r.in.valid())
    throw tensor_creation_error("reduce '" + r.name + "': the input tensor is invalid");
  if (r.out.valid())
    r.outType = r.out.elementType();
  checkTypes(r);
  checkDims(r);
  checkScale(r);
  if (r.out.valid() && r.out.shape() != r.outShape)
    throw shape_error(what(r) + ": output " + r.out.getDebugStr() +
                      " does not have the reduced shape " + shapeString(r.outShape));
  graph.getTileMapping(r.in);
  if (r.out.valid())
    graph.getTileMapping(r.out);
  return r;
}

// Adds the vertices of r to the two compute sets.
void build(Graph &graph, Reduction &r, ComputeSet partialsSet, ComputeSet finalSet,
           const Options &options, const DebugContext &debug) {
  if (!r.out.valid()) {
    r.out = graph.addVariable(r.outType, r.outShape, {debug, r.name + "/out"});
    util::mapTensorLinearly(graph, r.out);
  }
  if (r.out.numElements() == 0)
    return;
  const Type inType = r.in.elementType(), accType = accumulatorType(inType);
  const unsigned W = stateWidth(r.params.op, inType);
  const detail::ReduceGeometry geometry(r.in.shape(), r.dims);
  const detail::ReducePlan plan =
      detail::planReduction(graph, r.in, r.out, geometry, options.minElementsPerWorker);
  const std::string op = std::string("aspen::ops::Operation::") + toString(r.params.op);

  const Tensor inFlat = r.in.flatten(), outFlat = r.out.flatten();
  // W planes of the partial slots: value w of slot s at [w * numPartialSlots + s].
  const std::size_t S = plan.numPartialSlots;
  const Tensor partials = graph.addVariable(accType, {S * W}, {debug, r.name + "/partials"});
  const Tensor states =
      graph.addVariable(accType, {plan.numStateSlots * W}, {debug, r.name + "/states"});
  // Without a scale: the scale that changes nothing (1; 0 for LOG_ADD, whose scale is added).
  const float neutralScale = r.params.op == Operation::LOG_ADD ? 0.0f : 1.0f;
  Tensor scale = r.params.useScale
                     ? r.params.scale.reshape({})
                     : graph.addConstant(FLOAT, {}, neutralScale, {debug, r.name + "/scale"});
  if (!r.params.useScale)
    graph.setTileMapping(scale, plan.finals.front().tile);

  for (const detail::PartialsTile &tile : plan.partials) {
    auto v = graph.addVertex(
        partialsSet, util::templateVertex("aspen::ops::ReducePartial", op, inType, accType));
    std::vector<Tensor> segments, slots;
    std::vector<unsigned> segmentSlot, segmentGroup;
    for (const detail::ReduceSegment &s : tile.segments) {
      segments.push_back(inFlat.slice(s.begin, s.end));
      segmentSlot.push_back(s.slot);
      segmentGroup.push_back(s.group);
    }
    for (const Interval &p : tile.partitionSlots)
      for (unsigned w = 0; w < W; ++w) {
        slots.push_back(partials.slice(w * S + p.begin(), w * S + p.end()));
        graph.setTileMapping(slots.back(), tile.tile);
      }
    graph.connect(v["in"], segments);
    graph.setInitialValue(v["segmentSlot"], segmentSlot);
    graph.setInitialValue(v["segmentGroup"], segmentGroup);
    graph.setInitialValue(v["partitionSegments"], tile.partitionSegments);
    graph.connect(v["partials"], slots);
    graph.setTileMapping(v, tile.tile);
  }

  for (const detail::FinalTile &tile : plan.finals) {
    const std::size_t slots = tile.partitionSlots.back();
    const Tensor tileStates = states.slice(tile.slotBase * W, (tile.slotBase + slots) * W);
    graph.setTileMapping(tileStates, tile.tile);
    auto v = graph.addVertex(
        finalSet, util::templateVertex("aspen::ops::ReduceFinal", op, accType, r.outType));
    std::vector<Tensor> runs, outs;
    std::vector<unsigned> runSlot, runGroup;
    for (const detail::FinalRun &run : tile.runs) {
      for (unsigned w = 0; w < W; ++w)
        runs.push_back(partials.slice(w * S + run.slot, w * S + run.slot + run.count));
      runSlot.push_back(run.localSlot);
      runGroup.push_back(run.group);
    }
    for (const Interval &region : tile.outRegions)
      outs.push_back(outFlat.slice(region.begin(), region.end()));
    graph.setFieldSize(v["runs"], runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i)
      graph.connect(v["runs"][i], runs[i]);
    graph.setInitialValue(v["runSlot"], runSlot);
    graph.setInitialValue(v["runGroup"], runGroup);
    graph.setInitialValue(v["partitionRuns"], tile.partitionRuns);
    graph.setInitialValue(v["partitionSlots"], tile.partitionSlots);
    graph.connect(v["states"], tileStates);
    graph.connect(v["out"], concat(outs));
    graph.connect(v["scale"], scale);
    graph.setInitialValue(v["update"], r.params.update);
    graph.setTileMapping(v, tile.tile);
  }
}

ComputeSet computeSet(Graph &graph, std::vector<ComputeSet> &css, std::size_t i,
                      const DebugContext &debug) {
  static const char *const names[] = {"reduce/partials", "reduce/final"};
  while (css.size() <= i)
    css.push_back(graph.addComputeSet({debug, names[css.size()]}));
  return css[i];
}

// Checks everything, then builds: a failed check leaves the graph as it was.
void reduceAll(Graph &graph, std::vector<Reduction> &reductions, std::vector<ComputeSet> &css,
               const DebugContext &debug, const OptionFlags &optionFlags) {
  const Options options = parseOptions(optionFlags);
  const ComputeSet partialsSet = computeSet(graph, css, 0, debug);
  const ComputeSet finalSet = computeSet(graph, css, 1, debug);
  for (Reduction &r : reductions)
    build(graph, r, partialsSet, finalSet, options, {debug, r.name});
}

void appendExecutes(program::Sequence &prog, const std::vector<ComputeSet> &css,
                    const DebugContext &debug) {
  for (const ComputeSet &cs : css)
    prog.add(program::Execute(cs, debug));
}

Tensor reduceOne(Graph &graph, const Tensor &in, const Tensor &out, Type outType,
                 const std::vector<std::size_t> &dims, const ReduceParams &params,
                 std::vector<ComputeSet> &css, const DebugContext &debug,
                 const OptionFlags &options) {
  std::vector<Reduction> reductions{
      check(graph, in, out, outType, dims, params, debug.getPathName())};
  reduceAll(graph, reductions, css, debug, options);
  return reductions.front().out;
}

} // namespace

Tensor reduce(Graph &graph, const Tensor &in, const Type &outType,
              const std::vector<std::size_t> &dims, ReduceParams params,
              std::vector<ComputeSet> &css, const DebugContext &debug, const OptionFlags &options) {
  return reduceOne(graph, in, Tensor(), outType, dims, params, css, debug, options);
}

Tensor reduce(Graph &graph, const Tensor &in, const std::vector<std::size_t> &dims,
              ReduceParams params, std::vector<ComputeSet> &css, const DebugContext &debug,
              const OptionFlags &options) {
  return reduce(graph, in, in.valid() ? in.elementType() : Type(), dims, std::move(params), css,
                debug, options);
}

Tensor reduce(Graph &graph, const Tensor &in, const Type &outType,
              const std::vector<std::size_t> &dims, ReduceParams params, program::Sequence &prog,
              const DebugContext &debug, const OptionFlags &options) {
  std::vector<ComputeSet> css;
  Tensor out = reduce(graph, in, outType, dims, std::move(params), css, debug, options);
  appendExecutes(prog, css, debug);
  return out;
}

Tensor reduce(Graph &graph, const Tensor &in, const std::vector<std::size_t> &dims,
              ReduceParams params, program::Sequence &prog, const DebugContext &debug,
              const OptionFlags &options) {
  return reduce(graph, in, in.valid() ? in.elementType() : Type(), dims, std::move(params), prog,
                debug, options);
}

void reduceWithOutput(Graph &graph, const Tensor &in, const Tensor &out,
                      const std::vector<std::size_t> &dims, ReduceParams params,
                      std::vector<ComputeSet> &css, const DebugContext &debug,
                      const OptionFlags &options) {
  if (!out.valid())
    throw tensor_creation_error("reduceWithOutput '" + debug.getPathName() +
                                "': the output tensor is invalid");
  reduceOne(graph, in, out, out.elementType(), dims, params, css, debug, options);
}

void reduceWithOutput(Graph &graph, const Tensor &in, const Tensor &out,
                      const std::vector<std::size_t> &dims, ReduceParams params,
                      program::Sequence &prog, const DebugContext &debug,
                      const OptionFlags &options) {
  std::vector<ComputeSet> css;
  reduceWithOutput(graph, in, out, dims, std::move(params), css, debug, options);
  appendExecutes(prog, css, debug);
}

void reduceMany(Graph &graph, const std::vector<SingleReduceOp> &ops, std::vector<Tensor> &outputs,
                program::Sequence &prog, const DebugContext &debug, const OptionFlags &options) {
  if (!outputs.empty() && outputs.size() != ops.size())
    throw shape_error("reduceMany '" + debug.getPathName() +
                      "': " + std::to_string(outputs.size()) + " outputs for " +
                      std::to_string(ops.size()) + " reductions");
  std::vector<Reduction> reductions;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const SingleReduceOp &op = ops[i];
    const Type outType = op.useOutType ? op.outType : op.in.valid() ? op.in.elementType() : Type();
    reductions.push_back(check(graph, op.in, outputs.empty() ? Tensor() : outputs[i], outType,
                               op.dims, op.params,
                               op.debugName.empty() ? std::to_string(i) : op.debugName));
  }
  if (reductions.empty()) {
    parseOptions(options);
    return;
  }
  std::vector<ComputeSet> css;
  reduceAll(graph, reductions, css, debug, options);
  appendExecutes(prog, css, debug);
  outputs.clear();
  for (const Reduction &r : reductions)
    outputs.push_back(r.out);
}

std::vector<Tensor> reduceMany(Graph &graph, const std::vector<SingleReduceOp> &ops,
                               program::Sequence &prog, const DebugContext &debug,
                               const OptionFlags &options) {
  std::vector<Tensor> outputs;
  reduceMany(graph, ops, outputs, prog, debug, options);
  return outputs;
}

} // namespace aspen::ops
