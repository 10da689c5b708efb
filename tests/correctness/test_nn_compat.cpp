// A Poplar-style use of popnn's NonLinearity.hpp and Loss.hpp through include/compat: softmax,
// cross-entropy loss with numCorrect, the scaled softmax's scaling, and argMax.
#include "TestDevice.hpp"

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
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
  REQUIRE(scaling == popnn::SOFTMAX_SCALING);
  REQUIRE(scaledOut[2] == Approx(10000.0 * 5 / 8).epsilon(1e-5));
  REQUIRE(bestOut == std::vector<unsigned>{2, 0});
}
