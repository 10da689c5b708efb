// The vanilla RNN's step functions (popnn's Recurrent.hpp) agree with its sequence functions:
// the backward steps and parameter updates unrolled on the host give rnnBwdSequence's
// gradients, and forwardWeightInput + forwardIterate give rnnFwdSequence's outputs. (rnn_layer
// checks the sequence functions against a double-precision model.)
#include "test_nn_harness.hpp"

#include <aspen/nn/Recurrent.hpp>
#include <aspen/ops/Zero.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

using namespace aspen;
using namespace nntest;
namespace rnn = aspen::nn::rnn;
using nn::NonLinearityType;

TEST_CASE("rnn step functions agree with the sequence functions", "[correctness][rnn]") {
  const unsigned T = 4, B = 3, I = 5, H = 6;
  for (NonLinearityType nl : {NonLinearityType::TANH, NonLinearityType::SIGMOID,
                              NonLinearityType::RELU, NonLinearityType::SOFTMAX}) {
    INFO(nn::asString(nl));
    Harness h(Target::createGeneric(3));
    Tensor x = rnn::createInput(h.graph, T, B, I, H, FLOAT);
    Tensor y0 = rnn::createFwdState(h.graph, FLOAT, B, H, h.prog, false, false);
    Tensor wff = rnn::createWeightsInput(h.graph, T, B, I, H, FLOAT);
    Tensor wfb = rnn::createWeightsFeedback(h.graph, B, H, FLOAT);
    Tensor b = h.graph.addVariable(FLOAT, {H}, "b");
    h.graph.setTileMapping(b, 0);
    Tensor dy = h.graph.addVariable(FLOAT, {T, B, H}, "dy");
    util::mapTensorLinearly(h.graph, dy);
    const std::pair<const char *, Tensor> writes[] = {{"x", x}, {"y0", y0}, {"wff", wff},
                                                      {"wfb", wfb}, {"b", b}, {"dy", dy}};
    for (const auto &[name, t] : writes)
      h.graph.createHostWrite(name, t);
    // Sequence functions.
    const Tensor y = rnn::rnnFwdSequence(h.graph, h.prog, y0, nullptr, b, wff, wfb, x, nl, FLOAT,
                                         false);
    auto [dx, dWff, dWfb, db] =
        rnn::rnnBwdSequence(h.graph, true, false, h.prog, y0, y, b, wff, wfb, dy, x, nl, FLOAT);
    // Step functions.
    const Tensor ff = rnn::forwardWeightInput(h.graph, x, wff, h.prog);
    const Tensor y2 = rnn::forwardIterate(h.graph, ff, y0, wfb, b, h.prog, nl);
    Tensor state = rnn::createBwdState(h.graph, FLOAT, B, H, h.prog);
    Tensor accWff = h.graph.addVariable(FLOAT, {I, H}, "accWff");
    Tensor accWfb = h.graph.addVariable(FLOAT, {H, H}, "accWfb");
    Tensor accB = h.graph.addVariable(FLOAT, {H}, "accB");
    for (Tensor t : {accWff, accWfb, accB}) {
      util::mapTensorLinearly(h.graph, t);
      ops::zero(h.graph, t, h.prog);
    }
    std::vector<Tensor> dxSteps(T);
    for (unsigned s = T; s-- > 0;) {
      auto [dxs, delta] = rnn::backwardGradientStep(h.graph, dy[s], state, y2[s], wff, wfb,
                                                    h.prog, nl);
      dxSteps[s] = dxs.expand({0});
      rnn::paramDeltaUpdate(h.graph, delta, x[s], s == 0 ? y0 : y2[s - 1], accWff, accWfb, accB,
                            h.prog);
      state = delta;
    }
    h.output("y", y);
    h.output("y2", y2);
    h.output("dx", dx);
    h.output("dx2", concat(dxSteps, 0));
    h.output("dWff", dWff);
    h.output("dWff2", accWff);
    h.output("dWfb", dWfb);
    h.output("dWfb2", accWfb);
    h.output("db", db);
    h.output("db2", accB);
    Engine e(h.graph, h.prog);
    e.load(aspen::test::deviceFor(h.graph.getTarget()));
    unsigned seed = 70;
    for (const auto &[name, t] : writes) {
      const auto v = convert<float>(randomValues(t.numElements(), -1.0, 1.0, seed++));
      e.writeTensor(name, v.data(), v.data() + v.size());
    }
    e.run();
    auto read = [&](const char *name, std::size_t n) {
      std::vector<float> v(n);
      e.readTensor(name, v.data(), v.data() + n);
      return widen(v);
    };
    CHECK(sameValues(read("y", T * B * H), read("y2", T * B * H)));
    CHECK(read("y", T * B * H) != Values(T * B * H, 0.0));
    // The sequence sums over all steps in one product; the steps accumulate one at a time.
    requireClose(read("dx2", T * B * I), read("dx", T * B * I), 1e-6, 1e-5, "dx");
    requireClose(read("dWff2", I * H), read("dWff", I * H), 1e-6, 1e-5, "dWff");
    requireClose(read("dWfb2", H * H), read("dWfb", H * H), 1e-6, 1e-5, "dWfb");
    requireClose(read("db2", H), read("db", H), 1e-6, 1e-5, "db");
  }
}

// forwardIterate's steps, fused (batches of 2 to 64 on a CPU target: one compute set a step on
// Wfb packed once) and not (65 rows), against the host's double y_t = nl(y_{t-1} . Wfb +
// x_t + b); H = 37 gives blocks of 16 units with a tail. The fused results are the same bits on
// any split of tiles and threads, and the fused graph has the fused vertex.
TEST_CASE("forwardIterate's fused and unfused steps match a double model", "[correctness][rnn]") {
  const unsigned T = 5, I = 3, H = 37;
  const NonLinearityType nl =
      GENERATE(NonLinearityType::TANH, NonLinearityType::SIGMOID, NonLinearityType::RELU);
  const unsigned B = GENERATE(3u, 65u);
  INFO(nn::asString(nl) << ", B = " << B);
  auto run = [&](unsigned tiles, unsigned threads, bool &fused) {
    Harness h(Target::createGeneric(tiles));
    Tensor x = rnn::createInput(h.graph, T, B, I, H, FLOAT);
    Tensor y0 = rnn::createFwdState(h.graph, FLOAT, B, H, h.prog, false, false);
    Tensor wff = rnn::createWeightsInput(h.graph, T, B, I, H, FLOAT);
    Tensor wfb = rnn::createWeightsFeedback(h.graph, B, H, FLOAT);
    Tensor b = h.graph.addVariable(FLOAT, {H}, "b");
    h.graph.setTileMapping(b, 0);
    const Tensor ff = rnn::forwardWeightInput(h.graph, x, wff, h.prog);
    h.output("ff", ff);
    const std::pair<const char *, Tensor> writes[] = {{"x", x}, {"y0", y0}, {"wff", wff},
                                                      {"wfb", wfb}, {"b", b}};
    for (const auto &[name, t] : writes)
      h.graph.createHostWrite(name, t);
    h.output("y", rnn::forwardIterate(h.graph, ff, y0, wfb, b, h.prog, nl));
    Engine e(h.graph, h.prog, {{"aspen.cpu.threads", std::to_string(threads)},
                                  {"aspen.cpu.inlineElements", "0"}});
    std::ostringstream summary;
    e.printProfileSummary(summary);
    fused = summary.str().find("RnnFusedFwd") != std::string::npos;
    e.load(aspen::test::deviceFor(h.graph.getTarget()));
    std::map<std::string, std::vector<float>> in;
    unsigned seed = 20;
    for (const auto &[name, t] : writes) {
      // Wfb within +-0.3, so the recurrence contracts (37 terms of |h| < 1) and float
      // rounding does not grow step by step where a ReLU unit's sum cancels.
      const double range = std::string(name) == "wfb" ? 0.3 : 1.0;
      in[name] = convert<float>(randomValues(t.numElements(), -range, range, seed++));
      e.writeTensor(name, in[name].data(), in[name].data() + in[name].size());
    }
    e.run();
    std::vector<float> y(T * B * H), f(T * B * H);
    e.readTensor("y", y.data(), y.data() + y.size());
    e.readTensor("ff", f.data(), f.data() + f.size());
    return std::tuple{widen(y), widen(f), in};
  };
  bool fused = false;
  const auto [y, ff, in] = run(3, 2, fused);
  CHECK(fused == (B <= 64));
  // The host model, from the device's own x . Wff (tested elsewhere) in double.
  std::vector<double> h(in.at("y0").begin(), in.at("y0").end()), want(T * B * H);
  for (unsigned t = 0; t < T; ++t) {
    std::vector<double> next(B * H);
    for (unsigned r = 0; r < B; ++r)
      for (unsigned u = 0; u < H; ++u) {
        double a = ff[(t * B + r) * H + u] + in.at("b")[u];
        for (unsigned k = 0; k < H; ++k)
          a += h[r * H + k] * in.at("wfb")[k * H + u];
        next[r * H + u] = nl == NonLinearityType::TANH      ? std::tanh(a)
                          : nl == NonLinearityType::SIGMOID ? 1.0 / (1.0 + std::exp(-a))
                                                            : std::max(a, 0.0);
        want[(t * B + r) * H + u] = next[r * H + u];
      }
    h = next;
  }
  // Float sums of 37 products and three roundings a step, over 5 steps (the recurrence
  // contracts, so errors stay near one step's): a wrong unit, step or term is off by 1e-2.
  requireClose(y, Values(want.begin(), want.end()), 1e-5, 1e-4, "y");
  CHECK(y != Values(y.size(), 0.0));
  if (fused) {
    bool again = false;
    CHECK(sameValues(std::get<0>(run(1, 1, again)), y));
    CHECK(sameValues(std::get<0>(run(16, 3, again)), y));
  }
}

// rnnBwdSequence's loop is fused where forwardIterate's is (its gradients are checked against
// the step functions above, and against a double model by rnn_layer).
TEST_CASE("rnnBwdSequence fuses its steps where forwardIterate does", "[correctness][rnn]") {
  auto fused = [](unsigned B, NonLinearityType nl) {
    Graph g(Target::createGeneric(2));
    nn::addCodelets(g);
    program::Sequence prog;
    const unsigned T = 3, I = 2, H = 8;
    Tensor x = rnn::createInput(g, T, B, I, H, FLOAT);
    Tensor y0 = rnn::createFwdState(g, FLOAT, B, H, prog, false, false);
    Tensor wff = rnn::createWeightsInput(g, T, B, I, H, FLOAT);
    Tensor wfb = rnn::createWeightsFeedback(g, B, H, FLOAT);
    Tensor b = g.addVariable(FLOAT, {H}, "b");
    g.setTileMapping(b, 0);
    Tensor dy = g.addVariable(FLOAT, {T, B, H}, "dy");
    util::mapTensorLinearly(g, dy);
    const Tensor y = rnn::rnnFwdSequence(g, prog, y0, nullptr, b, wff, wfb, x, nl, FLOAT, false);
    rnn::rnnBwdSequence(g, true, false, prog, y0, y, b, wff, wfb, dy, x, nl, FLOAT);
    Engine e(g, prog);
    std::ostringstream summary;
    e.printProfileSummary(summary);
    CHECK((summary.str().find("RnnFusedFwd") != std::string::npos) ==
          (summary.str().find("RnnFusedBwd") != std::string::npos));
    return summary.str().find("RnnFusedBwd") != std::string::npos;
  };
  CHECK(fused(3, NonLinearityType::TANH));
  CHECK(fused(64, NonLinearityType::RELU));
  CHECK_FALSE(fused(65, NonLinearityType::TANH));
  CHECK_FALSE(fused(3, NonLinearityType::SOFTMAX)); // over a row: not element-wise
}

TEST_CASE("rnn functions refuse what they cannot do, naming it", "[error][rnn]") {
  Graph g(Target::createGeneric(2));
  nn::addCodelets(g);
  program::Sequence prog;
  Tensor x = rnn::createInput(g, 3, 2, 4, 5, FLOAT);
  Tensor y0 = rnn::createFwdState(g, FLOAT, 2, 5, prog, true, false);
  Tensor wff = rnn::createWeightsInput(g, 3, 2, 4, 5, FLOAT);
  Tensor wfb = rnn::createWeightsFeedback(g, 2, 5, FLOAT);
  Tensor b = g.addVariable(FLOAT, {5}, "b");
  g.setTileMapping(b, 0);
  REQUIRE_THROWS_AS(rnn::rnnFwdSequence(g, prog, y0, nullptr, b, wff, wfb, x,
                                        NonLinearityType::GELU, FLOAT, false),
                    invalid_option);
  REQUIRE_THROWS_WITH(rnn::rnnFwdSequence(g, prog, y0, nullptr, b, wff, wfb, x,
                                          NonLinearityType::GELU, FLOAT, false),
                      Catch::Contains("GELU") && Catch::Contains("outputs"));
  REQUIRE_THROWS_WITH(rnn::rnnFwdSequence(g, prog, y0, nullptr, b, wfb, wfb, x,
                                          NonLinearityType::TANH, FLOAT, false),
                      Catch::Contains("weights [I, H]"));
  REQUIRE_THROWS_WITH(rnn::forwardIterate(g, rnn::forwardWeightInput(g, x, wff, prog), y0, wff, b,
                                          prog, NonLinearityType::TANH),
                      Catch::Contains("feedbackWeights") && Catch::Contains("{5,5}"));
  REQUIRE_THROWS_AS(rnn::createInput(g, 3, 2, 4, 5, INT), type_error);
  // Still usable.
  rnn::rnnFwdSequence(g, prog, y0, nullptr, b, wff, wfb, x, NonLinearityType::TANH, FLOAT, false);
  Engine e(g, prog);
  e.load(Device::createModelDevice(g.getTarget()));
  e.run();
}
