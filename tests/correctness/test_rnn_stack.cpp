// Recurrent stacks in one call (aspen/nn/LstmStack.hpp, GruStack.hpp) and the dropout between
// their layers (rnn::dropoutSequence): every result of a training step against the
// double-precision layer models composed layer by layer with a host dropout mask
// (tools/rnnref/Lstm.hpp, tools/rnnref/Gru.hpp), the wavefront's bits
// against lstmFwd called layer by layer, and the errors.
#include "test_nn_harness.hpp"

#include "rnnref/Gru.hpp"
#include "rnnref/Lstm.hpp"
#include "rnnref/Common.hpp"
#include "rnnref/Vanilla.hpp"

#include <aspen/nn/GruStack.hpp>
#include <aspen/nn/LstmStack.hpp>
#include <aspen/nn/RecurrentStack.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

using namespace aspen;
using namespace nntest;
namespace gru = aspen::nn::gru;
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
  bool gru = false;        // a GRU stack
  bool vanilla = false;    // a vanilla RNN stack (else an LSTM's when not gru)
  nn::NonLinearityType nl = nn::NonLinearityType::TANH; // the vanilla RNN's
  bool resetAfter = false; // the GRU's
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
  std::size_t gates() const { return vanilla ? 1 : gru ? 3 : 4; }
  std::size_t biases() const { return (gru && resetAfter ? 2 : 1) * gates() * H; }
  bool hasCell() const { return !gru && !vanilla; } // the LSTM's cell state
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
                                                        {"h0", LD * c.B * c.W()}};
  if (c.hasCell())
    w.emplace_back("c0", LD * c.B * c.H);
  for (std::size_t i = 0; i < LD; ++i) {
    const std::size_t l = i / c.D();
    w.emplace_back(fmt::format("wi{}", i), c.gates() * c.inputSize(l) * c.H);
    w.emplace_back(fmt::format("wo{}", i), c.gates() * c.W() * c.H);
    w.emplace_back(fmt::format("b{}", i), c.biases());
    if (c.projSize)
      w.emplace_back(fmt::format("wp{}", i), c.H * c.projSize);
  }
  w.emplace_back("dy", c.T * c.B * c.D() * c.W());
  w.emplace_back("dhn", LD * c.B * c.W());
  if (c.hasCell())
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

// A stack's training step in a graph: the tensors the host writes and reads, by name.
struct StepTensors {
  std::map<std::string, Tensor> writes, reads;
};

void addWeights(StepTensors &t, std::size_t i, const Tensor &wi, const Tensor &wo,
                const Tensor &b, const Tensor &wp) {
  t.writes[fmt::format("wi{}", i)] = wi;
  t.writes[fmt::format("wo{}", i)] = wo;
  t.writes[fmt::format("b{}", i)] = b;
  if (wp.valid())
    t.writes[fmt::format("wp{}", i)] = wp;
}

void addWeightGrads(StepTensors &t, std::size_t i, const Tensor &wi, const Tensor &wo,
                    const Tensor &b, const Tensor &wp) {
  t.reads[fmt::format("dwi{}", i)] = wi;
  t.reads[fmt::format("dwo{}", i)] = wo;
  t.reads[fmt::format("db{}", i)] = b;
  if (wp.valid())
    t.reads[fmt::format("dwp{}", i)] = wp;
}

// lstmStackFwd and lstmStackBwdWithWU.
StepTensors lstmStep(Graph &graph, Sequence &prog, const StackCase &c, const Tensor &lengths) {
  lstm::LstmParams params = lengths.valid()
                                ? lstm::LstmParams(FLOAT, c.B, c.T, lengths, {c.I, c.H})
                                : lstm::LstmParams(FLOAT, c.B, c.T, {c.I, c.H});
  params.projSize = c.projSize;
  const OptionFlags options = stackOptions(c);
  StepTensors t;
  const Tensor in = lstm::createInput(graph, params, "in");
  const lstm::LstmState init = lstm::createStackInitialState(graph, params, "init", options);
  const auto weights = lstm::createStackWeights(graph, params, "w", options);
  lstm::LstmStackIntermediates inter;
  const auto [out, final] =
      lstm::lstmStackFwd(graph, params, init, in, weights, &inter, prog, "fwd", options);
  const Tensor dy = graph.clone(out, "dy");
  const lstm::LstmState dFinal{graph.clone(final.output, "dhn"),
                               graph.clone(final.cellState, "dcn")};
  Tensor dx;
  std::vector<lstm::LstmWeights> dw;
  const lstm::LstmState d0 = lstm::lstmStackBwdWithWU(graph, params, prog, init, inter, weights,
                                                      out, dy, &dFinal, &dx, dw, "bwd", options);
  t.writes = {{"in", in}, {"h0", init.output}, {"c0", init.cellState}, {"dy", dy},
              {"dhn", dFinal.output}, {"dcn", dFinal.cellState}};
  t.reads = {{"out", out}, {"hn", final.output}, {"cn", final.cellState},
             {"dx", dx},   {"dh0", d0.output},   {"dc0", d0.cellState}};
  for (std::size_t i = 0; i < weights.size(); ++i) {
    addWeights(t, i, weights[i].inputWeights, weights[i].outputWeights, weights[i].biases,
               weights[i].projection);
    addWeightGrads(t, i, dw[i].inputWeights, dw[i].outputWeights, dw[i].biases,
                   dw[i].projection);
  }
  return t;
}

// gruStackFwd and gruStackBwdWithWU.
StepTensors gruStep(Graph &graph, Sequence &prog, const StackCase &c, const Tensor &lengths) {
  gru::GruParams params = lengths.valid() ? gru::GruParams(FLOAT, c.B, c.T, lengths, {c.I, c.H})
                                          : gru::GruParams(FLOAT, c.B, c.T, {c.I, c.H});
  params.resetAfter = c.resetAfter;
  const OptionFlags options = stackOptions(c);
  StepTensors t;
  const Tensor in = gru::createInput(graph, params, "in");
  const Tensor init = gru::createStackInitialState(graph, params, "init", options);
  const auto weights = gru::createStackWeights(graph, params, "w", options);
  gru::GruStackIntermediates inter;
  const auto [out, final] =
      gru::gruStackFwd(graph, params, init, in, weights, &inter, prog, "fwd", options);
  const Tensor dy = graph.clone(out, "dy");
  const Tensor dFinal = graph.clone(final, "dhn");
  Tensor dx;
  std::vector<gru::GruWeights> dw;
  const Tensor d0 = gru::gruStackBwdWithWU(graph, params, prog, init, inter, weights, out, dy,
                                           &dFinal, &dx, dw, "bwd", options);
  t.writes = {{"in", in}, {"h0", init}, {"dy", dy}, {"dhn", dFinal}};
  t.reads = {{"out", out}, {"hn", final}, {"dx", dx}, {"dh0", d0}};
  for (std::size_t i = 0; i < weights.size(); ++i) {
    addWeights(t, i, weights[i].inputWeights, weights[i].outputWeights, weights[i].biases,
               Tensor());
    addWeightGrads(t, i, dw[i].inputWeights, dw[i].outputWeights, dw[i].biases, Tensor());
  }
  return t;
}

// rnnStackFwd and rnnStackBwdWithWU.
StepTensors vanillaStep(Graph &graph, Sequence &prog, const StackCase &c, const Tensor &lengths) {
  const rnn::RnnParams base = lengths.valid() ? rnn::RnnParams(FLOAT, c.B, c.T, lengths, {c.I, c.H})
                                              : rnn::RnnParams(FLOAT, c.B, c.T, {c.I, c.H});
  const rnn::RecurrentParams params(base, c.nl);
  const OptionFlags options = stackOptions(c);
  StepTensors t;
  const Tensor in = rnn::createInputTensor(graph, base, 1, "in");
  const Tensor init = rnn::createStackInitialState(graph, params, "init", options);
  const auto weights = rnn::createStackWeights(graph, params, "w", options);
  rnn::RecurrentStackIntermediates inter;
  const auto [out, final] =
      rnn::rnnStackFwd(graph, params, init, in, weights, &inter, prog, "fwd", options);
  const Tensor dy = graph.clone(out, "dy");
  const Tensor dFinal = graph.clone(final, "dhn");
  Tensor dx;
  std::vector<rnn::RecurrentWeights> dw;
  const Tensor d0 = rnn::rnnStackBwdWithWU(graph, params, prog, init, inter, weights, out, dy,
                                           &dFinal, &dx, dw, "bwd", options);
  t.writes = {{"in", in}, {"h0", init}, {"dy", dy}, {"dhn", dFinal}};
  t.reads = {{"out", out}, {"hn", final}, {"dx", dx}, {"dh0", d0}};
  for (std::size_t i = 0; i < weights.size(); ++i) {
    addWeights(t, i, weights[i].inputWeights, weights[i].feedbackWeights, weights[i].biases,
               Tensor());
    addWeightGrads(t, i, dw[i].inputWeights, dw[i].feedbackWeights, dw[i].biases, Tensor());
  }
  return t;
}

// The training step of c on 4 tiles and 3 threads, every result read back.
std::map<std::string, Values> stackRun(const StackCase &c) {
  Harness h(Target::createGeneric(4));
  Tensor lengths;
  if (!c.lengths.empty()) {
    lengths = h.graph.addVariable(UNSIGNED_INT, {c.B}, "lengths");
    h.graph.setTileMapping(lengths, 0);
    h.graph.createHostWrite("lengths", lengths);
  }
  const StepTensors t = c.vanilla ? vanillaStep(h.graph, h.prog, c, lengths)
                        : c.gru   ? gruStep(h.graph, h.prog, c, lengths)
                                  : lstmStep(h.graph, h.prog, c, lengths);
  for (const auto &[name, n] : writeOrder(c))
    h.graph.createHostWrite(name, t.writes.at(name));
  for (const auto &[name, tensor] : t.reads)
    h.graph.createHostRead(name, tensor);
  Engine e(h.graph, h.prog, {{"aspen.cpu.threads", "3"}, {"aspen.cpu.inlineElements", "0"}});
  e.load(aspen::test::deviceFor(h.graph.getTarget()));
  for (const auto &[name, v] : drawInputs(c)) {
    const auto f = convert<float>(v);
    e.writeTensor(name, f.data(), f.data() + f.size());
  }
  if (lengths.valid())
    e.writeTensor("lengths", c.lengths.data(), c.lengths.data() + c.lengths.size());
  e.run();
  std::map<std::string, Values> results;
  for (const auto &[name, tensor] : t.reads) {
    std::vector<float> v(tensor.numElements());
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

// One layer in one direction of the double model: lstmref's or gruref's, its data from the
// drawn inputs (entry i of the states and weights).
class ModelLayer {
public:
  ModelLayer(const StackCase &c, const std::map<std::string, Values> &in, std::size_t i,
             const Values &x)
      : c_(c) {
    const std::size_t l = i / c.D(), W = c.W();
    if (c.vanilla) {
      v_.m.T = c.T, v_.m.B = c.B, v_.m.I = c.inputSize(l), v_.m.H = c.H;
      v_.m.nl = c.nl == nn::NonLinearityType::RELU ? rnnref::Activation::relu
                                                    : rnnref::Activation::tanh;
      v_.m.timeSteps = c.lengths;
      v_.d.input = x;
      v_.d.initialOutput = part(in.at("h0"), i, c.B * W);
      v_.d.inputWeights = in.at(fmt::format("wi{}", i));
      v_.d.outputWeights = in.at(fmt::format("wo{}", i));
      v_.d.biases = in.at(fmt::format("b{}", i));
      v_.f = rnnlayerref::forward(v_.m, v_.d);
      return;
    }
    if (c.gru) {
      g_.m.T = c.T, g_.m.B = c.B, g_.m.I = c.inputSize(l), g_.m.H = c.H;
      g_.m.timeSteps = c.lengths;
      g_.m.resetAfter = c.resetAfter;
      g_.d.input = x;
      g_.d.initialOutput = part(in.at("h0"), i, c.B * W);
      g_.d.inputWeights = in.at(fmt::format("wi{}", i));
      g_.d.outputWeights = in.at(fmt::format("wo{}", i));
      g_.d.biases = in.at(fmt::format("b{}", i));
      g_.f = gruref::forward(g_.m, g_.d);
      return;
    }
    l_.m.T = c.T, l_.m.B = c.B, l_.m.I = c.inputSize(l), l_.m.H = c.H, l_.m.P = c.projSize;
    l_.m.timeSteps = c.lengths;
    l_.d.input = x;
    l_.d.initialOutput = part(in.at("h0"), i, c.B * W);
    l_.d.initialCellState = part(in.at("c0"), i, c.B * c.H);
    l_.d.inputWeights = in.at(fmt::format("wi{}", i));
    l_.d.outputWeights = in.at(fmt::format("wo{}", i));
    l_.d.biases = in.at(fmt::format("b{}", i));
    if (c.projSize)
      l_.d.projection = in.at(fmt::format("wp{}", i));
    l_.f = lstmref::forward(l_.m, l_.d);
  }

  const Values &output() const {
    return c_.vanilla ? v_.f.output : c_.gru ? g_.f.output : l_.f.output;
  }
  const Values &finalOutput() const {
    return c_.vanilla ? v_.f.finalOutput : c_.gru ? g_.f.finalOutput : l_.f.finalOutput;
  }
  const Values &finalCell() const { return l_.f.finalCellState; }

  // The gradients from dy (run order) and the final state's (dhn, and dcn for the LSTM); the
  // GRU's model takes none, so dhn joins dy at each row's last step, or the initial state's
  // gradient for a row of length 0. Into r: the weight gradients (entry i) and dh0 / dc0.
  Values backward(const Values &dy, const Values &dhn, const Values &dcn, std::size_t i,
                  std::map<std::string, Values> &r) const {
    if (c_.vanilla) {
      const auto g = rnnlayerref::backward(v_.m, v_.d, v_.f, dy, dhn);
      record(r, i, g.inputWeightsGrad, g.outputWeightsGrad, g.biasesGrad, {},
             g.initialOutputGrad, {});
      return g.inputGrad;
    }
    if (!c_.gru) {
      const auto g = lstmref::backward(l_.m, l_.d, l_.f, dy, {dhn, dcn});
      record(r, i, g.inputWeightsGrad, g.outputWeightsGrad, g.biasesGrad, g.projectionGrad,
             g.initialOutputGrad, g.initialCellStateGrad);
      return g.inputGrad;
    }
    Values folded = dy;
    Values direct(c_.B * c_.H, 0.0);
    for (std::size_t b = 0; b < c_.B; ++b) {
      const std::size_t n = g_.m.length(b);
      for (std::size_t k = 0; k < c_.H; ++k) {
        if (n == 0)
          direct[b * c_.H + k] = dhn[b * c_.H + k];
        else
          folded[((n - 1) * c_.B + b) * c_.H + k] += dhn[b * c_.H + k];
      }
    }
    auto g = gruref::backward(g_.m, g_.d, g_.f, folded);
    for (std::size_t k = 0; k < direct.size(); ++k)
      g.initialOutputGrad[k] += direct[k];
    record(r, i, g.inputWeightsGrad, g.outputWeightsGrad, g.biasesGrad, {}, g.initialOutputGrad,
           {});
    return g.inputGrad;
  }

private:
  static void record(std::map<std::string, Values> &r, std::size_t i, const Values &wi,
                     const Values &wo, const Values &b, const Values &wp, const Values &dh0,
                     const Values &dc0) {
    r[fmt::format("dwi{}", i)] = wi;
    r[fmt::format("dwo{}", i)] = wo;
    r[fmt::format("db{}", i)] = b;
    if (!wp.empty())
      r[fmt::format("dwp{}", i)] = wp;
    r["dh0"].insert(r["dh0"].end(), dh0.begin(), dh0.end());
    r["dc0"].insert(r["dc0"].end(), dc0.begin(), dc0.end());
  }

  const StackCase &c_;
  struct {
    lstmref::LstmModel m;
    lstmref::LstmData d;
    lstmref::LstmForward f;
  } l_;
  struct {
    gruref::GruModel m;
    gruref::GruData d;
    gruref::GruForward f;
  } g_;
  struct {
    rnnlayerref::RnnModel m;
    rnnlayerref::RnnData d;
    rnnlayerref::RnnForward f;
  } v_;
};

// The same step through the double model: each layer and direction one model layer (a reverse
// direction on each row's steps reversed on the host), the host mask between layers.
std::map<std::string, Values> modelRun(const StackCase &c) {
  const auto in = drawInputs(c);
  const std::size_t D = c.D(), W = c.W(), TB = c.T * c.B, LD = c.L * D;
  std::map<std::string, Values> r;
  std::vector<ModelLayer> layers;
  auto reverseIf = [&](bool reverse, const Values &v) {
    return reverse ? rnnref::reverseRowSteps(v, c.lengths, c.T, c.B) : v;
  };
  auto isReverse = [&](std::size_t d) { return d == 1 || c.direction == "reverse"; };
  Values x = in.at("in");
  for (std::size_t l = 0; l < c.L; ++l) {
    std::vector<Values> own;
    for (std::size_t d = 0; d < D; ++d) {
      layers.emplace_back(c, in, l * D + d, reverseIf(isReverse(d), x));
      own.push_back(reverseIf(isReverse(d), layers.back().output()));
    }
    const Values y = interleave(own, TB, W);
    r["out"] = y;
    x = c.dropout > 0 && l + 1 < c.L ? hostDropout(y, c.seed, unsigned(l), c.dropout) : y;
  }
  for (const ModelLayer &m : layers) {
    r["hn"].insert(r["hn"].end(), m.finalOutput().begin(), m.finalOutput().end());
    if (c.hasCell())
      r["cn"].insert(r["cn"].end(), m.finalCell().begin(), m.finalCell().end());
  }
  Values dy = in.at("dy");
  std::vector<std::map<std::string, Values>> perLayer(LD);
  for (std::size_t l = c.L; l-- > 0;) {
    if (c.dropout > 0 && l + 1 < c.L)
      dy = hostDropout(dy, c.seed, unsigned(l), c.dropout);
    Values dx;
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t i = l * D + d;
      const Values dhn = part(in.at("dhn"), i, c.B * W);
      const Values dcn = c.hasCell() ? part(in.at("dcn"), i, c.B * c.H) : Values();
      accumulate(dx, reverseIf(isReverse(d),
                               layers[i].backward(reverseIf(isReverse(d),
                                                            direction(dy, d, D, TB, W)),
                                                  dhn, dcn, i, perLayer[i])));
    }
    dy = dx;
  }
  r["dx"] = dy;
  for (std::size_t i = 0; i < LD; ++i)
    for (auto &[name, v] : perLayer[i]) {
      if (name == "dh0" || name == "dc0")
        r[name].insert(r[name].end(), v.begin(), v.end());
      else
        r[name] = v;
    }
  if (!c.hasCell())
    r.erase("dc0");
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

TEST_CASE("a GRU stack in one call matches the double model layer by layer, every direction",
          "[correctness][gru][stack]") {
  struct Named {
    const char *name;
    StackCase c;
  };
  std::vector<Named> cases;
  auto add = [&](const char *name, auto edit) {
    StackCase c;
    c.gru = true;
    edit(c);
    cases.push_back({name, c});
  };
  add("2 layers forward", [](StackCase &c) { c.lengths = {4, 0, 5}; });
  add("3 layers forward, wavefront, lengths, dropout", [](StackCase &c) {
    c.L = 3, c.lengths = {1, 0, 5}, c.dropout = 0.3;
    c.options.set("stackSchedule", "wavefront");
    c.options.set("stepMethod", "fused");
  });
  add("3 layers reverse, resetAfter, wavefront, dropout", [](StackCase &c) {
    c.L = 3, c.direction = "reverse", c.resetAfter = true, c.lengths = {4, 0, 5};
    c.dropout = 0.2;
    c.options.set("stackSchedule", "wavefront");
    c.options.set("stepMethod", "fused");
  });
  add("3 layers reverse, resetAfter, dropout", [](StackCase &c) {
    c.L = 3, c.direction = "reverse", c.resetAfter = true, c.lengths = {1, 0, 5};
    c.dropout = 0.3;
  });
  add("bidirectional, 1 layer, resetAfter", [](StackCase &c) {
    c.L = 1, c.direction = "bidirectional", c.resetAfter = true;
  });
  add("bidirectional, 3 layers, lengths, dropout (two compute sets a step)", [](StackCase &c) {
    c.L = 3, c.direction = "bidirectional", c.lengths = {1, 0, 5}, c.dropout = 0.25;
    c.options.set("stepMethod", "fused");
  });
  add("bidirectional, 2 layers, products then cells", [](StackCase &c) {
    c.direction = "bidirectional", c.resetAfter = true, c.lengths = {3, 5, 2};
    c.options.set("stepMethod", "productThenCell");
  });
  for (const auto &[name, c] : cases) {
    INFO(name);
    requireMatchesModel(c);
  }
}

TEST_CASE("a vanilla RNN stack in one call matches the double model layer by layer, every "
          "direction",
          "[correctness][rnn][stack]") {
  struct Named {
    const char *name;
    StackCase c;
  };
  std::vector<Named> cases;
  auto add = [&](const char *name, auto edit) {
    StackCase c;
    c.vanilla = true;
    edit(c);
    cases.push_back({name, c});
  };
  add("1 layer forward, fused steps", [](StackCase &c) { c.L = 1; });
  add("2 layers forward, lengths 0 and 1", [](StackCase &c) { c.lengths = {4, 0, 1}; });
  add("3 layers reverse, relu, lengths, dropout", [](StackCase &c) {
    c.L = 3, c.direction = "reverse", c.nl = nn::NonLinearityType::RELU;
    c.lengths = {1, 0, 5}, c.dropout = 0.3;
  });
  add("bidirectional, 1 layer (the directions as lanes of one loop)",
      [](StackCase &c) { c.L = 1, c.direction = "bidirectional"; });
  add("bidirectional, 3 layers, lengths, dropout", [](StackCase &c) {
    c.L = 3, c.direction = "bidirectional", c.lengths = {2, 5, 0}, c.dropout = 0.25;
  });
  add("bidirectional, 2 layers, one row (steps not fused)", [](StackCase &c) {
    c.B = 1, c.direction = "bidirectional", c.lengths = {3};
  });
  add("bidirectional, 2 layers, one row, every step (steps not fused)",
      [](StackCase &c) { c.B = 1, c.direction = "bidirectional", c.nl = nn::NonLinearityType::RELU; });
  add("3 layers forward, wavefront, dropout", [](StackCase &c) {
    c.L = 3, c.dropout = 0.3;
    c.options.set("stackSchedule", "wavefront");
  });
  add("2 layers reverse, relu, wavefront", [](StackCase &c) {
    c.direction = "reverse", c.nl = nn::NonLinearityType::RELU;
    c.options.set("stackSchedule", "wavefront");
  });
  for (const auto &[name, c] : cases) {
    INFO(name);
    requireMatchesModel(c);
  }
}

TEST_CASE("a vanilla RNN stack's forward layer is rnnFwdSequence's and rnnBwdSequence's bits, "
          "and a bidirectional layer its directions' calls' bits",
          "[correctness][rnn][stack]") {
  for (const std::size_t B : {std::size_t(3), std::size_t(1)}) { // fused steps, and not
    INFO("B = " << B);
    const std::size_t T = 5, I = 3, H = 4;
    Harness h(Target::createGeneric(4));
    const rnn::RnnParams base(FLOAT, B, T, {I, H});
    const rnn::RecurrentParams params(base);
    auto values = [&](std::size_t n, unsigned seed) {
      return widen(convert<float>(randomValues(n, -1.0, 1.0, seed)));
    };
    const Tensor in = h.input(FLOAT, {T, B, I}, "in", values(T * B * I, 1));
    const Tensor h0 = h.input(FLOAT, {2, B, H}, "h0", values(2 * B * H, 2));
    const Tensor dy = h.input(FLOAT, {T, B, 2 * H}, "dy", values(T * B * 2 * H, 3));
    std::vector<rnn::RecurrentWeights> ws;
    for (unsigned d = 0; d < 2; ++d)
      ws.push_back({h.input(FLOAT, {I, H}, fmt::format("wi{}", d), values(I * H, 10 + d)),
                    h.input(FLOAT, {H, H}, fmt::format("wo{}", d), values(H * H, 20 + d)),
                    h.input(FLOAT, {H}, fmt::format("b{}", d), values(H, 30 + d))});
    // One forward layer: the stack, and popnn's functions.
    rnn::RecurrentStackIntermediates inter;
    const Tensor dyForward = h.graph.clone(dy.slice(0, H, 2), "dyForward");
    h.prog.add(program::Copy(dy.slice(0, H, 2), dyForward));
    const auto [out, final] =
        rnn::rnnStackFwd(h.graph, params, h0.slice(0, 1, 0), in, {ws[0]}, &inter, h.prog, "stack");
    Tensor dx;
    std::vector<rnn::RecurrentWeights> dw;
    const Tensor dh0 = rnn::rnnStackBwdWithWU(h.graph, params, h.prog, h0.slice(0, 1, 0), inter,
                                              {ws[0]}, out, dyForward, nullptr, &dx, dw, "bwd");
    const Tensor y = rnn::rnnFwdSequence(h.graph, h.prog, h0[0], nullptr, ws[0].biases,
                                         ws[0].inputWeights, ws[0].feedbackWeights, in,
                                         nn::NonLinearityType::TANH, FLOAT, false, "popnn");
    const auto [pdx, pdWff, pdWfb, pdb] = rnn::rnnBwdSequence(
        h.graph, true, false, h.prog, h0[0], y, ws[0].biases, ws[0].inputWeights,
        ws[0].feedbackWeights, dyForward, in, nn::NonLinearityType::TANH, FLOAT, "popnnBwd");
    const std::pair<const char *, std::pair<Tensor, Tensor>> pairs[] = {
        {"output", {out, y}},          {"inputGrad", {dx, pdx}},
        {"inputWeightsGrad", {dw[0].inputWeights, pdWff}},
        {"feedbackWeightsGrad", {dw[0].feedbackWeights, pdWfb}},
        {"biasesGrad", {dw[0].biases, pdb}}};
    for (const auto &[name, ts] : pairs) {
      h.output(std::string("stack.") + name, ts.first);
      h.output(std::string("popnn.") + name, ts.second);
    }
    h.output("stack.dh0", dh0);
    // A bidirectional layer, and its two directions each a stack of its own.
    const OptionFlags both{{"direction", "bidirectional"}};
    const Tensor bi =
        rnn::rnnStackFwd(h.graph, params, h0, in, ws, nullptr, h.prog, "bi", both).first;
    const Tensor rev = rnn::rnnStackFwd(h.graph, params, h0.slice(1, 2, 0), in, {ws[1]}, nullptr,
                                        h.prog, "rev", {{"direction", "reverse"}})
                           .first;
    h.output("bi", bi);
    h.output("rev", rev);
    const auto r = h.run(3);
    for (const auto &[name, ts] : pairs) {
      INFO(name);
      CHECK(r.at(std::string("stack.") + name) == r.at(std::string("popnn.") + name));
    }
    CHECK(r.at("stack.output") != Values(T * B * H, 0.0));
    const Values &b2 = r.at("bi");
    CHECK(direction(b2, 0, 2, T * B, H) == r.at("stack.output"));
    CHECK(direction(b2, 1, 2, T * B, H) == r.at("rev"));
    CHECK(r.at("rev") != r.at("stack.output"));
  }
}

TEST_CASE("the vanilla RNN's wavefront gives its layers' calls' bits, dropout between",
          "[correctness][rnn][stack]") {
  // The stack as a wavefront, and each layer its own one-layer stack (preCalcWeights false above
  // the first, as the wavefront's layers weigh their input) with rnn::dropoutSequence between;
  // inference and training, forward and reverse.
  for (const bool training : {false, true})
    for (const char *direction : {"forward", "reverse"}) {
      INFO("training " << training << ", " << direction);
      const std::size_t T = 5, B = 3, I = 3, H = 4, L = 3;
      const double rate = 0.25;
      const std::uint64_t seed = 5;
      Harness h(Target::createGeneric(4));
      const rnn::RnnParams base(FLOAT, B, T, {I, H});
      const rnn::RecurrentParams params(base);
      auto values = [&](std::size_t n, unsigned s) {
        return widen(convert<float>(randomValues(n, -1.0, 1.0, s)));
      };
      const Tensor in = h.input(FLOAT, {T, B, I}, "in", values(T * B * I, 1));
      const Tensor h0 = h.input(FLOAT, {L, B, H}, "h0", values(L * B * H, 2));
      std::vector<rnn::RecurrentWeights> ws;
      for (unsigned l = 0; l < L; ++l)
        ws.push_back({h.input(FLOAT, {l ? H : I, H}, fmt::format("wi{}", l),
                              values((l ? H : I) * H, 10 + l)),
                      h.input(FLOAT, {H, H}, fmt::format("wo{}", l), values(H * H, 20 + l)),
                      h.input(FLOAT, {H}, fmt::format("b{}", l), values(H, 30 + l))});
      const OptionFlags stack{{"numLayers", std::to_string(L)}, {"direction", direction},
                              {"stackSchedule", "wavefront"},
                              {"dropout", fmt::format("{}", rate)},
                              {"dropoutSeed", std::to_string(seed)}};
      REQUIRE(rnn::getStackSchedule(h.graph, params, stack) == "wavefront");
      rnn::RecurrentStackIntermediates inter;
      const auto [out, final] = rnn::rnnStackFwd(h.graph, params, h0, in, ws,
                                                 training ? &inter : nullptr, h.prog, "wave",
                                                 stack);
      Tensor x = in;
      std::vector<Tensor> finals;
      for (unsigned l = 0; l < L; ++l) {
        OptionFlags one{{"direction", direction}};
        if (l > 0)
          one.set("preCalcWeights", "false");
        rnn::RecurrentParams p = params;
        p.rnn.layerSizes[0] = l ? H : I;
        const auto [y, hn] = rnn::rnnStackFwd(h.graph, p, h0.slice(l, l + 1, 0), x, {ws[l]},
                                              nullptr, h.prog, fmt::format("call{}", l), one);
        finals.push_back(hn);
        x = training && l + 1 < L
                ? rnn::dropoutSequence(h.graph, base, y, rate, seed, l, h.prog, "dropout")
                : y;
      }
      h.output("wave", out);
      h.output("waveFinal", final);
      h.output("calls", x);
      h.output("callsFinal", concat(finals, 0));
      const auto r = h.run(3);
      CHECK(r.at("wave") == r.at("calls"));
      CHECK(r.at("waveFinal") == r.at("callsFinal"));
      CHECK(r.at("wave") != Values(T * B * H, 0.0));
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
  const OptionFlags options = stackOptions(c);
  const auto data = drawInputs(c);
  const std::size_t G = c.gates();
  const Tensor in = h.input(FLOAT, {c.T, c.B, c.I}, "in", data.at("in"));
  const Tensor h0 = h.input(FLOAT, {c.L, c.B, c.H}, "h0", data.at("h0"));
  auto w = [&](const char *name, std::size_t l, std::vector<std::size_t> shape) {
    const std::string key = fmt::format("{}{}", name, l);
    return h.input(FLOAT, shape, key, data.at(key));
  };
  // Layer l's options as the wavefront runs it: preCalcWeights false above the first layer.
  auto layerOptions = [&](std::size_t l) {
    OptionFlags o = c.options;
    o.remove("stackSchedule");
    o.set("direction", c.direction);
    if (l > 0)
      o.set("preCalcWeights", "false");
    return o;
  };
  auto between = [&](const rnn::RnnParams &p, const Tensor &y, std::size_t l) {
    return training && c.dropout > 0 && l + 1 < c.L
               ? rnn::dropoutSequence(h.graph, p, y, c.dropout, c.seed, unsigned(l), h.prog)
               : y;
  };
  Tensor x = in;
  if (c.gru) {
    gru::GruParams params = lengths.valid()
                                ? gru::GruParams(FLOAT, c.B, c.T, lengths, {c.I, c.H})
                                : gru::GruParams(FLOAT, c.B, c.T, {c.I, c.H});
    params.resetAfter = c.resetAfter;
    std::vector<gru::GruWeights> weights;
    for (std::size_t l = 0; l < c.L; ++l)
      weights.push_back({w("wi", l, {G, c.inputSize(l), c.H}), w("wo", l, {G, c.H, c.H}),
                         w("b", l, c.resetAfter ? std::vector<std::size_t>{G, 2, c.H}
                                                : std::vector<std::size_t>{G, c.H})});
    gru::GruStackIntermediates inter;
    const auto [out, final] = gru::gruStackFwd(h.graph, params, h0, in, weights,
                                               training ? &inter : nullptr, h.prog, "stack",
                                               options);
    h.output("stack out", out);
    for (std::size_t l = 0; l < c.L; ++l) {
      gru::GruParams p = params;
      p.rnn.layerSizes[0] = p.layerSizes[0] = c.inputSize(l);
      Tensor layerInter;
      const Tensor y = gru::gruFwd(h.graph, p, h0[l], x, weights[l],
                                   training ? &layerInter : nullptr, h.prog,
                                   fmt::format("call{}", l), layerOptions(l));
      h.output(fmt::format("calls out{}", l), y);
      x = between(p.rnn, y, l);
    }
    return h.run(3);
  }
  const lstm::LstmParams params = stackParams(h.graph, c, lengths);
  const Tensor c0 = h.input(FLOAT, {c.L, c.B, c.H}, "c0", data.at("c0"));
  std::vector<lstm::LstmWeights> weights;
  for (std::size_t l = 0; l < c.L; ++l)
    weights.push_back({w("wi", l, {G, c.inputSize(l), c.H}), w("wo", l, {G, c.H, c.H}),
                       w("b", l, {G, c.H}), Tensor()});
  lstm::LstmStackIntermediates inter;
  const auto [out, final] = lstm::lstmStackFwd(h.graph, params, {h0, c0}, in, weights,
                                               training ? &inter : nullptr, h.prog, "stack",
                                               options);
  h.output("stack out", out);
  h.output("stack cn", final.cellState);
  for (std::size_t l = 0; l < c.L; ++l) {
    lstm::LstmParams p = params;
    p.rnn.layerSizes[0] = p.layerSizes[0] = c.inputSize(l);
    Tensor layerInter;
    const auto [y, cell] = lstm::lstmFwd(h.graph, p, {h0[l], c0[l]}, x, weights[l],
                                         training ? &layerInter : nullptr, h.prog,
                                         fmt::format("call{}", l), layerOptions(l));
    h.output(fmt::format("calls out{}", l), y);
    h.output(fmt::format("calls cn{}", l), cell);
    x = between(p.rnn, y, l);
  }
  return h.run(3);
}

} // namespace

TEST_CASE("the wavefront stack gives the layers' calls' bits with the dropout between (LSTM, "
          "GRU)",
          "[correctness][lstm][gru][stack]") {
  // The GRU's: without and with resetAfter (one and two compute sets of its own a step, after
  // the step's input product above the first layer).
  for (const int cell : {0, 1, 2})
    for (const bool training : {false, true})
      for (const char *direction : {"forward", "reverse"})
        for (const bool varying : {false, true}) {
          StackCase c;
          c.gru = cell > 0, c.resetAfter = cell == 2;
          c.L = 3, c.T = 7, c.B = 4, c.H = 8, c.I = 5;
          c.direction = direction;
          c.dropout = 0.35;
          if (varying)
            c.lengths = {7, 0, 1, 5};
          c.options.set("stackSchedule", "wavefront");
          c.options.set("stepMethod", "fused");
          INFO((cell == 0 ? "LSTM " : cell == 1 ? "GRU " : "GRU resetAfter ")
               << direction << (training ? " training" : " inference")
               << (varying ? ", lengths 7 0 1 5" : ""));
          auto r = stackAgainstCalls(c, training);
          CHECK(sameValues(r.at("stack out"), r.at("calls out2")));
          for (std::size_t l = 0; l < c.L && !c.gru; ++l)
            CHECK(sameValues(part(r.at("stack cn"), l, c.B * c.H),
                             r.at(fmt::format("calls cn{}", l))));
          CHECK(r.at("stack out") != Values(r.at("stack out").size(), 0.0));
        }
}

namespace {

// A bidirectional layer (numLayers 1, stepMethod fused: its directions in one compute set a
// step) and the two directions' own calls (lstmFwd / gruFwd with direction forward and
// reverse) in one graph, read back: "stack" [T, B, 2H], "forward" and "reverse" [T, B, H].
std::map<std::string, Values> directionsAgainstCalls(const StackCase &c) {
  Harness h(Target::createGeneric(4));
  const auto data = drawInputs(c);
  Tensor lengths;
  if (!c.lengths.empty())
    lengths = h.input(UNSIGNED_INT, {c.B}, "lengths", Values(c.lengths.begin(), c.lengths.end()),
                      false);
  const std::size_t G = c.gates();
  const Tensor in = h.input(FLOAT, {c.T, c.B, c.I}, "in", data.at("in"));
  const Tensor h0 = h.input(FLOAT, {2, c.B, c.H}, "h0", data.at("h0"));
  auto w = [&](const char *name, std::size_t i, std::vector<std::size_t> shape) {
    const std::string key = fmt::format("{}{}", name, i);
    return h.input(FLOAT, shape, key, data.at(key));
  };
  const OptionFlags stack = stackOptions(c);
  OptionFlags layer = c.options;
  Tensor out;
  std::vector<Tensor> own;
  if (c.gru) {
    gru::GruParams p = lengths.valid() ? gru::GruParams(FLOAT, c.B, c.T, lengths, {c.I, c.H})
                                       : gru::GruParams(FLOAT, c.B, c.T, {c.I, c.H});
    p.resetAfter = c.resetAfter;
    std::vector<gru::GruWeights> ws;
    for (std::size_t i = 0; i < 2; ++i)
      ws.push_back({w("wi", i, {G, c.I, c.H}), w("wo", i, {G, c.H, c.H}),
                    w("b", i, c.resetAfter ? std::vector<std::size_t>{G, 2, c.H}
                                           : std::vector<std::size_t>{G, c.H})});
    out = gru::gruStackFwd(h.graph, p, h0, in, ws, nullptr, h.prog, "stack", stack).first;
    for (std::size_t i = 0; i < 2; ++i) {
      layer.set("direction", i ? "reverse" : "forward");
      own.push_back(gru::gruFwd(h.graph, p, h0[i], in, ws[i], nullptr, h.prog, "call", layer));
    }
  } else {
    const lstm::LstmParams p =
        lengths.valid() ? lstm::LstmParams(FLOAT, c.B, c.T, lengths, {c.I, c.H})
                        : lstm::LstmParams(FLOAT, c.B, c.T, {c.I, c.H});
    const Tensor c0 = h.input(FLOAT, {2, c.B, c.H}, "c0", data.at("c0"));
    std::vector<lstm::LstmWeights> ws;
    for (std::size_t i = 0; i < 2; ++i)
      ws.push_back({w("wi", i, {G, c.I, c.H}), w("wo", i, {G, c.H, c.H}), w("b", i, {G, c.H}),
                    Tensor()});
    out = lstm::lstmStackFwd(h.graph, p, {h0, c0}, in, ws, nullptr, h.prog, "stack", stack)
              .first;
    for (std::size_t i = 0; i < 2; ++i) {
      layer.set("direction", i ? "reverse" : "forward");
      own.push_back(
          lstm::lstmFwd(h.graph, p, h.prog, {h0[i], c0[i]}, ws[i], in, nullptr, "call", layer));
    }
  }
  h.output("stack", out);
  h.output("forward", own[0]);
  h.output("reverse", own[1]);
  return h.run(3);
}

} // namespace

TEST_CASE("a bidirectional layer in one call gives its two directions' calls' bits",
          "[correctness][lstm][gru][stack]") {
  for (const bool isGru : {false, true})
    for (const bool resetAfter : {false, true})
      for (const bool varying : {false, true}) {
        if (!isGru && resetAfter)
          continue;
        StackCase c;
        c.gru = isGru, c.resetAfter = resetAfter;
        c.L = 1, c.T = 6, c.B = 4, c.I = 5, c.H = 8;
        c.direction = "bidirectional";
        if (varying)
          c.lengths = {6, 0, 1, 4};
        c.options.set("stepMethod", "fused");
        INFO((isGru ? "GRU" : "LSTM") << (resetAfter ? " resetAfter" : "")
                                      << (varying ? ", lengths 6 0 1 4" : ""));
        const auto r = directionsAgainstCalls(c);
        const std::size_t rows = c.T * c.B;
        CHECK(sameValues(direction(r.at("stack"), 0, 2, rows, c.H), r.at("forward")));
        CHECK(sameValues(direction(r.at("stack"), 1, 2, rows, c.H), r.at("reverse")));
        CHECK(r.at("reverse") != Values(r.at("reverse").size(), 0.0));
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

TEST_CASE("stackSchedule auto takes the wavefront from the cell's batch, on fused steps, one "
          "direction",
          "[correctness][lstm][gru][stack]") {
  Graph graph(Target::createGeneric(4));
  nn::addCodelets(graph);
  auto lstmAt = [&](std::size_t B, const OptionFlags &o) {
    return lstm::getStackSchedule(graph, lstm::LstmParams(FLOAT, B, 5, {3, 4}), o);
  };
  auto gruAt = [&](std::size_t B, const OptionFlags &o) {
    return gru::getStackSchedule(graph, gru::GruParams(FLOAT, B, 5, {3, 4}), o);
  };
  const OptionFlags two{{"numLayers", "2"}};
  CHECK(lstmAt(3, two) == "layerByLayer");
  CHECK(lstmAt(4, two) == "wavefront");
  CHECK(gruAt(15, two) == "layerByLayer");
  CHECK(gruAt(16, two) == "wavefront");
  CHECK(lstmAt(8, {{"numLayers", "2"}, {"direction", "bidirectional"}}) == "layerByLayer");
  CHECK(lstmAt(8, {{"numLayers", "2"}, {"stepMethod", "productThenCell"}}) == "layerByLayer");
  CHECK(lstmAt(8, {{"numLayers", "2"}, {"stackSchedule", "layerByLayer"}}) == "layerByLayer");
  CHECK(lstmAt(1, {{"numLayers", "2"}, {"stackSchedule", "wavefront"}}) == "wavefront");
  CHECK_THROWS_AS(gruAt(16, {{"numLayers", "2"}, {"stackSchedule", "wavefront"},
                             {"stepMethod", "productThenCell"}}),
                  invalid_option);
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

TEST_CASE("a GRU stack refuses a wavefront of unfused steps and wrong counts and shapes",
          "[error][gru][stack]") {
  Harness h(Target::createGeneric(4));
  const OptionFlags two{{"numLayers", "2"}};
  Sequence prog;
  gru::GruParams gp(FLOAT, 2, 3, {3, 4});
  const Tensor in = gru::createInput(h.graph, gp, "in");
  // A wavefront of unfused steps, and the LSTM stack's counts and shapes (two layers' states
  // for a bidirectional stack, which needs four).
  const auto gInit = gru::createStackInitialState(h.graph, gp, "gInit", two);
  const auto gWeights = gru::createStackWeights(h.graph, gp, "gw", two);
  try {
    gru::gruStackFwd(h.graph, gp, gInit, in, gWeights, nullptr, prog, "g",
                     {{"numLayers", "2"}, {"stackSchedule", "wavefront"},
                      {"stepMethod", "productThenCell"}});
    FAIL("a GRU wavefront of unfused steps was not refused");
  } catch (const invalid_option &e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("layer 0's steps are not fused"));
  }
  CHECK_THROWS_AS(gru::gruStackFwd(h.graph, gp, gInit, in, gWeights, nullptr, prog, "g",
                                   {{"numLayers", "3"}}),
                  shape_error);
  CHECK_THROWS_AS(gru::gruStackFwd(h.graph, gp, gInit, in, gWeights, nullptr, prog, "g",
                                   {{"numLayers", "2"}, {"direction", "bidirectional"}}),
                  shape_error);
  CHECK_NOTHROW(gru::gruStackFwd(h.graph, gp, gInit, in, gWeights, nullptr, prog, "g", two));
}

TEST_CASE("a vanilla RNN stack refuses the wavefront with lengths, other layers' options, "
          "GELU and wrong counts and shapes, naming the rule",
          "[error][rnn][stack]") {
  Harness h(Target::createGeneric(4));
  const OptionFlags two{{"numLayers", "2"}};
  Sequence prog;
  // The vanilla RNN's: no wavefront, its own options only, kinds whose gradient needs the input.
  rnn::RecurrentParams vp(rnn::RnnParams(FLOAT, 2, 3, {3, 4}));
  const Tensor in = rnn::createInputTensor(h.graph, vp.rnn, 1, "in");
  const Tensor vInit = rnn::createStackInitialState(h.graph, vp, "vInit", two);
  const auto vWeights = rnn::createStackWeights(h.graph, vp, "vw", two);
  auto vanilla = [&](const rnn::RecurrentParams &p, const OptionFlags &o) {
    rnn::rnnStackFwd(h.graph, p, vInit, in, vWeights, nullptr, prog, "v", o);
  };
  CHECK(rnn::getStackSchedule(h.graph, vp, two) == "layerByLayer"); // auto: never the wavefront
  CHECK(rnn::getStackSchedule(h.graph, vp, {{"numLayers", "2"}, {"stackSchedule", "wavefront"}}) ==
        "wavefront");
  {
    Tensor lengths = h.graph.addVariable(UNSIGNED_INT, {2}, "vLengths");
    h.graph.setTileMapping(lengths, 0);
    const rnn::RecurrentParams withLengths(rnn::RnnParams(FLOAT, 2, 3, lengths, {3, 4}));
    try {
      vanilla(withLengths, {{"numLayers", "2"}, {"stackSchedule", "wavefront"}});
      FAIL("a vanilla RNN wavefront with lengths was not refused");
    } catch (const invalid_option &e) {
      CHECK_THAT(e.what(), Catch::Matchers::Contains("rnn::rnnStackFwd"));
      CHECK_THAT(e.what(), Catch::Matchers::Contains("vanilla RNN stack with lengths"));
    }
  }
  try {
    vanilla(vp, {{"numLayers", "2"}, {"stepMethod", "fused"}});
    FAIL("an option the vanilla RNN does not take was not refused");
  } catch (const invalid_option &e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("stepMethod"));
  }
  CHECK_THROWS_AS(vanilla(vp, {{"numLayers", "2"}, {"partialsType", "half"}}), invalid_option);
  rnn::RecurrentParams gelu = vp;
  gelu.nonLinearity = nn::NonLinearityType::GELU;
  try {
    vanilla(gelu, two);
    FAIL("GELU was not refused");
  } catch (const invalid_option &e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("GELU"));
  }
  CHECK_THROWS_AS(vanilla(vp, {{"numLayers", "3"}}), shape_error);
  auto vSwapped = vWeights;
  vSwapped[1].inputWeights = vWeights[0].inputWeights.slice(0, 3, 1); // [3, 3]: not [4, 4]
  try {
    rnn::rnnStackFwd(h.graph, vp, vInit, in, vSwapped, nullptr, prog, "v", two);
    FAIL("layer 1's input weights of the wrong shape were not refused");
  } catch (const shape_error &e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("layer 1, forward"));
    CHECK_THAT(e.what(), Catch::Matchers::Contains("inputWeights"));
  }
  CHECK_NOTHROW(vanilla(vp, two));
}
