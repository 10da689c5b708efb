// The generic recurrent loop (aspen::nn::rnn): sequence tensors laid out per shard, and Rnn, a
// Repeat over time steps whose body slices the sequences at the step read on the device.
//
// One step of the loop, in both forms:
//   Execute(control)          RnnStepControl: t, its offset in the shard, active, gather, masks
//   If(active,                steps past the longest sequence do nothing
//      slices of the inputs   RnnSliceStep at the offset: only that step is read
//      the body               built by loopFn
//      stores of the outputs  RnnStoreStep at the offset)
// Shards run one after the other. With code reuse every shard copies its chunk into a window of
// ceil(T / numShards) steps that one body (a Function) works on, and copies its outputs back.
#include "support/CheckedSize.hpp"
#include "RnnLoop.hpp"

#include "NnWork.hpp"
#include "support/OptionParsing.hpp"

#include <aspen/Error.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/ops/Zero.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace aspen::nn::rnn {

using program::Copy;
using program::Execute;
using program::If;
using program::Repeat;
using program::Sequence;

RnnParams::RnnParams(Type dataType, std::size_t batchSize, std::size_t timeSteps,
                     std::vector<std::size_t> layerSizes)
    : dataType(dataType), batchSize(batchSize), maxTimeSteps(timeSteps), timeSteps(timeSteps),
      layerSizes(std::move(layerSizes)) {}

RnnParams::RnnParams(Type dataType, std::size_t batchSize, std::size_t maxTimeSteps,
                     const Tensor &varTimeSteps, std::vector<std::size_t> layerSizes)
    : dataType(dataType), batchSize(batchSize), maxTimeSteps(maxTimeSteps),
      timeSteps(maxTimeSteps), varTimeSteps(varTimeSteps), layerSizes(std::move(layerSizes)) {}

std::size_t RnnParams::getMaxShards(const Graph &) const {
  return std::max<std::size_t>(1, maxTimeSteps);
}

std::size_t RnnParams::getMaxShardSize(unsigned numShards) const {
  return numShards == 0 ? maxTimeSteps : (maxTimeSteps + numShards - 1) / numShards;
}

namespace {

std::size_t layerSize(const RnnParams &params, unsigned which) {
  return params.layerSizes.size() > which ? params.layerSizes[which] : 0;
}

std::size_t stepBytesPerTile(const Graph &graph, const RnnParams &params, std::size_t size) {
  const std::size_t tiles = graph.getTarget().getNumTiles();
  const std::size_t elements = params.batchSize * size;
  return (elements + tiles - 1) / tiles * graph.getTarget().getTypeSize(params.dataType);
}

} // namespace

std::size_t RnnParams::getInputBytesPerTile(const Graph &graph) const {
  return stepBytesPerTile(graph, *this, layerSize(*this, 0));
}
std::size_t RnnParams::getOutputBytesPerTile(const Graph &graph) const {
  return stepBytesPerTile(graph, *this, layerSize(*this, 1));
}
bool RnnParams::variableTimeSteps() const { return varTimeSteps.valid(); }
bool RnnParams::batchVariableTimeSteps() const {
  return varTimeSteps.valid() && varTimeSteps.numElements() > 1;
}

namespace detail {

TileRange shardTiles(const Target &target, unsigned shard, unsigned numShards) {
  const unsigned tiles = target.getNumTiles();
  if (numShards >= tiles)
    return {shard % tiles, 1};
  const unsigned first = static_cast<unsigned>(std::uint64_t(shard) * tiles / numShards);
  const unsigned last = static_cast<unsigned>(std::uint64_t(shard + 1) * tiles / numShards);
  return {first, last - first};
}

void mapSteps(Graph &graph, const Tensor &t, TileRange range) {
  // t: [n, B, size]; every step [B, size] is spread over the range the same way: whole rows
  // per tile when there are enough rows, else runs of elements.
  if (t.numElements() == 0)
    return;
  const std::size_t n = t.dim(0), rows = t.dim(1), size = t.dim(2);
  const std::size_t stepElements = rows * size;
  std::vector<std::pair<std::size_t, std::size_t>> pieces; // [begin, end) within a step
  const std::size_t count = range.count;
  if (rows >= count) {
    for (std::size_t k = 0; k < count; ++k)
      pieces.emplace_back(k * rows / count * size, (k + 1) * rows / count * size);
  } else {
    const std::size_t used = std::min<std::size_t>(count, stepElements);
    for (std::size_t k = 0; k < used; ++k)
      pieces.emplace_back(k * stepElements / used, (k + 1) * stepElements / used);
  }
  TileToTensorMapping mapping(graph.getTarget().getNumTiles());
  for (std::size_t step = 0; step < n; ++step)
    for (std::size_t k = 0; k < pieces.size(); ++k)
      if (pieces[k].first < pieces[k].second)
        mapping[range.first + k].push_back(
            Interval(step * stepElements + pieces[k].first, step * stepElements + pieces[k].second));
  graph.setTileMapping(t, mapping);
}

void mapSequence(Graph &graph, const Tensor &t, unsigned numShards) {
  const std::size_t steps = t.dim(0);
  const std::size_t shardSize = (steps + numShards - 1) / numShards;
  for (unsigned s = 0; s < numShards; ++s) {
    const std::size_t begin = std::min(steps, s * shardSize);
    const std::size_t end = std::min(steps, begin + shardSize);
    if (begin < end)
      mapSteps(graph, t.slice(begin, end, 0), shardTiles(graph.getTarget(), s, numShards));
  }
}

Tensor addSequence(Graph &graph, Type type, std::size_t steps, std::size_t rows, std::size_t size,
                   unsigned numShards, const DebugContext &debug) {
  Tensor t = graph.addVariable(type, {steps, rows, size}, debug);
  mapSequence(graph, t, std::max(1u, numShards));
  return t;
}

Tensor addStep(Graph &graph, Type type, std::size_t rows, std::size_t size,
               const DebugContext &debug) {
  Tensor t = graph.addVariable(type, {1, rows, size}, debug);
  mapSteps(graph, t, shardTiles(graph.getTarget(), 0, 1));
  return t[0];
}

float roundedTo(Type type, double v) {
  const auto f = static_cast<float>(v);
  return type == HALF ? aspen::detail::halfBitsToFloat(aspen::detail::floatToHalfBits(f)) : f;
}

void refuseFusedForms(const std::string &why, StepMethod stepMethod,
                      const PersistentOptions &persistent, const std::string &what) {
  if (why.empty())
    return;
  if (stepMethod == StepMethod::Fused)
    throw invalid_option(fmt::format("{}: stepMethod fused does not apply to {}: its steps are "
                                     "products then cells",
                                     what, why));
  if (persistent.mode == PersistentOptions::Mode::On)
    throw invalid_option(fmt::format("{}: rnnPersistentKernel true does not apply to {}: its "
                                     "steps are products then cells",
                                     what, why));
}

void checkActivationClip(bool enabled, double threshold, NonLinearityType activation,
                         NonLinearityType recurrentActivation, const std::string &what) {
  if (!enabled)
    return;
  if (!(threshold > 0 && std::isfinite(threshold)))
    throw invalid_option(fmt::format("{}: activationClip's threshold must be a finite number "
                                     "above 0, not {}",
                                     what, threshold));
  if (isSoftmax(activation) || isSoftmax(recurrentActivation))
    throw invalid_option(fmt::format("{}: activationClip needs element-wise activations, not {} "
                                     "and {}",
                                     what, nn::asString(activation),
                                     nn::asString(recurrentActivation)));
}

void checkParams(const RnnParams &params, const std::string &what) {
  if (params.dataType != FLOAT && params.dataType != HALF)
    throw type_error(fmt::format("{}: dataType must be float or half, not {}", what,
                                 params.dataType.toString()));
  if (params.batchSize == 0 || params.maxTimeSteps == 0)
    throw shape_error(fmt::format("{}: batchSize ({}) and maxTimeSteps ({}) must be at least 1",
                                  what, params.batchSize, params.maxTimeSteps));
  if (params.layerSizes.size() != 2 || params.layerSizes[0] == 0 || params.layerSizes[1] == 0)
    throw shape_error(fmt::format("{}: layerSizes must be {{inputSize, outputSize}}, both at least "
                                  "1 (got {} sizes)",
                                  what, params.layerSizes.size()));
  // The largest tensors a layer makes: a sequence of 4 gates' activations, and 4 gates' weights.
  const std::size_t widest = std::max(params.layerSizes[0], params.layerSizes[1]);
  const std::size_t bytes = params.dataType.size();
  aspen::detail::checkedElements<shape_error>(
      std::vector<std::size_t>{params.maxTimeSteps, params.batchSize, 4, widest}, bytes,
      [&] { return what + ": a sequence of gate activations [steps,batch,4,max(in,out)]"; });
  aspen::detail::checkedElements<shape_error>(
      std::vector<std::size_t>{4, aspen::detail::checkedAdd<shape_error>(
                                      params.layerSizes[0], params.layerSizes[1],
                                      [&] { return what + ": layerSizes"; }),
                               params.layerSizes[1]},
      bytes, [&] { return what + ": the weights [4,in+out,out]"; });
  if (params.varTimeSteps.valid()) {
    const Tensor &ts = params.varTimeSteps;
    if (ts.elementType() != UNSIGNED_INT)
      throw type_error(fmt::format("{}: timeSteps must be unsigned int, not {}", what,
                                   ts.elementType().toString()));
    if (ts.rank() != 1 || (ts.dim(0) != 1 && ts.dim(0) != params.batchSize))
      throw shape_error(fmt::format("{}: timeSteps must have shape [1] or [batchSize = {}], not {}",
                                    what, params.batchSize, ts.shapeToString()));
  }
}

unsigned estimateShards(const Graph &graph, const RnnParams &params, std::size_t elementsPerRow,
                        double proportion) {
  const Target &target = graph.getTarget();
  const double sequenceBytes = double(params.maxTimeSteps) * params.batchSize * elementsPerRow *
                               target.getTypeSize(params.dataType);
  const double budget = double(target.getNumTiles()) * target.getBytesPerTile() * proportion;
  const double wanted = budget > 0 ? std::ceil(sequenceBytes / budget) : 1.0;
  return static_cast<unsigned>(std::clamp(wanted, 1.0, double(params.getMaxShards(graph))));
}

void addShardOptions(aspen::detail::OptionSpec &spec, unsigned maxShards,
                     std::optional<unsigned> &numShards, std::optional<bool> &codeReuse) {
  spec.add("numShards", fmt::format("an integer from 1 to {}", maxShards),
           [&numShards, maxShards](const std::string &v) {
             try {
               std::size_t used = 0;
               const unsigned long parsed = std::stoul(v, &used);
               if (used != v.size() || parsed == 0 || parsed > maxShards)
                 return false;
               numShards = static_cast<unsigned>(parsed);
             } catch (const std::exception &) {
               return false;
             }
             return true;
           })
      .add("rnnCodeReuse", "true or false", [&codeReuse](const std::string &v) {
        if (v != "true" && v != "false" && v != "1" && v != "0")
          return false;
        codeReuse = v == "true" || v == "1";
        return true;
      });
}

void addStepsPerWUOption(aspen::detail::OptionSpec &spec, std::optional<unsigned> &target) {
  spec.add("rnnStepsPerWU",
           "an unsigned integer (0, or the sequence length or more: one weight-update pass)",
           [&target](const std::string &v) {
             unsigned long long k = 0;
             const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), k);
             if (v.empty() || ec != std::errc() || end != v.data() + v.size() ||
                 k > std::numeric_limits<unsigned>::max())
               return false;
             target = static_cast<unsigned>(k);
             return true;
           });
}

void addHardSigmoidGradientOption(aspen::detail::OptionSpec &spec, NonLinearityGradient &target) {
  spec.enumeration("hardSigmoidGradient", target,
                   {{"poplibs", NonLinearityGradient::Popnn}, {"exact", NonLinearityGradient::Exact}});
}

unsigned checkShards(const RnnParams &params, unsigned numShards, const std::string &what) {
  if (numShards == 0 || numShards > params.maxTimeSteps)
    throw invalid_option(fmt::format("{}: numShards = {} is out of range: it must be between 1 and "
                                     "the number of time steps ({})",
                                     what, numShards, params.maxTimeSteps));
  return numShards;
}

namespace {

struct Control {
  Tensor step, begin, lengths, time, offset, active, gather, slot, mask, inverse;
  ComputeSet cs;
};

Control addControl(Graph &graph, const RnnParams &params, Tensor begin, std::size_t window,
                   unsigned gatherSteps, unsigned slotModulus, bool reverse,
                   const DebugContext &debug) {
  Control c;
  auto scalar = [&](const char *what) {
    Tensor t = graph.addVariable(UNSIGNED_INT, {1}, {debug, what});
    graph.setTileMapping(t, 0);
    return t;
  };
  c.step = scalar("step");
  c.begin = begin;
  c.time = scalar("time");
  c.offset = scalar("offset");
  c.active = scalar("active");
  c.gather = scalar("gather");
  c.slot = scalar("slot");
  if (params.varTimeSteps.valid()) {
    c.lengths = params.varTimeSteps;
  } else {
    c.lengths = graph.addConstant<unsigned>(UNSIGNED_INT, {1},
                                            static_cast<unsigned>(params.maxTimeSteps),
                                            {debug, "lengths"});
    graph.setTileMapping(c.lengths, 0);
  }
  c.mask = graph.addVariable(params.dataType, {params.batchSize}, {debug, "mask"});
  c.inverse = graph.addVariable(params.dataType, {params.batchSize}, {debug, "inverse"});
  graph.setTileMapping(c.mask, 0);
  graph.setTileMapping(c.inverse, 0);
  c.cs = graph.addComputeSet({debug, "control"});
  VertexRef v = graph.addVertex(c.cs, util::templateVertex("aspen::nn::RnnStepControl",
                                                           params.dataType),
                                {{"step", c.step},
                                 {"begin", c.begin},
                                 {"lengths", c.lengths},
                                 {"time", c.time},
                                 {"offset", c.offset},
                                 {"active", c.active},
                                 {"gather", c.gather},
                                 {"slot", c.slot},
                                 {"mask", c.mask},
                                 {"inverse", c.inverse}});
  graph.setInitialValue(v["window"], static_cast<unsigned>(window));
  graph.setInitialValue(v["maxTimeSteps"], static_cast<unsigned>(params.maxTimeSteps));
  graph.setInitialValue(v["gatherSteps"], gatherSteps);
  graph.setInitialValue(v["slotModulus"], slotModulus);
  graph.setInitialValue(v["reverse"], reverse);
  graph.setTileMapping(v, 0);
  return c;
}

Tensor unsignedConstant(Graph &graph, unsigned value, const DebugContext &debug) {
  Tensor t = graph.addConstant<unsigned>(UNSIGNED_INT, {1}, value, debug);
  graph.setTileMapping(t, 0);
  return t;
}

// Vertices copying step `offset` of `seq` ([n, ...]) to or from `step` (one step's shape): per
// tile and contiguous region of the step, one vertex listing that region in every step.
void addStepCopies(Graph &graph, ComputeSet cs, bool toStep, const Tensor &seq,
                   const Tensor &step, const Tensor &offset) {
  const Tensor stepFlat = step.flatten();
  if (stepFlat.numElements() == 0)
    return;
  const std::string type = util::templateVertex(
      toStep ? "aspen::nn::RnnSliceStep" : "aspen::nn::RnnStoreStep", seq.elementType());
  // Regions contiguous in the sequence's first step (a view such as a concatenation splits
  // them), which the step tensor, a clone of it, shares.
  const auto tiles = util::getTileContiguousRegions(graph, seq[0].flatten());
  for (unsigned tile = 0; tile < tiles.size(); ++tile)
    for (const Interval &region : tiles[tile]) {
      std::vector<Tensor> steps;
      for (std::size_t t = 0; t < seq.dim(0); ++t)
        steps.push_back(seq[t].flatten().slice(region));
      VertexRef v = graph.addVertex(cs, type);
      graph.connect(v["offset"], offset);
      graph.connect(v[toStep ? "from" : "to"], steps);
      graph.connect(v[toStep ? "to" : "from"], stepFlat.slice(region));
      graph.setTileMapping(v, tile);
    }
}

// Step `offset` of `seq` ([n, ...]) as a new tensor (the step's shape, laid out like seq[0]).
Tensor sliceStep(Graph &graph, const Tensor &seq, const Tensor &offset, Sequence &prog,
                 const DebugContext &debug) {
  Tensor step = graph.clone(seq[0], debug);
  ComputeSet cs = graph.addComputeSet(debug);
  addStepCopies(graph, cs, true, seq, step, offset);
  prog.add(Execute(cs));
  return step;
}

void storeStep(Graph &graph, const Tensor &seq, const Tensor &step, const Tensor &offset,
               Sequence &prog, const DebugContext &debug) {
  ComputeSet cs = graph.addComputeSet(debug);
  addStepCopies(graph, cs, false, seq, step, offset);
  prog.add(Execute(cs));
}

// A tensor shaped like one step of `seq`, laid out like its first step.
Tensor stepLike(Graph &graph, const Tensor &seq, const DebugContext &debug) {
  return graph.clone(seq[0], debug);
}

// runLoop's parts: the loop-carried state and gather windows it prepares, the step loop over
// a shard or window, and the shards played one by one or through one shared body.
class LoopBuilder {
public:
  LoopBuilder(Graph &graph, const LoopSpec &spec, Sequence &prog, const DebugContext &debug)
      : graph_(graph), spec_(spec), params_(spec.params), prog_(prog), debug_(debug),
        T_(params_.maxTimeSteps), shardSize_((T_ + spec.numShards - 1) / spec.numShards),
        gatherForm_(static_cast<bool>(spec.gatherFn)),
        gatherWindow_(gatherForm_ ? (spec.stepsPerGather == 0 ? T_ : spec.stepsPerGather) : 0),
        variable_(params_.varTimeSteps.valid()), created_(spec.created) {}

  std::vector<Tensor> run() {
    prepare();
    std::vector<unsigned> order(spec_.numShards);
    for (unsigned s = 0; s < spec_.numShards; ++s)
      order[s] = spec_.reverse ? spec_.numShards - 1 - s : s;
    if (!spec_.codeReuse || spec_.numShards == 1)
      shardByShard(order);
    else
      sharedBody(order);
    if (gatherForm_ && spec_.stepsPerGather == 0)
      prog_.add(gatherProgram_);
    std::vector<Tensor> result = state_;
    result.insert(result.end(), created_.begin(), created_.end());
    return result;
  }

private:
  // The loop-carried state (copies of the initial state), the outputs zeroed when rows have
  // lengths, and the gather windows: [k, ...] of each gather input and of the temporaries.
  void prepare() {
    for (std::size_t i = 0; i < spec_.initState.size(); ++i) {
      Tensor s = graph_.clone(spec_.initState[i], {debug_, fmt::format("state{}", i)});
      prog_.add(Copy(spec_.initState[i], s));
      state_.push_back(s);
    }
    std::vector<Tensor> outSequences = spec_.outputs;
    if (spec_.interimOut)
      outSequences.push_back(*spec_.interimOut);
    if (spec_.stateSequence.output.valid())
      outSequences.push_back(spec_.stateSequence.output);
    if (variable_)
      for (const Tensor &t : outSequences)
        ops::zero(graph_, t, prog_, {debug_, "zeroOutputs"});
    if (!gatherForm_)
      return;
    for (std::size_t i = 0; i < spec_.gatherInputs.size(); ++i) {
      const Tensor &g = spec_.gatherInputs[i];
      std::vector<std::size_t> shape = g.shape();
      shape[0] = gatherWindow_;
      Tensor w =
          graph_.addVariable(g.elementType(), shape, {debug_, fmt::format("gatherIn{}", i)});
      mapSequence(graph_, w.reshape({gatherWindow_, g.dim(1), g.numElements() / T_ / g.dim(1)}),
                  1);
      ops::zero(graph_, w, prog_, {debug_, "zeroGatherWindow"});
      gatherWindows_.push_back(w);
    }
    const std::size_t B = params_.batchSize, H = layerSize(params_, 1);
    tempWindow_ = addSequence(graph_, params_.dataType, gatherWindow_ * spec_.numTemps, B, H, 1,
                              {debug_, "tempWindow"})
                      .reshape({gatherWindow_, spec_.numTemps, B, H});
    ops::zero(graph_, tempWindow_, prog_, {debug_, "zeroTempWindow"});
  }

  // The sequences one step loop works on: views of a shard, or the shared body's windows.
  struct Chunks {
    std::vector<Tensor> inputs, outputs, gatherInputs;
    Tensor interimIn, interimOut, stateOut; // invalid when the spec has none
  };

  // The step loop over `window` steps of `c` (dim 0: the shard's steps), for shard start `begin`.
  Sequence buildLoop(const Tensor &begin, std::size_t window, const Chunks &c,
                     const DebugContext &dbg) {
    Control ctl = addControl(graph_, params_, begin, window, spec_.stepsPerGather,
                             static_cast<unsigned>(gatherWindow_), spec_.reverse, dbg);
    Sequence body;
    RnnSlice slice;
    for (const Tensor &in : c.inputs)
      slice.inputs.push_back(sliceStep(graph_, in, ctl.offset, body, {dbg, "sliceIn"}));
    if (c.interimIn.valid())
      slice.interimIn = sliceStep(graph_, c.interimIn, ctl.offset, body, {dbg, "sliceInterim"});
    for (const Tensor &out : c.outputs)
      slice.outputs.push_back(stepLike(graph_, out, {dbg, "outStep"}));
    if (c.interimOut.valid())
      slice.interimOut = stepLike(graph_, c.interimOut, {dbg, "interimStep"});
    if (gatherForm_)
      slice.interimOut = addSequence(graph_, params_.dataType, spec_.numTemps, params_.batchSize,
                                     layerSize(params_, 1), 1, {dbg, "temps"});
    TimeStepState time{begin, ctl.time, ctl.active};
    RnnBatchwiseFlags flags{ctl.mask, ctl.inverse};
    Sequence initProg;
    body.add(spec_.loopFn(graph_, time, flags, state_, slice, created_, &initProg, dbg));
    for (std::size_t i = 0; i < c.outputs.size(); ++i)
      storeStep(graph_, c.outputs[i], slice.outputs[i], ctl.offset, body, {dbg, "storeOut"});
    if (c.interimOut.valid())
      storeStep(graph_, c.interimOut, slice.interimOut, ctl.offset, body, {dbg, "storeInterim"});
    if (c.stateOut.valid())
      storeStep(graph_, c.stateOut, state_[spec_.stateSequence.stateIndex], ctl.offset, body,
                {dbg, "storeState"});
    if (gatherForm_)
      addGather(ctl, slice, c.gatherInputs, body, dbg);
    prog_.add(initProg);
    Sequence loop;
    Tensor zero = unsignedConstant(graph_, 0, {dbg, "zero"});
    loop.add(Copy(zero, ctl.step));
    loop.add(Repeat(static_cast<unsigned>(window),
                    Sequence{Execute(ctl.cs), If(ctl.active, body, Sequence{})}));
    return loop;
  }

  // The gather form's part of a step: its temporaries and gather inputs into the windows, and
  // the gather body (built once) every stepsPerGather steps.
  void addGather(const Control &ctl, const RnnSlice &slice,
                 const std::vector<Tensor> &gatherInputs, Sequence &body,
                 const DebugContext &dbg) {
    storeStep(graph_, tempWindow_, slice.interimOut, ctl.slot, body, {dbg, "storeTemps"});
    for (std::size_t i = 0; i < gatherInputs.size(); ++i) {
      Tensor step = sliceStep(graph_, gatherInputs[i], ctl.offset, body, {dbg, "sliceGatherIn"});
      storeStep(graph_, gatherWindows_[i], step, ctl.slot, body, {dbg, "storeGatherIn"});
    }
    if (!gatherBuilt_) {
      RnnSlice gatherSlice;
      gatherSlice.inputs = gatherWindows_;
      gatherSlice.interimOut = tempWindow_;
      Sequence gatherInit;
      gatherProgram_ = spec_.gatherFn(graph_, gatherSlice, static_cast<unsigned>(gatherWindow_),
                                      &gatherInit, {debug_, "gather"});
      prog_.add(gatherInit);
      gatherBuilt_ = true;
    }
    if (spec_.stepsPerGather != 0)
      body.add(If(ctl.gather, gatherProgram_, Sequence{}));
  }

  static std::vector<Tensor> chunksOf(const std::vector<Tensor> &seqs, std::size_t b,
                                      std::size_t e) {
    std::vector<Tensor> out;
    for (const Tensor &t : seqs)
      out.push_back(t.slice(b, e, 0));
    return out;
  }

  // Each shard its own loop over views of its steps.
  void shardByShard(const std::vector<unsigned> &order) {
    for (unsigned s : order) {
      const std::size_t b = s * shardSize_, e = std::min(T_, b + shardSize_);
      if (b >= e)
        continue;
      const DebugContext dbg{debug_, fmt::format("shard{}", s)};
      const Tensor begin = unsignedConstant(graph_, static_cast<unsigned>(b), {dbg, "begin"});
      Chunks c{chunksOf(spec_.inputs, b, e), chunksOf(spec_.outputs, b, e),
               chunksOf(spec_.gatherInputs, b, e), {}, {}, {}};
      if (spec_.interimIn)
        c.interimIn = spec_.interimIn->slice(b, e, 0);
      if (spec_.interimOut)
        c.interimOut = spec_.interimOut->slice(b, e, 0);
      if (spec_.stateSequence.output.valid())
        c.stateOut = spec_.stateSequence.output.slice(b, e, 0);
      prog_.add(buildLoop(begin, e - b, c, dbg));
    }
  }

  // A window of shardSize steps of seq, laid out as one shard.
  Tensor windowOf(const Tensor &seq, const char *what) {
    std::vector<std::size_t> shape = seq.shape();
    shape[0] = shardSize_;
    Tensor w = graph_.addVariable(seq.elementType(), shape, {debug_, what});
    const std::size_t rows = seq.rank() >= 2 ? seq.dim(1) : 1;
    mapSequence(graph_, w.reshape({shardSize_, rows, w.numElements() / shardSize_ / rows}), 1);
    return w;
  }

  // One body over windows of shardSize steps, called once per shard between copies.
  void sharedBody(const std::vector<unsigned> &order) {
    Chunks w;
    for (const Tensor &t : spec_.inputs)
      w.inputs.push_back(windowOf(t, "inWindow"));
    for (const Tensor &t : spec_.outputs)
      w.outputs.push_back(windowOf(t, "outWindow"));
    for (const Tensor &t : spec_.gatherInputs)
      w.gatherInputs.push_back(windowOf(t, "gatherInWindow"));
    if (spec_.interimIn)
      w.interimIn = windowOf(*spec_.interimIn, "interimInWindow");
    if (spec_.interimOut)
      w.interimOut = windowOf(*spec_.interimOut, "interimOutWindow");
    if (spec_.stateSequence.output.valid())
      w.stateOut = windowOf(spec_.stateSequence.output, "stateWindow");
    Tensor begin = graph_.addVariable(UNSIGNED_INT, {1}, {debug_, "shardBegin"});
    graph_.setTileMapping(begin, 0);
    Function body = graph_.addFunction(buildLoop(begin, shardSize_, w, debug_));
    std::vector<Tensor> outWindowsAll = w.outputs;
    for (const Tensor *t : {&w.interimOut, &w.stateOut})
      if (t->valid())
        outWindowsAll.push_back(*t);
    for (unsigned s : order) {
      const std::size_t b = s * shardSize_, e = std::min(T_, b + shardSize_);
      if (b >= e)
        continue;
      const DebugContext dbg{debug_, fmt::format("shard{}", s)};
      prog_.add(Copy(unsignedConstant(graph_, static_cast<unsigned>(b), {dbg, "begin"}), begin));
      const auto in = [&](const Tensor &seq, const Tensor &window) {
        prog_.add(Copy(seq.slice(b, e, 0), window.slice(0, e - b, 0)));
      };
      const auto out = [&](const Tensor &window, const Tensor &seq) {
        prog_.add(Copy(window.slice(0, e - b, 0), seq.slice(b, e, 0)));
      };
      for (std::size_t i = 0; i < spec_.inputs.size(); ++i)
        in(spec_.inputs[i], w.inputs[i]);
      for (std::size_t i = 0; i < spec_.gatherInputs.size(); ++i)
        in(spec_.gatherInputs[i], w.gatherInputs[i]);
      if (spec_.interimIn)
        in(*spec_.interimIn, w.interimIn);
      if (variable_)
        for (const Tensor &window : outWindowsAll)
          ops::zero(graph_, window, prog_, {dbg, "zeroWindow"});
      prog_.add(program::Call(body));
      for (std::size_t i = 0; i < spec_.outputs.size(); ++i)
        out(w.outputs[i], spec_.outputs[i]);
      if (spec_.interimOut)
        out(w.interimOut, *spec_.interimOut);
      if (spec_.stateSequence.output.valid())
        out(w.stateOut, spec_.stateSequence.output);
    }
  }

  Graph &graph_;
  const LoopSpec &spec_;
  const RnnParams &params_;
  Sequence &prog_;
  const DebugContext &debug_;
  const std::size_t T_, shardSize_;
  const bool gatherForm_;
  const std::size_t gatherWindow_;
  const bool variable_;
  std::vector<Tensor> state_, created_, gatherWindows_;
  Tensor tempWindow_;
  Sequence gatherProgram_;
  bool gatherBuilt_ = false;
};

} // namespace

std::vector<Tensor> runLoop(Graph &graph, const LoopSpec &spec, Sequence &prog,
                            const DebugContext &debug) {
  return LoopBuilder(graph, spec, prog, debug).run();
}

bool parseCodeReuse(const OptionFlags &options, const std::string &what) {
  bool codeReuse = false;
  aspen::detail::OptionSpec spec(what);
  spec.boolean("codeReuse", codeReuse);
  spec.parse(options);
  return codeReuse;
}

void checkSequence(const RnnParams &params, const Tensor &t, const std::string &what) {
  if (t.rank() < 1 || t.dim(0) != params.maxTimeSteps)
    throw shape_error(fmt::format("{} must be a sequence of {} time steps (dimension 0), but has "
                                  "shape {}",
                                  what, params.maxTimeSteps, t.shapeToString()));
}

// The checks of both forms of Rnn (errors name `what`), then the loop.
std::vector<Tensor> checkAndRun(Graph &graph, LoopSpec &spec, const OptionFlags &options,
                                Sequence &prog, const DebugContext &debug,
                                const std::string &what) {
  const RnnParams &params = spec.params;
  checkParams(params, what);
  checkShards(params, spec.numShards, what);
  if (spec.stepsPerGather > params.maxTimeSteps)
    throw invalid_option(fmt::format("{}: stepsPerGather = {} exceeds the {} time steps", what,
                                     spec.stepsPerGather, params.maxTimeSteps));
  spec.codeReuse = parseCodeReuse(options, what);
  for (const Tensor &t : spec.inputs)
    checkSequence(params, t, what + ": an input");
  for (const Tensor &t : spec.outputs)
    checkSequence(params, t, what + ": an output");
  for (const Tensor &t : spec.gatherInputs)
    checkSequence(params, t, what + ": a gather input");
  if (spec.interimIn)
    checkSequence(params, *spec.interimIn, what + ": interimIn");
  if (spec.interimOut)
    checkSequence(params, *spec.interimOut, what + ": interimOut");
  if (spec.stateSequence.output.valid()) {
    checkSequence(params, spec.stateSequence.output, what + ": stateSequence.output");
    if (spec.stateSequence.stateIndex >= spec.initState.size())
      throw index_error(fmt::format("{}: stateSequence.stateIndex {} is out of range ({} states)",
                                    what, spec.stateSequence.stateIndex, spec.initState.size()));
  }
  return runLoop(graph, spec, prog, debug);
}

} // namespace detail

Tensor createInitialState(Graph &graph, const RnnParams &params, bool isOutput, unsigned multiple,
                          unsigned numShards, const DebugContext &debug) {
  detail::checkParams(params, "rnn::createInitialState");
  const std::size_t size = layerSize(params, isOutput ? 1 : 0);
  Tensor t = graph.addVariable(params.dataType, {multiple, params.batchSize, size}, debug);
  detail::mapSteps(graph, t, detail::shardTiles(graph.getTarget(), 0, std::max(1u, numShards)));
  return t;
}

Tensor createRecurrentTensor(Graph &graph, const RnnParams &params, unsigned size,
                             unsigned numShards, const DebugContext &debug) {
  detail::checkParams(params, "rnn::createRecurrentTensor");
  detail::checkShards(params, numShards, "rnn::createRecurrentTensor");
  return detail::addSequence(graph, params.dataType, params.maxTimeSteps, params.batchSize, size,
                             numShards, debug);
}

Tensor createInputTensor(Graph &graph, const RnnParams &params, unsigned numShards,
                         const DebugContext &debug) {
  return createRecurrentTensor(graph, params, static_cast<unsigned>(layerSize(params, 0)),
                               numShards, debug);
}

Tensor createOutputTensor(Graph &graph, const RnnParams &params, unsigned numShards,
                          const DebugContext &debug) {
  return createOutputTensor(graph, params, 1, numShards, debug);
}

Tensor createOutputTensor(Graph &graph, const RnnParams &params, unsigned multiple,
                          unsigned numShards, const DebugContext &debug) {
  detail::checkParams(params, "rnn::createOutputTensor");
  detail::checkShards(params, numShards, "rnn::createOutputTensor");
  std::vector<Tensor> parts;
  for (unsigned m = 0; m < multiple; ++m)
    parts.push_back(detail::addSequence(graph, params.dataType, params.maxTimeSteps,
                                        params.batchSize, layerSize(params, 1), numShards,
                                        {debug, fmt::format("part{}", m)}));
  return concat(parts, 0);
}

Tensor shiftRnnTensor(Graph &graph, const RnnParams &params, const Tensor &tBase,
                      const Tensor &tSingle, Sequence &prog, unsigned numShards,
                      const DebugContext &debug) {
  detail::checkParams(params, "rnn::shiftRnnTensor");
  detail::checkSequence(params, tBase, "rnn::shiftRnnTensor: tBase");
  if (tSingle.shape() != tBase[0].shape())
    throw shape_error(fmt::format("rnn::shiftRnnTensor: tSingle has shape {}, but one step of "
                                  "tBase has shape {}",
                                  tSingle.shapeToString(), tBase[0].shapeToString()));
  const std::size_t T = params.maxTimeSteps;
  const std::size_t rows = tBase.rank() >= 2 ? tBase.dim(1) : 1;
  Tensor shifted = graph.addVariable(tBase.elementType(), tBase.shape(), debug);
  detail::mapSequence(graph, shifted.reshape({T, rows, tBase.numElements() / T / rows}),
                      std::max(1u, numShards));
  prog.add(Copy(tSingle, shifted[0]));
  if (T > 1)
    prog.add(Copy(tBase.slice(0, T - 1, 0), shifted.slice(1, T, 0)));
  return shifted;
}

std::vector<Tensor> Rnn(Graph &graph, const RnnParams &params, bool reverse,
                        const std::vector<Tensor> &initState, const StateSequence &stateSequence,
                        const std::vector<Tensor> &inputs, const Tensor *interimIn,
                        Tensor *interimOut, const std::vector<Tensor> &outputs,
                        const std::vector<Tensor> &created, Sequence &prog,
                        const LoopBodyType &loopFn, unsigned numShards, OptionFlags &options,
                        const DebugContext &debug) {
  detail::LoopSpec spec{params};
  spec.reverse = reverse;
  spec.initState = initState;
  spec.stateSequence = stateSequence;
  spec.inputs = inputs;
  spec.interimIn = interimIn;
  spec.interimOut = interimOut;
  spec.outputs = outputs;
  spec.created = created;
  spec.loopFn = loopFn;
  spec.numShards = numShards;
  return detail::checkAndRun(graph, spec, options, prog, debug, "rnn::Rnn");
}

std::vector<Tensor> Rnn(Graph &graph, const RnnParams &params,
                        const std::vector<Tensor> &initState, const StateSequence &stateSequence,
                        const std::vector<Tensor> &inputs, const Tensor &interimIn,
                        unsigned numTemps, Sequence &prog, const LoopBodyType &loopFn,
                        const std::vector<Tensor> &gatherInputs, const GatherBodyType &gatherFn,
                        unsigned numShards, unsigned stepsPerGather, OptionFlags &options,
                        const DebugContext &debug) {
  detail::LoopSpec spec{params};
  spec.reverse = true;
  spec.initState = initState;
  spec.stateSequence = stateSequence;
  spec.inputs = inputs;
  if (interimIn.valid())
    spec.interimIn = &interimIn;
  spec.numTemps = numTemps;
  spec.loopFn = loopFn;
  spec.gatherInputs = gatherInputs;
  spec.gatherFn = gatherFn;
  spec.numShards = numShards;
  spec.stepsPerGather = stepsPerGather;
  return detail::checkAndRun(graph, spec, options, prog, debug, "rnn::Rnn (gather form)");
}

} // namespace aspen::nn::rnn
