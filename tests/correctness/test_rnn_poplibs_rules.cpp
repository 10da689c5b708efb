// The LSTM's and GRU's options where Aspen follows PopLibs' rule and offers another, checked
// against the double-precision host models of the layer drivers (tools/rnnref/Lstm.hpp,
// tools/rnnref/Gru.hpp):
//   hardSigmoidGradient  poplibs (default): hard_sigmoid's gradient is 0.2 wherever its output is
//                        in [0, 1], saturated inputs included; exact: 0 where |x| > 2.5. The data
//                        saturate gates, so the two rules give different gradients.
//   rnnStepsPerWU        any unsigned value; from T up, the weight update is the one-pass one.
// Bad values are invalid_option errors naming the option and the allowed values.
#include "test_nn_harness.hpp"

#include "rnnref/Gru.hpp"
#include "rnnref/Lstm.hpp"

#include <aspen/nn/Gru.hpp>
#include <aspen/nn/Lstm.hpp>

#include <algorithm>

using namespace aspen;
using namespace nntest;
namespace lstm = aspen::nn::lstm;
namespace gru = aspen::nn::gru;
using nn::NonLinearityType;

namespace {

constexpr std::size_t T = 5, B = 3, I = 3, H = 4;

// Float-exact inputs of one layer; biases up to 3 and weights up to 1.5 push many gate
// pre-activations past hard_sigmoid's linear range (|a| > 2.5).
struct Data {
  Values x, h0, c0, wi, wo, b, dy;
};

Data makeData(std::size_t gates, unsigned seed) {
  auto values = [&](std::size_t n, double range) {
    return roundAll(FLOAT, randomValues(n, -range, range, seed++));
  };
  Data d;
  d.x = values(T * B * I, 1.0);
  d.h0 = values(B * H, 1.0);
  d.c0 = values(B * H, 1.0);
  d.wi = values(gates * I * H, 1.5);
  d.wo = values(gates * H * H, 1.5);
  d.b = values(gates * H, 3.0);
  d.dy = values(T * B * H, 1.0);
  return d;
}

struct Grads {
  Values dx, dh0, dwi, dwo, db;
};

rnnref::Activation refActivation(NonLinearityType k) {
  return k == NonLinearityType::HARD_SIGMOID ? rnnref::Activation::hard_sigmoid
         : k == NonLinearityType::TANH       ? rnnref::Activation::tanh
                                             : rnnref::Activation::sigmoid;
}

rnnref::HardSigmoidGradient refRule(const OptionFlags &options) {
  const std::string *rule = options.find("hardSigmoidGradient");
  return rule && *rule == "exact" ? rnnref::HardSigmoidGradient::exact
                                  : rnnref::HardSigmoidGradient::popnn;
}

// Writes `values` to the engine's stream `name`, in float.
void write(Engine &e, const std::string &name, const Values &values) {
  const auto v = convert<float>(values);
  e.writeTensor(name, v.data(), v.data() + v.size());
}

Values read(Engine &e, const std::string &name, const Tensor &t) {
  std::vector<float> v(t.numElements());
  e.readTensor(name, v.data(), v.data() + v.size());
  return widen(v);
}

// lstmFwd + lstmBwdWithWU on a 4-tile target.
Grads lstmStep(const OptionFlags &options, NonLinearityType act, NonLinearityType rec,
               const Data &d) {
  Graph graph(Target::createGeneric(4));
  nn::addCodelets(graph);
  program::Sequence prog;
  lstm::LstmParams params(FLOAT, B, T, {I, H});
  params.activation = act;
  params.recurrentActivation = rec;
  Tensor in = lstm::createInput(graph, params, "in", options);
  lstm::LstmState init = lstm::createInitialState(graph, params, "init", options);
  lstm::LstmWeights w = lstm::createWeights(graph, params, "w", options);
  Tensor inter;
  auto [out, c] = lstm::lstmFwd(graph, params, init, in, w, &inter, prog, "fwd", options);
  Tensor dy = graph.clone(out, "dy");
  Tensor dx;
  lstm::LstmWeights dw;
  lstm::LstmState d0 = lstm::lstmBwdWithWU(graph, params, prog, init, inter, w, in, out, dy,
                                           nullptr, &dx, dw, "bwd", options);
  const std::pair<const char *, Tensor> writes[] = {
      {"in", in},       {"h0", init.output},        {"c0", init.cellState}, {"wi", w.inputWeights},
      {"wo", w.outputWeights}, {"b", w.biases}, {"dy", dy}};
  for (const auto &[name, t] : writes)
    graph.createHostWrite(name, t);
  const std::pair<const char *, Tensor> reads[] = {{"dx", dx},
                                                    {"dh0", d0.output},
                                                    {"dwi", dw.inputWeights},
                                                    {"dwo", dw.outputWeights},
                                                    {"db", dw.biases}};
  for (const auto &[name, t] : reads)
    graph.createHostRead(name, t);
  Engine e(graph, prog, {{"aspen.cpu.threads", "2"}, {"aspen.cpu.inlineElements", "0"}});
  e.load(aspen::test::deviceFor(graph.getTarget()));
  const Values *data[] = {&d.x, &d.h0, &d.c0, &d.wi, &d.wo, &d.b, &d.dy};
  for (std::size_t i = 0; i < 7; ++i)
    write(e, writes[i].first, *data[i]);
  e.run();
  return {read(e, "dx", dx), read(e, "dh0", d0.output), read(e, "dwi", dw.inputWeights),
          read(e, "dwo", dw.outputWeights), read(e, "db", dw.biases)};
}

Grads lstmReference(NonLinearityType act, NonLinearityType rec, rnnref::HardSigmoidGradient rule,
                    const Data &d, std::size_t *saturated = nullptr) {
  lstmref::LstmModel m;
  m.T = T, m.B = B, m.I = I, m.H = H;
  m.act = refActivation(act);
  m.recAct = refActivation(rec);
  m.hardSigmoidGradient = rule;
  const lstmref::LstmData data{d.x, d.h0, d.c0, d.wi, d.wo, d.b};
  const lstmref::LstmForward fwd = lstmref::forward(m, data);
  const lstmref::LstmGrads g = lstmref::backward(m, data, fwd, d.dy);
  if (saturated)
    *saturated = std::count_if(fwd.preActivations.begin(), fwd.preActivations.end(),
                               [](double a) { return std::fabs(a) > 2.5; });
  return {g.inputGrad, g.initialOutputGrad, g.inputWeightsGrad, g.outputWeightsGrad,
          g.biasesGrad};
}

// gruFwd + gruBwdWithWU on a 4-tile target.
Grads gruStep(const OptionFlags &options, NonLinearityType act, NonLinearityType rec,
              const Data &d) {
  Graph graph(Target::createGeneric(4));
  nn::addCodelets(graph);
  program::Sequence prog;
  gru::GruParams params(FLOAT, B, T, {I, H});
  params.activation = act;
  params.recurrentActivation = rec;
  Tensor in = gru::createInput(graph, params, "in", options);
  Tensor init = gru::createInitialState(graph, params, "init", options);
  gru::GruWeights w = gru::createWeights(graph, params, "w", options);
  Tensor inter;
  Tensor out = gru::gruFwd(graph, params, init, in, w, &inter, prog, "fwd", options);
  Tensor dy = graph.clone(out, "dy");
  Tensor dx;
  gru::GruWeights dw;
  Tensor dh0 = gru::gruBwdWithWU(graph, params, prog, init, inter, w, in, out, dy, &dx, dw, "bwd",
                                 options);
  const std::pair<const char *, Tensor> writes[] = {{"in", in},
                                                     {"h0", init},
                                                     {"wi", w.inputWeights},
                                                     {"wo", w.outputWeights},
                                                     {"b", w.biases},
                                                     {"dy", dy}};
  for (const auto &[name, t] : writes)
    graph.createHostWrite(name, t);
  const std::pair<const char *, Tensor> reads[] = {{"dx", dx},
                                                    {"dh0", dh0},
                                                    {"dwi", dw.inputWeights},
                                                    {"dwo", dw.outputWeights},
                                                    {"db", dw.biases}};
  for (const auto &[name, t] : reads)
    graph.createHostRead(name, t);
  Engine e(graph, prog, {{"aspen.cpu.threads", "2"}, {"aspen.cpu.inlineElements", "0"}});
  e.load(aspen::test::deviceFor(graph.getTarget()));
  const Values *data[] = {&d.x, &d.h0, &d.wi, &d.wo, &d.b, &d.dy};
  for (std::size_t i = 0; i < 6; ++i)
    write(e, writes[i].first, *data[i]);
  e.run();
  return {read(e, "dx", dx), read(e, "dh0", dh0), read(e, "dwi", dw.inputWeights),
          read(e, "dwo", dw.outputWeights), read(e, "db", dw.biases)};
}

Grads gruReference(NonLinearityType act, NonLinearityType rec, rnnref::HardSigmoidGradient rule,
                   const Data &d, std::size_t *saturated = nullptr) {
  gruref::GruModel m;
  m.T = T, m.B = B, m.I = I, m.H = H;
  m.act = refActivation(act);
  m.recAct = refActivation(rec);
  m.hardSigmoidGradient = rule;
  const gruref::GruData data{d.x, d.h0, d.wi, d.wo, d.b, {}};
  const gruref::GruForward fwd = gruref::forward(m, data);
  const gruref::GruGrads g = gruref::backward(m, data, fwd, d.dy);
  if (saturated)
    *saturated = std::count_if(fwd.preActivations.begin(), fwd.preActivations.end(),
                               [](double a) { return std::fabs(a) > 2.5; });
  return {g.inputGrad, g.initialOutputGrad, g.inputWeightsGrad, g.outputWeightsGrad,
          g.biasesGrad};
}

void requireGradsClose(const Grads &got, const Grads &want, const std::string &what) {
  const double atol = 2e-5, rtol = 1e-4;
  requireClose(got.dx, want.dx, atol, rtol, what + " dx");
  requireClose(got.dh0, want.dh0, atol, rtol, what + " dh0");
  requireClose(got.dwi, want.dwi, atol, rtol, what + " dWi");
  requireClose(got.dwo, want.dwo, atol, rtol, what + " dWo");
  requireClose(got.db, want.db, atol, rtol, what + " db");
}

double largestDifference(const Values &a, const Values &b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

using StepFn = Grads (*)(const OptionFlags &, NonLinearityType, NonLinearityType, const Data &);
using RefFn = Grads (*)(NonLinearityType, NonLinearityType, rnnref::HardSigmoidGradient,
                        const Data &, std::size_t *);

void checkHardSigmoidRules(StepFn step, RefFn reference, std::size_t gates, NonLinearityType act,
                           NonLinearityType rec) {
  const Data d = makeData(gates, 21);
  std::size_t saturated = 0;
  const Grads popnn = reference(act, rec, rnnref::HardSigmoidGradient::popnn, d, &saturated);
  const Grads exact = reference(act, rec, rnnref::HardSigmoidGradient::exact, d, nullptr);
  // The data exercise the difference: saturated gates, and gradients the rules disagree on.
  REQUIRE(saturated >= 10);
  REQUIRE(largestDifference(popnn.dwi, exact.dwi) > 1e-2);
  REQUIRE(largestDifference(popnn.db, exact.db) > 1e-2);
  const std::vector<OptionFlags> cases{
      {},
      {{"hardSigmoidGradient", "poplibs"}},
      {{"hardSigmoidGradient", "exact"}},
      {{"hardSigmoidGradient", "poplibs"}, {"rnnStepsPerWU", "2"}},
      {{"hardSigmoidGradient", "exact"}, {"rnnStepsPerWU", "2"}, {"numShards", "2"}}};
  for (const OptionFlags &options : cases) {
    std::string name;
    for (const auto &[k, v] : options)
      name += k + "=" + v + " ";
    INFO(name);
    const Grads got = step(options, act, rec, d);
    requireGradsClose(got, refRule(options) == rnnref::HardSigmoidGradient::popnn ? popnn : exact,
                      name);
  }
}

void checkStepsPerWUAboveT(StepFn step, RefFn reference, std::size_t gates) {
  const Data d = makeData(gates, 40);
  const Grads onePass = step({{"rnnStepsPerWU", "0"}}, NonLinearityType::TANH,
                             NonLinearityType::SIGMOID, d);
  requireGradsClose(onePass,
                    reference(NonLinearityType::TANH, NonLinearityType::SIGMOID,
                              rnnref::HardSigmoidGradient::popnn, d, nullptr),
                    "rnnStepsPerWU=0");
  for (const char *k : {"5", "6", "1000", "4294967295"}) {
    INFO("rnnStepsPerWU " << k);
    for (const char *shards : {"1", "3"}) {
      INFO("numShards " << shards);
      const Grads g = step({{"rnnStepsPerWU", k}, {"numShards", shards}}, NonLinearityType::TANH,
                           NonLinearityType::SIGMOID, d);
      CHECK(sameValues(g.dwi, onePass.dwi));
      CHECK(sameValues(g.dwo, onePass.dwo));
      CHECK(sameValues(g.db, onePass.db));
      CHECK(sameValues(g.dx, onePass.dx));
    }
  }
}

template <class F> void requireOptionError(F build, const std::string &key, const std::string &value,
                                           const std::string &allowed) {
  INFO(key << " = '" << value << "'");
  try {
    build(OptionFlags{{key, value}});
    FAIL("no error");
  } catch (const invalid_option &e) {
    const std::string message = e.what();
    CHECK(message.find(key) != std::string::npos);
    CHECK(message.find(allowed) != std::string::npos);
  }
}

} // namespace

TEST_CASE("LSTM: hardSigmoidGradient picks PopLibs' rule (default) or the exact derivative",
          "[correctness][lstm][poplibs-rules]") {
  SECTION("recurrent activation") {
    checkHardSigmoidRules(lstmStep, lstmReference, 4, NonLinearityType::TANH,
                          NonLinearityType::HARD_SIGMOID);
  }
  SECTION("activation") {
    checkHardSigmoidRules(lstmStep, lstmReference, 4, NonLinearityType::HARD_SIGMOID,
                          NonLinearityType::SIGMOID);
  }
}

TEST_CASE("GRU: hardSigmoidGradient picks PopLibs' rule (default) or the exact derivative",
          "[correctness][gru][poplibs-rules]") {
  SECTION("recurrent activation") {
    checkHardSigmoidRules(gruStep, gruReference, 3, NonLinearityType::TANH,
                          NonLinearityType::HARD_SIGMOID);
  }
  SECTION("activation") {
    checkHardSigmoidRules(gruStep, gruReference, 3, NonLinearityType::HARD_SIGMOID,
                          NonLinearityType::SIGMOID);
  }
}

TEST_CASE("rnnStepsPerWU above the sequence length is the one-pass weight update",
          "[correctness][lstm][gru][poplibs-rules]") {
  SECTION("LSTM") { checkStepsPerWUAboveT(lstmStep, lstmReference, 4); }
  SECTION("GRU") { checkStepsPerWUAboveT(gruStep, gruReference, 3); }
  SECTION("LSTM with disableWUPartialInterleaving") {
    const Data d = makeData(4, 40);
    const Grads onePass = lstmStep({{"rnnStepsPerWU", "0"}}, NonLinearityType::TANH,
                                   NonLinearityType::SIGMOID, d);
    const Grads g = lstmStep({{"rnnStepsPerWU", "64"}, {"disableWUPartialInterleaving", "true"}},
                             NonLinearityType::TANH, NonLinearityType::SIGMOID, d);
    CHECK(sameValues(g.dwi, onePass.dwi));
    CHECK(sameValues(g.db, onePass.db));
  }
}

TEST_CASE("bad rnnStepsPerWU and hardSigmoidGradient values are invalid_option errors",
          "[correctness][lstm][gru][poplibs-rules]") {
  Graph graph(Target::createGeneric(4));
  nn::addCodelets(graph);
  const lstm::LstmParams lstmParams(FLOAT, B, T, {I, H});
  const gru::GruParams gruParams(FLOAT, B, T, {I, H});
  auto lstmBuild = [&](const OptionFlags &o) { lstm::createInput(graph, lstmParams, "in", o); };
  auto gruBuild = [&](const OptionFlags &o) { gru::createInput(graph, gruParams, "in", o); };
  for (const char *v : {"-1", "1.5", "4294967296", "", "+2", " 3", "abc", "1e3"}) {
    requireOptionError(lstmBuild, "rnnStepsPerWU", v, "an unsigned integer");
    requireOptionError(gruBuild, "rnnStepsPerWU", v, "an unsigned integer");
  }
  for (const char *v : {"popnn", "Exact", "", "true"}) {
    requireOptionError(lstmBuild, "hardSigmoidGradient", v, "poplibs, exact");
    requireOptionError(gruBuild, "hardSigmoidGradient", v, "poplibs, exact");
  }
}
