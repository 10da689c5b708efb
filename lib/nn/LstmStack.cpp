// A stack of LSTM layers in one call (aspen/nn/LstmStack.hpp): each layer and direction is set
// up as lstmFwd sets up one layer, and where the steps are fused their lanes share one compute
// set a step (rnn::detail::waveLoop): the whole stack's wavefront, or a bidirectional layer's
// two directions. Elsewhere a layer runs as lstmFwd runs it. The backward runs layer by layer.
#include <aspen/nn/LstmStack.hpp>

#include "LstmInternal.hpp"

#include "support/OptionParsing.hpp"

#include <aspen/Error.hpp>
#include <aspen/ops/ElementWise.hpp>

#include <fmt/format.h>

#include <limits>

namespace aspen::nn::lstm {

using program::Copy;
using program::Sequence;

namespace {

enum class Schedule { Auto, Wavefront, LayerByLayer };

// The smallest batch stackSchedule auto runs as a wavefront. Above the first layer a wavefront
// step reads Wi as well as Wo (its input is not known before the loop), where layer by layer
// weighs the whole input in one product first: at one row that reading cost more than the
// hand-offs between steps the wavefront saves, from 4 rows on it did not (bench_lstm_stack,
// 3 layers, 2 cores, 2026-12-07: inference H = 256 T = 50 B = 1 1.8-1.9 ms against 1.4-1.5
// layer by layer, B = 4 2.3-2.9 against 2.6-3.3, B = 16 T = 25 3.7-4.0 against 4.7-5.5, B = 64
// 15.5-16.6 against 19.9-22.6; training B = 4 T = 50 12.4-14.3 against 14.0-14.7).
constexpr std::size_t kWavefrontMinBatch = 4;

// The stack's options, and the layer options every layer takes.
struct StackOptions {
  unsigned numLayers = 1;
  bool bidirectional = false, reverse = false;
  double dropout = 0.0;
  std::uint64_t seed = 0;
  Schedule schedule = Schedule::Auto;
  OptionFlags layer;
};

StackOptions parseStackOptions(const OptionFlags &options, const std::string &what) {
  StackOptions s;
  aspen::detail::OptionSpec spec(what);
  spec.unsignedInteger("numLayers", s.numLayers, 1);
  spec.add("direction", "forward, reverse or bidirectional", [&s](const std::string &v) {
    s.bidirectional = v == "bidirectional";
    s.reverse = v == "reverse";
    return v == "forward" || s.reverse || s.bidirectional;
  });
  spec.add("dropout", "a number in [0, 1)", [&s](const std::string &v) {
    try {
      std::size_t used = 0;
      const double x = std::stod(v, &used);
      s.dropout = x;
      return used == v.size() && x >= 0.0 && x < 1.0;
    } catch (const std::exception &) {
      return false;
    }
  });
  spec.add("dropoutSeed", "an unsigned 64-bit integer", [&s](const std::string &v) {
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
      return false;
    try {
      s.seed = std::stoull(v);
      return true;
    } catch (const std::exception &) {
      return false;
    }
  });
  spec.enumeration("stackSchedule", s.schedule,
                   {{"auto", Schedule::Auto},
                    {"wavefront", Schedule::Wavefront},
                    {"layerByLayer", Schedule::LayerByLayer}});
  OptionFlags own;
  for (const auto &[key, value] : options)
    (spec.knows(key) ? own : s.layer).set(key, value);
  spec.parse(own);
  return s;
}

// One layer in one direction, as lstmFwd would set it up.
struct LayerSetup {
  LstmParams params;
  OptionFlags options;
  detail::LstmOptions opts;
  bool reverse = false;
  std::string name;
  bool fuses = false; // its forward steps are fused, in one shard, not persistent
};

// The stack as the options describe it.
struct Stack {
  LstmParams base;
  StackOptions o;
  std::string what;
  std::size_t L = 1, D = 1;
  bool wavefront = false;

  std::size_t T() const { return base.rnn.maxTimeSteps; }
  std::size_t B() const { return base.rnn.batchSize; }
  std::size_t H() const { return base.rnn.layerSizes[1]; }
  std::size_t W() const { return detail::recurrentSize(base); }
  std::size_t count() const { return L * D; }
  bool reverse(std::size_t d) const { return d == 1 || o.reverse; }
  // Whether layer l's output is dropped before the next layer takes it.
  bool drops(std::size_t l, bool training) const {
    return training && o.dropout > 0.0 && l + 1 < L;
  }

  LayerSetup layer(const Graph &graph, std::size_t l, std::size_t d, bool wave) const {
    LstmParams p = base;
    p.rnn.layerSizes[0] = l == 0 ? base.rnn.layerSizes[0] : D * W();
    p.layerSizes = p.rnn.layerSizes;
    if (l > 0) // the layer below needs its input's gradient
      p.calcInputGradients = true;
    OptionFlags options = o.layer;
    options.set("direction", reverse(d) ? "reverse" : "forward");
    if (wave && l > 0) // the input is known only step by step
      options.set("preCalcWeights", "false");
    LayerSetup s{p, options, {}, reverse(d),
                 fmt::format("{} (layer {}, {})", what, l, reverse(d) ? "reverse" : "forward")};
    s.opts = detail::parseOptions(graph, p, options, s.name);
    s.fuses = s.opts.numShards == 1 && !detail::persistentChoice(graph, p, s.opts, s.name).use &&
              detail::usesFusedStep(graph, p, s.opts, s.name);
    return s;
  }
};

// Why the wavefront cannot run (empty when it can).
std::string wavefrontRefusal(const Graph &graph, const Stack &s) {
  if (s.D != 1)
    return "it takes one direction (a layer above a bidirectional one needs both directions "
           "of every step below)";
  for (std::size_t l = 0; l < s.L; ++l)
    if (!s.layer(graph, l, 0, true).fuses)
      return fmt::format("layer {}'s steps are not fused in one shard (stepMethod, numShards, "
                         "rnnPersistentKernel)",
                         l);
  return {};
}

Stack describe(const Graph &graph, const LstmParams &params, const OptionFlags &options,
               const std::string &what) {
  Stack s{params, parseStackOptions(options, what), what};
  detail::checkParams(params, what);
  s.L = s.o.numLayers;
  s.D = s.o.bidirectional ? 2 : 1;
  if (!params.outputFullSequence)
    throw invalid_option(what + ": params.outputFullSequence must be true for a stack (its "
                                "final states hold each row's last output)");
  const std::string refusal = wavefrontRefusal(graph, s);
  if (s.o.schedule == Schedule::Wavefront && !refusal.empty())
    throw invalid_option(what + ": stackSchedule wavefront cannot run: " + refusal);
  s.wavefront = refusal.empty() &&
                (s.o.schedule == Schedule::Wavefront ||
                 (s.o.schedule == Schedule::Auto && s.B() >= kWavefrontMinBatch));
  return s;
}

void checkShape(const Tensor &t, const std::vector<std::size_t> &shape, Type type,
                const std::string &what) {
  if (!t.valid() || t.shape() != shape)
    throw shape_error(fmt::format("{} must have shape {{{}}}, not {}", what,
                                  fmt::join(shape, ","),
                                  t.valid() ? t.shapeToString() : "an invalid tensor"));
  if (t.elementType() != type)
    throw type_error(fmt::format("{} must be of type {}, not {}", what, type.toString(),
                                 t.elementType().toString()));
}

void checkStackState(const Stack &s, const LstmState &state, const std::string &what) {
  const Type t = s.base.rnn.dataType;
  checkShape(state.output, {s.count(), s.B(), s.W()}, t, what + ".output");
  checkShape(state.cellState, {s.count(), s.B(), s.H()}, t, what + ".cellState");
}

void checkCount(const Stack &s, std::size_t n, const char *name) {
  if (n != s.count())
    throw shape_error(fmt::format("{}: {} has {} entries, but numLayers {} x {} directions "
                                  "need {}",
                                  s.what, name, n, s.L, s.D, s.count()));
}

LstmState entry(const LstmState &state, std::size_t i) {
  return {state.output[i], state.cellState[i]};
}

// A [n, B, size] tensor laid out like n states.
Tensor stateTensor(Graph &graph, const LstmParams &params, std::size_t n, std::size_t size,
                   const DebugContext &debug) {
  rnn::RnnParams p = params.rnn;
  p.layerSizes[1] = size;
  return rnn::createInitialState(graph, p, true, static_cast<unsigned>(n), 1, debug);
}

// What the forward of one layer and direction made.
struct DirectionResult {
  Tensor runOutput; // [T, B, W] in the order its steps ran
  Tensor cell;      // the final cell state [B, H]
  Tensor inter;     // its fwdIntermediates
};

// The forward state of the lanes of one wave loop.
struct Lanes {
  std::vector<rnn::detail::WaveLane> lanes;
  std::size_t next = 0; // the offset of the next layer's lane
};

// Layer set-up s on input x (in its run order) as a fused lane at lanes.next.
DirectionResult addLane(Graph &graph, const LayerSetup &s, const LstmState &init,
                        const LstmWeights &weights, const Tensor &x, bool training,
                        Lanes &lanes, Sequence &prog, const DebugContext &debug,
                        linalg::PlanningCache *cache) {
  const auto layout = detail::interLayout(s.params, s.opts.recomputation);
  const bool weighInput = s.params.doInputWeightCalc;
  const bool preCalc = s.opts.preCalcWeights && weighInput;
  DirectionResult r;
  const auto seqs = detail::forwardSequences(graph, s.params, s.opts, weights, x, layout,
                                             training ? &r.inter : nullptr, true, preCalc, prog,
                                             debug, cache);
  const detail::FusedForwardLane lane = detail::prepareFusedForward(
      graph, s.params, s.opts, init, weights, weighInput && !preCalc ? x : Tensor(),
      preCalc ? seqs.weighted : Tensor(), seqs.outSeq, seqs.interSeq,
      training ? layout : detail::InterLayout{}, prog, debug);
  lanes.lanes.push_back({lanes.next, 1,
                         [&graph, lane](ComputeSet cs, unsigned,
                                        const rnn::detail::FusedClock &clock, unsigned p) {
                           lane.addStep(graph, cs, clock, p);
                         }});
  r.runOutput = seqs.outSeq;
  r.cell = lane.cState;
  return r;
}

// Layer set-up s on input x (its run order) as lstmFwd runs it.
DirectionResult runAlone(Graph &graph, const LayerSetup &s, const LstmState &init,
                         const LstmWeights &weights, const Tensor &x, bool training,
                         Sequence &prog, const DebugContext &debug,
                         linalg::PlanningCache *cache) {
  const auto layout = detail::interLayout(s.params, s.opts.recomputation);
  DirectionResult r;
  std::tie(r.runOutput, r.cell) =
      detail::forward(graph, s.params, s.opts, init, weights, x, layout,
                      training ? &r.inter : nullptr, true, prog, debug, cache);
  return r;
}

// The stack's results, filled layer by layer.
struct Results {
  Tensor hn, cn; // [L*D, B, W], [L*D, B, H]
  Tensor output;
  LstmStackIntermediates *inter = nullptr;
};

// Records layer l direction d's results: its final state, its own output in the caller's
// order (returned).
Tensor record(Graph &graph, const Stack &s, const LayerSetup &setup, std::size_t l,
              std::size_t d, const DirectionResult &r, const LstmState &init, Results &out,
              Sequence &prog, const DebugContext &debug) {
  const std::size_t i = l * s.D + d;
  // In run order a row's last step is its length - 1 in either direction.
  const Tensor hn =
      rnn::detail::finalOutputState(graph, setup.params.rnn, r.runOutput, init.output, false,
                                    prog, {debug, "finalOutput"});
  prog.add(Copy(hn, out.hn[i]));
  prog.add(Copy(r.cell, out.cn[i]));
  const rnn::detail::RunOrder order{graph, setup.params.rnn, setup.reverse, prog, debug};
  const Tensor own = order(r.runOutput, "output");
  if (out.inter) {
    out.inter->layers[i] = r.inter;
    out.inter->outputs[i] = own;
  }
  return own;
}

// Layer l's output [T, B, D*W] from its directions' own outputs (caller's order).
Tensor layerOutput(Graph &graph, const Stack &s, const std::vector<Tensor> &own, Sequence &prog,
                   const DebugContext &debug) {
  if (s.D == 1)
    return own[0];
  rnn::RnnParams p = s.base.rnn;
  p.layerSizes[1] = s.D * s.W();
  Tensor out = rnn::createOutputTensor(graph, p, 1, {debug, "output"});
  for (std::size_t d = 0; d < s.D; ++d)
    prog.add(Copy(own[d], out.slice(d * s.W(), (d + 1) * s.W(), 2)));
  return out;
}

void forwardLayerByLayer(Graph &graph, const Stack &s, const LstmState &init, const Tensor &in,
                         const std::vector<LstmWeights> &weights, Results &out, Sequence &prog,
                         const DebugContext &debug, linalg::PlanningCache *cache) {
  const bool training = out.inter != nullptr;
  Tensor layerIn = in;
  for (std::size_t l = 0; l < s.L; ++l) {
    const DebugContext dl{debug, fmt::format("layer{}", l)};
    if (out.inter)
      out.inter->inputs[l] = layerIn;
    std::vector<LayerSetup> setups;
    bool together = s.D == 2;
    for (std::size_t d = 0; d < s.D; ++d) {
      setups.push_back(s.layer(graph, l, d, false));
      together = together && setups.back().fuses;
    }
    std::vector<DirectionResult> results;
    Lanes lanes;
    for (std::size_t d = 0; d < s.D; ++d) {
      const DebugContext dd{dl, s.reverse(d) ? "reverse" : "forward"};
      const rnn::detail::RunOrder order{graph, setups[d].params.rnn, setups[d].reverse, prog,
                                        dd};
      const Tensor x = order(layerIn, "input");
      const LstmState init_d = entry(init, l * s.D + d);
      results.push_back(together ? addLane(graph, setups[d], init_d, weights[l * s.D + d], x,
                                           training, lanes, prog, dd, cache)
                                 : runAlone(graph, setups[d], init_d, weights[l * s.D + d], x,
                                            training, prog, dd, cache));
    }
    if (together)
      rnn::detail::waveLoop(graph, s.base.rnn, lanes.lanes, prog, {dl, "directions"});
    std::vector<Tensor> own;
    for (std::size_t d = 0; d < s.D; ++d)
      own.push_back(record(graph, s, setups[d], l, d, results[d], entry(init, l * s.D + d), out,
                           prog, dl));
    const Tensor y = layerOutput(graph, s, own, prog, dl);
    out.output = y;
    layerIn = s.drops(l, training) ? rnn::dropoutSequence(graph, s.base.rnn, y, s.o.dropout,
                                                          s.o.seed, static_cast<unsigned>(l),
                                                          prog, {dl, "dropout"})
                                   : y;
  }
}

void forwardWavefront(Graph &graph, const Stack &s, const LstmState &init, const Tensor &in,
                      const std::vector<LstmWeights> &weights, Results &out, Sequence &prog,
                      const DebugContext &debug, linalg::PlanningCache *cache) {
  const bool training = out.inter != nullptr;
  const rnn::detail::RunOrder order{graph, s.base.rnn, s.o.reverse, prog, debug};
  Tensor x = order(in, "input"); // the stack runs in its steps' order
  Lanes lanes;
  std::vector<LayerSetup> setups;
  std::vector<DirectionResult> results;
  std::vector<Tensor> runInputs;
  const Tensor lengths = rnn::detail::lengthsOf(graph, s.base.rnn, {debug, "lengths"});
  for (std::size_t l = 0; l < s.L; ++l) {
    const DebugContext dl{debug, fmt::format("layer{}", l)};
    setups.push_back(s.layer(graph, l, 0, true));
    if (l > 0 && !x.isContiguous()) // read by the steps in place as it is written
      throw error(s.what + ": internal: a wavefront layer's input is not one variable");
    runInputs.push_back(x);
    results.push_back(
        addLane(graph, setups[l], entry(init, l), weights[l], x, training, lanes, prog, dl,
                cache));
    ++lanes.next;
    if (!s.drops(l, training)) {
      x = results[l].runOutput;
      continue;
    }
    // The dropout of each step as a lane of its own, one wave after the step.
    const Tensor dropped = rnn::detail::addSequence(graph, s.base.rnn.dataType, s.T(), s.B(),
                                                    s.W(), 1, {dl, "dropped"});
    const rnn::detail::Dropout dropout{s.o.dropout,
                                       rnn::detail::dropoutKey(s.o.seed, unsigned(l))};
    const Tensor produced = results[l].runOutput;
    const rnn::RnnParams rnnParams = s.base.rnn;
    const bool reversed = s.o.reverse;
    lanes.lanes.push_back(
        {lanes.next, 1,
         [&graph, rnnParams, produced, dropped, dropout, reversed, lengths](
             ComputeSet cs, unsigned, const rnn::detail::FusedClock &clock, unsigned p) {
           rnn::detail::addDropout(graph, cs, rnnParams, produced, dropped, dropout,
                                   clock.time.slice(p, p + 1), reversed, lengths);
         }});
    ++lanes.next;
    x = dropped;
  }
  rnn::detail::waveLoop(graph, s.base.rnn, lanes.lanes, prog, {debug, "wavefront"});
  for (std::size_t l = 0; l < s.L; ++l) {
    const DebugContext dl{debug, fmt::format("layer{}", l)};
    if (out.inter)
      out.inter->inputs[l] = l == 0 ? in : order(runInputs[l], "input");
    out.output = record(graph, s, setups[l], l, 0, results[l], entry(init, l), out, prog, dl);
  }
}

} // namespace

std::vector<LstmWeights> createStackWeights(Graph &graph, const LstmParams &params,
                                            const DebugContext &debug, const OptionFlags &options,
                                            linalg::PlanningCache *cache) {
  const Stack s = describe(graph, params, options, "lstm::createStackWeights");
  std::vector<LstmWeights> weights;
  for (std::size_t l = 0; l < s.L; ++l)
    for (std::size_t d = 0; d < s.D; ++d) {
      const LayerSetup setup = s.layer(graph, l, d, s.wavefront);
      weights.push_back(createWeights(graph, setup.params,
                                      {debug, fmt::format("layer{}{}", l, d ? "Reverse" : "")},
                                      setup.options, cache));
    }
  return weights;
}

LstmState createStackInitialState(Graph &graph, const LstmParams &params,
                                  const DebugContext &debug, const OptionFlags &options,
                                  linalg::PlanningCache *) {
  const Stack s = describe(graph, params, options, "lstm::createStackInitialState");
  return {stateTensor(graph, params, s.count(), s.W(), {debug, "initialOutput"}),
          stateTensor(graph, params, s.count(), s.H(), {debug, "initialCellState"})};
}

std::pair<Tensor, LstmState>
lstmStackFwd(Graph &graph, const LstmParams &params, const LstmState &stateInit, const Tensor &in,
             const std::vector<LstmWeights> &weights, LstmStackIntermediates *intermediates,
             Sequence &prog, const DebugContext &debug, const OptionFlags &options,
             linalg::PlanningCache *cache) {
  const Stack s = describe(graph, params, options, "lstm::lstmStackFwd");
  checkCount(s, weights.size(), "weights");
  checkStackState(s, stateInit, s.what + ": stateInit");
  detail::checkInput(params, in, s.what + ": input");
  for (std::size_t i = 0; i < s.count(); ++i) {
    const LayerSetup setup = s.layer(graph, i / s.D, i % s.D, s.wavefront);
    detail::checkWeights(setup.params, weights[i], setup.name);
    if (setup.opts.inferenceOnly && intermediates)
      throw invalid_option(s.what + ": intermediates were asked for, but the option "
                                    "inferenceOnly is true (an inference pass keeps none)");
  }
  Results out;
  out.hn = stateTensor(graph, params, s.count(), s.W(), {debug, "finalOutput"});
  out.cn = stateTensor(graph, params, s.count(), s.H(), {debug, "finalCellState"});
  if (intermediates) {
    *intermediates = LstmStackIntermediates{};
    intermediates->layers.resize(s.count());
    intermediates->inputs.resize(s.L);
    intermediates->outputs.resize(s.count());
    out.inter = intermediates;
  }
  if (s.wavefront)
    forwardWavefront(graph, s, stateInit, in, weights, out, prog, debug, cache);
  else
    forwardLayerByLayer(graph, s, stateInit, in, weights, out, prog, debug, cache);
  return {out.output, LstmState{out.hn, out.cn}};
}

LstmState lstmStackBwdWithWU(Graph &graph, const LstmParams &params, Sequence &prog,
                             const LstmState &stateInit,
                             const LstmStackIntermediates &intermediates,
                             const std::vector<LstmWeights> &weights, const Tensor &output,
                             const Tensor &outputGrad, const LstmState *finalStateGrad,
                             Tensor *inputGrad, std::vector<LstmWeights> &weightsGrad,
                             const DebugContext &debug, const OptionFlags &options,
                             linalg::PlanningCache *cache) {
  const Stack s = describe(graph, params, options, "lstm::lstmStackBwdWithWU");
  checkCount(s, weights.size(), "weights");
  checkCount(s, intermediates.layers.size(), "intermediates.layers");
  checkCount(s, intermediates.outputs.size(), "intermediates.outputs");
  if (intermediates.inputs.size() != s.L)
    throw shape_error(fmt::format("{}: intermediates.inputs has {} entries, not numLayers {}",
                                  s.what, intermediates.inputs.size(), s.L));
  checkStackState(s, stateInit, s.what + ": stateInit");
  const Type t = params.rnn.dataType;
  checkShape(output, {s.T(), s.B(), s.D * s.W()}, t, s.what + ": output");
  checkShape(outputGrad, {s.T(), s.B(), s.D * s.W()}, t, s.what + ": outputGrad");
  if (inputGrad && !params.calcInputGradients)
    throw invalid_option(s.what + ": inputGrad was asked for, but params.calcInputGradients is "
                                  "false");
  if (finalStateGrad) {
    if (finalStateGrad->output.valid())
      checkShape(finalStateGrad->output, {s.count(), s.B(), s.W()}, t,
                 s.what + ": finalStateGrad.output");
    if (finalStateGrad->cellState.valid())
      checkShape(finalStateGrad->cellState, {s.count(), s.B(), s.H()}, t,
                 s.what + ": finalStateGrad.cellState");
  }
  const Tensor dh0 = stateTensor(graph, params, s.count(), s.W(), {debug, "initialOutputGrad"});
  const Tensor dc0 = stateTensor(graph, params, s.count(), s.H(), {debug, "initialCellGrad"});
  weightsGrad.assign(s.count(), LstmWeights{});
  Tensor dy = outputGrad; // the gradient of layer l's output
  for (std::size_t l = s.L; l-- > 0;) {
    const DebugContext dl{debug, fmt::format("layer{}", l)};
    if (s.drops(l, true))
      dy = rnn::dropoutSequence(graph, params.rnn, dy, s.o.dropout, s.o.seed,
                                static_cast<unsigned>(l), prog, {dl, "dropout"});
    const bool wantDx = l > 0 || inputGrad;
    Tensor dx;
    for (std::size_t d = 0; d < s.D; ++d) {
      const std::size_t i = l * s.D + d;
      // The backward takes the layer's options as given: preCalcWeights, which the wavefront
      // sets false above the first layer, has no part in it.
      const LayerSetup setup = s.layer(graph, l, d, false);
      LstmState last;
      if (finalStateGrad && finalStateGrad->output.valid())
        last.output = finalStateGrad->output[i];
      if (finalStateGrad && finalStateGrad->cellState.valid())
        last.cellState = finalStateGrad->cellState[i];
      Tensor dxd;
      const LstmState g = lstmBwdWithWU(
          graph, setup.params, prog, entry(stateInit, i), intermediates.layers[i], weights[i],
          intermediates.inputs[l], intermediates.outputs[i],
          s.D == 1 ? dy : dy.slice(d * s.W(), (d + 1) * s.W(), 2), finalStateGrad ? &last : nullptr,
          wantDx ? &dxd : nullptr, weightsGrad[i], {dl, s.reverse(d) ? "reverse" : "forward"},
          setup.options, cache);
      prog.add(Copy(g.output, dh0[i]));
      prog.add(Copy(g.cellState, dc0[i]));
      if (!wantDx)
        continue;
      if (dx.valid())
        ops::addInPlace(graph, dx, dxd, prog, {dl, "inputGrad"});
      else
        dx = dxd;
    }
    dy = dx;
  }
  if (inputGrad)
    *inputGrad = dy;
  return {dh0, dc0};
}

} // namespace aspen::nn::lstm
