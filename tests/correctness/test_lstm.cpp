// The LSTM layer and the generic recurrent loop beyond what lstm_layer checks against its host
// model: the non-linearities give the same bits through aspen::ops and aspen::nn (so a cell
// written with ops::map matches the layer), results do not depend on shards, code reuse,
// recomputation or the weight-update cadence, rnn::Rnn runs user bodies (forward, reverse,
// sharded, per-row lengths, gathers), and the FLOP counts and pre-plan parameters are the
// documented ones.
#include "test_nn_harness.hpp"

// The layer drivers' double-precision reference library (its host step reversal) and the
// LSTM's double model (the projected layer's reference).
#include "rnnref/Lstm.hpp"
#include "rnnref/Common.hpp"

#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/nn/RecurrentPlan.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Zero.hpp>

#include <algorithm>
#include <sstream>
#include <tuple>

using namespace aspen;
using namespace nntest;
namespace lstm = aspen::nn::lstm;
namespace rnn = aspen::nn::rnn;
using nn::NonLinearityType;
using program::Copy;
using program::Sequence;

namespace {

// Inputs in [-30, 30) with the edges that matter (0, -0, +-inf, NaN, saturation).
Values activationInputs(std::size_t n, unsigned seed) {
  Values v = randomValues(n, -30.0, 30.0, seed);
  const Values edges{0.0, -0.0, 1e-30, -1e-30, 0.6249, 0.625, -0.625, 9.0, -9.0, 20.0, -20.0,
                     88.0, -88.0, 100.0, -100.0, INFINITY, -INFINITY, NAN};
  std::copy(edges.begin(), edges.end(), v.begin());
  return v;
}

} // namespace

TEST_CASE("ops and nn compute the non-linearities and their gradients with the same bits",
          "[correctness][lstm][nonlinearity]") {
  for (Type type : {FLOAT, HALF}) {
    Harness h(Target::createGeneric(3));
    const std::size_t n = 4000;
    Tensor x = h.input(type, {n}, "x", activationInputs(n, 7));
    Tensor g = h.input(type, {n}, "g", randomValues(n, -2.0, 2.0, 8));
    using namespace ops::expr;
    struct Kind {
      const char *name;
      NonLinearityType nnType;
      Tensor (*forward)(Graph &, const Tensor &, Sequence &, const DebugContext &,
                        const OptionFlags &);
      Tensor (*gradient)(Graph &, const Tensor &, const Tensor &, Sequence &,
                         const DebugContext &, const OptionFlags &);
    };
    const Kind kinds[] = {
        {"sigmoid", NonLinearityType::SIGMOID, ops::sigmoid, ops::sigmoidGrad},
        {"tanh", NonLinearityType::TANH, ops::tanh, ops::tanhGrad},
        {"relu", NonLinearityType::RELU, ops::relu, ops::reluGrad},
        {"gelu_erf", NonLinearityType::GELU_ERF, ops::geluErf, ops::geluErfGrad}};
    for (const Kind &k : kinds) {
      const std::string name = k.name;
      const Tensor yOps = k.forward(h.graph, x, h.prog, {}, {});
      const Tensor yNn = nn::nonLinearity(h.graph, k.nnType, x, h.prog);
      // The gradient's first operand: the output, or the input for gelu_erf.
      const Tensor act = nn::gradientTakesInput(k.nnType) ? x : yNn;
      h.output("ops " + name, yOps);
      h.output("nn " + name, yNn);
      h.output("ops grad " + name, k.gradient(h.graph, act, g, h.prog, {}, {}));
      h.output("nn grad " + name, nn::nonLinearityInputGradient(h.graph, k.nnType, act, g, h.prog));
    }
    // Inside a fused expression (one generated codelet) too.
    h.output("fused", ops::map(h.graph, Sigmoid(_1) * Tanh(_1), {x}, h.prog));
    h.output("separate", ops::mul(h.graph, nn::nonLinearity(h.graph, NonLinearityType::SIGMOID, x, h.prog),
                                  nn::nonLinearity(h.graph, NonLinearityType::TANH, x, h.prog), h.prog));
    auto out = h.run(2);
    for (const Kind &k : kinds) {
      INFO(k.name << " on " << type.toString());
      CHECK(sameValues(out[std::string("ops ") + k.name], out[std::string("nn ") + k.name]));
      CHECK(sameValues(out[std::string("ops grad ") + k.name],
                       out[std::string("nn grad ") + k.name]));
    }
    if (type == FLOAT) // half rounds after every node of a fused expression
      CHECK(sameValues(out["fused"], out["separate"]));
  }
}

TEST_CASE("a one-step LSTM cell written with ops::map gives the layer's bits",
          "[correctness][lstm]") {
  const std::size_t B = 3, I = 4, H = 5;
  Harness h(Target::createGeneric(4));
  lstm::LstmParams params(FLOAT, B, 1, {I, H});
  params.cellOrder = {lstm::BASIC_LSTM_CELL_OUTPUT_GATE, lstm::BASIC_LSTM_CELL_FORGET_GATE,
                      lstm::BASIC_LSTM_CELL_CANDIDATE, lstm::BASIC_LSTM_CELL_INPUT_GATE};
  // The product [x | h0] . [Wi; Wo] (not the pre-weighted form) as a matMul, then the cell (the
  // fused step sums the product in its own order: the fused-step test compares it).
  const OptionFlags options{{"inferenceOnly", "true"},
                            {"preCalcWeights", "false"},
                            {"stepMethod", "productThenCell"}};
  Tensor in = lstm::createInput(h.graph, params, "in", options);
  lstm::LstmState init = lstm::createInitialState(h.graph, params, "init", options);
  lstm::LstmWeights w = lstm::createWeights(h.graph, params, "w", options);
  const std::pair<const char *, Tensor> writes[] = {{"in", in}, {"h0", init.output},
                                                     {"c0", init.cellState}, {"wi", w.inputWeights},
                                                     {"wo", w.outputWeights}, {"b", w.biases}};
  for (const auto &[name, t] : writes)
    h.graph.createHostWrite(name, t);
  auto [y, c] = lstm::lstmFwd(h.graph, params, init, in, w, nullptr, h.prog, "lstm", options);
  h.output("layer h", y[0]);
  h.output("layer c", c);

  // The same step by hand: pre = [x | h0] . [Wi; Wo] (the layer's product), then the cell.
  Tensor xh = h.graph.addVariable(FLOAT, {B, I + H}, "xh");
  util::mapTensorLinearly(h.graph, xh);
  h.prog.add(Copy(in[0], xh.slice(0, I, 1)));
  h.prog.add(Copy(init.output, xh.slice(I, I + H, 1)));
  auto matrix = [](const Tensor &t) { return t.dimShuffle({1, 0, 2}).reshape({t.dim(1), 4 * t.dim(2)}); };
  const Tensor wMat = concat(matrix(w.inputWeights), matrix(w.outputWeights), 0);
  const OptionFlags mmOptions{{"partialsType", "float"},
                              {"availableMemoryProportion", "0.6"},
                              {"fullyConnectedPass", "INFERENCE_FWD"}};
  const Tensor pre = linalg::matMul(h.graph, xh, wMat, h.prog, "pre", mmOptions);
  auto gate = [&](lstm::BasicLstmCellUnit u) {
    const unsigned slot = static_cast<unsigned>(
        std::find(params.cellOrder.begin(), params.cellOrder.end(), u) - params.cellOrder.begin());
    return std::pair{pre.slice(slot * H, (slot + 1) * H, 1), w.biases[slot].expand({0}).broadcast(B, 0)};
  };
  using namespace ops::expr;
  auto [af, bf] = gate(lstm::BASIC_LSTM_CELL_FORGET_GATE);
  auto [ai, bi] = gate(lstm::BASIC_LSTM_CELL_INPUT_GATE);
  auto [ag, bg] = gate(lstm::BASIC_LSTM_CELL_CANDIDATE);
  auto [ao, bo] = gate(lstm::BASIC_LSTM_CELL_OUTPUT_GATE);
  const Tensor cHand = ops::map(h.graph,
                                Sigmoid(_1 + _2) * _3 + Sigmoid(_4 + _5) * Tanh(_6 + _7),
                                {af, bf, init.cellState, ai, bi, ag, bg}, h.prog);
  const Tensor hHand = ops::map(h.graph, Sigmoid(_1 + _2) * Tanh(_3), {ao, bo, cHand}, h.prog);
  h.output("hand h", hHand);
  h.output("hand c", cHand);

  Engine e(h.graph, h.prog);
  e.load(aspen::test::deviceFor(h.graph.getTarget()));
  auto write = [&](const char *name, const Tensor &t, unsigned seed) {
    const auto v = convert<float>(randomValues(t.numElements(), -1.5, 1.5, seed));
    e.writeTensor(name, v.data(), v.data() + v.size());
  };
  write("in", in, 1);
  write("h0", init.output, 2);
  write("c0", init.cellState, 3);
  write("wi", w.inputWeights, 4);
  write("wo", w.outputWeights, 5);
  write("b", w.biases, 6);
  e.run();
  auto read = [&](const std::string &name) {
    std::vector<float> v(B * H);
    e.readTensor(name, v.data(), v.data() + v.size());
    return widen(v);
  };
  CHECK(sameValues(read("layer c"), read("hand c")));
  CHECK(sameValues(read("layer h"), read("hand h")));
  // Not trivially equal: the state moved.
  CHECK(read("layer c") != Values(B * H, 0.0));
}

namespace {

struct Config {
  std::string name;
  OptionFlags fwd, bwd;
};

struct LstmRun {
  Values output, finalCell, inputGrad, outputGrad0, cellGrad0, wiGrad, woGrad, bGrad;
  Values projGrad; // empty without a projection
};

// A training step (lstmFwd + lstmBwdWithWU) with fixed data: the shape, type, target and
// engine threads, the per-row lengths (none: every row T long) and the options.
struct TrainingCase {
  std::size_t T = 5, B = 3, I = 3, H = 4;
  Type type = FLOAT;
  unsigned tiles = 4, threads = 3, seed = 10;
  std::vector<unsigned> lengths;
  NonLinearityType activation = NonLinearityType::TANH;
  OptionFlags fwd, bwd;
  // The engine runs `runs` times, each after writing every input again: run r's data is data
  // set firstData + r (seeds seed + 1000 (firstData + r) on). The last run's results return.
  unsigned runs = 1, firstData = 0;
  bool reverseWorkers = false; // aspen.cpu.workerOrder reverse (workers, and block fibers)
  // in and dy written, out and dx read with each row's steps reversed on the host
  // (rnnref::reverseRowSteps): with the option direction reverse, the forward layer's run.
  bool reverseOnHost = false;
  bool separateWU = false; // lstmBwd + lstmWU instead of lstmBwdWithWU
  bool fullSequence = true; // params.outputFullSequence
  std::size_t projSize = 0; // params.projSize
  double activationClip = 0; // params.activationClip's threshold (0: none)
  bool cellClip = false;     // params.cellClip [-0.8, 0.7]
};

LstmRun trainingRun(const TrainingCase &c) {
  Harness h(Target::createGeneric(c.tiles));
  Tensor lengths;
  if (!c.lengths.empty()) {
    lengths = h.graph.addVariable(UNSIGNED_INT, {c.B}, "lengths");
    h.graph.setTileMapping(lengths, 0);
    h.graph.createHostWrite("lengths", lengths);
  }
  lstm::LstmParams params = lengths.valid()
                                ? lstm::LstmParams(c.type, c.B, c.T, lengths, {c.I, c.H})
                                : lstm::LstmParams(c.type, c.B, c.T, {c.I, c.H});
  params.activation = c.activation;
  params.outputFullSequence = c.fullSequence;
  params.projSize = c.projSize;
  params.activationClip = {c.activationClip > 0, c.activationClip};
  params.cellClip = {c.cellClip, -0.8, 0.7, true};
  Tensor in = lstm::createInput(h.graph, params, "in", c.fwd);
  lstm::LstmState init = lstm::createInitialState(h.graph, params, "init", c.fwd);
  lstm::LstmWeights w = lstm::createWeights(h.graph, params, "w", c.fwd);
  Tensor inter;
  auto [out, cell] = lstm::lstmFwd(h.graph, params, init, in, w, &inter, h.prog, "fwd", c.fwd);
  Tensor dy = h.graph.clone(out, "dy");
  Tensor dx;
  lstm::LstmWeights dw;
  lstm::LstmState d0;
  if (c.separateWU) {
    Tensor bwdInter;
    d0 = lstm::lstmBwd(h.graph, params, h.prog, init, inter, w, in, out, dy, nullptr, &dx,
                       &bwdInter, "bwd", c.bwd);
    dw = lstm::lstmWU(h.graph, params, h.prog, init, inter, bwdInter, w, in, out, "wu", c.bwd);
  } else {
    d0 = lstm::lstmBwdWithWU(h.graph, params, h.prog, init, inter, w, in, out, dy, nullptr, &dx,
                             dw, "bwd", c.bwd);
  }
  // Written in this order, each from the next seed (referenceRun draws the same values).
  std::vector<std::pair<const char *, Tensor>> writes = {
      {"in", in}, {"h0", init.output}, {"c0", init.cellState}, {"wi", w.inputWeights},
      {"wo", w.outputWeights}, {"b", w.biases}, {"dy", dy}};
  if (c.projSize)
    writes.emplace_back("wp", w.projection);
  for (const auto &[name, t] : writes)
    h.graph.createHostWrite(name, t);
  std::vector<std::pair<const char *, Tensor>> reads = {
      {"out", out}, {"c", cell}, {"dx", dx}, {"dh0", d0.output}, {"dc0", d0.cellState},
      {"dwi", dw.inputWeights}, {"dwo", dw.outputWeights}, {"db", dw.biases}};
  if (c.projSize)
    reads.emplace_back("dwp", dw.projection);
  for (const auto &[name, t] : reads)
    h.graph.createHostRead(name, t);
  OptionFlags engineOptions{{"aspen.cpu.threads", std::to_string(c.threads)},
                            {"aspen.cpu.inlineElements", "0"}};
  if (c.reverseWorkers)
    engineOptions.set("aspen.cpu.workerOrder", "reverse");
  Engine e(h.graph, h.prog, engineOptions);
  e.load(aspen::test::deviceFor(h.graph.getTarget()));
  const auto hostOrder = [&](const std::string &name, const Values &v) {
    const bool sequence = name == "in" || name == "dx" ||
                          (c.fullSequence && (name == "dy" || name == "out"));
    return c.reverseOnHost && sequence ? rnnref::reverseRowSteps(v, c.lengths, c.T, c.B) : v;
  };
  for (unsigned run = 0; run < c.runs; ++run) {
    unsigned seed = c.seed + 1000 * (c.firstData + run);
    for (const auto &[name, t] : writes)
      Harness::write(e, name, c.type,
                     hostOrder(name, randomValues(t.numElements(), -1.0, 1.0, seed++)));
    if (lengths.valid())
      e.writeTensor("lengths", c.lengths.data(), c.lengths.data() + c.lengths.size());
    e.run();
  }
  auto read = [&](const char *name, const Tensor &t) {
    return hostOrder(name, Harness::read(e, name, c.type, t.numElements()));
  };
  return {read("out", out),       read("c", cell),
          read("dx", dx),         read("dh0", d0.output),
          read("dc0", d0.cellState), read("dwi", dw.inputWeights),
          read("dwo", dw.outputWeights), read("db", dw.biases),
          c.projSize ? read("dwp", dw.projection) : Values()};
}

// The training step trainingRun(c) computes (one run, tanh), from the same data rounded to the
// type, through the double-precision model (tools/rnnref/Lstm.hpp).
LstmRun referenceRun(const TrainingCase &c) {
  lstmref::LstmModel m;
  m.T = c.T, m.B = c.B, m.I = c.I, m.H = c.H, m.P = c.projSize;
  m.timeSteps = c.lengths;
  m.outputFullSequence = c.fullSequence;
  m.activationClip = c.activationClip;
  m.cellClip = c.cellClip, m.cellClipMin = -0.8, m.cellClipMax = 0.7;
  const std::size_t R = m.R();
  unsigned seed = c.seed + 1000 * c.firstData;
  auto next = [&](std::size_t n) {
    const Values v = randomValues(n, -1.0, 1.0, seed++);
    return c.type == HALF ? widen(convert<half>(v)) : widen(convert<float>(v));
  };
  lstmref::LstmData d;
  d.input = next(c.T * c.B * c.I);
  d.initialOutput = next(c.B * R);
  d.initialCellState = next(c.B * c.H);
  d.inputWeights = next(4 * c.I * c.H);
  d.outputWeights = next(4 * R * c.H);
  d.biases = next(4 * c.H);
  const Values dy = next(m.outputSize());
  d.projection = next(c.H * c.projSize);
  const lstmref::LstmForward f = lstmref::forward(m, d);
  const lstmref::LstmGrads g = lstmref::backward(m, d, f, dy);
  return {f.output,           f.finalCellState,       g.inputGrad,
          g.initialOutputGrad, g.initialCellStateGrad, g.inputWeightsGrad,
          g.outputWeightsGrad, g.biasesGrad,           g.projectionGrad};
}

// The step of the shard/reuse/recomputation test: T = 5, B = 3, I = 3, H = 4 on 4 tiles and 3
// threads, lengths {4, 0, 5} when variable.
LstmRun trainingStep(const Config &config, bool variableLengths, NonLinearityType activation) {
  TrainingCase c;
  c.fwd = config.fwd;
  c.bwd = config.bwd;
  c.activation = activation;
  if (variableLengths)
    c.lengths = {4, 0, 5};
  return trainingRun(c);
}

// Every result of a training step, bit for bit.
void requireSameBits(const LstmRun &got, const LstmRun &want) {
  CHECK(sameValues(got.output, want.output));
  CHECK(sameValues(got.finalCell, want.finalCell));
  CHECK(sameValues(got.inputGrad, want.inputGrad));
  CHECK(sameValues(got.outputGrad0, want.outputGrad0));
  CHECK(sameValues(got.cellGrad0, want.cellGrad0));
  CHECK(sameValues(got.wiGrad, want.wiGrad));
  CHECK(sameValues(got.woGrad, want.woGrad));
  CHECK(sameValues(got.bGrad, want.bGrad));
  CHECK(sameValues(got.projGrad, want.projGrad));
}

void requireWithin(const Values &got, const Values &want, const std::string &what) {
  requireClose(got, want, 1e-6, 1e-5, what);
}

} // namespace

TEST_CASE("LSTM results do not depend on shards, code reuse, recomputation or the WU cadence",
          "[correctness][lstm]") {
  const bool variable = GENERATE(false, true);
  const NonLinearityType activation = GENERATE(NonLinearityType::TANH, NonLinearityType::GELU);
  INFO("variable lengths " << variable << ", activation " << nn::asString(activation));
  const bool preCalc = GENERATE(false, true);
  const std::string preCalcValue = preCalc ? "true" : "false";
  INFO("preCalcWeights " << preCalcValue);
  auto both = [&](OptionFlags o) {
    o.set("preCalcWeights", preCalcValue);
    return Config{"", o, o};
  };
  const LstmRun base = trainingStep(both({{"numShards", "1"}, {"rnnStepsPerWU", "0"}}), variable,
                                    activation);
  // Same arithmetic in every step: identical bits.
  const std::vector<Config> identical{
      both({{"numShards", "3"}, {"rnnCodeReuse", "false"}, {"rnnStepsPerWU", "0"}}),
      both({{"numShards", "3"}, {"rnnCodeReuse", "true"}, {"rnnStepsPerWU", "0"}}),
      both({{"numShards", "5"}, {"rnnStepsPerWU", "0"}}),
      both({{"recomputationMode", "cellAndTanh"}, {"rnnStepsPerWU", "0"}}),
      both({{"recomputationMode", "full"}, {"rnnStepsPerWU", "0"}, {"numShards", "2"}})};
  for (const Config &c : identical) {
    std::string name;
    for (const auto &[k, v] : c.fwd)
      name += k + "=" + v + " ";
    INFO(name);
    requireSameBits(trainingStep(c, variable, activation), base);
  }
  // The weight update summed in other groups of steps: equal within rounding.
  for (const char *k : {"1", "2", "3"}) {
    for (const char *shards : {"1", "3"}) {
      INFO("rnnStepsPerWU " << k << ", numShards " << shards);
      const LstmRun r =
          trainingStep(both({{"rnnStepsPerWU", k}, {"numShards", shards}}), variable, activation);
      // The input gradient is taken in the loop when the WU is interleaved: other products.
      requireWithin(r.inputGrad, base.inputGrad, "dx");
      CHECK(sameValues(r.outputGrad0, base.outputGrad0));
      requireWithin(r.wiGrad, base.wiGrad, "dWi");
      requireWithin(r.woGrad, base.woGrad, "dWo");
      requireWithin(r.bGrad, base.bGrad, "db");
    }
  }
  // Pre-weighting the input sums the two products separately: equal within rounding.
  const LstmRun other = trainingStep(
      Config{"", {{"preCalcWeights", preCalc ? "false" : "true"}},
             {{"preCalcWeights", preCalc ? "false" : "true"}}},
      variable, activation);
  requireWithin(other.output, base.output, "output");
  requireWithin(other.inputGrad, base.inputGrad, "dx");
  requireWithin(other.wiGrad, base.wiGrad, "dWi");
}

// direction reverse: each row runs from its own last step back to step 0, which is the forward
// layer run on the rows' steps reversed (on the host here, so the reversal is checked too): the
// same bits, sequences, final states and weight gradients, through every entry point and loop
// form.
TEST_CASE("a reverse LSTM is the forward LSTM on each row's steps reversed, bit for bit",
          "[correctness][lstm]") {
  struct Variant {
    const char *what;
    std::vector<unsigned> lengths;
    Type type;
    OptionFlags options;
    bool separateWU;
  };
  const Variant variants[] = {
      {"lengths {4, 0, 5}", {4, 0, 5}, FLOAT, {}, false},
      {"every row T steps", {}, FLOAT, {}, false},
      {"lstmBwd + lstmWU", {4, 0, 5}, FLOAT, {}, true},
      {"half, product then cell", {1, 5, 2}, HALF, {{"stepMethod", "productThenCell"}}, false},
      {"preCalcWeights, 3 shards, interleaved WU",
       {4, 0, 5},
       FLOAT,
       {{"preCalcWeights", "true"}, {"numShards", "3"}, {"rnnStepsPerWU", "2"}},
       false},
      {"full recomputation", {4, 0, 5}, FLOAT, {{"recomputationMode", "full"}}, false},
      {"persistent", {4, 0, 5}, FLOAT, {{"rnnPersistentKernel", "true"}}, false},
  };
  for (const Variant &v : variants) {
    INFO(v.what);
    TrainingCase forward;
    forward.lengths = v.lengths;
    forward.type = v.type;
    forward.fwd = forward.bwd = v.options;
    forward.separateWU = v.separateWU;
    TrainingCase reverse = forward;
    reverse.fwd.set("direction", "reverse");
    reverse.bwd.set("direction", "reverse");
    reverse.reverseOnHost = true;
    const LstmRun a = trainingRun(forward), b = trainingRun(reverse);
    CHECK(a.output != Values(a.output.size(), 0.0)); // the layer ran
    requireSameBits(b, a);
  }
  Harness h(Target::createGeneric(2));
  lstm::LstmParams params(FLOAT, 2, 3, {2, 2});
  CHECK_THROWS_WITH(lstm::createInput(h.graph, params, "in", {{"direction", "bidirectional"}}),
                    Catch::Matchers::Contains("direction") &&
                        Catch::Matchers::Contains("forward or reverse"));
}

// The cell clip's NaN choice (lstm_layer checks the clip itself against its double model): a
// row whose input is NaN has a NaN cell state, which the clip keeps (propagateNan) or makes the
// lower bound, on every step form; and the clip's rules are checked.
TEST_CASE("LSTM cell clip: a NaN cell state stays NaN or becomes the lower bound",
          "[correctness][lstm]") {
  for (const char *method : {"productThenCell", "fused"})
    for (const bool propagate : {true, false}) {
      INFO("stepMethod " << method << ", propagateNan " << propagate);
      Harness h(Target::createGeneric(2));
      const std::size_t T = 2, B = 2, I = 3, H = 4;
      lstm::LstmParams params(FLOAT, B, T, {I, H});
      params.cellClip.enabled = true;
      params.cellClip.min = -0.375;
      params.cellClip.max = 0.5;
      params.cellClip.propagateNan = propagate;
      Values x = randomValues(T * B * I, -1.0, 1.0, 3);
      x[I * 1 + 0] = NAN; // step 0, row 1
      const OptionFlags options{{"stepMethod", method}, {"inferenceOnly", "true"}};
      const Tensor in = h.input(FLOAT, {T, B, I}, "x", x);
      const Tensor h0 = h.input(FLOAT, {B, H}, "h0", randomValues(B * H, -1.0, 1.0, 4));
      const Tensor c0 = h.input(FLOAT, {B, H}, "c0", randomValues(B * H, -1.0, 1.0, 5));
      lstm::LstmWeights w = lstm::createWeights(h.graph, params, "w", options);
      const auto weights = [&](const char *name, Shape shape, unsigned seed) {
        std::size_t n = 1;
        for (std::size_t d : shape)
          n *= d;
        return h.input(FLOAT, shape, name, randomValues(n, -0.5, 0.5, seed));
      };
      h.prog.add(program::Copy(weights("wi", {4, I, H}, 6), w.inputWeights));
      h.prog.add(program::Copy(weights("wo", {4, H, H}, 7), w.outputWeights));
      h.prog.add(program::Copy(h.input(FLOAT, {4, H}, "b", randomValues(4 * H, -0.5, 0.5, 8)),
                               w.biases));
      auto [out, cell] = lstm::lstmFwd(h.graph, params, {h0, c0}, in, w, nullptr, h.prog, "fwd",
                                       options);
      h.output("y", out);
      h.output("c", cell);
      auto got = h.run(2);
      for (std::size_t k = 0; k < H; ++k) {
        // Row 0 is clean and clipped into the bounds; row 1's state went NaN at step 0.
        CHECK(got["c"][k] >= -0.375);
        CHECK(got["c"][k] <= 0.5);
        const double c1 = got["c"][H + k];
        if (propagate)
          CHECK(std::isnan(c1));
        else
          CHECK(c1 == -0.375);
      }
    }
  Harness h(Target::createGeneric(2));
  lstm::LstmParams params(FLOAT, 2, 3, {2, 2});
  params.cellClip.enabled = true;
  params.cellClip.min = 1.0;
  params.cellClip.max = 1.0;
  CHECK_THROWS_WITH(lstm::createInput(h.graph, params, "in"),
                    Catch::Matchers::Contains("cellClip's bounds must have min < max"));
  params.cellClip.min = -1.0;
  params.activation = NonLinearityType::SOFTMAX;
  CHECK_THROWS_WITH(lstm::createInput(h.graph, params, "in"),
                    Catch::Matchers::Contains("cellClip needs element-wise activations"));
}

TEST_CASE("FLOP counts and pre-plan parameters are the documented ones", "[correctness][lstm]") {
  lstm::LstmParams p(FLOAT, 2, 3, {5, 7});
  // fwd: T B (2*4H*(I+H) + 8H) = 6 (56*12 + 56) = 4368
  CHECK(lstm::getBasicLstmCellFwdFlops(p) == 6u * (2 * 28 * 12 + 8 * 7));
  // bwd: T B (2*4H*(H+I) + 10H)
  CHECK(lstm::getBasicLstmCellBwdFlops(p) == 6u * (2 * 28 * 12 + 70));
  // wu: T B (2*4H*(I+H) + 4H)
  CHECK(lstm::getBasicLstmCellWuFlops(p) == 6u * (2 * 28 * 12 + 28));
  p.doInputWeightCalc = false;
  p.calcInputGradients = false;
  CHECK(lstm::getBasicLstmCellFwdFlops(p) == 6u * (2 * 28 * 7 + 8 * 7));
  CHECK(lstm::getBasicLstmCellBwdFlops(p) == 6u * (2 * 28 * 7 + 70));

  lstm::LstmParams q(HALF, 2, 3, {5, 7}); // T = 3, B = 2, I = 5, H = 7
  using Shape = std::vector<std::size_t>;
  auto shapes = [](const std::vector<std::pair<linalg::MatMulParams, OptionFlags>> &mms) {
    std::vector<std::pair<Shape, Shape>> out;
    for (const auto &[p, o] : mms)
      out.emplace_back(p.aShape, p.bShape);
    return out;
  };
  // preCalcWeights not given: both forward forms; then the backward products and the WU.
  auto mms = lstm::getMatMulPrePlanParameters(q, {{"partialsType", "half"}});
  CHECK(shapes(mms) == std::vector<std::pair<Shape, Shape>>{
                           {{2, 12}, {12, 28}},  // [x | h] . [Wi; Wo]
                           {{6, 5}, {5, 28}},    // X . Wi over all steps
                           {{2, 7}, {7, 28}},    // h . Wo
                           {{2, 28}, {28, 7}},   // delta . Wo^T
                           {{2, 28}, {28, 12}},  // delta . [Wi; Wo]^T
                           {{6, 28}, {28, 5}},   // input gradient of all steps
                           {{13, 6}, {6, 28}}}); // weight update
  for (const auto &[p, o] : mms)
    CHECK(p.inputType == HALF);
  auto inference = lstm::getMatMulPrePlanParameters(q, {{"inferenceOnly", "true"},
                                                        {"preCalcWeights", "true"}});
  CHECK(shapes(inference) ==
        std::vector<std::pair<Shape, Shape>>{{{6, 5}, {5, 28}}, {{2, 7}, {7, 28}}});
}

namespace {

// Running sums s_t = s_{t-1} + x_t over [T, B, 2] through rnn::Rnn, and the host's version.
struct SumCase {
  std::size_t T = 7, B = 3;
  bool reverse = false;
  unsigned shards = 1;
  bool reuse = false;
  std::vector<unsigned> lengths{}; // empty: every row runs T steps
};

void checkRunningSums(const SumCase &c) {
  Harness h(Target::createGeneric(3));
  const std::size_t T = c.T, B = c.B, S = 2;
  Tensor lengths;
  if (!c.lengths.empty()) {
    lengths = h.input(UNSIGNED_INT, {c.lengths.size()}, "lengths",
                      Values(c.lengths.begin(), c.lengths.end()), false);
  }
  rnn::RnnParams params = c.lengths.empty() ? rnn::RnnParams(FLOAT, B, T, {S, S})
                                            : rnn::RnnParams(FLOAT, B, T, lengths, {S, S});
  const Values xs = randomValues(T * B * S, -1, 1, 3);
  Tensor x = rnn::createInputTensor(h.graph, params, c.shards);
  h.graph.createHostWrite("x", x);
  Tensor s0 = rnn::createInitialState(h.graph, params, true, 1, c.shards)[0];
  h.graph.createHostWrite("s0", s0);
  Tensor ys = rnn::createOutputTensor(h.graph, params, c.shards);
  Tensor states = rnn::createOutputTensor(h.graph, params, c.shards);
  OptionFlags options{{"codeReuse", c.reuse ? "true" : "false"}};
  auto body = [&](Graph &g, const rnn::TimeStepState &, const rnn::RnnBatchwiseFlags &flags,
                  std::vector<Tensor> &state, const rnn::RnnSlice &slice, std::vector<Tensor> &,
                  Sequence *, const DebugContext &dbg) {
    Sequence step;
    using namespace ops::expr;
    // Rows past their length keep their state: s += mask * x.
    ops::mapInPlace(g, _1 + _2 * _3, {state[0], slice.inputs[0], flags.mask.expand({1}).broadcast(S, 1)},
                    step, dbg);
    step.add(Copy(state[0], slice.outputs[0]));
    return step;
  };
  auto finals = rnn::Rnn(h.graph, params, c.reverse, {s0}, {states, 0}, {x}, nullptr, nullptr,
                         {ys}, {}, h.prog, body, c.shards, options);
  h.output("final", finals[0]);
  h.output("ys", ys);
  h.output("states", states);
  Engine e(h.graph, h.prog);
  e.load(aspen::test::deviceFor(h.graph.getTarget()));
  const auto xf = convert<float>(xs);
  e.writeTensor("x", xf.data(), xf.data() + xf.size());
  const auto s0f = convert<float>(randomValues(B * S, -1, 1, 4));
  e.writeTensor("s0", s0f.data(), s0f.data() + s0f.size());
  if (!c.lengths.empty())
    e.writeTensor("lengths", c.lengths.data(), c.lengths.data() + c.lengths.size());
  e.run();
  auto read = [&](const char *name, std::size_t n) {
    std::vector<float> v(n);
    e.readTensor(name, v.data(), v.data() + n);
    return widen(v);
  };
  // The host: the same float additions in the same order.
  std::vector<float> s(s0f);
  std::vector<float> ysWant(T * B * S, 0.0f);
  for (std::size_t i = 0; i < T; ++i) {
    const std::size_t t = c.reverse ? T - 1 - i : i;
    for (std::size_t b = 0; b < B; ++b) {
      const unsigned L = c.lengths.empty() ? T : c.lengths.size() == 1 ? c.lengths[0] : c.lengths[b];
      const std::size_t longest =
          c.lengths.empty() ? T : *std::max_element(c.lengths.begin(), c.lengths.end());
      if (t >= std::min<std::size_t>(longest, T))
        continue;
      const float m = t < L ? 1.0f : 0.0f;
      for (std::size_t k = 0; k < S; ++k) {
        s[b * S + k] = s[b * S + k] + xf[(t * B + b) * S + k] * m;
        ysWant[(t * B + b) * S + k] = s[b * S + k];
      }
    }
  }
  CHECK(sameValues(read("final", B * S), widen(s)));
  CHECK(sameValues(read("ys", T * B * S), widen(ysWant)));
  CHECK(sameValues(read("states", T * B * S), widen(ysWant)));
}

} // namespace

TEST_CASE("rnn::Rnn runs a user body forwards, backwards, sharded and with per-row lengths",
          "[correctness][lstm][rnn]") {
  checkRunningSums({});
  checkRunningSums({.reverse = true});
  checkRunningSums({.shards = 3});
  checkRunningSums({.shards = 3, .reuse = true});
  checkRunningSums({.reverse = true, .shards = 4, .reuse = true});
  checkRunningSums({.lengths = {4}});
  checkRunningSums({.shards = 3, .lengths = {5, 0, 7}});
  checkRunningSums({.reverse = true, .shards = 2, .reuse = true, .lengths = {2, 6, 9}});
}

TEST_CASE("rnn::Rnn's gather form hands every step's temporaries to the gather body once",
          "[correctness][lstm][rnn]") {
  const std::size_t T = 7, B = 2, H = 3;
  for (unsigned k : {0u, 1u, 3u, 7u}) {
    for (unsigned shards : {1u, 3u}) {
      INFO("stepsPerGather " << k << ", shards " << shards);
      Harness h(Target::createGeneric(2));
      rnn::RnnParams params(FLOAT, B, T, {H, H});
      Tensor x = rnn::createInputTensor(h.graph, params, shards);
      h.graph.createHostWrite("x", x);
      Tensor acc = h.graph.addVariable(FLOAT, {B, H}, "acc");
      h.graph.setTileMapping(acc, 0);
      ops::zero(h.graph, acc, h.prog);
      Tensor s0 = rnn::createInitialState(h.graph, params, true, 1, shards)[0];
      ops::zero(h.graph, s0, h.prog);
      // Body: temp = x_t (one temporary). Gather: acc += sum over the window of temp * x.
      auto body = [&](Graph &, const rnn::TimeStepState &, const rnn::RnnBatchwiseFlags &,
                      std::vector<Tensor> &, const rnn::RnnSlice &slice, std::vector<Tensor> &,
                      Sequence *, const DebugContext &) {
        return Sequence{Copy(slice.inputs[0], slice.interimOut[0])};
      };
      auto gather = [&](Graph &g, const rnn::RnnSlice &slice, unsigned steps, Sequence *,
                        const DebugContext &dbg) {
        Sequence s;
        for (unsigned j = 0; j < steps; ++j)
          ops::mapInPlace(g, ops::expr::_1 + ops::expr::_2 * ops::expr::_3,
                          {acc, slice.interimOut[j][0], slice.inputs[0][j]}, s, dbg);
        return s;
      };
      OptionFlags options;
      rnn::Rnn(h.graph, params, {s0}, {}, {x}, Tensor(), 1, h.prog, body, {x}, gather, shards, k,
               options);
      h.output("acc", acc);
      Engine e(h.graph, h.prog);
      e.load(aspen::test::deviceFor(h.graph.getTarget()));
      const auto xf = convert<float>(randomValues(T * B * H, -1, 1, 9));
      e.writeTensor("x", xf.data(), xf.data() + xf.size());
      e.run();
      std::vector<float> got(B * H);
      e.readTensor("acc", got.data(), got.data() + got.size());
      for (std::size_t i = 0; i < B * H; ++i) {
        double want = 0;
        for (std::size_t t = 0; t < T; ++t)
          want += double(xf[t * B * H + i]) * xf[t * B * H + i];
        CHECK(close(got[i], want, 1e-5, 1e-5));
      }
    }
  }
}

namespace {

// The fused forward step (stepMethod fused: weights packed once a run, the product and the cell
// in one compute set) against the product-then-cell step, on a shape whose panels and rows have
// tails (H = 37 units: 9 panels of 4 and one of 1; B = 11 rows: on the host a pass of 8 and
// one of 3, which AVX2 and the baseline take as 4, 4 and 3).
struct FusedCase {
  Type type = FLOAT;
  std::string stepMethod;
  unsigned tiles = 4, threads = 3;
  bool variableLengths = false;
  NonLinearityType activation = NonLinearityType::TANH;
  std::string recomputation = "none";
  std::string shards = "1";
  bool preCalcWeights = true; // else each step weighs its input: [x_t | h] . [Wi; Wo]
  unsigned runs = 1, firstData = 0; // TrainingCase's
  // rnnPersistentKernel and the launch shape (0: the builder's), forward and backward.
  std::string persistent = "false";
  std::string arithmetic = "auto"; // rnnPersistentArithmetic
  unsigned blocks = 0, blockThreads = 0;
  bool reverseWorkers = false;
};

LstmRun fusedCaseRun(const FusedCase &c) {
  TrainingCase t;
  t.T = 5;
  t.B = 11;
  t.I = 3;
  t.H = 37;
  t.type = c.type;
  t.tiles = c.tiles;
  t.threads = c.threads;
  t.seed = 40;
  if (c.variableLengths)
    t.lengths = {3, 0, 5, 1, 2, 5, 4, 0, 2, 5, 1};
  t.activation = c.activation;
  t.fwd = {{"stepMethod", c.stepMethod},
           {"preCalcWeights", c.preCalcWeights ? "true" : "false"},
           {"recomputationMode", c.recomputation},
           {"numShards", c.shards}};
  t.fwd.set("rnnPersistentKernel", c.persistent);
  t.fwd.set("rnnPersistentBlocks", std::to_string(c.blocks));
  t.fwd.set("rnnPersistentThreadsPerBlock", std::to_string(c.blockThreads));
  t.fwd.set("rnnPersistentArithmetic", c.arithmetic);
  t.bwd = t.fwd;
  t.runs = c.runs;
  t.firstData = c.firstData;
  t.reverseWorkers = c.reverseWorkers;
  return trainingRun(t);
}

void requireRunsClose(const LstmRun &got, const LstmRun &want, double abs, double rel) {
  requireClose(got.output, want.output, abs, rel, "output");
  requireClose(got.finalCell, want.finalCell, abs, rel, "final cell");
  requireClose(got.inputGrad, want.inputGrad, abs, rel, "dx");
  requireClose(got.outputGrad0, want.outputGrad0, abs, rel, "dh0");
  requireClose(got.cellGrad0, want.cellGrad0, abs, rel, "dc0");
  requireClose(got.wiGrad, want.wiGrad, abs, rel, "dWi");
  requireClose(got.woGrad, want.woGrad, abs, rel, "dWo");
  requireClose(got.bGrad, want.bGrad, abs, rel, "db");
}

bool sameRuns(const LstmRun &a, const LstmRun &b) {
  return sameValues(a.output, b.output) && sameValues(a.finalCell, b.finalCell) &&
         sameValues(a.inputGrad, b.inputGrad) && sameValues(a.outputGrad0, b.outputGrad0) &&
         sameValues(a.cellGrad0, b.cellGrad0) && sameValues(a.wiGrad, b.wiGrad) &&
         sameValues(a.woGrad, b.woGrad) && sameValues(a.bGrad, b.bGrad);
}

} // namespace

// A run of another summation order (the fused step, the persistent loop) against the
// product-then-cell run, whose products are OpenBLAS's. Float: 1e-5 absolute and 2e-5 relative;
// with GELU 1e-4 and 1e-4, since the weights in [-1, 1] give pre-activations of 3 and more and
// GELU's gradient reads them: dh0 differed by 3e-6 with OpenBLAS's own kernels for the CPU and
// by 6.7e-5 with its Haswell kernels on AMD Zen 5 (OPENBLAS_CORETYPE=Haswell, set on such
// machines), while both forms stay as close to lstm_layer's double model as each other.
namespace {
void requireFusedRunClose(const LstmRun &got, const LstmRun &want, const FusedCase &c) {
  if (c.type != FLOAT)
    requireRunsClose(got, want, 4e-3, 1e-2);
  else if (c.activation == NonLinearityType::GELU)
    requireRunsClose(got, want, 1e-4, 1e-4);
  else
    requireRunsClose(got, want, 1e-5, 2e-5);
}
} // namespace

TEST_CASE("the fused LSTM step gives the product-then-cell results within rounding, and the same "
          "bits on any split of tiles and threads",
          "[correctness][lstm]") {
  FusedCase c;
  c.type = GENERATE(FLOAT, HALF);
  c.variableLengths = GENERATE(false, true);
  c.activation = GENERATE(NonLinearityType::TANH, NonLinearityType::GELU);
  c.recomputation = GENERATE("none", "cellAndTanh", "full");
  c.preCalcWeights = GENERATE(true, false);
  INFO(c.type.toString() << ", variable lengths " << c.variableLengths << ", activation "
                         << nn::asString(c.activation) << ", recomputation " << c.recomputation
                         << ", preCalcWeights " << c.preCalcWeights);
  c.stepMethod = "productThenCell";
  const LstmRun reference = fusedCaseRun(c);
  c.stepMethod = "fused";
  const LstmRun fused = fusedCaseRun(c);
  // Sums of 37 products (40 when the step weighs its input) in another order (with FMA on AVX
  // hosts): float within a few ulp a step, grown by 5 steps forward and back (most with GELU,
  // whose gradient reads the candidate's pre-activation); half rounds the product to half
  // (2^-11 relative) before the cell, as both steps do. A wrong gate, unit or step is off by
  // 1e-1 and more.
  requireFusedRunClose(fused, reference, c);
  // Not trivially equal: the state moved and the gradients are not zero.
  CHECK(fused.finalCell != Values(fused.finalCell.size(), 0.0));
  CHECK(fused.woGrad != Values(fused.woGrad.size(), 0.0));
  // Each forward output is one worker's sum in one order: one tile and thread, or 3 or 16
  // tiles on 2 or 3 threads, give the forward bits of 4 tiles on 3 threads (the backward
  // pass's products are planned by tile count, so only its thread count is free).
  for (const auto &[tiles, threads] : {std::pair{1u, 1u}, std::pair{3u, 2u}, std::pair{16u, 3u}}) {
    INFO(tiles << " tiles, " << threads << " threads");
    FusedCase split = c;
    split.tiles = tiles;
    split.threads = threads;
    const LstmRun r = fusedCaseRun(split);
    CHECK(sameValues(r.output, fused.output));
    CHECK(sameValues(r.finalCell, fused.finalCell));
  }
  FusedCase oneThread = c;
  oneThread.threads = 1;
  CHECK(sameRuns(fusedCaseRun(oneThread), fused));
  // Two shards (steps 0-2 and 3-4: one starts at an odd step) and three (2, 2 and 1 steps):
  // the same forward bits.
  for (const char *shards : {"2", "3"}) {
    INFO(shards << " shards");
    FusedCase sharded = c;
    sharded.shards = shards;
    const LstmRun r = fusedCaseRun(sharded);
    CHECK(sameValues(r.output, fused.output));
    CHECK(sameValues(r.finalCell, fused.finalCell));
  }
}

// The fused loops pack the weights once (program::Cached) and again only when they are written:
// an engine run again on new weights gives the bits of a fresh engine run on them, forward and
// backward. Stale packed weights would give the first data set's products.
TEST_CASE("the fused LSTM packs its weights again when they are written again",
          "[correctness][lstm]") {
  FusedCase c;
  c.stepMethod = "fused";
  c.type = GENERATE(FLOAT, HALF);
  c.preCalcWeights = GENERATE(true, false);
  INFO(c.type.toString() << ", preCalcWeights " << c.preCalcWeights);
  const LstmRun first = fusedCaseRun(c);
  FusedCase second = c;
  second.firstData = 1;
  const LstmRun fresh = fusedCaseRun(second);
  FusedCase again = c;
  again.runs = 2;
  const LstmRun reused = fusedCaseRun(again);
  CHECK(sameRuns(reused, fresh));
  CHECK_FALSE(sameValues(first.output, fresh.output));
  CHECK_FALSE(sameValues(first.inputGrad, fresh.inputGrad));
}

// In inference the packing runs on the first run only, until the weights are written again:
// the packing compute set's calls in the profile summary.
TEST_CASE("the fused LSTM's inference packs its weights on the first run only",
          "[correctness][lstm]") {
  const std::size_t T = 4, B = 3, I = 2, H = 9;
  Harness h(Target::createGeneric(2));
  lstm::LstmParams params(FLOAT, B, T, {I, H});
  const OptionFlags options{{"inferenceOnly", "true"}, {"stepMethod", "fused"}};
  Tensor in = lstm::createInput(h.graph, params, "in", options);
  lstm::LstmState init = lstm::createInitialState(h.graph, params, "init", options);
  lstm::LstmWeights w = lstm::createWeights(h.graph, params, "w", options);
  Tensor out = lstm::lstmFwd(h.graph, params, h.prog, init, w, in, nullptr, "fwd", options);
  const std::pair<const char *, Tensor> writes[] = {
      {"in", in},           {"h0", init.output},      {"c0", init.cellState},
      {"wi", w.inputWeights}, {"wo", w.outputWeights}, {"b", w.biases}};
  for (const auto &[name, t] : writes)
    h.graph.createHostWrite(name, t);
  h.output("out", out);
  Engine e(h.graph, h.prog);
  e.load(aspen::test::deviceFor(h.graph.getTarget()));
  const auto packCalls = [&] {
    std::ostringstream summary;
    e.printProfileSummary(summary);
    const std::string text = summary.str();
    const std::size_t at = text.find("packWeights: ");
    REQUIRE(at != std::string::npos);
    const std::size_t calls = text.find(" calls", at);
    const std::size_t comma = text.rfind(", ", calls);
    return std::stoul(text.substr(comma + 2, calls - comma - 2));
  };
  const auto write = [&](const char *name, const Tensor &t, unsigned seed) {
    const auto v = convert<float>(randomValues(t.numElements(), -1.0, 1.0, seed));
    e.writeTensor(name, v.data(), v.data() + v.size());
  };
  unsigned seed = 1;
  for (const auto &[name, t] : writes)
    write(name, t, seed++);
  for (unsigned run = 0; run < 3; ++run) {
    write("in", in, 10 + run); // the input changes every run; the weights do not
    e.run();
  }
  CHECK(packCalls() == 1);
  write("wo", w.outputWeights, 5); // the bytes it holds: still packed
  e.run();
  CHECK(packCalls() == 1);
  write("wo", w.outputWeights, 20);
  e.run();
  e.run();
  CHECK(packCalls() == 2);
}

// The fused loop where the sequence is not kept (the final output only) and the input is not
// weighed (each step's gates are h . Wo plus the bias), in inference, one to three shards:
// the product-then-cell results within rounding, the same bits on every shard count.
TEST_CASE("the fused LSTM loop keeps the final output alone, with and without input weights",
          "[correctness][lstm]") {
  const std::size_t T = 5, B = 3, I = 2, H = 9;
  const bool weighInput = GENERATE(true, false);
  const bool variable = GENERATE(false, true);
  INFO("input weights " << weighInput << ", variable lengths " << variable);
  auto run = [&](const char *stepMethod, const char *shards) {
    Harness h(Target::createGeneric(3));
    Tensor lengths;
    if (variable) {
      lengths = h.graph.addVariable(UNSIGNED_INT, {B}, "lengths");
      h.graph.setTileMapping(lengths, 0);
      h.graph.createHostWrite("lengths", lengths);
    }
    lstm::LstmParams params = variable ? lstm::LstmParams(FLOAT, B, T, lengths, {I, H})
                                       : lstm::LstmParams(FLOAT, B, T, {I, H});
    params.outputFullSequence = false;
    params.doInputWeightCalc = weighInput;
    const OptionFlags options{{"inferenceOnly", "true"}, {"preCalcWeights", "true"},
                              {"stepMethod", stepMethod}, {"numShards", shards}};
    Tensor in = lstm::createInput(h.graph, params, "in", options);
    lstm::LstmState init = lstm::createInitialState(h.graph, params, "init", options);
    lstm::LstmWeights w = lstm::createWeights(h.graph, params, "w", options);
    auto [out, cell] = lstm::lstmFwd(h.graph, params, init, in, w, nullptr, h.prog, "fwd", options);
    REQUIRE(out.shape() == std::vector<std::size_t>{B, H});
    const std::pair<const char *, Tensor> writes[] = {
        {"in", in},           {"h0", init.output},      {"c0", init.cellState},
        {"wi", w.inputWeights}, {"wo", w.outputWeights}, {"b", w.biases}};
    for (const auto &[name, t] : writes)
      h.graph.createHostWrite(name, t);
    h.output("out", out);
    h.output("cell", cell);
    Engine e(h.graph, h.prog);
    e.load(aspen::test::deviceFor(h.graph.getTarget()));
    unsigned seed = 70;
    for (const auto &[name, t] : writes) {
      const auto v = convert<float>(randomValues(t.numElements(), -1.0, 1.0, seed++));
      e.writeTensor(name, v.data(), v.data() + v.size());
    }
    const std::vector<unsigned> rowLengths{4, 0, 2};
    if (variable)
      e.writeTensor("lengths", rowLengths.data(), rowLengths.data() + rowLengths.size());
    e.run();
    std::pair<Values, Values> result;
    for (auto [name, values] :
         {std::pair{"out", &result.first}, std::pair{"cell", &result.second}}) {
      std::vector<float> v(B * H);
      e.readTensor(name, v.data(), v.data() + v.size());
      *values = widen(v);
    }
    return result;
  };
  const auto reference = run("productThenCell", "1");
  const auto fused = run("fused", "1");
  requireClose(fused.first, reference.first, 2e-6, 2e-5, "final output");
  requireClose(fused.second, reference.second, 2e-6, 2e-5, "final cell");
  CHECK(fused.second != Values(B * H, 0.0));
  for (const char *shards : {"2", "3"}) {
    INFO(shards << " shards");
    const auto sharded = run("fused", shards);
    CHECK(sameValues(sharded.first, fused.first));
    CHECK(sameValues(sharded.second, fused.second));
  }
}

TEST_CASE("the LSTM's backward loop is fused where the forward's is and every step's gate "
          "gradients are kept",
          "[correctness][lstm]") {
  auto fusedBwd = [](const OptionFlags &options) {
    Graph graph(Target::createGeneric(2));
    nn::addCodelets(graph);
    lstm::LstmParams params(FLOAT, 2, 4, {3, 8});
    Tensor in = lstm::createInput(graph, params, "in", options);
    lstm::LstmState init = lstm::createInitialState(graph, params, "init", options);
    lstm::LstmWeights w = lstm::createWeights(graph, params, "w", options);
    Sequence prog;
    Tensor inter;
    auto [out, cell] = lstm::lstmFwd(graph, params, init, in, w, &inter, prog, "fwd", options);
    Tensor dx;
    lstm::LstmWeights dw;
    lstm::lstmBwdWithWU(graph, params, prog, init, inter, w, in, out, graph.clone(out, "dy"),
                        nullptr, &dx, dw, "bwd", options);
    Engine e(graph, prog);
    std::ostringstream summary;
    e.printProfileSummary(summary);
    const bool fused = summary.str().find("LstmFusedBwd") != std::string::npos;
    CHECK(fused == (summary.str().find("LstmCellBwd") == std::string::npos));
    return fused;
  };
  CHECK(fusedBwd({}));
  CHECK(fusedBwd({{"preCalcWeights", "false"}})); // the input gradient after the loop
  CHECK(fusedBwd({{"recomputationMode", "cellAndTanh"}, {"numShards", "2"}}));
  // The weight update every step (interleaved) keeps no gate gradients for the next step's
  // product to read: the product-then-cell loop.
  CHECK_FALSE(fusedBwd({{"rnnStepsPerWU", "1"}}));
  CHECK_FALSE(fusedBwd({{"stepMethod", "productThenCell"}}));
}

TEST_CASE("stepMethod auto fuses the step of small batches on the CPU targets, not on a GPU",
          "[correctness][lstm]") {
  // The compiled graph's vertex types (the profile summary lists them) include the fused
  // step's exactly when the step is fused.
  auto fusedOn = [](const Target &target, const OptionFlags &options, std::size_t batch = 2,
                    std::size_t H = 8, std::size_t T = 3) {
    Graph graph(target);
    nn::addCodelets(graph);
    lstm::LstmParams params(FLOAT, batch, T, {4, H});
    Tensor in = lstm::createInput(graph, params, "in", options);
    lstm::LstmState init = lstm::createInitialState(graph, params, "init", options);
    lstm::LstmWeights w = lstm::createWeights(graph, params, "w", options);
    Sequence prog;
    lstm::lstmFwd(graph, params, prog, init, w, in, nullptr, "fwd", options);
    Engine e(graph, prog);
    std::ostringstream summary;
    e.printProfileSummary(summary);
    const bool fused = summary.str().find("LstmFusedFwd") != std::string::npos;
    CHECK(fused == (summary.str().find("LstmCellFwd") == std::string::npos));
    return fused;
  };
  const OptionFlags inference{{"inferenceOnly", "true"}, {"preCalcWeights", "true"}};
  CHECK(fusedOn(Target::createGeneric(2), inference));
  CHECK(fusedOn(Target::createModel("ipu2", 16), inference));
  // Batches up to 64: from 65 rows the library product is the default.
  CHECK(fusedOn(Target::createGeneric(2), inference, 16));
  CHECK(fusedOn(Target::createGeneric(2), inference, 64));
  CHECK_FALSE(fusedOn(Target::createGeneric(2), inference, 65));
  // One row: in inference always (the packing runs once for fixed weights); otherwise only
  // when enough steps pay for packing every run (T >= 4H^2 x 1.1 ns / 30 us).
  const Target roomy = Target::createGeneric(2, 1, std::size_t(64) << 20);
  CHECK(fusedOn(roomy, inference, 1, 256, 9));
  CHECK(fusedOn(roomy, inference, 1, 512, 30));
  const OptionFlags training{{"preCalcWeights", "true"}};
  CHECK(fusedOn(roomy, training, 1, 256, 10));
  CHECK_FALSE(fusedOn(roomy, training, 1, 256, 9));
  CHECK_FALSE(fusedOn(roomy, training, 1, 512, 30));
  // Packed weights over half of what the tiles have: not fused (H = 256 packs 1 MiB; three
  // tiles of 624 KiB may hold 936 KiB of it), and fused where there are tiles enough.
  CHECK_FALSE(fusedOn(Target::createGeneric(3), inference, 4, 256, 10));
  CHECK(fusedOn(Target::createGeneric(8), inference, 4, 256, 10));
  CHECK(fusedOn(Target::createGeneric(2),
                {{"inferenceOnly", "true"}, {"preCalcWeights", "true"}, {"stepMethod", "fused"}},
                64));
  // On a GPU target the persistent kernel is off here: the per-step path's choice is tested.
  OptionFlags gpuInference = inference;
  gpuInference.set("rnnPersistentKernel", "false");
  CHECK_FALSE(fusedOn(Target::createModel("h200"), gpuInference));
  // Steps that weigh their input too ([x_t | h] . [Wi; Wo] in one product) fuse as well.
  CHECK(fusedOn(Target::createGeneric(2), {{"inferenceOnly", "true"},
                                           {"preCalcWeights", "false"}}));
  CHECK(fusedOn(Target::createModel("h200"), {{"inferenceOnly", "true"},
                                              {"preCalcWeights", "true"},
                                              {"stepMethod", "fused"},
                                              {"rnnPersistentKernel", "false"}}));
  CHECK_FALSE(fusedOn(Target::createGeneric(2), {{"inferenceOnly", "true"},
                                                  {"preCalcWeights", "true"},
                                                  {"stepMethod", "productThenCell"}}));
}

// The persistent forward (rnnPersistentKernel true: the whole loop as one co-resident launch of
// LstmPersistentFwd) against the per-step path, forward and through the per-step backward that
// reads its intermediates, on the fused case's shape (H = 37 units: 4 blocks of 10, 10, 10 and
// 7), and bit for bit against itself on other launch shapes, host threads and fiber orders.
TEST_CASE("the persistent LSTM forward gives the per-step results within rounding, and the same "
          "bits on any launch shape, host threads and fiber order",
          "[correctness][lstm][persistent]") {
  FusedCase c;
  c.type = GENERATE(FLOAT, HALF);
  c.variableLengths = GENERATE(false, true);
  c.activation = GENERATE(NonLinearityType::TANH, NonLinearityType::GELU);
  c.recomputation = GENERATE("none", "cellAndTanh", "full");
  INFO(c.type.toString() << ", variable lengths " << c.variableLengths << ", activation "
                         << nn::asString(c.activation) << ", recomputation " << c.recomputation);
  // The persistent kernel always weighs the input before its loop, as the per-step path does
  // with preCalcWeights (without it the per-step path sums x_t's and h's products as one, which
  // GELU's gradient, reading the candidate's pre-activation, magnifies past these bounds).
  c.preCalcWeights = true;
  FusedCase perStep = c;
  perStep.stepMethod = "productThenCell";
  const LstmRun reference = fusedCaseRun(perStep);
  c.stepMethod = "auto";
  c.persistent = "true";
  const LstmRun persistent = fusedCaseRun(c);
  // The recurrent sums of 37 products in increasing k through fma against the library's order.
  // Bounds as the fused step's.
  requireFusedRunClose(persistent, reference, c);
  CHECK(persistent.finalCell != Values(persistent.finalCell.size(), 0.0));
  CHECK(persistent.woGrad != Values(persistent.woGrad.size(), 0.0));
  // preCalcWeights false changes nothing in the persistent forward: it weighs the input first.
  FusedCase unweighted = c;
  unweighted.preCalcWeights = false;
  const LstmRun u = fusedCaseRun(unweighted);
  CHECK(sameValues(u.output, persistent.output));
  CHECK(sameValues(u.finalCell, persistent.finalCell));
  // The exact variant: each output is one thread's sum in one order, whoever runs it.
  struct Shape {
    unsigned blocks, threads, hostThreads;
    bool reverse;
  };
  for (const Shape &s : {Shape{1, 32, 1, false}, Shape{2, 64, 2, true}, Shape{5, 1, 3, false},
                         Shape{8, 128, 2, false}, Shape{37, 7, 1, true}, Shape{50, 3, 2, false}}) {
    INFO(s.blocks << " blocks of " << s.threads << " threads on " << s.hostThreads
                  << " host threads, " << (s.reverse ? "reverse" : "forward") << " fibers");
    FusedCase shaped = c;
    shaped.blocks = s.blocks;
    shaped.blockThreads = s.threads;
    shaped.threads = s.hostThreads;
    shaped.reverseWorkers = s.reverse;
    CHECK(sameRuns(fusedCaseRun(shaped), persistent));
  }
}

// The tensor variant (rnnPersistentArithmetic tensor: each step's recurrent product by
// Block::mmaF16, m16n8k16 tiles whose k slices are split over the block's warps) against the
// per-step path, forward and backward, in half; its results do not depend on the host threads
// or fiber order for a given launch, and stay within rounding of each other across launches
// (another launch splits the k slices differently).
TEST_CASE("the persistent LSTM's tensor variant gives the per-step results within rounding, "
          "forward and backward",
          "[correctness][lstm][persistent]") {
  FusedCase c;
  c.type = HALF;
  c.variableLengths = GENERATE(false, true);
  c.activation = GENERATE(NonLinearityType::TANH, NonLinearityType::GELU);
  INFO("variable lengths " << c.variableLengths << ", activation " << nn::asString(c.activation));
  c.preCalcWeights = true;
  FusedCase perStep = c;
  perStep.stepMethod = "productThenCell";
  const LstmRun reference = fusedCaseRun(perStep);
  c.stepMethod = "auto";
  c.persistent = "true";
  c.arithmetic = "tensor";
  const LstmRun tensor = fusedCaseRun(c);
  requireFusedRunClose(tensor, reference, c);
  CHECK(tensor.woGrad != Values(tensor.woGrad.size(), 0.0));
  FusedCase exact = c;
  exact.arithmetic = "exact";
  requireFusedRunClose(fusedCaseRun(exact), tensor, c);
  struct Shape {
    unsigned blocks, threads, hostThreads;
    bool reverse;
  };
  for (const Shape &s : {Shape{1, 32, 2, true}, Shape{2, 64, 1, false}, Shape{5, 128, 2, false},
                         Shape{37, 96, 1, true}}) {
    INFO(s.blocks << " blocks of " << s.threads << " threads on " << s.hostThreads
                  << " host threads, " << (s.reverse ? "reverse" : "forward") << " fibers");
    FusedCase shaped = c;
    shaped.blocks = s.blocks;
    shaped.blockThreads = s.threads;
    shaped.threads = s.hostThreads;
    shaped.reverseWorkers = s.reverse;
    const LstmRun r = fusedCaseRun(shaped);
    requireFusedRunClose(r, reference, c);
    FusedCase again = shaped;
    again.threads = 3 - s.hostThreads;
    again.reverseWorkers = !s.reverse;
    CHECK(sameRuns(fusedCaseRun(again), r));
  }
}

namespace {

// A double-precision LSTM forward (popnn's equations, the default cell order: forget, input,
// candidate, output; sigmoid and tanh): h_T and c_T per row, rows past their length keeping
// their state. x [T][B][I], wi [4][I][H], wo [4][H][H], b [4][H], h0 and c0 [B][H].
std::pair<Values, Values> referenceLstm(std::size_t T, std::size_t B, std::size_t I,
                                        std::size_t H, const Values &x, const Values &wi,
                                        const Values &wo, const Values &b, Values h, Values c,
                                        const std::vector<unsigned> &lengths) {
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (std::size_t t = 0; t < T; ++t) {
    Values next = h;
    for (std::size_t r = 0; r < B; ++r) {
      if (t >= (lengths.empty() ? T : lengths[r]))
        continue;
      for (std::size_t u = 0; u < H; ++u) {
        double gate[4];
        for (std::size_t s = 0; s < 4; ++s) {
          double sum = b[s * H + u];
          for (std::size_t i = 0; i < I; ++i)
            sum += x[(t * B + r) * I + i] * wi[(s * I + i) * H + u];
          for (std::size_t k = 0; k < H; ++k)
            sum += h[r * H + k] * wo[(s * H + k) * H + u];
          gate[s] = sum;
        }
        double &cell = c[r * H + u];
        cell = sigmoid(gate[0]) * cell + sigmoid(gate[1]) * std::tanh(gate[2]);
        next[r * H + u] = sigmoid(gate[3]) * std::tanh(cell);
      }
    }
    h = next;
  }
  return {h, c};
}

double relativeError(const Values &got, const Values &want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

} // namespace

TEST_CASE("the persistent LSTM forward matches a double-precision model on every batch, width "
          "and length",
          "[correctness][lstm][persistent]") {
  const std::size_t I = 3;
  for (const char *arithmetic : {"exact", "tensor"})
  for (Type type : {FLOAT, HALF})
    for (std::size_t B : {1, 3, 8})
      for (std::size_t H : {16, 40, 130})
        for (std::size_t T : {1, 2, 7}) {
          if (type == FLOAT && std::string(arithmetic) == "tensor")
            continue; // the tensor variant takes half
          INFO(arithmetic << ", " << type.toString() << ": B " << B << ", H " << H << ", T "
                          << T);
          Harness h(Target::createGeneric(2));
          // Rows of lengths 0, T and in between when the batch has them.
          std::vector<unsigned> lengths;
          Tensor lengthsTensor;
          if (B > 1) {
            for (std::size_t r = 0; r < B; ++r)
              lengths.push_back(unsigned(r == 0 ? 0 : r == 1 ? T : (r * 5) % (T + 1)));
            lengthsTensor = h.input(UNSIGNED_INT, {B}, "lengths",
                                    Values(lengths.begin(), lengths.end()), false);
          }
          lstm::LstmParams params = lengthsTensor.valid()
                                        ? lstm::LstmParams(type, B, T, lengthsTensor, {I, H})
                                        : lstm::LstmParams(type, B, T, {I, H});
          params.outputFullSequence = false;
          const OptionFlags options{{"inferenceOnly", "true"},
                                    {"rnnPersistentKernel", "true"},
                                    {"rnnPersistentArithmetic", arithmetic}};
          Tensor in = lstm::createInput(h.graph, params, "in", options);
          lstm::LstmState init = lstm::createInitialState(h.graph, params, "init", options);
          lstm::LstmWeights w = lstm::createWeights(h.graph, params, "w", options);
          // Values that make the gates work: weights scaled by 1 / sqrt(H).
          const double scale = 1.0 / std::sqrt(double(H));
          auto scaled = [&](Values v) {
            for (double &e : v)
              e *= scale;
            return v;
          };
          const Values x = randomValues(T * B * I, -1.0, 1.0, 1), wi = randomValues(4 * I * H, -1.0, 1.0, 2);
          const Values wo = scaled(randomValues(4 * H * H, -1.0, 1.0, 3));
          const Values b = randomValues(4 * H, -0.5, 0.5, 4), h0 = randomValues(B * H, -1.0, 1.0, 5);
          const Values c0 = randomValues(B * H, -1.0, 1.0, 6);
          const std::pair<Tensor, const Values *> data[] = {
              {in, &x}, {w.inputWeights, &wi}, {w.outputWeights, &wo}, {w.biases, &b},
              {init.output, &h0}, {init.cellState, &c0}};
          int k = 0;
          for (const auto &[t, v] : data) {
            Tensor source = h.input(type, t.shape(), "data" + std::to_string(k++), *v, false);
            h.prog.add(Copy(source, t));
          }
          auto [hT, cT] = lstm::lstmFwd(h.graph, params, init, in, w, nullptr, h.prog, "lstm",
                                        options);
          h.output("h", hT);
          h.output("c", cT);
          auto out = h.run(2);
          // The model reads what the layer reads: the data rounded to the layer's type.
          auto rounded = [&](const Values &v) {
            return type == HALF ? widen(convert<half>(v)) : widen(convert<float>(v));
          };
          const auto [hRef, cRef] = referenceLstm(T, B, I, H, rounded(x), rounded(wi), rounded(wo),
                                                  rounded(b), rounded(h0), rounded(c0), lengths);
          const double bound = type == FLOAT ? 1e-5 : 1e-2;
          CHECK(relativeError(out["h"], hRef) < bound);
          CHECK(relativeError(out["c"], cRef) < bound);
          // A zero-length row is its initial state, exactly.
          for (std::size_t u = 0; B > 1 && u < H; ++u) {
            REQUIRE(out["h"][u] == rounded(h0)[u]);
            REQUIRE(out["c"][u] == rounded(c0)[u]);
          }
        }
}

TEST_CASE("rnnPersistentKernel: the plan says what auto, true and false do, with the launch",
          "[correctness][lstm][persistent]") {
  Graph g(Target::createGeneric(2));
  nn::addCodelets(g);
  lstm::LstmParams params(FLOAT, 4, 3, {5, 8});
  Sequence prog;
  Tensor in = lstm::createInput(g, params, "in");
  lstm::LstmState init = lstm::createInitialState(g, params, "init");
  lstm::LstmWeights w = lstm::createWeights(g, params, "w");
  // The plan says what each mode does, with the launch persistent takes or would take: 4 blocks
  // of 2 units on a target that is not a GPU, 32 threads, 4 x 8 floats of staged h and
  // 2 x 4 x 8 of weights a block.
  const nn::RecurrentPlan autoPlan = lstm::getPlan(g, params);
  CHECK_FALSE(autoPlan.persistent);
  CHECK(autoPlan.persistentRefusal.find("auto keeps the per-step path on targets that are not "
                                        "GPUs") != std::string::npos);
  CHECK(autoPlan.persistentBlocks == 4);
  CHECK(autoPlan.persistentThreadsPerBlock == 32);
  CHECK(autoPlan.persistentSharedBytes == (4 * 8 + 2 * 4 * 8) * sizeof(float));
  CHECK(autoPlan.persistentWeightsInSharedMemory);
  const nn::RecurrentPlan onPlan = lstm::getPlan(
      g, params, {{"rnnPersistentKernel", "true"}, {"rnnPersistentBlocks", "3"},
                  {"rnnPersistentThreadsPerBlock", "64"}, {"preCalcWeights", "false"}});
  CHECK(onPlan.persistent);
  CHECK(onPlan.preCalcWeights); // the kernel weighs the input before its launch
  CHECK(onPlan.persistentBlocks == 3);
  CHECK(onPlan.persistentThreadsPerBlock == 64);
  CHECK(onPlan.persistentSharedBytes == (4 * 8 + 3 * 4 * 8) * sizeof(float));
  CHECK(onPlan.persistentArithmetic == "exact"); // auto: exact off GPUs
  CHECK(onPlan.toJson().find("\"persistent\": {\"use\": true, \"blocks\": 3, "
                             "\"threadsPerBlock\": 64, \"sharedBytes\": 512, "
                             "\"weightsInSharedMemory\": true, \"weightsInRegisters\": false, "
                             "\"arithmetic\": \"exact\", "
                             "\"stepSeconds\": {\"perStep\": ") != std::string::npos);
  CHECK(onPlan.toJson().find("\"refusal\": \"\"}") != std::string::npos);
  // The cost model on the host: the exact variant's 4 x 8 x 8 x 4 fmas at 1.3 ns each and a
  // fiber switch a block, against the per-step loop's overhead and product.
  CHECK(onPlan.persistentSecondsEstimate == Approx(4 * 8 * 8 * 4 * 1.3e-9 + 3 * 2e-6));
  CHECK(onPlan.perStepSecondsEstimate > 5e-6);
  CHECK(autoPlan.persistentSecondsEstimate > 0); // estimated where auto declines too
  const nn::RecurrentPlan offPlan = lstm::getPlan(g, params, {{"rnnPersistentKernel", "false"}});
  CHECK_FALSE(offPlan.persistent);
  CHECK(offPlan.persistentBlocks == 0);
  CHECK(offPlan.persistentRefusal == "rnnPersistentKernel is false");
  CHECK_THROWS_WITH(lstm::getPlan(g, params, {{"rnnPersistentThreadsPerBlock", "512"}}),
                    Catch::Contains("rnnPersistentThreadsPerBlock"));
  {
    // On a GPU target auto follows the cost model: this small layer's per-step loop costs its
    // six graph nodes a step (2 us each), the persistent one an exchange (1 us) and its block's
    // few fmas, so auto takes it, exact for FLOAT.
    Graph gpu(Target::createModel("h200"));
    const nn::RecurrentPlan gpuPlan = lstm::getPlan(gpu, params);
    CHECK(gpuPlan.persistent);
    CHECK(gpuPlan.persistentRefusal.empty());
    CHECK(gpuPlan.persistentBlocks == 8); // one unit a block: H < 132 multiprocessors
    CHECK(gpuPlan.persistentThreadsPerBlock == 256);
    CHECK(gpuPlan.persistentArithmetic == "exact");
    CHECK(gpuPlan.perStepSecondsEstimate > 12e-6);
    CHECK(gpuPlan.persistentSecondsEstimate < 2e-6);
    // H = 1024, B = 16 in float: the exact variant's block reads 2 x 4 x 1024 operands a
    // thread for 4 warps of pairs (16 us at 1.98 GHz) and stages 132 x 64 KiB a step, more
    // than the per-step loop's nodes and product: auto declines, saying both estimates.
    lstm::LstmParams wide(FLOAT, 16, 3, {8, 1024});
    const nn::RecurrentPlan wideFloat = lstm::getPlan(gpu, wide);
    CHECK_FALSE(wideFloat.persistent);
    CHECK(wideFloat.persistentRefusal.find("the cost model estimates") != std::string::npos);
    CHECK(wideFloat.persistentSecondsEstimate > wideFloat.perStepSecondsEstimate);
    // The same in half takes tensor cores: a block's 2 row tiles of 64 k slices split in
    // four over its 8 warps, so a warp holds 16 weight fragments, all in its registers (up to
    // 16); persistent is then estimated faster, and auto takes it.
    lstm::LstmParams wideHalf(HALF, 16, 3, {8, 1024});
    const nn::RecurrentPlan tensorPlan = lstm::getPlan(gpu, wideHalf);
    CHECK(tensorPlan.persistent);
    CHECK(tensorPlan.persistentArithmetic == "tensor");
    CHECK(tensorPlan.persistentWeightsInRegisters);
    CHECK_FALSE(tensorPlan.persistentWeightsInSharedMemory);
    CHECK(tensorPlan.persistentSecondsEstimate < tensorPlan.perStepSecondsEstimate);
    // Staged h (16 x 1024 halves) and the 4 splits' 32 x 16 float partial tiles; no weights.
    CHECK(tensorPlan.persistentSharedBytes == 16 * 1024 * 2 + 4 * 32 * 16 * 4);
    // At H = 2048 (16 units a block: 64 rows, 4 row tiles, 2 splits, 64 fragments a warp) they
    // do not fit in registers, and 16 x 4 x 2048 floats do not fit in shared memory beside the
    // staged h: refused where asked for, declined by auto.
    lstm::LstmParams wider(HALF, 16, 3, {8, 2048});
    CHECK(lstm::getPlan(gpu, wider).persistentRefusal.find("the weights do not fit on chip") !=
          std::string::npos);
    CHECK(lstm::getPlan(gpu, wideHalf, {{"rnnPersistentArithmetic", "exact"}})
              .persistentArithmetic == "exact");
    // The backward with its weight update interleaved keeps the per-step loop under auto
    // (true refuses it: the test below), where auto would take the persistent backward.
    nn::addCodelets(gpu);
    Sequence gpuProg;
    Tensor gpuIn = lstm::createInput(gpu, params, "in");
    lstm::LstmState gpuInit = lstm::createInitialState(gpu, params, "init");
    lstm::LstmWeights gpuW = lstm::createWeights(gpu, params, "w");
    Tensor inter;
    Tensor out = lstm::lstmFwd(gpu, params, gpuInit, gpuIn, gpuW, &inter, gpuProg, "fwd").first;
    Tensor dx;
    lstm::LstmWeights dw;
    CHECK_NOTHROW(lstm::lstmBwdWithWU(gpu, params, gpuProg, gpuInit, inter, gpuW, gpuIn, out,
                                      gpu.clone(out, "dy"), static_cast<const Tensor *>(nullptr),
                                      &dx, dw, "bwd", {{"rnnStepsPerWU", "1"}}));
  }
  {
    // A GPU that cannot launch cooperatively cannot run the kernel; one before compute
    // capability 8.0 has no m16n8k16 mma: auto keeps the exact variant there, tensor is refused.
    Target::GpuSpec spec{80, 7, 0, 1024, 96 * 1024, std::size_t(16) << 30, 9e11, 1.5e9};
    spec.registersPerMultiprocessor = 65536;
    Graph noCooperative(Target::makeGpu("card", spec));
    CHECK(lstm::getPlan(noCooperative, params).persistentRefusal.find(
              "cannot launch a grid cooperatively") != std::string::npos);
    spec.cooperativeLaunch = true;
    Graph volta(Target::makeGpu("volta", spec));
    lstm::LstmParams halfLayer(HALF, 4, 3, {5, 8});
    CHECK(lstm::getPlan(volta, halfLayer).persistentArithmetic == "exact");
    CHECK_THROWS_WITH(lstm::getPlan(volta, halfLayer, {{"rnnPersistentKernel", "true"},
                                                       {"rnnPersistentArithmetic", "tensor"}}),
                      Catch::Contains("needs compute capability 8.0 or later; target 'volta' "
                                      "is sm_70"));
  }
  // The tensor variant takes half in whole warps: asked for where it cannot run, refused.
  CHECK_THROWS_WITH(lstm::getPlan(g, params, {{"rnnPersistentKernel", "true"},
                                              {"rnnPersistentArithmetic", "tensor"}}),
                    Catch::Contains("rnnPersistentArithmetic is tensor, but the tensor variant "
                                    "takes HALF data, not float"));
  lstm::LstmParams halfParams(HALF, 4, 3, {5, 8});
  CHECK_THROWS_WITH(lstm::getPlan(g, halfParams, {{"rnnPersistentKernel", "true"},
                                                  {"rnnPersistentArithmetic", "tensor"},
                                                  {"rnnPersistentThreadsPerBlock", "48"}}),
                    Catch::Contains("48 is not a multiple of 32"));
  CHECK(lstm::getPlan(g, halfParams, {{"rnnPersistentKernel", "true"},
                                      {"rnnPersistentArithmetic", "tensor"}})
            .persistentArithmetic == "tensor");
  CHECK_THROWS_WITH(lstm::getPlan(g, params, {{"rnnPersistentArithmetic", "fast"}}),
                    Catch::Contains("rnnPersistentArithmetic"));
  // The GRU's forward: the same choice; without resetAfter a block stages h and r*h and keeps u
  // (4 x 8 x 2 + 4 x 2 floats) beside its weights (2 units x 3 gates x 8).
  nn::gru::GruParams gruParams(FLOAT, 4, 3, {5, 8});
  CHECK(nn::gru::getPlan(g, gruParams).persistentRefusal.find("auto keeps") != std::string::npos);
  const nn::RecurrentPlan gruOn = nn::gru::getPlan(g, gruParams, {{"rnnPersistentKernel", "true"}});
  CHECK(gruOn.persistent);
  CHECK(gruOn.persistentSharedBytes == (4 * 8 * 2 + 4 * 2 + 2 * 3 * 8) * sizeof(float));
}

TEST_CASE("rnnPersistentKernel true where the kernel cannot run is refused naming the limit, "
          "and the backward refuses true with an interleaved weight update",
          "[correctness][lstm][persistent]") {
  Graph g(Target::createGeneric(2));
  nn::addCodelets(g);
  lstm::LstmParams params(FLOAT, 4, 3, {5, 8});
  Sequence prog;
  Tensor in = lstm::createInput(g, params, "in");
  lstm::LstmState init = lstm::createInitialState(g, params, "init");
  lstm::LstmWeights w = lstm::createWeights(g, params, "w");
  nn::gru::GruParams gruParams(FLOAT, 4, 3, {5, 8});
  // The GRU's persistent backward needs the weight update after the loop, not interleaved.
  Tensor gruIn = nn::gru::createInput(g, gruParams, "gruIn");
  Tensor gruInit = nn::gru::createInitialState(g, gruParams, "gruInit");
  nn::gru::GruWeights gruW = nn::gru::createWeights(g, gruParams, "gruW");
  Tensor gruInter;
  Sequence gruProg;
  Tensor gruOut = nn::gru::gruFwd(g, gruParams, gruInit, gruIn, gruW, &gruInter, gruProg, "fwd",
                                  {{"rnnPersistentKernel", "true"}});
  Tensor gruDy = g.clone(gruOut, "gruDy");
  Tensor gruDx;
  nn::gru::GruWeights gruDw;
  CHECK_THROWS_WITH(nn::gru::gruBwdWithWU(g, gruParams, gruProg, gruInit, gruInter, gruW, gruIn,
                                          gruOut, gruDy, &gruDx, gruDw, "bwd",
                                          {{"rnnPersistentKernel", "true"},
                                           {"rnnStepsPerWU", "1"}}),
                    Catch::Contains("the persistent backward needs it after the loop"));
  lstm::LstmParams softmax = params;
  softmax.activation = NonLinearityType::SOFTMAX;
  CHECK_THROWS_WITH(lstm::lstmFwd(g, softmax, init, in, w, nullptr, prog, "fwd",
                                  {{"rnnPersistentKernel", "true"}}),
                    Catch::Contains("rnnPersistentKernel is true, but the activations must be "
                                    "element-wise"));
  lstm::LstmParams wide(FLOAT, 64, 3, {5, 1024}); // 256 KiB of staged h a block
  Tensor wideIn = lstm::createInput(g, wide, "wideIn");
  lstm::LstmState wideInit = lstm::createInitialState(g, wide, "wideInit");
  lstm::LstmWeights wideW = lstm::createWeights(g, wide, "wideW");
  CHECK_THROWS_WITH(lstm::lstmFwd(g, wide, wideInit, wideIn, wideW, nullptr, prog, "fwd",
                                  {{"rnnPersistentKernel", "true"}}),
                    Catch::Contains("262144 bytes") && Catch::Contains("232448 bytes"));
  // On a GPU target the weights must fit on chip: 1024 units over 132 blocks are 8 a block,
  // 8 x 4 x 1024 floats = 131072 bytes, plus 8 rows of h (32768): fits; 2048 units do not,
  // neither as the exact variant's floats nor as the tensor variant's fragments (64 a warp: 4
  // row tiles in 2 splits over 8 warps, 128 k slices; 16 in registers, 48 x 8 warps x 512
  // bytes staged, beside 8 x 2048 halves of h and 2 x 64 x 8 floats of partial products:
  // 1 KiB over).
  Graph gpu(Target::createModel("h200"));
  nn::addCodelets(gpu);
  lstm::LstmParams big(HALF, 8, 3, {5, 2048});
  Tensor bigIn = lstm::createInput(gpu, big, "in");
  lstm::LstmState bigInit = lstm::createInitialState(gpu, big, "init");
  lstm::LstmWeights bigW = lstm::createWeights(gpu, big, "w");
  CHECK_THROWS_WITH(lstm::lstmFwd(gpu, big, bigInit, bigIn, bigW, nullptr, prog, "fwd",
                                  {{"rnnPersistentKernel", "true"},
                                   {"rnnPersistentArithmetic", "exact"}}),
                    Catch::Contains("the weights do not fit on chip") &&
                        Catch::Contains("16 units x 4 gates x 2048"));
  CHECK_THROWS_WITH(lstm::lstmFwd(gpu, big, bigInit, bigIn, bigW, nullptr, prog, "fwd",
                                  {{"rnnPersistentKernel", "true"}}),
                    Catch::Contains("the weights do not fit on chip") &&
                        Catch::Contains("weight fragments a block's warps cannot hold in "
                                        "registers (196608 bytes)") &&
                        Catch::Contains("(36864 bytes)"));
  CHECK_THROWS_WITH(lstm::lstmFwd(g, params, init, in, w, nullptr, prog, "fwd",
                                  {{"rnnPersistentKernel", "maybe"}}),
                    Catch::Contains("rnnPersistentKernel"));
  // The backward stages delta_(t+1), 4H a row: a forward that fits may have a backward that
  // does not (16 x 4 x 1024 floats = 262144 bytes); and it needs the weight update after its
  // loop, not interleaved.
  lstm::LstmParams deep(FLOAT, 16, 3, {5, 1024});
  Tensor deepIn = lstm::createInput(g, deep, "deepIn");
  lstm::LstmState deepInit = lstm::createInitialState(g, deep, "deepInit");
  lstm::LstmWeights deepW = lstm::createWeights(g, deep, "deepW");
  Tensor deepInter;
  Sequence deepTrain;
  auto [deepOut, deepCell] = lstm::lstmFwd(g, deep, deepInit, deepIn, deepW, &deepInter, deepTrain,
                                           "fwd", {{"rnnPersistentKernel", "true"}});
  Tensor deepDy = g.clone(deepOut, "deepDy");
  CHECK_THROWS_WITH(lstm::lstmBwd(g, deep, deepTrain, deepInit, deepInter, deepW, deepIn,
                                  deepOut, deepDy, nullptr, nullptr, nullptr, "bwd",
                                  {{"rnnPersistentKernel", "true"}}),
                    Catch::Contains("delta_(t+1), staged whole in every block") &&
                        Catch::Contains("262144 bytes"));
  Tensor inter;
  Sequence train;
  auto [out, cell] = lstm::lstmFwd(g, params, init, in, w, &inter, train, "fwd",
                                   {{"rnnPersistentKernel", "true"}});
  Tensor dy = g.clone(out, "dy");
  Tensor dx;
  lstm::LstmWeights dw;
  CHECK_THROWS_WITH(lstm::lstmBwdWithWU(g, params, train, init, inter, w, in, out, dy, nullptr,
                                        &dx, dw, "bwd",
                                        {{"rnnPersistentKernel", "true"}, {"rnnStepsPerWU", "1"}}),
                    Catch::Contains("the persistent backward needs it after the loop"));
}

namespace {

// Every result of a projected training step within tolerance of the double model's.
void requireReference(const TrainingCase &c, double atol, double rtol) {
  const LstmRun got = trainingRun(c), want = referenceRun(c);
  const std::pair<const char *, const Values LstmRun::*> fields[] = {
      {"output", &LstmRun::output},       {"final cell state", &LstmRun::finalCell},
      {"dx", &LstmRun::inputGrad},        {"dh0", &LstmRun::outputGrad0},
      {"dc0", &LstmRun::cellGrad0},       {"dWi", &LstmRun::wiGrad},
      {"dWo", &LstmRun::woGrad},          {"db", &LstmRun::bGrad},
      {"dWp", &LstmRun::projGrad}};
  for (const auto &[name, field] : fields) {
    REQUIRE((got.*field).size() == (want.*field).size());
    requireClose(got.*field, want.*field, atol, rtol, name);
  }
}

} // namespace

TEST_CASE("a projected LSTM (projSize) matches the double-precision model in every loop form",
          "[correctness][lstm][projection]") {
  struct Form {
    const char *name;
    OptionFlags options;
    std::vector<unsigned> lengths;
    bool fullSequence = true, reverse = false, separateWU = false;
  };
  const std::vector<unsigned> ragged{4, 0, 5};
  const Form forms[] = {
      {"defaults", {}, {}},
      {"no preCalcWeights", {{"preCalcWeights", "false"}}, {}},
      {"preCalcWeights", {{"preCalcWeights", "true"}}, ragged},
      {"3 shards, code reuse", {{"numShards", "3"}, {"rnnCodeReuse", "true"}}, ragged},
      {"cellAndTanh", {{"recomputationMode", "cellAndTanh"}}, ragged},
      {"full recomputation", {{"recomputationMode", "full"}}, ragged},
      {"rnnStepsPerWU 1 (one pass after the loop)", {{"rnnStepsPerWU", "1"}}, ragged},
      {"the last output only", {}, ragged, false},
      {"the last output only, full recomputation", {{"recomputationMode", "full"}}, ragged,
       false},
      {"reverse", {{"direction", "reverse"}}, ragged, true, true},
      {"lstmBwd + lstmWU", {}, ragged, true, false, true},
      {"lstmBwd + lstmWU, the last output only, cellAndTanh",
       {{"recomputationMode", "cellAndTanh"}}, ragged, false, false, true},
  };
  for (const Form &form : forms) {
    for (std::size_t P : {1, 3}) {
      INFO(form.name << ", P = " << P);
      TrainingCase c;
      c.projSize = P;
      c.fwd = c.bwd = form.options;
      c.lengths = form.lengths;
      c.fullSequence = form.fullSequence;
      c.reverseOnHost = form.reverse;
      c.separateWU = form.separateWU;
      requireReference(c, 1e-5, 1e-4);
    }
  }
  SECTION("half, with float partials and accumulators") {
    TrainingCase c;
    c.type = HALF;
    c.projSize = 2;
    c.lengths = ragged;
    c.fwd = c.bwd = {{"weightAccumulatorsType", "float"}};
    requireReference(c, 2e-2, 2e-2);
  }
  SECTION("a larger layer: H = 24, P = 8, B = 5 over 6 tiles") {
    TrainingCase c;
    c.T = 7, c.B = 5, c.I = 6, c.H = 24, c.projSize = 8, c.tiles = 6;
    c.lengths = {7, 1, 0, 3, 6};
    requireReference(c, 1e-5, 1e-4);
  }
}

TEST_CASE("a projected LSTM's results do not depend on shards, code reuse or recomputation",
          "[correctness][lstm][projection]") {
  TrainingCase base;
  base.projSize = 2;
  base.lengths = {4, 0, 5};
  const LstmRun want = trainingRun(base);
  for (const OptionFlags &options :
       {OptionFlags{{"numShards", "2"}}, OptionFlags{{"numShards", "5"}, {"rnnCodeReuse", "true"}},
        OptionFlags{{"recomputationMode", "cellAndTanh"}},
        OptionFlags{{"recomputationMode", "full"}}}) {
    INFO(options.begin()->first << " " << options.begin()->second);
    TrainingCase c = base;
    c.fwd = c.bwd = options;
    requireSameBits(trainingRun(c), want);
  }
}

TEST_CASE("ONNX's activation clip (activationClip) matches the double-precision model in every "
          "loop form",
          "[correctness][lstm][clip]") {
  struct Form {
    const char *name;
    OptionFlags options;
    bool fullSequence = true, reverse = false, separateWU = false;
    std::size_t projSize = 0;
    bool cellClip = false;
  };
  const Form forms[] = {
      {"defaults", {}},
      {"no preCalcWeights", {{"preCalcWeights", "false"}}},
      {"3 shards, code reuse", {{"numShards", "3"}, {"rnnCodeReuse", "true"}}},
      {"cellAndTanh", {{"recomputationMode", "cellAndTanh"}}},
      {"full recomputation", {{"recomputationMode", "full"}}},
      {"rnnStepsPerWU 2", {{"rnnStepsPerWU", "2"}}},
      {"the last output only", {}, false},
      {"reverse", {{"direction", "reverse"}}, true, true},
      {"lstmBwd + lstmWU, cellAndTanh", {{"recomputationMode", "cellAndTanh"}}, true, false,
       true},
      {"with the cell clip", {}, true, false, false, 0, true},
      {"with a projection and the cell clip, cellAndTanh", {{"recomputationMode", "cellAndTanh"}},
       true, false, false, 2, true},
  };
  // 0.5 clips about half of the pre-activations of this data (weights in [-1, 1]), and some
  // cell states.
  for (const Form &form : forms) {
    INFO(form.name);
    TrainingCase c;
    c.activationClip = 0.5;
    c.lengths = {4, 0, 5};
    c.fwd = c.bwd = form.options;
    c.fullSequence = form.fullSequence;
    c.reverseOnHost = form.reverse;
    c.separateWU = form.separateWU;
    c.projSize = form.projSize;
    c.cellClip = form.cellClip;
    requireReference(c, 1e-5, 1e-4);
  }
  SECTION("half") {
    TrainingCase c;
    c.type = HALF;
    c.activationClip = 0.5;
    c.lengths = {4, 0, 5};
    c.fwd = c.bwd = {{"weightAccumulatorsType", "float"}};
    requireReference(c, 2e-2, 2e-2);
  }
  SECTION("a threshold beyond every input changes nothing, bit for bit") {
    TrainingCase plain;
    plain.lengths = {4, 0, 5};
    TrainingCase wide = plain;
    wide.activationClip = 1e6;
    const LstmRun a = trainingRun(plain), b = trainingRun(wide);
    CHECK(sameValues(a.output, b.output));
    CHECK(sameValues(a.finalCell, b.finalCell));
    CHECK(sameValues(a.inputGrad, b.inputGrad));
    CHECK(sameValues(a.woGrad, b.woGrad));
  }
}
