// Misuse of the aspen::nn basics raises aspen::error subclasses whose messages name the tensors,
// the rule and the values; the graph stays usable afterwards.
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Loss.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
using Catch::Matchers::Contains;
using nn::NonLinearityType;

namespace {

Tensor variable(Graph &g, Type type, std::vector<std::size_t> shape, const std::string &name) {
  Tensor t = g.addVariable(type, shape, name);
  util::mapTensorLinearly(g, t);
  return t;
}

} // namespace

TEST_CASE("non-linearity misuse", "[error][nn]") {
  Graph g(Target::createGeneric(4));
  nn::addCodelets(g);
  program::Sequence prog;
  Tensor ints = variable(g, INT, {4}, "ints");
  Tensor x = variable(g, FLOAT, {2, 3}, "acts");
  Tensor scalar = variable(g, FLOAT, {}, "lonely");
  Tensor halfGrad = variable(g, HALF, {2, 3}, "halfGrad");
  Tensor wideGrad = variable(g, FLOAT, {2, 4}, "wideGrad");

  REQUIRE_THROWS_MATCHES(nn::nonLinearity(g, NonLinearityType::RELU, ints, prog), type_error,
                         Catch::Matchers::Predicate<type_error>([](const type_error &e) {
                           const std::string m = e.what();
                           return m.find("ints") != std::string::npos &&
                                  m.find("float or half") != std::string::npos;
                         }));
  REQUIRE_THROWS_WITH(nn::nonLinearity(g, NonLinearityType::SOFTMAX, scalar, prog),
                      Contains("lonely") && Contains("scalar"));
  REQUIRE_THROWS_AS(nn::nonLinearity(g, NonLinearityType::SOFTMAX, scalar, prog), shape_error);
  REQUIRE_THROWS_AS(nn::nonLinearityInputGradient(g, NonLinearityType::TANH, x, halfGrad, prog),
                    type_error);
  REQUIRE_THROWS_WITH(nn::nonLinearityInputGradient(g, NonLinearityType::TANH, x, wideGrad, prog),
                      Contains("wideGrad") && Contains("acts") && Contains("{2,4}"));
  REQUIRE_THROWS_AS(nn::nonLinearityInputGradient(g, NonLinearityType::TANH, x, wideGrad, prog),
                    shape_error);
  // In place on a broadcast view would write one element from several workers.
  REQUIRE_THROWS_AS(
      nn::nonLinearityInPlace(g, NonLinearityType::SIGMOID, x[0].broadcast(2, 0), prog),
      graph_connection_error);
  ComputeSet cs = g.addComputeSet("cs");
  REQUIRE_THROWS_AS(nn::nonLinearityInPlace(g, NonLinearityType::SOFTMAX_STABLE, x, cs),
                    invalid_option);
  REQUIRE_THROWS_WITH(nn::nonLinearityInPlace(g, NonLinearityType::SOFTMAX_STABLE, x, cs),
                      Contains("SOFTMAX_STABLE") && Contains("SIGMOID") && Contains("SWISH"));
  REQUIRE_THROWS_AS(nn::asString(static_cast<NonLinearityType>(99)), invalid_option);
  Tensor unmapped = g.addVariable(FLOAT, {4}, "unmapped");
  REQUIRE_THROWS_AS(nn::nonLinearity(g, NonLinearityType::GELU, unmapped, prog),
                    invalid_tile_mapping);

  // The graph is still usable.
  Tensor y = nn::nonLinearity(g, NonLinearityType::RELU, x, prog);
  g.createHostWrite("x", x);
  g.createHostRead("y", y);
  Engine e(g, prog);
  e.load(Device::createModelDevice(g.getTarget()));
  const std::vector<float> in{-1, 2, -3, 4, -5, 6};
  e.writeTensor("x", in.data(), in.data() + in.size());
  e.run();
  std::vector<float> out(6);
  e.readTensor("y", out.data(), out.data() + out.size());
  REQUIRE(out == std::vector<float>{0, 2, 0, 4, 0, 6});
}

TEST_CASE("calcLoss and calcAccuracy misuse", "[error][nn]") {
  Graph g(Target::createGeneric(4));
  nn::addCodelets(g);
  Tensor probs = variable(g, FLOAT, {3, 5}, "probs");
  Tensor labels = variable(g, UNSIGNED_INT, {3}, "labels");
  Tensor loss = variable(g, FLOAT, {3}, "loss");
  Tensor deltas = variable(g, FLOAT, {3, 5}, "deltas");
  Tensor numCorrect = variable(g, UNSIGNED_INT, {1}, "numCorrect");
  const auto ce = nn::CROSS_ENTROPY_LOSS;

  Tensor fourLabels = variable(g, UNSIGNED_INT, {4}, "fourLabels");
  REQUIRE_THROWS_AS(nn::calcLoss(g, probs, fourLabels, loss, deltas, ce), shape_error);
  REQUIRE_THROWS_WITH(nn::calcLoss(g, probs, fourLabels, loss, deltas, ce),
                      Contains("fourLabels") && Contains("probs"));
  Tensor floatLabels = variable(g, FLOAT, {3}, "floatLabels");
  REQUIRE_THROWS_AS(nn::calcLoss(g, probs, floatLabels, loss, deltas, ce), type_error);
  REQUIRE_THROWS_WITH(nn::calcLoss(g, probs, floatLabels, loss, deltas, ce),
                      Contains("floatLabels") && Contains("unsigned int or int"));
  Tensor halfTargets = variable(g, HALF, {3, 5}, "halfTargets");
  REQUIRE_THROWS_AS(nn::calcLoss(g, probs, halfTargets, loss, deltas, ce), type_error);
  Tensor longLoss = variable(g, FLOAT, {5}, "longLoss");
  REQUIRE_THROWS_WITH(nn::calcLoss(g, probs, labels, longLoss, deltas, ce),
                      Contains("longLoss") && Contains("{3}"));
  REQUIRE_THROWS_AS(nn::calcLoss(g, probs, labels, longLoss, deltas, ce), shape_error);
  Tensor tallDeltas = variable(g, FLOAT, {5, 3}, "tallDeltas");
  REQUIRE_THROWS_AS(nn::calcLoss(g, probs, labels, loss, tallDeltas, ce), shape_error);
  Tensor halfDeltas = variable(g, HALF, {3, 5}, "halfDeltas");
  REQUIRE_THROWS_AS(nn::calcLoss(g, probs, labels, loss, halfDeltas, ce), type_error);
  REQUIRE_THROWS_AS(nn::calcLoss(g, probs.flatten(), labels, loss, deltas, ce), shape_error);
  Tensor floatCount = variable(g, FLOAT, {1}, "floatCount");
  REQUIRE_THROWS_AS(nn::calcLoss(g, probs, labels, loss, deltas, floatCount, ce), type_error);
  Tensor twoCounts = variable(g, UNSIGNED_INT, {2}, "twoCounts");
  REQUIRE_THROWS_WITH(nn::calcLoss(g, probs, labels, loss, deltas, twoCounts, ce),
                      Contains("twoCounts") && Contains("one element"));
  Tensor scaleTwo = variable(g, FLOAT, {2}, "scaleTwo");
  REQUIRE_THROWS_AS(nn::calcLoss(g, probs, labels, loss, deltas, scaleTwo, scaleTwo, ce),
                    shape_error);
  REQUIRE_THROWS_AS(nn::calcLoss(g, probs, labels, loss, deltas, static_cast<nn::LossType>(7)),
                    invalid_option);
  REQUIRE_THROWS_AS(nn::calcAccuracy(g, probs, floatLabels, numCorrect), type_error);
  REQUIRE_THROWS_AS(nn::calcAccuracy(g, probs, probs, numCorrect), shape_error);
  // Still usable.
  program::Program ok = nn::calcLoss(g, probs, labels, loss, deltas, numCorrect, ce);
  Engine e(g, ok);
}

TEST_CASE("arg-max and top-k misuse", "[error][nn]") {
  Graph g(Target::createGeneric(4));
  nn::addCodelets(g);
  program::Sequence prog;
  Tensor in = variable(g, FLOAT, {2, 6}, "scores");
  Tensor indices;
  REQUIRE_THROWS_AS(nn::topK(g, in, indices, 0, true, prog), index_error);
  REQUIRE_THROWS_AS(nn::topK(g, in, indices, 7, true, prog), index_error);
  REQUIRE_THROWS_WITH(nn::topK(g, in, indices, 7, true, prog),
                      Contains("K = 7") && Contains("[1, 6]") && Contains("scores"));
  REQUIRE_THROWS_AS(nn::argMax(g, variable(g, FLOAT, {2, 3, 4}, "cube"), prog), shape_error);
  REQUIRE_THROWS_AS(nn::argMin(g, variable(g, BOOL, {2, 3}, "flags"), prog), type_error);
  REQUIRE_THROWS_AS(nn::maxAndArgMax(g, variable(g, FLOAT, {2, 0}, "hollow"), prog), shape_error);
  REQUIRE(nn::topK(g, in, indices, 6, true, prog).shape() == std::vector<std::size_t>{2, 6});
}
