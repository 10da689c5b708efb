// LSTM stacks in one call (aspen/nn/LstmStack.hpp) and the dropout between their layers
// (rnn::dropoutSequence): every result of a training step against the double-precision layer
// model composed layer by layer with a host dropout mask (tools/lstm_layer/LstmReference.hpp),
// the wavefront's bits against lstmFwd called layer by layer, and the errors.
#include "test_nn_harness.hpp"

#include "../../tools/lstm_layer/LstmReference.hpp"
#include "../../tools/rnn_common/RnnReference.hpp"

#include <aspen/nn/LstmStack.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

using namespace aspen;
using namespace nntest;
namespace lstm = aspen::nn::lstm;
namespace rnn = aspen::nn::rnn;
using program::Sequence;

namespace {

// The documented mask (docs/recurrent.md), written again here: element i of layer l's output
// is kept when (mix(mix(seed ^ (l + 1) * 0xD1B54A32D192ED03) + i) >> 11) * 2^-53 >= rate.
std::uint64_t splitMix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool hostKeeps(std::uint64_t seed, unsigned layer, std::size_t i, double rate) {
  const std::uint64_t key = splitMix(seed ^ ((layer + 1ull) * 0xD1B54A32D192ED03ull));
  return double(splitMix(key + i) >> 11) * 0x1.0p-53 >= rate;
}

Values hostDropout(const Values &v, std::uint64_t seed, unsigned layer, double rate) {
  Values out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = hostKeeps(seed, layer, i, rate) ? v[i] / (1.0 - rate) : 0.0;
  return out;
}

struct StackCase {
  std::size_t T = 5, B = 3, I = 3, H = 4, L = 2;
  std::string direction = "forward";
  std::vector<unsigned> lengths; // empty: every row T long
  double dropout = 0.0;
  std::uint64_t seed = 7;
  std::size_t projSize = 0;
  OptionFlags options; // the layer options and stackSchedule
  std::size_t D() const { return direction == "bidirectional" ? 2 : 1; }
  std::size_t W() const { return projSize ? projSize : H; }
  std::size_t inputSize(std::size_t l) const { return l == 0 ? I : D() * W(); }
};

// Every input and result of a training step, in the stack's layouts.
struct StackRun {
  std::map<std::string, Values> values;
};

// The names and element counts of the step's host-written tensors, in the order they are
// drawn (seeds 100, 101, ...).
std::vector<std::pair<std::string, std::size_t>> writeOrder(const StackCase &c) {
  const std::size_t LD = c.L * c.D();
  std::vector<std::pair<std::string, std::size_t>> w = {{"in", c.T * c.B * c.I},
                                                        {"h0", LD * c.B * c.W()},
                                                        {"c0", LD * c.B * c.H}};
  for (std::size_t i = 0; i < LD; ++i) {
    const std::size_t l = i / c.D();
    w.emplace_back(fmt::format("wi{}", i), 4 * c.inputSize(l) * c.H);
    w.emplace_back(fmt::format("wo{}", i), 4 * c.W() * c.H);
    w.emplace_back(fmt::format("b{}", i), 4 * c.H);
    if (c.projSize)
      w.emplace_back(fmt::format("wp{}", i), c.H * c.projSize);
  }
  w.emplace_back("dy", c.T * c.B * c.D() * c.W());
  w.emplace_back("dhn", LD * c.B * c.W());
  w.emplace_back("dcn", LD * c.B * c.H);
  return w;
}

std::map<std::string, Values> drawInputs(const StackCase &c) {
  std::map<std::string, Values> v;
  unsigned seed = 100;
  for (const auto &[name, n] : writeOrder(c))
    v[name] = widen(convert<float>(randomValues(n, -1.0, 1.0, seed++)));
  return v;
}

// lengths: made here when c has lengths and it is not given.
lstm::LstmParams stackParams(Graph &graph, const StackCase &c, Tensor &lengths) {
  if (!c.lengths.empty() && !lengths.valid()) {
    lengths = graph.addVariable(UNSIGNED_INT, {c.B}, "lengths");
    graph.setTileMapping(lengths, 0);
  }
  lstm::LstmParams p = lengths.valid() ? lstm::LstmParams(FLOAT, c.B, c.T, lengths, {c.I, c.H})
                                       : lstm::LstmParams(FLOAT, c.B, c.T, {c.I, c.H});
  p.projSize = c.projSize;
  return p;
}

OptionFlags stackOptions(const StackCase &c) {
  OptionFlags o = c.options;
  o.set("numLayers", std::to_string(c.L));
  o.set("direction", c.direction);
  o.set("dropout", fmt::format("{}", c.dropout));
  o.set("dropoutSeed", std::to_string(c.seed));
  return o;
}

// The training step through lstmStackFwd and lstmStackBwdWithWU on 4 tiles and 3 threads.
std::map<std::string, Values> stackRun(const StackCase &c) {
  Harness h(Target::createGeneric(4));
  Tensor lengths;
  const lstm::LstmParams params = stackParams(h.graph, c, lengths);
  const OptionFlags options = stackOptions(c);
  const auto data = drawInputs(c);
  const Tensor in = lstm::createInput(h.graph, params, "in");
  const lstm::LstmState init = lstm::createStackInitialState(h.graph, params, "init", options);
  const auto weights = lstm::createStackWeights(h.graph, params, "w", options);
  lstm::LstmStackIntermediates inter;
  const auto [out, final] =
      lstm::lstmStackFwd(h.graph, params, init, in, weights, &inter, h.prog, "fwd", options);
  const Tensor dy = h.graph.clone(out, "dy");
  const lstm::LstmState dFinal{h.graph.clone(final.output, "dhn"),
                               h.graph.clone(final.cellState, "dcn")};
  Tensor dx;
  std::vector<lstm::LstmWeights> dw;
  const lstm::LstmState d0 = lstm::lstmStackBwdWithWU(h.graph, params, h.prog, init, inter,
                                                      weights, out, dy, &dFinal, &dx, dw, "bwd",
                                                      options);
  std::map<std::string, Tensor> tensors = {{"in", in},         {"h0", init.output},
                                           {"c0", init.cellState}, {"dy", dy},
                                           {"dhn", dFinal.output}, {"dcn", dFinal.cellState}};
  for (std::size_t i = 0; i < weights.size(); ++i) {
    tensors[fmt::format("wi{}", i)] = weights[i].inputWeights;
    tensors[fmt::format("wo{}", i)] = weights[i].outputWeights;
    tensors[fmt::format("b{}", i)] = weights[i].biases;
    if (c.projSize)
      tensors[fmt::format("wp{}", i)] = weights[i].projection;
  }
  for (const auto &[name, n] : writeOrder(c)) {
    h.graph.createHostWrite(name, tensors.at(name));
  }
  std::map<std::string, Tensor> reads = {{"out", out},       {"hn", final.output},
                                         {"cn", final.cellState}, {"dx", dx},
                                         {"dh0", d0.output}, {"dc0", d0.cellState}};
  for (std::size_t i = 0; i < dw.size(); ++i) {
    reads[fmt::format("dwi{}", i)] = dw[i].inputWeights;
    reads[fmt::format("dwo{}", i)] = dw[i].outputWeights;
    reads[fmt::format("db{}", i)] = dw[i].biases;
    if (c.projSize)
      reads[fmt::format("dwp{}", i)] = dw[i].projection;
  }
  for (const auto &[name, t] : reads)
    h.graph.createHostRead(name, t);
  if (lengths.valid())
    h.graph.createHostWrite("lengths", lengths);
  Engine e(h.graph, h.prog, {{"aspen.cpu.threads", "3"}, {"aspen.cpu.inlineElements", "0"}});
  e.load(aspen::test::deviceFor(h.graph.getTarget()));
  for (const auto &[name, v] : data) {
    const auto f = convert<float>(v);
    e.writeTensor(name, f.data(), f.data() + f.size());
  }
  if (lengths.valid())
    e.writeTensor("lengths", c.lengths.data(), c.lengths.data() + c.lengths.size());
  e.run();
  std::map<std::string, Values> results;
  for (const auto &[name, t] : reads) {
    std::vector<float> v(t.numElements());
    e.readTensor(name, v.data(), v.data() + v.size());
    results[name] = widen(v);
  }
  return results;
}

Values part(const Values &v, std::size_t i, std::size_t n) {
  return Values(v.begin() + i * n, v.begin() + (i + 1) * n);
}

// [T, B, D*W] from the directions' [T, B, W], and back.
Values interleave(const std::vector<Values> &dirs, std::size_t rows, std::size_t W) {
  const std::size_t D = dirs.size();
  Values out(rows * D * W);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t d = 0; d < D; ++d)
      for (std::size_t k = 0; k < W; ++k)
        out[(r * D + d) * W + k] = dirs[d][r * W + k];
  return out;
}

Values direction(const Values &v, std::size_t d, std::size_t D, std::size_t rows,
                 std::size_t W) {
  Values out(rows * W);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t k = 0; k < W; ++k)
      out[r * W + k] = v[(r * D + d) * W + k];
  return out;
}

void accumulate(Values &into, const Values &v) {
  if (into.empty())
    into.assign(v.size(), 0.0);
  for (std::size_t k = 0; k < v.size(); ++k)
    into[k] += v[k];
}

// The same step through the double model: each layer and direction one lstmref layer (a
// reverse direction on each row's steps reversed on the host), the host mask between layers.
std::map<std::string, Values> modelRun(const StackCase &c) {
  const auto in = drawInputs(c);
  const std::size_t D = c.D(), W = c.W(), TB = c.T * c.B, LD = c.L * D;
  std::map<std::string, Values> r;
  std::vector<lstmref::LstmModel> models(LD);
  std::vector<lstmref::LstmData> data(LD);
  std::vector<lstmref::LstmForward> fwd(LD);
  std::vector<Values> hn(LD), cn(LD);
  auto reverseIf = [&](bool reverse, const Values &v) {
    return reverse ? rnnref::reverseRowSteps(v, c.lengths, c.T, c.B) : v;
  };
  auto isReverse = [&](std::size_t d) { return d == 1 || c.direction == "reverse"; };
  Values x = in.at("in");
  for (std::size_t l = 0; l < c.L; ++l) {
    std::vector<Values> own;
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t i = l * D + d;
      lstmref::LstmModel &m = models[i];
      m.T = c.T, m.B = c.B, m.I = c.inputSize(l), m.H = c.H, m.P = c.projSize;
      m.timeSteps = c.lengths;
      m.hardSigmoidGradient = rnnref::HardSigmoidGradient::popnn;
      lstmref::LstmData &dd = data[i];
      dd.input = reverseIf(isReverse(d), x);
      dd.initialOutput = part(in.at("h0"), i, c.B * W);
      dd.initialCellState = part(in.at("c0"), i, c.B * c.H);
      dd.inputWeights = in.at(fmt::format("wi{}", i));
      dd.outputWeights = in.at(fmt::format("wo{}", i));
      dd.biases = in.at(fmt::format("b{}", i));
      if (c.projSize)
        dd.projection = in.at(fmt::format("wp{}", i));
      fwd[i] = lstmref::forward(m, dd);
      own.push_back(reverseIf(isReverse(d), fwd[i].output));
      hn[i] = fwd[i].finalOutput;
      cn[i] = fwd[i].finalCellState;
    }
    const Values y = interleave(own, TB, W);
    r["out"] = y;
    x = c.dropout > 0 && l + 1 < c.L ? hostDropout(y, c.seed, unsigned(l), c.dropout) : y;
  }
  for (std::size_t i = 0; i < LD; ++i) {
    r["hn"].insert(r["hn"].end(), hn[i].begin(), hn[i].end());
    r["cn"].insert(r["cn"].end(), cn[i].begin(), cn[i].end());
  }
  Values dy = in.at("dy");
  std::vector<Values> dh0(LD), dc0(LD);
  for (std::size_t l = c.L; l-- > 0;) {
    if (c.dropout > 0 && l + 1 < c.L)
      dy = hostDropout(dy, c.seed, unsigned(l), c.dropout);
    Values dx;
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t i = l * D + d;
      const lstmref::LstmStateGrad stateGrad{part(in.at("dhn"), i, c.B * W),
                                             part(in.at("dcn"), i, c.B * c.H)};
      const auto g = lstmref::backward(models[i], data[i], fwd[i],
                                       reverseIf(isReverse(d), direction(dy, d, D, TB, W)),
                                       stateGrad);
      accumulate(dx, reverseIf(isReverse(d), g.inputGrad));
      dh0[i] = g.initialOutputGrad;
      dc0[i] = g.initialCellStateGrad;
      r[fmt::format("dwi{}", i)] = g.inputWeightsGrad;
      r[fmt::format("dwo{}", i)] = g.outputWeightsGrad;
      r[fmt::format("db{}", i)] = g.biasesGrad;
      if (c.projSize)
        r[fmt::format("dwp{}", i)] = g.projectionGrad;
    }
    dy = dx;
  }
  r["dx"] = dy;
  for (std::size_t i = 0; i < LD; ++i) {
    r["dh0"].insert(r["dh0"].end(), dh0[i].begin(), dh0[i].end());
    r["dc0"].insert(r["dc0"].end(), dc0[i].begin(), dc0[i].end());
  }
  return r;
}

void requireMatchesModel(const StackCase &c) {
  const auto got = stackRun(c);
  const auto want = modelRun(c);
  for (const auto &[name, v] : want) {
    INFO(name);
    REQUIRE(got.count(name) == 1);
    requireClose(got.at(name), v, 2e-5, 2e-4, name);
  }
  // Not trivially equal: the outputs and the deepest gradients moved.
  CHECK(got.at("out") != Values(got.at("out").size(), 0.0));
  CHECK(got.at("dx") != Values(got.at("dx").size(), 0.0));
}

} // namespace

TEST_CASE("an LSTM stack in one call matches the double model layer by layer, every direction",
          "[correctness][lstm][stack]") {
  struct Named {
    const char *name;
    StackCase c;
  };
  std::vector<Named> cases;
  auto add = [&](const char *name, auto edit) {
    StackCase c;
    edit(c);
    cases.push_back({name, c});
  };
  add("2 layers forward, wavefront", [](StackCase &c) {
    c.options.set("stackSchedule", "wavefront");
  });
  add("3 layers forward, lengths with 0 and 1, dropout, wavefront", [](StackCase &c) {
    c.L = 3, c.lengths = {1, 0, 5}, c.dropout = 0.4;
    c.options.set("stackSchedule", "wavefront");
  });
  add("3 layers reverse, lengths, dropout, wavefront", [](StackCase &c) {
    c.L = 3, c.direction = "reverse", c.lengths = {4, 0, 5}, c.dropout = 0.3;
    c.options.set("stackSchedule", "wavefront");
  });
  add("2 layers forward, products then cells", [](StackCase &c) {
    c.lengths = {4, 0, 5}, c.dropout = 0.5;
    c.options.set("stepMethod", "productThenCell");
  });
  add("bidirectional, 1 layer", [](StackCase &c) { c.L = 1, c.direction = "bidirectional"; });
  add("bidirectional, 3 layers, lengths, dropout", [](StackCase &c) {
    c.L = 3, c.direction = "bidirectional", c.lengths = {1, 0, 5}, c.dropout = 0.25;
  });
  add("bidirectional, 2 layers, products then cells, recomputation", [](StackCase &c) {
    c.direction = "bidirectional", c.lengths = {3, 5, 2};
    c.options.set("stepMethod", "productThenCell");
    c.options.set("recomputationMode", "cellAndTanh");
  });
  add("bidirectional, 2 layers, projected (P = 3, H = 5)", [](StackCase &c) {
    c.direction = "bidirectional", c.H = 5, c.projSize = 3, c.lengths = {4, 0, 5};
    c.dropout = 0.2;
  });
  for (const auto &[name, c] : cases) {
    INFO(name);
    requireMatchesModel(c);
  }
}

namespace {

// The forward of c two ways in one graph: lstmStackFwd, and lstmFwd called layer by layer (the
// wavefront's options: preCalcWeights false above the first layer) with rnn::dropoutSequence
// between; returns both outputs and final states read back.
std::map<std::string, Values> stackAgainstCalls(const StackCase &c, bool training) {
  Harness h(Target::createGeneric(4));
  Tensor lengths;
  if (!c.lengths.empty())
    lengths = h.input(UNSIGNED_INT, {c.B}, "lengths", Values(c.lengths.begin(), c.lengths.end()),
                      false);
  const lstm::LstmParams params = stackParams(h.graph, c, lengths);
  const OptionFlags options = stackOptions(c);
  const auto data = drawInputs(c);
  const Tensor in = h.input(FLOAT, {c.T, c.B, c.I}, "in", data.at("in"));
  const Tensor h0 = h.input(FLOAT, {c.L, c.B, c.H}, "h0", data.at("h0"));
  const Tensor c0 = h.input(FLOAT, {c.L, c.B, c.H}, "c0", data.at("c0"));
  std::vector<lstm::LstmWeights> weights;
  for (std::size_t l = 0; l < c.L; ++l) {
    auto w = [&](const char *name, std::vector<std::size_t> shape) {
      const std::string key = fmt::format("{}{}", name, l);
      return h.input(FLOAT, shape, key, data.at(key));
    };
    weights.push_back({w("wi", {4, c.inputSize(l), c.H}), w("wo", {4, c.H, c.H}),
                       w("b", {4, c.H}), Tensor()});
  }
  lstm::LstmStackIntermediates inter;
  const auto [out, final] = lstm::lstmStackFwd(h.graph, params, {h0, c0}, in, weights,
                                               training ? &inter : nullptr, h.prog, "stack",
                                               options);
  h.output("stack out", out);
  h.output("stack hn", final.output);
  h.output("stack cn", final.cellState);
  Tensor x = in;
  for (std::size_t l = 0; l < c.L; ++l) {
    lstm::LstmParams p = params;
    p.rnn.layerSizes[0] = p.layerSizes[0] = c.inputSize(l);
    OptionFlags o = c.options;
    o.remove("stackSchedule");
    o.set("direction", c.direction);
    if (l > 0)
      o.set("preCalcWeights", "false");
    Tensor layerInter;
    const auto [y, cell] = lstm::lstmFwd(h.graph, p, {h0[l], c0[l]}, x, weights[l],
                                         training ? &layerInter : nullptr, h.prog,
                                         fmt::format("call{}", l), o);
    h.output(fmt::format("calls out{}", l), y);
    h.output(fmt::format("calls cn{}", l), cell);
    x = training && c.dropout > 0 && l + 1 < c.L
            ? rnn::dropoutSequence(h.graph, p.rnn, y, c.dropout, c.seed, unsigned(l), h.prog)
            : y;
  }
  return h.run(3);
}

} // namespace

TEST_CASE("the wavefront stack gives lstmFwd's bits called layer by layer with the dropout "
          "between",
          "[correctness][lstm][stack]") {
  for (const bool training : {false, true})
    for (const char *direction : {"forward", "reverse"})
      for (const bool varying : {false, true}) {
        StackCase c;
        c.L = 3, c.T = 7, c.B = 4, c.H = 8, c.I = 5;
        c.direction = direction;
        c.dropout = 0.35;
        if (varying)
          c.lengths = {7, 0, 1, 5};
        c.options.set("stackSchedule", "wavefront");
        c.options.set("stepMethod", "fused");
        INFO(direction << (training ? " training" : " inference")
                       << (varying ? ", lengths 7 0 1 5" : ""));
        auto r = stackAgainstCalls(c, training);
        CHECK(sameValues(r.at("stack out"), r.at("calls out2")));
        for (std::size_t l = 0; l < c.L; ++l)
          CHECK(sameValues(part(r.at("stack cn"), l, c.B * c.H),
                           r.at(fmt::format("calls cn{}", l))));
        CHECK(r.at("stack out") != Values(r.at("stack out").size(), 0.0));
      }
}

TEST_CASE("rnn::dropoutSequence keeps the documented mask, scaled, at its rate",
          "[correctness][lstm][stack]") {
  const std::size_t T = 40, B = 8, W = 50;
  const Values v = randomValues(T * B * W, 0.5, 1.5, 3); // no zeros: a drop shows
  for (const Type type : {FLOAT, HALF})
    for (const double rate : {0.1, 0.5, 0.9}) {
      Harness h(Target::createGeneric(3));
      rnn::RnnParams p(type, B, T, {W, W});
      const Tensor in = h.input(type, {T, B, W}, "in", v);
      h.output("a", rnn::dropoutSequence(h.graph, p, in, rate, 11, 2, h.prog));
      h.output("again", rnn::dropoutSequence(h.graph, p, in, rate, 11, 2, h.prog));
      h.output("other seed", rnn::dropoutSequence(h.graph, p, in, rate, 12, 2, h.prog));
      h.output("other layer", rnn::dropoutSequence(h.graph, p, in, rate, 11, 3, h.prog));
      const auto r = h.run(2);
      INFO(type.toString() << " rate " << rate);
      const Values rounded = roundAll(type, v);
      std::size_t dropped = 0;
      bool maskOk = true, valuesOk = true;
      for (std::size_t i = 0; i < v.size(); ++i) {
        const bool keep = hostKeeps(11, 2, i, rate);
        dropped += keep ? 0 : 1;
        maskOk = maskOk && (r.at("a")[i] != 0.0) == keep;
        const double want = keep ? roundTo(type, roundTo(FLOAT, rounded[i] *
                                                                    roundTo(FLOAT, 1 / (1 - rate))))
                                 : 0.0;
        valuesOk = valuesOk && r.at("a")[i] == want;
      }
      CHECK(maskOk);
      CHECK(valuesOk);
      // The drop rate within 5 standard deviations of a binomial's.
      const double n = double(v.size()), sd = std::sqrt(n * rate * (1 - rate));
      CHECK(std::abs(double(dropped) - n * rate) < 5 * sd);
      CHECK(sameValues(r.at("a"), r.at("again")));
      CHECK(r.at("a") != r.at("other seed"));
      CHECK(r.at("a") != r.at("other layer"));
    }
}

TEST_CASE("a stack refuses bad options, counts and shapes, naming the rule",
          "[error][lstm][stack]") {
  Harness h(Target::createGeneric(4));
  lstm::LstmParams params(FLOAT, 2, 3, {3, 4});
  const OptionFlags two{{"numLayers", "2"}};
  const Tensor in = lstm::createInput(h.graph, params, "in");
  const auto init = lstm::createStackInitialState(h.graph, params, "init", two);
  const auto weights = lstm::createStackWeights(h.graph, params, "w", two);
  Sequence prog;
  auto fwd = [&](const OptionFlags &o, const std::vector<lstm::LstmWeights> &w,
                 const lstm::LstmState &s) {
    lstm::lstmStackFwd(h.graph, params, s, in, w, nullptr, prog, "fwd", o);
  };
  auto refuses = [&](const OptionFlags &o, const char *what) {
    INFO(what);
    REQUIRE_THROWS_AS(fwd(o, weights, init), invalid_option);
    try {
      fwd(o, weights, init);
    } catch (const invalid_option &e) {
      CHECK_THAT(e.what(), Catch::Matchers::Contains(what));
    }
  };
  refuses({{"numLayers", "0"}}, "numLayers");
  refuses({{"numLayers", "2"}, {"direction", "sideways"}}, "bidirectional");
  refuses({{"numLayers", "2"}, {"dropout", "1"}}, "[0, 1)");
  refuses({{"numLayers", "2"}, {"dropout", "-0.1"}}, "dropout");
  refuses({{"numLayers", "2"}, {"dropoutSeed", "-1"}}, "dropoutSeed");
  refuses({{"numLayers", "2"}, {"stackSchedule", "sometimes"}}, "stackSchedule");
  refuses({{"numLayers", "2"}, {"stackSchedule", "wavefront"}, {"stepMethod", "productThenCell"}},
          "layer 0's steps are not fused");
  refuses({{"numLayers", "2"}, {"stackSchedule", "wavefront"}, {"direction", "bidirectional"}},
          "one direction");
  refuses({{"numLayers", "2"}, {"stepMethod", "sideways"}}, "stepMethod");
  // Two layers' weights and states for three layers.
  CHECK_THROWS_AS(fwd({{"numLayers", "3"}}, weights, init), shape_error);
  const auto init3 = lstm::createStackInitialState(h.graph, params, "init3", {{"numLayers", "3"}});
  CHECK_THROWS_AS(fwd(two, weights, init3), shape_error);
  // Layer 1's input weights sized for layer 0's input.
  auto swapped = weights;
  swapped[1] = weights[0];
  CHECK_THROWS_AS(fwd(two, swapped, init), shape_error);
  lstm::LstmParams last = params;
  last.outputFullSequence = false;
  CHECK_THROWS_AS(lstm::lstmStackFwd(h.graph, last, init, in, weights, nullptr, prog, "fwd", two),
                  invalid_option);
  rnn::RnnParams p(FLOAT, 2, 3, {4, 4});
  CHECK_THROWS_AS(rnn::dropoutSequence(h.graph, p, in.slice(0, 2, 0), 0.5, 1, 0, prog),
                  shape_error);
  CHECK_THROWS_AS(rnn::dropoutSequence(h.graph, p, in, 1.5, 1, 0, prog), invalid_option);
  // Still usable: a good stack builds after the refusals.
  CHECK_NOTHROW(fwd(two, weights, init));
}
