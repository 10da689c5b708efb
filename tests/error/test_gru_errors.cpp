// Misuse of the GRU layer raises aspen::error subclasses whose messages name the argument, the
// rule and the values; the graph stays usable afterwards.
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Gru.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <limits>

using namespace aspen;
using Catch::Matchers::Contains;
namespace gru = aspen::nn::gru;
using nn::NonLinearityType;

namespace {

Tensor variable(Graph &g, Type type, std::vector<std::size_t> shape, const std::string &name) {
  Tensor t = g.addVariable(type, shape, name);
  util::mapTensorLinearly(g, t);
  return t;
}

} // namespace

TEST_CASE("GRU misuse", "[error][gru]") {
  Graph g(Target::createGeneric(4));
  nn::addCodelets(g);
  program::Sequence prog;
  gru::GruParams params(FLOAT, 2, 3, {4, 5});
  Tensor in = gru::createInput(g, params, "in");
  Tensor init = gru::createInitialState(g, params, "init");
  gru::GruWeights w = gru::createWeights(g, params, "w");

  auto p = params;
  p.cellOrder = {gru::BASIC_GRU_CELL_RESET_GATE, gru::BASIC_GRU_CELL_RESET_GATE,
                 gru::BASIC_GRU_CELL_CANDIDATE};
  REQUIRE_THROWS_AS(gru::createInput(g, p, "x"), invalid_option);
  REQUIRE_THROWS_WITH(gru::createInput(g, p, "x"), Contains("cellOrder") && Contains("repeated"));
  p = params;
  p.recurrentActivation = NonLinearityType::RELU;
  REQUIRE_THROWS_WITH(gru::gruFwd(g, p, init, in, w, nullptr, prog),
                      Contains("recurrentActivation RELU") && Contains("bounded"));
  p = params;
  p.activation = NonLinearityType::SOFTMAX_SCALED;
  REQUIRE_THROWS_WITH(gru::gruFwd(g, p, init, in, w, nullptr, prog),
                      Contains("SOFTMAX_SCALED") && Contains("not allowed"));
  // Shapes and types.
  REQUIRE_THROWS_WITH(gru::gruFwd(g, params, init, variable(g, FLOAT, {3, 2, 6}, "wide"), w,
                                  nullptr, prog),
                      Contains("input") && Contains("{3,2,4}"));
  gru::GruWeights bad = w;
  bad.biases = variable(g, FLOAT, {3, 2, 5}, "twoBiases"); // resetAfter is false
  REQUIRE_THROWS_WITH(gru::gruFwd(g, params, init, in, bad, nullptr, prog),
                      Contains("weights.biases") && Contains("{3,5}"));
  REQUIRE_THROWS_AS(gru::gruFwd(g, params, variable(g, HALF, {2, 5}, "halfInit"), in, w, nullptr,
                                prog),
                    type_error);
  REQUIRE_THROWS_WITH(gru::auGruFwd(g, params, init, in, w, nullptr,
                                    variable(g, FLOAT, {3, 2}, "attTransposed"), prog),
                      Contains("attention") && Contains("{2,3}"));
  // Options.
  Tensor inter;
  REQUIRE_THROWS_WITH(gru::gruFwd(g, params, init, in, w, &inter, prog, "fwd",
                                  {{"inferenceOnly", "true"}}),
                      Contains("inferenceOnly"));
  REQUIRE_THROWS_WITH(gru::createInput(g, params, "x", {{"numShards", "4"}}),
                      Contains("numShards") && Contains("from 1 to 3"));
  // rnnStepsPerWU is any unsigned integer (as popnn parses it; T or more is one WU pass).
  REQUIRE_NOTHROW(gru::createInput(g, params, "x", {{"rnnStepsPerWU", "9"}}));
  REQUIRE_THROWS_WITH(gru::createInput(g, params, "x", {{"rnnStepsPerWU", "-1"}}),
                      Contains("rnnStepsPerWU") && Contains("an unsigned integer"));
  REQUIRE_THROWS_WITH(gru::createInput(g, params, "x", {{"hardSigmoidGradient", "popnn"}}),
                      Contains("hardSigmoidGradient") && Contains("poplibs, exact"));
  // stepMethod: one of three; fused only with element-wise activations.
  REQUIRE_THROWS_WITH(gru::createInput(g, params, "x", {{"stepMethod", "fast"}}),
                      Contains("stepMethod") && Contains("productThenCell"));
  p = params;
  p.activation = NonLinearityType::SOFTMAX;
  REQUIRE_THROWS_WITH(
      gru::gruFwd(g, p, init, in, w, nullptr, prog, "fwd", {{"stepMethod", "fused"}}),
      Contains("stepMethod fused") && Contains("SOFTMAX"));
  REQUIRE_NOTHROW(gru::createInput(g, p, "x", {{"stepMethod", "auto"}})); // auto does not fuse it
  // Lengths given twice; an input gradient nobody computes.
  Tensor lengths = variable(g, UNSIGNED_INT, {2}, "lengths");
  gru::GruParams withLengths(FLOAT, 2, 3, lengths, {4, 5});
  REQUIRE_THROWS_WITH(gru::gruFwd(g, withLengths, init, in, lengths, w, nullptr, prog),
                      Contains("realTimeSteps") && Contains("once"));
  Tensor out = gru::gruFwd(g, params, init, in, w, &inter, prog);
  Tensor dy = g.clone(out, "dy");
  auto noInputGrad = params;
  noInputGrad.calcInputGradients = false;
  Tensor dx;
  REQUIRE_THROWS_WITH(gru::gruBwd(g, noInputGrad, prog, init, inter, w, in, out, dy, &dx, nullptr),
                      Contains("calcInputGradients"));
  REQUIRE_THROWS_WITH(gru::gruBwd(g, params, prog, init, inter[0], w, in, out, dy, &dx, nullptr),
                      Contains("fwdIntermediates"));
  REQUIRE_THROWS_WITH(gru::gruWU(g, params, prog, init, inter, inter.slice(0, 2, 1), w, in, out),
                      Contains("bwdIntermediates"));
  // Still usable.
  gru::gruBwd(g, params, prog, init, inter, w, in, out, dy, &dx, nullptr);
  Engine e(g, prog);
  e.load(Device::createModelDevice(g.getTarget()));
  e.run();
}

TEST_CASE("GRU activation clip misuse", "[error][gru][clip]") {
  Graph g(Target::createGeneric(4));
  nn::addCodelets(g);
  program::Sequence prog;
  gru::GruParams params(FLOAT, 2, 3, {4, 5});
  Tensor in = gru::createInput(g, params, "in");
  Tensor init = gru::createInitialState(g, params, "init");
  gru::GruWeights w = gru::createWeights(g, params, "w");
  auto p = params;
  for (double threshold : {0.0, -2.0, std::numeric_limits<double>::infinity()}) {
    p.activationClip = {true, threshold};
    REQUIRE_THROWS_AS(gru::gruFwd(g, p, init, in, w, nullptr, prog), invalid_option);
    REQUIRE_THROWS_WITH(gru::gruFwd(g, p, init, in, w, nullptr, prog),
                        Contains("activationClip's threshold must be a finite number above 0"));
  }
  p.activationClip = {true, 1.5};
  p.recurrentActivation = NonLinearityType::SOFTMAX;
  REQUIRE_THROWS_WITH(gru::gruFwd(g, p, init, in, w, nullptr, prog),
                      Contains("activationClip needs element-wise activations"));
  p.recurrentActivation = NonLinearityType::SIGMOID;
  REQUIRE_THROWS_WITH(gru::gruFwd(g, p, init, in, w, nullptr, prog, "x", {{"stepMethod", "fused"}}),
                      Contains("stepMethod fused does not apply to a layer with activationClip"));
  REQUIRE_THROWS_WITH(
      gru::gruFwd(g, p, init, in, w, nullptr, prog, "x", {{"rnnPersistentKernel", "true"}}),
      Contains("rnnPersistentKernel true does not apply to a layer with activationClip"));
  // With the clip the intermediates gain the two pre-activation slots; the layer still builds,
  // compiles and runs.
  Tensor inter;
  const Tensor out = gru::gruFwd(g, p, init, in, w, &inter, prog, "clipped");
  REQUIRE(inter.shape() == std::vector<std::size_t>{3, 5, 2, 5});
  gru::gruBwd(g, p, prog, init, inter, w, in, out, g.clone(out, "dy"), nullptr, nullptr, "bwd");
  Engine e(g, prog);
  e.load(Device::createModelDevice(g.getTarget()));
  e.run();
}
