// The vanilla RNN's step functions (popnn's Recurrent.hpp) agree with its sequence functions:
// the backward steps and parameter updates unrolled on the host give rnnBwdSequence's
// gradients, and forwardWeightInput + forwardIterate give rnnFwdSequence's outputs. (rnn_layer
// checks the sequence functions against a double-precision model.)
#include "test_nn_harness.hpp"

#include <aspen/nn/Recurrent.hpp>
#include <aspen/ops/Zero.hpp>

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
