// Misuse of the LSTM layer and the recurrent loop raises aspen::error subclasses whose messages
// name the argument, the rule and the values; the graph stays usable afterwards.
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <limits>

using namespace aspen;
using Catch::Matchers::Contains;
namespace lstm = aspen::nn::lstm;
namespace rnn = aspen::nn::rnn;
using nn::NonLinearityType;

namespace {

struct Layer {
  Graph graph{Target::createGeneric(4)};
  program::Sequence prog;
  lstm::LstmParams params{FLOAT, 2, 3, {4, 5}};
  Tensor in;
  lstm::LstmState init;
  lstm::LstmWeights weights;
  Tensor inter, out, dy;

  // lengths: none, per row ("own", made in this graph) or a tensor of another graph.
  explicit Layer(const char *lengths = nullptr, Tensor foreign = Tensor()) {
    nn::addCodelets(graph);
    if (lengths) {
      Tensor l = graph.addVariable(UNSIGNED_INT, {2}, lengths);
      graph.setTileMapping(l, 0);
      params = lstm::LstmParams(FLOAT, 2, 3, l, {4, 5});
    }
    if (foreign.valid())
      params = lstm::LstmParams(FLOAT, 2, 3, foreign, {4, 5});
    in = lstm::createInput(graph, params, "in");
    init = lstm::createInitialState(graph, params, "init");
    weights = lstm::createWeights(graph, params, "weights");
    out = lstm::lstmFwd(graph, params, prog, init, weights, in, &inter, "fwd");
    dy = graph.clone(out, "dy");
  }
  // The layer still builds, compiles and runs after the errors.
  void stillUsable() {
    Tensor dx;
    lstm::lstmBwd(graph, params, prog, init, inter, weights, in, out, dy, nullptr, &dx, nullptr);
    Engine e(graph, prog);
    e.load(Device::createModelDevice(graph.getTarget()));
    e.run();
  }
};

Tensor variable(Graph &g, Type type, std::vector<std::size_t> shape, const std::string &name) {
  Tensor t = g.addVariable(type, shape, name);
  util::mapTensorLinearly(g, t);
  return t;
}

} // namespace

TEST_CASE("LSTM parameter misuse", "[error][lstm]") {
  Layer l;
  auto params = l.params;
  params.cellOrder = {lstm::BASIC_LSTM_CELL_FORGET_GATE, lstm::BASIC_LSTM_CELL_INPUT_GATE,
                      lstm::BASIC_LSTM_CELL_INPUT_GATE, lstm::BASIC_LSTM_CELL_OUTPUT_GATE};
  REQUIRE_THROWS_AS(lstm::createInput(l.graph, params, "x"), invalid_option);
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, params, "x"),
                      Contains("cellOrder") && Contains("gate 1 is repeated"));
  params.cellOrder.pop_back();
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, params, "x"), Contains("has 3 entries"));

  params = l.params;
  params.recurrentActivation = NonLinearityType::RELU;
  REQUIRE_THROWS_AS(lstm::lstmFwd(l.graph, params, l.prog, l.init, l.weights, l.in, nullptr),
                    invalid_option);
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, params, l.prog, l.init, l.weights, l.in, nullptr),
                      Contains("recurrentActivation RELU") && Contains("bounded"));
  params = l.params;
  params.activation = NonLinearityType::SOFTMAX_SCALED;
  REQUIRE_THROWS_WITH(lstm::createWeights(l.graph, params, "w"), Contains("SOFTMAX_SCALED"));

  lstm::LstmParams halfParams(INT, 2, 3, {4, 5});
  REQUIRE_THROWS_AS(lstm::createInput(l.graph, halfParams, "x"), type_error);
  lstm::LstmParams empty(FLOAT, 0, 3, {4, 5});
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, empty, "x"), Contains("batchSize (0)"));
  lstm::LstmParams oneSize(FLOAT, 2, 3, {4});
  REQUIRE_THROWS_AS(lstm::createInput(l.graph, oneSize, "x"), shape_error);
  l.stillUsable();
}

TEST_CASE("LSTM option misuse", "[error][lstm]") {
  Layer l;
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, l.params, "x", {{"numShards", "4"}}),
                      Contains("numShards") && Contains("from 1 to 3"));
  REQUIRE_THROWS_AS(lstm::createInput(l.graph, l.params, "x", {{"numShards", "0"}}),
                    invalid_option);
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, l.params, "x", {{"recomputationMode", "some"}}),
                      Contains("recomputationMode") && Contains("cellAndTanh"));
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, l.params, "x", {{"noSuchOption", "1"}}),
                      Contains("noSuchOption"));
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, l.params, "x", {{"partialsType", "half"}}),
                      Contains("partialsType half") && Contains("float"));
  // rnnStepsPerWU is any unsigned integer (as popnn parses it; T or more is one WU pass).
  REQUIRE_NOTHROW(lstm::createInput(l.graph, l.params, "x", {{"rnnStepsPerWU", "9"}}));
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, l.params, "x", {{"rnnStepsPerWU", "-1"}}),
                      Contains("rnnStepsPerWU") && Contains("an unsigned integer"));
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, l.params, "x", {{"hardSigmoidGradient", "popnn"}}),
                      Contains("hardSigmoidGradient") && Contains("poplibs, exact"));
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, l.params, "x",
                                        {{"availableMemoryProportion", "1.5"}}),
                      Contains("availableMemoryProportion"));
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, l.params, "x", {{"stepMethod", "fast"}}),
                      Contains("stepMethod") && Contains("productThenCell"));
  // The fused step needs element-wise activations.
  lstm::LstmParams softmax = l.params;
  softmax.activation = nn::NonLinearityType::SOFTMAX;
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, softmax, "x", {{"stepMethod", "fused"}}),
                      Contains("stepMethod fused") && Contains("SOFTMAX"));
  // Intermediates of an inference pass, a partial WU interleaving that is forbidden.
  Tensor inter;
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, l.params, l.prog, l.init, l.weights, l.in, &inter,
                                    "fwd", {{"inferenceOnly", "true"}}),
                      Contains("inferenceOnly"));
  lstm::LstmWeights grads;
  REQUIRE_THROWS_WITH(lstm::lstmBwdWithWU(l.graph, l.params, l.prog, l.init, l.inter, l.weights,
                                          l.in, l.out, l.dy, nullptr, nullptr, grads, "bwd",
                                          {{"rnnStepsPerWU", "2"},
                                           {"disableWUPartialInterleaving", "true"}}),
                      Contains("disableWUPartialInterleaving"));
  l.stillUsable();
}

TEST_CASE("LSTM shape and type misuse", "[error][lstm]") {
  Layer l;
  Tensor wide = variable(l.graph, FLOAT, {3, 2, 5}, "wideInput");
  REQUIRE_THROWS_AS(lstm::lstmFwd(l.graph, l.params, l.prog, l.init, l.weights, wide, nullptr),
                    shape_error);
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, l.params, l.prog, l.init, l.weights, wide, nullptr),
                      Contains("input") && Contains("{3,2,4}") && Contains("{3,2,5}"));
  Tensor halfIn = variable(l.graph, HALF, {3, 2, 4}, "halfInput");
  REQUIRE_THROWS_AS(lstm::lstmFwd(l.graph, l.params, l.prog, l.init, l.weights, halfIn, nullptr),
                    type_error);
  lstm::LstmWeights bad = l.weights;
  bad.biases = variable(l.graph, FLOAT, {3, 5}, "threeBiases");
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, l.params, l.prog, l.init, bad, l.in, nullptr),
                      Contains("weights.biases") && Contains("{4,5}"));
  lstm::LstmState badState{variable(l.graph, FLOAT, {2, 6}, "h0"), l.init.cellState};
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, l.params, l.prog, badState, l.weights, l.in, nullptr),
                      Contains("stateInit.output"));
  // Backward: wrong intermediates, output gradient, and an input gradient nobody computes.
  Tensor dx;
  REQUIRE_THROWS_WITH(lstm::lstmBwd(l.graph, l.params, l.prog, l.init, l.inter[0], l.weights, l.in,
                                    l.out, l.dy, nullptr, &dx, nullptr),
                      Contains("fwdIntermediates"));
  REQUIRE_THROWS_WITH(lstm::lstmBwd(l.graph, l.params, l.prog, l.init, l.inter, l.weights, l.in,
                                    l.out, l.dy[0], nullptr, &dx, nullptr),
                      Contains("outputGrad"));
  auto noInputGrad = l.params;
  noInputGrad.calcInputGradients = false;
  REQUIRE_THROWS_AS(lstm::lstmBwd(l.graph, noInputGrad, l.prog, l.init, l.inter, l.weights, l.in,
                                  l.out, l.dy, nullptr, &dx, nullptr),
                    invalid_option);
  REQUIRE_THROWS_WITH(lstm::lstmBwd(l.graph, noInputGrad, l.prog, l.init, l.inter, l.weights, l.in,
                                    l.out, l.dy, nullptr, &dx, nullptr),
                      Contains("calcInputGradients"));
  Tensor bwdInter = variable(l.graph, FLOAT, {3, 3, 2, 5}, "bwdInter");
  REQUIRE_THROWS_WITH(lstm::lstmWU(l.graph, l.params, l.prog, l.init, l.inter, bwdInter, l.weights,
                                   l.in, l.out),
                      Contains("bwdIntermediates") && Contains("{3,4,2,5}"));
  l.stillUsable();
}

TEST_CASE("variable time steps misuse", "[error][lstm]") {
  // Lengths of another graph are refused when the loop connects them.
  Graph g(Target::createGeneric(2));
  Tensor foreign = variable(g, UNSIGNED_INT, {2}, "foreignLengths");
  REQUIRE_THROWS_WITH(Layer(nullptr, foreign),
                      Contains("foreignLengths") && Contains("another graph"));

  // A final-state gradient with variable lengths is taken (it reaches each row's last step:
  // lstm_layer's *_var_len_rows_last_state_grad runs check the values); a misshapen one is not.
  Layer v("ownLengths");
  Tensor lastCell = variable(v.graph, FLOAT, {2, 5}, "lastCellGrad");
  Tensor dx;
  REQUIRE_NOTHROW(lstm::lstmBwd(v.graph, v.params, v.prog, v.init, v.inter, v.weights, v.in,
                                v.out, v.dy, &lastCell, &dx, nullptr));
  Tensor badCell = variable(v.graph, FLOAT, {2, 4}, "badCellGrad");
  REQUIRE_THROWS_WITH(lstm::lstmBwd(v.graph, v.params, v.prog, v.init, v.inter, v.weights, v.in,
                                    v.out, v.dy, &badCell, &dx, nullptr),
                      Contains("last cell state's gradient") && Contains("{2,4}"));
  Tensor wrongCount = variable(v.graph, UNSIGNED_INT, {3}, "threeLengths");
  lstm::LstmParams p(FLOAT, 2, 3, wrongCount, {4, 5});
  REQUIRE_THROWS_AS(lstm::createInput(v.graph, p, "x"), shape_error);
  REQUIRE_THROWS_WITH(lstm::createInput(v.graph, p, "x"),
                      Contains("timeSteps") && Contains("[batchSize = 2]"));
  Tensor floats = variable(v.graph, FLOAT, {2}, "floatLengths");
  lstm::LstmParams q(FLOAT, 2, 3, floats, {4, 5});
  REQUIRE_THROWS_AS(lstm::createInput(v.graph, q, "x"), type_error);
  v.stillUsable();
}

TEST_CASE("rnn::Rnn misuse", "[error][lstm][rnn]") {
  Graph g(Target::createGeneric(2));
  nn::addCodelets(g);
  program::Sequence prog;
  rnn::RnnParams params(FLOAT, 2, 4, {3, 3});
  Tensor x = rnn::createInputTensor(g, params, 1);
  Tensor shortSeq = variable(g, FLOAT, {3, 2, 3}, "short");
  Tensor s0 = rnn::createInitialState(g, params, true, 1, 1)[0];
  OptionFlags options;
  auto body = [](Graph &, const rnn::TimeStepState &, const rnn::RnnBatchwiseFlags &,
                 std::vector<Tensor> &, const rnn::RnnSlice &, std::vector<Tensor> &,
                 program::Sequence *, const DebugContext &) { return program::Sequence{}; };
  REQUIRE_THROWS_WITH(rnn::Rnn(g, params, false, {s0}, {}, {shortSeq}, nullptr, nullptr, {}, {},
                               prog, body, 1, options),
                      Contains("4 time steps") && Contains("{3,2,3}"));
  REQUIRE_THROWS_WITH(rnn::Rnn(g, params, false, {s0}, {}, {x}, nullptr, nullptr, {}, {}, prog,
                               body, 5, options),
                      Contains("numShards = 5"));
  REQUIRE_THROWS_WITH(rnn::Rnn(g, params, false, {s0}, {x, 3}, {x}, nullptr, nullptr, {}, {}, prog,
                               body, 1, options),
                      Contains("stateIndex 3"));
  OptionFlags unknown{{"codeReuse", "maybe"}};
  REQUIRE_THROWS_AS(rnn::Rnn(g, params, false, {s0}, {}, {x}, nullptr, nullptr, {}, {}, prog, body,
                             1, unknown),
                    invalid_option);
  // Still usable.
  rnn::Rnn(g, params, false, {s0}, {}, {x}, nullptr, nullptr, {}, {}, prog, body, 2, options);
  Engine e(g, prog);
  e.load(Device::createModelDevice(g.getTarget()));
  e.run();
}

TEST_CASE("LSTM projection misuse", "[error][lstm][projection]") {
  Layer l; // I = 4, H = 5, B = 2, T = 3, no projection
  auto params = l.params;
  for (std::size_t P : {5, 9}) { // P must be less than H
    params.projSize = P;
    REQUIRE_THROWS_AS(lstm::createInput(l.graph, params, "x"), invalid_option);
    REQUIRE_THROWS_WITH(lstm::createWeights(l.graph, params, "x"),
                        Contains("projSize (" + std::to_string(P) + ")") &&
                            Contains("less than the hidden size H (5)"));
  }
  REQUIRE_THROWS_WITH(lstm::createWeightsProjection(l.graph, l.params, "x"),
                      Contains("createWeightsProjection") && Contains("projSize is 0"));
  // A projection given to a layer without one.
  lstm::LstmWeights extra = l.weights;
  extra.projection = variable(l.graph, FLOAT, {5, 2}, "extra");
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, l.params, l.prog, l.init, extra, l.in, nullptr),
                      Contains("weights.projection is given") && Contains("projSize is 0"));

  params = l.params;
  params.projSize = 2;
  const lstm::LstmWeights w = lstm::createWeights(l.graph, params, "projected");
  REQUIRE(w.outputWeights.shape() == std::vector<std::size_t>{4, 2, 5});
  REQUIRE(w.projection.shape() == std::vector<std::size_t>{5, 2});
  const lstm::LstmState init = lstm::createInitialState(l.graph, params, "projectedInit");
  REQUIRE(init.output.shape() == std::vector<std::size_t>{2, 2});
  REQUIRE(init.cellState.shape() == std::vector<std::size_t>{2, 5});
  // The unprojected layer's weights and state do not fit a projected one.
  REQUIRE_THROWS_AS(lstm::lstmFwd(l.graph, params, l.prog, l.init, w, l.in, nullptr), shape_error);
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, params, l.prog, l.init, w, l.in, nullptr),
                      Contains("stateInit.output must have shape {2,2}"));
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, params, l.prog, init, l.weights, l.in, nullptr),
                      Contains("weights.outputWeights must have shape {4,2,5}"));
  lstm::LstmWeights noProjection = w;
  noProjection.projection = Tensor();
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, params, l.prog, init, noProjection, l.in, nullptr),
                      Contains("weights.projection is not a valid tensor"));
  lstm::LstmWeights wrongProjection = w;
  wrongProjection.projection = variable(l.graph, FLOAT, {2, 5}, "transposed");
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, params, l.prog, init, wrongProjection, l.in, nullptr),
                      Contains("weights.projection must have shape {5,2}"));
  // Step forms that do not apply to a projected layer.
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, params, l.prog, init, w, l.in, nullptr, "x",
                                    {{"stepMethod", "fused"}}),
                      Contains("stepMethod fused does not apply to a projected layer"));
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, params, l.prog, init, w, l.in, nullptr, "x",
                                    {{"rnnPersistentKernel", "true"}}),
                      Contains("rnnPersistentKernel true does not apply to a projected layer"));
  // The backward's shapes: gradients are P wide, the weight update reads dh_t's slot.
  Tensor inter;
  const Tensor out = lstm::lstmFwd(l.graph, params, l.prog, init, w, l.in, &inter, "fwd");
  REQUIRE(out.shape() == std::vector<std::size_t>{3, 2, 2});
  REQUIRE(inter.shape() == std::vector<std::size_t>{3, 7, 2, 5});
  REQUIRE_THROWS_WITH(lstm::lstmBwd(l.graph, params, l.prog, init, inter, w, l.in, out, l.dy,
                                    nullptr, nullptr, nullptr),
                      Contains("outputGrad must be a float tensor of shape {3,2,2}"));
  const Tensor dy = l.graph.clone(out, "projectedDy");
  Tensor bwdInter;
  lstm::lstmBwd(l.graph, params, l.prog, init, inter, w, l.in, out, dy, nullptr, nullptr,
                &bwdInter);
  REQUIRE(bwdInter.shape() == std::vector<std::size_t>{3, 5, 2, 5});
  REQUIRE_THROWS_WITH(lstm::lstmWU(l.graph, params, l.prog, init, inter, bwdInter.slice(0, 4, 1),
                                   w, l.in, out),
                      Contains("bwdIntermediates must have shape {3,5,2,5} (a projected layer's)"));
  const lstm::LstmWeights dw =
      lstm::lstmWU(l.graph, params, l.prog, init, inter, bwdInter, w, l.in, out);
  REQUIRE(dw.projection.shape() == std::vector<std::size_t>{5, 2});
  l.stillUsable();
}

TEST_CASE("LSTM activation clip misuse", "[error][lstm][clip]") {
  Layer l;
  auto params = l.params;
  for (double threshold : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()}) {
    params.activationClip = {true, threshold};
    REQUIRE_THROWS_AS(lstm::createInput(l.graph, params, "x"), invalid_option);
    REQUIRE_THROWS_WITH(lstm::createInput(l.graph, params, "x"),
                        Contains("activationClip's threshold must be a finite number above 0"));
  }
  params.activationClip = {true, 2.0};
  params.activation = NonLinearityType::SOFTMAX;
  REQUIRE_THROWS_WITH(lstm::createInput(l.graph, params, "x"),
                      Contains("activationClip needs element-wise activations"));
  params.activation = NonLinearityType::TANH;
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, params, l.prog, l.init, l.weights, l.in, nullptr,
                                    "x", {{"stepMethod", "fused"}}),
                      Contains("stepMethod fused does not apply to a layer with activationClip"));
  REQUIRE_THROWS_WITH(lstm::lstmFwd(l.graph, params, l.prog, l.init, l.weights, l.in, nullptr,
                                    "x", {{"rnnPersistentKernel", "true"}}),
                      Contains("rnnPersistentKernel true does not apply to a layer with "
                               "activationClip"));
  // Disabled, the threshold is not read.
  params.activationClip = {false, -1.0};
  lstm::createInput(l.graph, params, "unclipped");
  l.stillUsable();
}
