// A Poplar-style use of popnn's NonLinearity.hpp and Loss.hpp through include/compat: softmax,
// cross-entropy loss with numCorrect, the scaled softmax's scaling, argMax, and the
// HARD_SIGMOID input gradient PopLibs' tests expect.
#include "TestDevice.hpp"

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/HalfFloat.hpp>
#include <popnn/Loss.hpp>
#include <popnn/NonLinearity.hpp>
#include <popnn/NonLinearityDef.hpp>
#include <popnn/codelets.hpp>
#include <poputil/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

TEST_CASE("popnn non-linearity and loss through the compat headers", "[correctness][nn]") {
  poplar::Graph graph(poplar::Target::createGeneric(3));
  popnn::addCodelets(graph);
  poplar::Tensor logits = graph.addVariable(poplar::FLOAT, {2, 3}, "logits");
  poplar::Tensor labels = graph.addVariable(poplar::UNSIGNED_INT, {2}, "labels");
  poplar::Tensor loss = graph.addVariable(poplar::FLOAT, {2}, "loss");
  poplar::Tensor deltas = graph.addVariable(poplar::FLOAT, {2, 3}, "deltas");
  poplar::Tensor numCorrect = graph.addVariable(poplar::UNSIGNED_INT, {1}, "numCorrect");
  for (const auto &t : {logits, labels, loss, deltas, numCorrect})
    poputil::mapTensorLinearly(graph, t);
  poplar::program::Sequence prog;
  poplar::Tensor probs =
      popnn::nonLinearity(graph, popnn::NonLinearityType::SOFTMAX, logits, prog, "softmax");
  prog.add(popnn::calcLoss(graph, probs, labels, loss, deltas, numCorrect,
                           popnn::CROSS_ENTROPY_LOSS, "loss"));
  float scaling = 0;
  poplar::Tensor scaled =
      popnn::nonLinearity(graph, popnn::NonLinearityType::SOFTMAX_SCALED, logits, scaling, prog);
  poplar::Tensor best = popnn::argMax(graph, logits, prog);
  graph.createHostWrite("logits", logits);
  graph.createHostWrite("labels", labels);
  graph.createHostWrite("numCorrect", numCorrect);
  graph.createHostRead("loss", loss);
  graph.createHostRead("deltas", deltas);
  graph.createHostRead("numCorrectOut", numCorrect);
  graph.createHostRead("scaled", scaled);
  graph.createHostRead("best", best);

  poplar::Engine engine(graph, prog);
  engine.load(aspen::test::deviceFor(graph.getTarget()));
  const std::vector<float> in{0, std::log(2.0f), std::log(5.0f), 3, 1, 1};
  const std::vector<unsigned> lab{2, 1};
  const unsigned zero = 0;
  engine.writeTensor("logits", in.data(), in.data() + in.size());
  engine.writeTensor("labels", lab.data(), lab.data() + lab.size());
  engine.writeTensor("numCorrect", &zero, &zero + 1);
  engine.run();
  std::vector<float> lossOut(2), deltasOut(6), scaledOut(6);
  std::vector<unsigned> count(1), bestOut(2);
  engine.readTensor("loss", lossOut.data(), lossOut.data() + 2);
  engine.readTensor("deltas", deltasOut.data(), deltasOut.data() + 6);
  engine.readTensor("numCorrectOut", count.data(), count.data() + 1);
  engine.readTensor("scaled", scaledOut.data(), scaledOut.data() + 6);
  engine.readTensor("best", bestOut.data(), bestOut.data() + 2);
  // Row 0: softmax of log(1, 2, 5) = (1, 2, 5) / 8, label 2: loss -log(5/8).
  REQUIRE(lossOut[0] == Approx(-std::log(5.0 / 8)).epsilon(1e-5));
  REQUIRE(deltasOut[0] == Approx(1.0 / 8).epsilon(1e-5));
  REQUIRE(deltasOut[2] == Approx(5.0 / 8 - 1).epsilon(1e-5));
  // Row 1 picks class 0 but its label is 1: one correct row.
  REQUIRE(count[0] == 1);
  // popnn scales by 62000 (its SOFTMAX_SCALING).
  REQUIRE(scaling == 62000.0f);
  REQUIRE(popnn::SOFTMAX_SCALING == 62000.0f);
  REQUIRE(scaledOut[2] == Approx(62000.0 * 5 / 8).epsilon(1e-5));
  REQUIRE(bestOut == std::vector<unsigned>{2, 0});
}

TEST_CASE("popnn's HARD_SIGMOID input gradient is 0.2 for every act in [-2.5, 2.5], as PopLibs",
          "[correctness][nn]") {
  poplar::Graph graph(poplar::Target::createGeneric(2));
  popnn::addCodelets(graph);
  // Values as PopLibs' test feeds them (act from -4 to 4 in steps of 0.25), and gradients of 1
  // and -3, in float and half.
  std::vector<float> act, grad;
  for (int i = -16; i <= 16; ++i) {
    act.push_back(0.25f * float(i));
    grad.push_back(i % 2 ? -3.0f : 1.0f);
  }
  const std::size_t n = act.size();
  poplar::program::Sequence prog;
  for (poplar::Type type : {poplar::FLOAT, poplar::HALF}) {
    const std::string name = type == poplar::FLOAT ? "float" : "half";
    poplar::Tensor a = graph.addVariable(type, {n}, "act-" + name);
    poplar::Tensor g = graph.addVariable(type, {n}, "grad-" + name);
    poputil::mapTensorLinearly(graph, a);
    poputil::mapTensorLinearly(graph, g);
    poplar::Tensor out = popnn::nonLinearityInputGradient(
        graph, popnn::NonLinearityType::HARD_SIGMOID, a, g, prog);
    poplar::Tensor exact = popnn::nonLinearityInputGradient(
        graph, popnn::NonLinearityType::HARD_SIGMOID, a, g, aspen::nn::NonLinearityGradient::Exact,
        prog);
    graph.createHostWrite("act-" + name, a);
    graph.createHostWrite("grad-" + name, g);
    graph.createHostRead("out-" + name, out);
    graph.createHostRead("exact-" + name, exact);
  }
  poplar::Engine engine(graph, prog);
  engine.load(aspen::test::deviceFor(graph.getTarget()));
  std::vector<aspen::half> actHalf(act.begin(), act.end()), gradHalf(grad.begin(), grad.end());
  engine.writeTensor("act-float", act.data(), act.data() + n);
  engine.writeTensor("grad-float", grad.data(), grad.data() + n);
  engine.writeTensor("act-half", actHalf.data(), actHalf.data() + n);
  engine.writeTensor("grad-half", gradHalf.data(), gradHalf.data() + n);
  engine.run();
  std::vector<float> out(n), exact(n);
  std::vector<aspen::half> outHalf(n);
  engine.readTensor("out-float", out.data(), out.data() + n);
  engine.readTensor("exact-float", exact.data(), exact.data() + n);
  engine.readTensor("out-half", outHalf.data(), outHalf.data() + n);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("act " << act[i]);
    const double popnnDerivative = std::fabs(act[i]) <= 2.5 ? 0.2 : 0.0;
    REQUIRE(out[i] == Approx(popnnDerivative * grad[i]).epsilon(1e-6));
    REQUIRE(float(outHalf[i]) == Approx(popnnDerivative * grad[i]).epsilon(1e-3));
    // The exact derivative of y = clamp(0.2 x + 0.5, 0, 1), act being y: 0.2 for 0 < y < 1.
    const double exactDerivative = act[i] > 0 && act[i] < 1 ? 0.2 : 0.0;
    REQUIRE(exact[i] == Approx(exactDerivative * grad[i]).epsilon(1e-6));
  }
}
