// Misuse of reduce, reduceWithOutput and reduceMany: each raises the aspen::error subclass that
// names the tensor, the rule and the values, and leaves the graph usable.
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
using namespace aspen::ops;
using Catch::Matchers::Contains;

namespace {
struct Fixture {
  Graph g{Target::createGeneric(4)};
  program::Sequence prog;
  Tensor f = var(FLOAT, {3, 4}, "f");
  Tensor i = var(INT, {3, 4}, "i");
  Tensor b = var(BOOL, {3, 4}, "b");
  Fixture() { addCodelets(g); }
  Tensor var(Type t, std::vector<std::size_t> shape, const std::string &name) {
    Tensor x = g.addVariable(t, shape, name);
    util::mapTensorLinearly(g, x);
    return x;
  }
};
} // namespace

TEST_CASE("reduce rejects types that the operation does not take", "[error][reduce]") {
  Fixture fx;
  CHECK_THROWS_MATCHES(reduce(fx.g, fx.b, {1}, Operation::ADD, fx.prog), type_error,
                       Catch::Matchers::Message(
                           "reduce ADD of 'b' {3,4}: input type bool is not allowed (float, half, "
                           "int or unsigned int)"));
  CHECK_THROWS_AS(reduce(fx.g, fx.f, {1}, Operation::LOGICAL_OR, fx.prog), type_error);
  CHECK_THROWS_AS(reduce(fx.g, fx.i, {1}, Operation::LOG_ADD, fx.prog), type_error);
  CHECK_THROWS_WITH(reduce(fx.g, fx.f, INT, {1}, Operation::ADD, fx.prog, "sum"),
                    Contains("output type int does not fit input type float (float or half)") &&
                        Contains("reduce ADD 'sum' of 'f' {3,4}"));
  CHECK_THROWS_WITH(
      reduceWithOutput(fx.g, fx.i, fx.var(HALF, {3}, "h"), {1}, Operation::MAX, fx.prog),
      Contains("output type half does not fit input type int"));
}

TEST_CASE("reduce rejects bad dimensions and output shapes", "[error][reduce]") {
  Fixture fx;
  CHECK_THROWS_WITH(reduce(fx.g, fx.f, {2}, Operation::ADD, fx.prog),
                    Contains("dimension 2 is out of range for rank 2") && Contains("of 'f' {3,4}"));
  CHECK_THROWS_AS(reduce(fx.g, fx.f, {2}, Operation::ADD, fx.prog), index_error);
  CHECK_THROWS_AS(reduce(fx.g, fx.f, {1, 1}, Operation::ADD, fx.prog), index_error);
  CHECK_THROWS_WITH(reduce(fx.g, fx.f, {0, 1, 0}, Operation::ADD, fx.prog),
                    Contains("dimension 0 is listed twice"));
  CHECK_THROWS_MATCHES(
      reduceWithOutput(fx.g, fx.f, fx.var(FLOAT, {4}, "o"), {1}, Operation::ADD, fx.prog),
      shape_error,
      Catch::Matchers::Message("reduce ADD of 'f' {3,4}: output 'o' {4} does not "
                               "have the reduced shape {3}"));
  CHECK_THROWS_AS(
      reduceWithOutput(fx.g, fx.f, fx.var(FLOAT, {3, 1}, "o2"), {1}, Operation::ADD, fx.prog),
      shape_error);
  CHECK_THROWS_AS(reduceWithOutput(fx.g, fx.f, Tensor(), {1}, Operation::ADD, fx.prog),
                  tensor_creation_error);
}

TEST_CASE("reduce rejects a scale that is not one float", "[error][reduce]") {
  Fixture fx;
  CHECK_THROWS_MATCHES(reduce(fx.g, fx.f, {1},
                              ReduceParams(Operation::ADD, false, fx.var(FLOAT, {2}, "s")),
                              fx.prog),
                       shape_error,
                       Catch::Matchers::Message("reduce ADD of 'f' {3,4}: scale 's' {2} must have "
                                                "one element"));
  CHECK_THROWS_WITH(
      reduce(fx.g, fx.f, {1}, ReduceParams(Operation::ADD, false, fx.var(INT, {}, "si")), fx.prog),
      Contains("scale 'si' {} has type int, not float"));
  CHECK_THROWS_WITH(reduce(fx.g, fx.b, {1},
                           ReduceParams(Operation::LOGICAL_AND, false, fx.var(FLOAT, {}, "sb")),
                           fx.prog),
                    Contains("a scale does not apply to LOGICAL_AND"));
}

TEST_CASE("reduce rejects unknown options, unmapped tensors and mismatched reduceMany outputs",
          "[error][reduce]") {
  Fixture fx;
  CHECK_THROWS_WITH(reduce(fx.g, fx.f, {1}, Operation::ADD, fx.prog, "r", {{"nope", "1"}}),
                    Contains("nope") && Contains("minElementsPerWorker"));
  CHECK_THROWS_AS(
      reduce(fx.g, fx.f, {1}, Operation::ADD, fx.prog, "r", {{"minElementsPerWorker", "x"}}),
      invalid_option);
  CHECK_THROWS_AS(
      reduce(fx.g, fx.g.addVariable(FLOAT, {5}, "unmapped"), {0}, Operation::ADD, fx.prog),
      invalid_tile_mapping);
  std::vector<Tensor> outs{fx.var(FLOAT, {3}, "o")};
  CHECK_THROWS_AS(reduceMany(fx.g,
                             {SingleReduceOp(fx.f, {1}, Operation::ADD),
                              SingleReduceOp(fx.f, {0}, Operation::ADD)},
                             outs, fx.prog),
                  shape_error);
  // The second reduction is bad: nothing of the first is added either.
  CHECK_THROWS_AS(reduceMany(fx.g,
                             {SingleReduceOp(fx.f, {1}, Operation::ADD),
                              SingleReduceOp(fx.f, {7}, Operation::ADD)},
                             fx.prog),
                  index_error);
}

TEST_CASE("a failed reduce leaves the graph usable", "[error][reduce]") {
  Fixture fx;
  CHECK_THROWS(reduce(fx.g, fx.f, {3}, Operation::ADD, fx.prog));
  CHECK_THROWS(reduce(fx.g, fx.f, {1}, Operation::ADD, fx.prog, "r", {{"nope", "1"}}));
  Tensor sums = reduce(fx.g, fx.f, {1}, Operation::ADD, fx.prog, "sums");
  fx.g.createHostWrite("f", fx.f);
  fx.g.createHostRead("sums", sums);
  Engine e(fx.g, fx.prog);
  e.load(Device::createModelDevice(fx.g.getTarget()));
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  e.writeTensor("f", x.data(), x.data() + x.size());
  e.run();
  std::vector<float> s(3);
  e.readTensor("sums", s.data(), s.data() + 3);
  REQUIRE(s == std::vector<float>{10, 26, 42});
}
