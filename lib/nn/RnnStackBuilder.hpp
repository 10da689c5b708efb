// A stack of recurrent layers in one call, for any cell (internal; aspen/nn/LstmStack.hpp and
// GruStack.hpp are its users, docs/recurrent.md "Stacks in one call" its contract).
//
// StackBuilder<Cell> holds what does not depend on the cell: the stack's options, the layers'
// parameters and options, the two forward schedules (the wavefront, where every layer's steps
// are lanes of one wave loop with the dropout between them as lanes of its own; layer by layer,
// a bidirectional layer's directions as two lanes when both fuse), the final states, and the
// backward layer by layer. Cell says how one layer in one direction is made:
//   Params, Weights, Options             the layer's types
//   kName                                "lstm", in messages
//   stateSizes(params)                   the widths of the state's parts ({W, H}: h and c)
//   width(params)                        W, the width of h and of a direction's output
//   setInputSize(params, I)              params' input size set to I (a layer above the first)
//   parse(graph, params, options, what)  the layer's options, checked
//   fuses(graph, params, opts, what)     whether its forward steps are fused, in one shard
//   wavefrontRefusal(params)             why a stack of these cannot be a wavefront ("" if it
//                                        can)
//   kWavefrontMinBatch                   the smallest batch stackSchedule auto runs as one
//   checkWeights, createWeights          as the layer's own
//   lane(...), alone(...)                the forward in run order: as a wave lane / as its
//                                        builder runs it; a Result
//   backward(...)                        the layer's backward with weight update (given its
//                                        direction)
#pragma once

#include "RnnLoop.hpp"

#include "support/OptionParsing.hpp"

#include <aspen/Error.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/ElementWise.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <string>
#include <vector>

namespace aspen::nn::rnn::detail {

enum class StackSchedule { Auto, Wavefront, LayerByLayer };


// The stack's own options, and the layer options every layer takes.
struct StackOptions {
  unsigned numLayers = 1;
  bool bidirectional = false, reverse = false;
  double dropout = 0.0;
  std::uint64_t seed = 0;
  StackSchedule schedule = StackSchedule::Auto;
  OptionFlags layer;
};
StackOptions parseStackOptions(const OptionFlags &options, const std::string &what);

// What the forward of one layer in one direction made.
struct StackLayerResult {
  Tensor runOutput; // [T, B, W] in the order its steps ran
  Tensor cell;      // the final cell state [B, H] (the LSTM's), else invalid
  Tensor inter;     // its fwdIntermediates (training)
};

// The lanes of one wave loop being built.
struct StackLanes {
  std::vector<WaveLane> lanes;
  std::size_t next = 0; // the offset of the next layer's lane
};

// Shape and type checks of the stack's tensors (shape_error / type_error naming `what`).
void checkStackTensor(const Tensor &t, const std::vector<std::size_t> &shape, Type type,
                      const std::string &what);
// [n, B, size] laid out like n states.
Tensor stackStateTensor(Graph &graph, const RnnParams &params, std::size_t n, std::size_t size,
                        const DebugContext &debug);
// The dropout of layer l's output at each step as a lane of its own, at lanes.next (the
// wavefront): produced [T, B, W] in run order (reversed: a reverse stack's) into dropped.
void addDropoutLane(Graph &graph, const RnnParams &params, const Tensor &produced,
                    const Tensor &dropped, const Dropout &dropout, bool reversed,
                    const Tensor &lengths, StackLanes &lanes);

// For a layer whose backward takes no final-state gradient (the GRU's): dy [T, B, W] (the
// caller's order) with grad [B, W] added at each row's last step (step 0 for a reverse layer),
// as a copy, and the part of grad that reaches the initial state directly (rows of length 0;
// zero elsewhere).
std::pair<Tensor, Tensor> foldFinalStateGrad(Graph &graph, const RnnParams &params,
                                             const Tensor &dy, const Tensor &grad, bool reverse,
                                             program::Sequence &prog, const DebugContext &debug);

template <class Cell> class StackBuilder {
public:
  using Params = typename Cell::Params;
  using Weights = typename Cell::Weights;
  using Options = typename Cell::Options;
  using State = std::vector<Tensor>; // the state's parts, each [L*D, B, size]

  // One layer in one direction, set up as the layer's own builder would.
  struct Layer {
    Params params;
    OptionFlags options;
    Options opts;
    bool reverse = false;
    std::string name;
    bool fuses = false;
  };

  StackBuilder(const Graph &graph, const Params &params, const OptionFlags &options,
               std::string what)
      : graph_(graph), base_(params), o_(parseStackOptions(options, what)), what_(std::move(what)) {
    Cell::checkParams(params, what_);
    L_ = o_.numLayers;
    D_ = o_.bidirectional ? 2 : 1;
    if (!params.outputFullSequence)
      throw invalid_option(what_ + ": params.outputFullSequence must be true for a stack (its "
                                   "final states hold each row's last output)");
    const std::string refusal = wavefrontRefusal();
    if (o_.schedule == StackSchedule::Wavefront && !refusal.empty())
      throw invalid_option(what_ + ": stackSchedule wavefront cannot run: " + refusal);
    wavefront_ = refusal.empty() &&
                 (o_.schedule == StackSchedule::Wavefront ||
                  (o_.schedule == StackSchedule::Auto && B() >= Cell::kWavefrontMinBatch));
  }

  const std::string &what() const { return what_; }
  // The schedule the stack runs: stackSchedule, auto resolved.
  const char *schedule() const { return wavefront_ ? "wavefront" : "layerByLayer"; }
  std::size_t count() const { return L_ * D_; }
  std::size_t T() const { return base_.rnn.maxTimeSteps; }
  std::size_t B() const { return base_.rnn.batchSize; }
  std::size_t W() const { return Cell::width(base_); }
  Type type() const { return base_.rnn.dataType; }

  // Layer l in direction d; `wave`: as the wavefront runs it (the forward only).
  Layer layer(std::size_t l, std::size_t d, bool wave) const {
    Params p = base_;
    Cell::setInputSize(p, l == 0 ? base_.rnn.layerSizes[0] : D_ * W());
    if (l > 0) // the layer below needs its input's gradient
      p.calcInputGradients = true;
    OptionFlags options = o_.layer;
    const bool reverse = d == 1 || o_.reverse;
    options.set("direction", reverse ? "reverse" : "forward");
    if (wave && l > 0) // the input is known only step by step
      options.set("preCalcWeights", "false");
    const std::string name =
        fmt::format("{} (layer {}, {})", what_, l, reverse ? "reverse" : "forward");
    Layer layer{p, options, Cell::parse(graph_, p, options, name), reverse, name};
    layer.fuses = Cell::fuses(graph_, p, layer.opts, name);
    return layer;
  }

  std::vector<Weights> createWeights(Graph &graph, const DebugContext &debug,
                                     linalg::PlanningCache *cache) const {
    std::vector<Weights> weights;
    for (std::size_t l = 0; l < L_; ++l)
      for (std::size_t d = 0; d < D_; ++d) {
        const Layer s = layer(l, d, wavefront_);
        weights.push_back(Cell::createWeights(
            graph, s.params, {debug, fmt::format("layer{}{}", l, d ? "Reverse" : "")}, s.options,
            cache));
      }
    return weights;
  }

  State createState(Graph &graph, const DebugContext &debug) const {
    State state;
    const auto sizes = Cell::stateSizes(base_);
    for (std::size_t k = 0; k < sizes.size(); ++k)
      state.push_back(stackStateTensor(graph, base_.rnn, count(), sizes[k],
                                       {debug, k == 0 ? "output" : "cellState"}));
    return state;
  }

  void checkState(const State &state, const std::string &what) const {
    const auto sizes = Cell::stateSizes(base_);
    for (std::size_t k = 0; k < sizes.size(); ++k)
      checkStackTensor(state[k], {count(), B(), sizes[k]}, type(),
                       what + (k == 0 ? ".output" : ".cellState"));
  }

  void checkCount(std::size_t n, const char *name) const {
    if (n != count())
      throw shape_error(fmt::format("{}: {} has {} entries, but numLayers {} x {} directions "
                                    "need {}",
                                    what_, name, n, L_, D_, count()));
  }

  // The forward: {output [T, B, D*W], final state}.
  std::pair<Tensor, State> forward(Graph &graph, const State &init, const Tensor &in,
                                   const std::vector<Weights> &weights,
                                   StackIntermediates *inter, program::Sequence &prog,
                                   const DebugContext &debug, linalg::PlanningCache *cache) const {
    checkCount(weights.size(), "weights");
    checkState(init, what_ + ": stateInit");
    checkStackTensor(in, {T(), B(), base_.rnn.layerSizes[0]}, type(), what_ + ": input");
    for (std::size_t i = 0; i < count(); ++i) {
      const Layer s = layer(i / D_, i % D_, wavefront_);
      Cell::checkWeights(s.params, weights[i], s.name);
      if (s.opts.inferenceOnly && inter)
        throw invalid_option(what_ + ": intermediates were asked for, but the option "
                                     "inferenceOnly is true (an inference pass keeps none)");
    }
    Run run{graph, init, weights, inter, prog, debug, cache, createState(graph, {debug, "final"}),
            Tensor()};
    if (inter) {
      *inter = StackIntermediates{};
      inter->layers.resize(count());
      inter->inputs.resize(L_);
      inter->outputs.resize(count());
    }
    if (wavefront_)
      forwardWavefront(run, in);
    else
      forwardLayerByLayer(run, in);
    return {run.output, run.final};
  }

  // The backward with weight update: the initial state's gradient.
  State backward(Graph &graph, const State &init, const StackIntermediates &inter,
                 const std::vector<Weights> &weights, const Tensor &output,
                 const Tensor &outputGrad, const State *finalGrad, Tensor *inputGrad,
                 std::vector<Weights> &weightsGrad, program::Sequence &prog,
                 const DebugContext &debug, linalg::PlanningCache *cache) const {
    checkCount(weights.size(), "weights");
    checkCount(inter.layers.size(), "intermediates.layers");
    checkCount(inter.outputs.size(), "intermediates.outputs");
    if (inter.inputs.size() != L_)
      throw shape_error(fmt::format("{}: intermediates.inputs has {} entries, not numLayers {}",
                                    what_, inter.inputs.size(), L_));
    checkState(init, what_ + ": stateInit");
    checkStackTensor(output, {T(), B(), D_ * W()}, type(), what_ + ": output");
    checkStackTensor(outputGrad, {T(), B(), D_ * W()}, type(), what_ + ": outputGrad");
    if (inputGrad && !base_.calcInputGradients)
      throw invalid_option(what_ + ": inputGrad was asked for, but params.calcInputGradients "
                                   "is false");
    const auto sizes = Cell::stateSizes(base_);
    if (finalGrad)
      for (std::size_t k = 0; k < sizes.size(); ++k)
        if ((*finalGrad)[k].valid())
          checkStackTensor((*finalGrad)[k], {count(), B(), sizes[k]}, type(),
                           what_ + (k == 0 ? ": finalStateGrad.output"
                                           : ": finalStateGrad.cellState"));
    const State initGrad = createState(graph, {debug, "initialStateGrad"});
    weightsGrad.assign(count(), Weights{});
    Tensor dy = outputGrad; // the gradient of layer l's output
    for (std::size_t l = L_; l-- > 0;) {
      const DebugContext dl{debug, fmt::format("layer{}", l)};
      if (drops(l, true))
        dy = dropoutSequence(graph, base_.rnn, dy, o_.dropout, o_.seed, unsigned(l), prog,
                             {dl, "dropout"});
      const bool wantDx = l > 0 || inputGrad;
      Tensor dx;
      for (std::size_t d = 0; d < D_; ++d) {
        const std::size_t i = l * D_ + d;
        // The backward takes the layer options as given: preCalcWeights, which the wavefront
        // sets false above the first layer, has no part in it.
        const Layer s = layer(l, d, false);
        std::vector<Tensor> last;
        for (std::size_t k = 0; finalGrad && k < sizes.size(); ++k)
          last.push_back((*finalGrad)[k].valid() ? (*finalGrad)[k][i] : Tensor());
        Tensor dxd;
        const std::vector<Tensor> g = Cell::backward(
            graph, s.params, prog, entry(init, i), inter.layers[i], weights[i], inter.inputs[l],
            inter.outputs[i], D_ == 1 ? dy : dy.slice(d * W(), (d + 1) * W(), 2),
            finalGrad ? &last : nullptr, wantDx ? &dxd : nullptr, weightsGrad[i], s.reverse,
            {dl, s.reverse ? "reverse" : "forward"}, s.options, cache);
        for (std::size_t k = 0; k < g.size(); ++k)
          prog.add(program::Copy(g[k], initGrad[k][i]));
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
    return initGrad;
  }

private:
  // One forward being built.
  struct Run {
    Graph &graph;
    const State &init;
    const std::vector<Weights> &weights;
    StackIntermediates *inter;
    program::Sequence &prog;
    const DebugContext &debug;
    linalg::PlanningCache *cache;
    State final;
    Tensor output;
  };

  bool drops(std::size_t l, bool training) const {
    return training && o_.dropout > 0.0 && l + 1 < L_;
  }

  static std::vector<Tensor> entry(const State &state, std::size_t i) {
    std::vector<Tensor> e;
    for (const Tensor &part : state)
      e.push_back(part[i]);
    return e;
  }

  std::string wavefrontRefusal() const {
    if (D_ != 1)
      return "it takes one direction (a layer above a bidirectional one needs both directions "
             "of every step below)";
    if (std::string why = Cell::wavefrontRefusal(base_); !why.empty())
      return why;
    for (std::size_t l = 0; l < L_; ++l)
      if (!layer(l, 0, true).fuses)
        return fmt::format("layer {}'s steps are not fused in one shard (stepMethod, numShards, "
                           "rnnPersistentKernel)",
                           l);
    return {};
  }

  // Records layer l direction d's results: its final state, and its own output in the
  // caller's order (returned).
  Tensor record(Run &run, const Layer &s, std::size_t l, std::size_t d,
                const StackLayerResult &r, const DebugContext &debug) const {
    const std::size_t i = l * D_ + d;
    // In run order a row's last step is its length - 1 in either direction.
    const Tensor hn = finalOutputState(run.graph, s.params.rnn, r.runOutput, run.init[0][i],
                                       false, run.prog, {debug, "finalOutput"});
    run.prog.add(program::Copy(hn, run.final[0][i]));
    if (r.cell.valid())
      run.prog.add(program::Copy(r.cell, run.final[1][i]));
    const RunOrder order{run.graph, s.params.rnn, s.reverse, run.prog, debug};
    const Tensor own = order(r.runOutput, "output");
    if (run.inter) {
      run.inter->layers[i] = r.inter;
      run.inter->outputs[i] = own;
    }
    return own;
  }

  // Layer l's output [T, B, D*W] from its directions' own outputs (the caller's order).
  Tensor layerOutput(Run &run, const std::vector<Tensor> &own, const DebugContext &debug) const {
    if (D_ == 1)
      return own[0];
    RnnParams p = base_.rnn;
    p.layerSizes[1] = D_ * W();
    Tensor out = createOutputTensor(run.graph, p, 1, {debug, "output"});
    for (std::size_t d = 0; d < D_; ++d)
      run.prog.add(program::Copy(own[d], out.slice(d * W(), (d + 1) * W(), 2)));
    return out;
  }

  void forwardLayerByLayer(Run &run, const Tensor &in) const {
    const bool training = run.inter != nullptr;
    Tensor layerIn = in;
    for (std::size_t l = 0; l < L_; ++l) {
      const DebugContext dl{run.debug, fmt::format("layer{}", l)};
      if (run.inter)
        run.inter->inputs[l] = layerIn;
      std::vector<Layer> layers;
      bool together = D_ == 2;
      for (std::size_t d = 0; d < D_; ++d) {
        layers.push_back(layer(l, d, false));
        together = together && layers.back().fuses;
      }
      std::vector<StackLayerResult> results;
      StackLanes lanes;
      for (std::size_t d = 0; d < D_; ++d) {
        const Layer &s = layers[d];
        const DebugContext dd{dl, s.reverse ? "reverse" : "forward"};
        const RunOrder order{run.graph, s.params.rnn, s.reverse, run.prog, dd};
        const Tensor x = order(layerIn, "input");
        const std::size_t i = l * D_ + d;
        results.push_back(together ? Cell::lane(run.graph, s.params, s.opts, entry(run.init, i),
                                                run.weights[i], x, training, lanes, run.prog,
                                                dd, run.cache)
                                   : Cell::alone(run.graph, s.params, s.opts, entry(run.init, i),
                                                 run.weights[i], x, training, run.prog, dd,
                                                 run.cache));
      }
      if (together)
        waveLoop(run.graph, base_.rnn, lanes.lanes, run.prog, {dl, "directions"});
      std::vector<Tensor> own;
      for (std::size_t d = 0; d < D_; ++d)
        own.push_back(record(run, layers[d], l, d, results[d], dl));
      run.output = layerOutput(run, own, dl);
      layerIn = drops(l, training) ? dropoutSequence(run.graph, base_.rnn, run.output,
                                                     o_.dropout, o_.seed, unsigned(l), run.prog,
                                                     {dl, "dropout"})
                                   : run.output;
    }
  }

  void forwardWavefront(Run &run, const Tensor &in) const {
    const bool training = run.inter != nullptr;
    const RunOrder order{run.graph, base_.rnn, o_.reverse, run.prog, run.debug};
    Tensor x = order(in, "input"); // the stack runs in its steps' order
    StackLanes lanes;
    std::vector<Layer> layers;
    std::vector<StackLayerResult> results;
    std::vector<Tensor> runInputs;
    const Tensor lengths = lengthsOf(run.graph, base_.rnn, {run.debug, "lengths"});
    for (std::size_t l = 0; l < L_; ++l) {
      const DebugContext dl{run.debug, fmt::format("layer{}", l)};
      layers.push_back(layer(l, 0, true));
      if (l > 0 && !x.isContiguous()) // read by the steps in place as it is written
        throw error(what_ + ": internal: a wavefront layer's input is not one variable");
      runInputs.push_back(x);
      results.push_back(Cell::lane(run.graph, layers[l].params, layers[l].opts,
                                   entry(run.init, l), run.weights[l], x, training, lanes,
                                   run.prog, dl, run.cache));
      ++lanes.next;
      if (!drops(l, training)) {
        x = results[l].runOutput;
        continue;
      }
      // The dropout of each step as a lane of its own, one wave after the step.
      const Tensor dropped =
          addSequence(run.graph, type(), T(), B(), W(), 1, {dl, "dropped"});
      addDropoutLane(run.graph, base_.rnn, results[l].runOutput, dropped,
                     {o_.dropout, dropoutKey(o_.seed, unsigned(l))}, o_.reverse, lengths, lanes);
      ++lanes.next;
      x = dropped;
    }
    waveLoop(run.graph, base_.rnn, lanes.lanes, run.prog, {run.debug, "wavefront"});
    for (std::size_t l = 0; l < L_; ++l) {
      const DebugContext dl{run.debug, fmt::format("layer{}", l)};
      if (run.inter)
        run.inter->inputs[l] = l == 0 ? in : order(runInputs[l], "input");
      run.output = record(run, layers[l], l, 0, results[l], dl);
    }
  }

  const Graph &graph_;
  Params base_;
  StackOptions o_;
  std::string what_;
  std::size_t L_ = 1, D_ = 1;
  bool wavefront_ = false;
};

} // namespace aspen::nn::rnn::detail
