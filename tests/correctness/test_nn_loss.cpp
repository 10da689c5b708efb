// aspen::nn::calcLoss and calcAccuracy against hand-computed values: cross-entropy and
// sum-squared, labels (unsigned and int, masked and out of range), one-hot/soft targets, scaled
// model outputs, numCorrect accumulating over runs; float and half; 1, 7 and 1472 tiles; 1 and 4
// threads.
#include "test_nn_harness.hpp"

#include <aspen/nn/Loss.hpp>

#include <cfloat>

using namespace nntest;

namespace {

// Five rows of four classes and their labels (row 3 masked, row 4 labelled outside [0, 4)).
const Values kProbs{0.1, 0.6, 0.2, 0.1, 0.25, 0.25, 0.25, 0.25, 0.0, 0.0,
                    1.0, 0.0, 0.3, 0.3, 0.2,  0.2,  0.5,  0.5,  0.0, 0.0};
const Values kUnsignedLabels{1, 3, 0, double(static_cast<unsigned>(nn::MASKED_LABEL_CODE)), 7};
const Values kIntLabels{1, 3, 0, double(nn::MASKED_LABEL_CODE), 7};
// Targets for the one-hot form: rows 0-2 as the labels, row 3 soft, row 4 all zero.
const Values kTargets{0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0.5, 0.5, 0, 0, 0, 0, 0, 0};

const double kLogEpsLoss = -std::log(double(FLT_MIN)); // -log(0 + FLT_MIN) = 87.3365...

// Hand-worked: -log(0.6), log(4), -log(FLT_MIN), masked, no class.
const Values kCrossEntropyLoss{0.5108256237659907, 1.3862943611198906, kLogEpsLoss, 0, 0};
const Values kCrossEntropyDeltas{0.1, -0.4, 0.2, 0.1, 0.25, 0.25, 0.25, -0.75, -1, 0,
                                 1,   0,    0,   0,   0,    0,    0.5,  0.5,   0,  0};
// 1/2 sum (p - e)^2: 0.11, 0.375, 1, masked, 1/2 (0.25 + 0.25).
const Values kSumSquaredLoss{0.11, 0.375, 1.0, 0, 0.25};
// With the soft row 3 (targets 0.5, 0.5): -(0.5 log 0.3 + 0.5 log 0.3) and deltas p - e.
const Values kOneHotLoss{0.5108256237659907, 1.3862943611198906, kLogEpsLoss, 1.2039728043259361,
                         0};
const Values kOneHotDeltas{0.1, -0.4, 0.2,  0.1,  0.25, 0.25, 0.25, -0.75, -1, 0,
                           1,   0,    -0.2, -0.2, 0.2,  0.2,  0.5,  0.5,   0,  0};

// One graph with every calcLoss form; numCorrect tensors start at 5.
Harness buildLosses(const Target &target, Type type) {
  Harness h(target);
  const Shape shape{5, 4};
  Tensor probs = h.input(type, shape, "probs", kProbs);
  Tensor scaled = h.input(type, shape, "scaled", [] {
    Values v = kProbs;
    for (double &x : v)
      x *= 10000;
    return v;
  }());
  Tensor ulabels = h.input(UNSIGNED_INT, {5}, "ulabels", kUnsignedLabels);
  Tensor ilabels = h.input(INT, {5}, "ilabels", kIntLabels);
  Tensor targets = h.input(type, shape, "targets", kTargets);
  Tensor scaling = h.input(type, {}, "scaling", {10000});
  Tensor deltasScale = h.input(type, {1}, "deltasScale", {2});
  auto outputs = [&](const std::string &name) {
    Tensor loss = h.graph.addVariable(type, {5}, name + "Loss");
    Tensor deltas = h.graph.addVariable(type, shape, name + "Deltas");
    util::mapTensorLinearly(h.graph, loss, 1, 1);
    util::mapTensorLinearly(h.graph, deltas, 1, 1);
    h.output(name + "Loss", loss);
    h.output(name + "Deltas", deltas);
    return std::pair(loss, deltas);
  };
  auto counter = [&](const std::string &name) {
    Tensor n = h.input(UNSIGNED_INT, {1}, name, {5});
    h.output(name + "Out", n);
    return n;
  };
  auto [ceLoss, ceDeltas] = outputs("ce");
  h.prog.add(nn::calcLoss(h.graph, probs, ulabels, ceLoss, ceDeltas, counter("ceCorrect"),
                          nn::CROSS_ENTROPY_LOSS));
  auto [ssLoss, ssDeltas] = outputs("ss");
  h.prog.add(nn::calcLoss(h.graph, probs, ilabels, ssLoss, ssDeltas, nn::SUM_SQUARED_LOSS));
  auto [ohLoss, ohDeltas] = outputs("oh");
  h.prog.add(nn::calcLoss(h.graph, probs, targets, ohLoss, ohDeltas, counter("ohCorrect"),
                          nn::CROSS_ENTROPY_LOSS));
  auto [scLoss, scDeltas] = outputs("sc");
  h.prog.add(nn::calcLoss(h.graph, scaled, ilabels, scLoss, scDeltas, deltasScale, scaling,
                          nn::CROSS_ENTROPY_LOSS));
  nn::calcAccuracy(h.graph, probs, ilabels, counter("accuracy"), h.prog);
  return h;
}

void checkLosses(Type type, std::map<std::string, Values> &out) {
  const double atol = type == HALF ? 2e-3 : 1e-6, rtol = type == HALF ? 2e-3 : 1e-5;
  requireClose(out["ceLoss"], kCrossEntropyLoss, atol, rtol, "cross-entropy loss");
  requireClose(out["ceDeltas"], kCrossEntropyDeltas, atol, rtol, "cross-entropy deltas");
  requireClose(out["ssLoss"], kSumSquaredLoss, atol, rtol, "sum-squared loss");
  requireClose(out["ssDeltas"], kCrossEntropyDeltas, atol, rtol, "sum-squared deltas");
  requireClose(out["ohLoss"], kOneHotLoss, atol, rtol, "one-hot loss");
  requireClose(out["ohDeltas"], kOneHotDeltas, atol, rtol, "one-hot deltas");
  Values doubled = kCrossEntropyDeltas;
  for (double &d : doubled)
    d *= 2;
  requireClose(out["scLoss"], kCrossEntropyLoss, atol, rtol, "scaled loss");
  requireClose(out["scDeltas"], doubled, atol, rtol, "scaled deltas");
}

} // namespace

TEST_CASE("calcLoss and calcAccuracy give the hand-computed values on any tiles and threads",
          "[correctness][nn]") {
  for (Type type : {FLOAT, HALF}) {
    std::map<std::string, Values> first;
    for (auto &[targetName, target] : targets()) {
      INFO(type << " on " << targetName);
      Harness h = buildLosses(target, type);
      auto one = h.run(1);
      auto four = h.run(4, 2);
      checkLosses(type, one);
      // Only row 0 is classified correctly (row 1 ties at class 0, row 2 is class 2, row 3 is
      // masked, row 4's label is out of range); with targets, the first maxima of rows 3 (soft)
      // and 4 (all zero) are class 0, which both rows' outputs also pick.
      REQUIRE(one["ceCorrectOut"] == Values{6});
      REQUIRE(one["ohCorrectOut"] == Values{8});
      REQUIRE(one["accuracyOut"] == Values{6});
      // numCorrect accumulates: two more runs of the same engine from 5.
      REQUIRE(four["ceCorrectOut"] == Values{7});
      REQUIRE(four["ohCorrectOut"] == Values{11});
      REQUIRE(four["accuracyOut"] == Values{7});
      for (auto &[name, values] : one) {
        INFO(name);
        if (name.find("Correct") == std::string::npos && name != "accuracyOut")
          REQUIRE(sameValues(values, four[name]));
        if (!first.empty())
          REQUIRE(sameValues(values, first[name]));
      }
      if (first.empty())
        first = one;
    }
  }
}

TEST_CASE("calcLoss with no rows adds nothing", "[correctness][nn]") {
  Harness h(Target::createGeneric(2));
  Tensor probs = h.graph.addVariable(FLOAT, {0, 3}, "probs");
  Tensor labels = h.graph.addVariable(UNSIGNED_INT, {0}, "labels");
  Tensor loss = h.graph.addVariable(FLOAT, {0}, "loss");
  Tensor deltas = h.graph.addVariable(FLOAT, {0, 3}, "deltas");
  Tensor n = h.input(UNSIGNED_INT, {1}, "n", {3});
  h.output("nOut", n);
  h.prog.add(nn::calcLoss(h.graph, probs, labels, loss, deltas, n, nn::CROSS_ENTROPY_LOSS));
  REQUIRE(h.run(1)["nOut"] == Values{3});
}
