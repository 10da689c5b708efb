// Misuse of Tensor views raises the specific aspen::error subclass, with a message naming the
// tensor, the rule and the values; the tensor stays usable afterwards.
#include <catch2/catch.hpp>

#include <aspen/Graph.hpp>

using namespace aspen;
using Catch::Contains;

namespace {

struct Fixture {
  Graph graph{Target::createGeneric(4)};
  Tensor weights = graph.addVariable(FLOAT, {4, 8}, "weights");

  // The tensor still answers queries and makes views after an error.
  void requireUsable() const {
    REQUIRE(weights.shape() == std::vector<std::size_t>{4, 8});
    REQUIRE(weights.slice(1, 3, 1).shape() == std::vector<std::size_t>{4, 2});
    REQUIRE(weights.isContiguous());
  }
};

} // namespace

TEST_CASE_METHOD(Fixture, "slice end beyond the dimension", "[tensor][error]") {
  REQUIRE_THROWS_AS(weights.slice(3, 9, 1), index_error);
  REQUIRE_THROWS_WITH(weights.slice(3, 9, 1),
                      Contains("slice [3, 9) of dimension 1") && Contains("'weights' {4,8}") &&
                          Contains("end 9 exceeds the dimension size 8"));
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "slice with begin after end", "[tensor][error]") {
  REQUIRE_THROWS_AS(weights.slice(3, 2), index_error);
  REQUIRE_THROWS_WITH(weights.slice(3, 2), Contains("begin 3 exceeds end 2") && Contains("weights"));
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "slice of a dimension the tensor does not have", "[tensor][error]") {
  REQUIRE_THROWS_AS(weights.slice(0, 1, 2), index_error);
  REQUIRE_THROWS_WITH(weights.slice(0, 1, 2), Contains("dimension 2") && Contains("rank 2"));
  REQUIRE_THROWS_AS(weights.slice({0, 0}, {1, 1, 1}), index_error);
  REQUIRE_THROWS_WITH(weights.slice({0, 0}, {1, 1, 1}), Contains("each of its 2 dimensions"));
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "index out of range", "[tensor][error]") {
  REQUIRE_THROWS_AS(weights[4], index_error);
  REQUIRE_THROWS_WITH(weights[4], Contains("index 4 of dimension 0") &&
                                      Contains("dimension size 4") && Contains("weights"));
  REQUIRE_THROWS_AS(weights[0][0][0], index_error);
  REQUIRE_THROWS_WITH(weights[0][0][0], Contains("rank 0"));
  REQUIRE_THROWS_AS(weights.dim(2), index_error);
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "reshape to a different element count", "[tensor][error]") {
  REQUIRE_THROWS_AS(weights.reshape({5, 7}), shape_error);
  REQUIRE_THROWS_WITH(weights.reshape({5, 7}),
                      Contains("{5,7}") && Contains("32 elements") && Contains("35"));
  REQUIRE_THROWS_AS(weights.reshapePartial(1, 3, {8}), index_error);
  REQUIRE_THROWS_AS(weights.reshapePartial(0, 1, {3}), shape_error);
  REQUIRE_THROWS_WITH(weights.reshapePartial(0, 1, {3}), Contains("hold 4 elements"));
  REQUIRE_THROWS_AS(weights.flatten(1, 1), index_error);
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "concat of mismatched shapes", "[tensor][error]") {
  Tensor bias = graph.addVariable(FLOAT, {3, 8}, "bias");
  REQUIRE_THROWS_AS(concat(weights, bias, 1), shape_error);
  REQUIRE_THROWS_WITH(concat(weights, bias, 1), Contains("'weights' {4,8}") &&
                                                    Contains("'bias' {3,8}") &&
                                                    Contains("outside dimension 1"));
  REQUIRE_THROWS_AS(concat(weights, bias[0], 0), shape_error);
  REQUIRE_THROWS_AS(concat(weights, bias, 2), index_error);
  REQUIRE_THROWS_AS(concat(std::vector<Tensor>{}), shape_error);
  REQUIRE(concat(weights, bias, 0).shape() == std::vector<std::size_t>{7, 8});
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "concat of different element types", "[tensor][error]") {
  Tensor counts = graph.addVariable(INT, {4, 8}, "counts");
  REQUIRE_THROWS_AS(concat(weights, counts), type_error);
  REQUIRE_THROWS_WITH(concat(weights, counts),
                      Contains("weights") && Contains("counts") && Contains("float") &&
                          Contains("int"));
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "concat of tensors from different graphs", "[tensor][error]") {
  Graph otherGraph(Target::createGeneric(4));
  Tensor foreign = otherGraph.addVariable(FLOAT, {4, 8}, "foreign");
  REQUIRE_THROWS_AS(concat(weights, foreign), graph_connection_error);
  REQUIRE_THROWS_WITH(concat(weights, foreign), Contains("weights") && Contains("foreign") &&
                                                    Contains("different graphs"));
  REQUIRE_FALSE(weights.intersectsWith(foreign));
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "squeeze of a dimension that is not 1", "[tensor][error]") {
  REQUIRE_THROWS_AS(weights.squeeze({1}), shape_error);
  REQUIRE_THROWS_WITH(weights.squeeze({1}),
                      Contains("dimension 1 has size 8, not 1") && Contains("weights"));
  REQUIRE_THROWS_AS(weights.squeeze({2}), index_error);
  REQUIRE_THROWS_AS(weights.expand({0}).squeeze({0, 0}), index_error);
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "transpose of a tensor that is not a matrix", "[tensor][error]") {
  REQUIRE_THROWS_AS(weights.expand({0}).transpose(), shape_error);
  REQUIRE_THROWS_WITH(weights.expand({0}).transpose(),
                      Contains("needs rank 2") && Contains("rank 3") && Contains("{1,4,8}"));
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "dimension shuffles that are not permutations", "[tensor][error]") {
  REQUIRE_THROWS_AS(weights.dimShuffle({0, 0}), shape_error);
  REQUIRE_THROWS_WITH(weights.dimShuffle({0, 0}),
                      Contains("dimShuffle {0,0}") && Contains("not a permutation"));
  REQUIRE_THROWS_AS(weights.dimShuffle({1}), shape_error);
  REQUIRE_THROWS_AS(weights.dimShufflePartial({0, 1}, {1}), shape_error);
  REQUIRE_THROWS_AS(weights.dimShufflePartial({0, 1}, {1, 1}), shape_error);
  REQUIRE_THROWS_AS(weights.dimRoll(2, 0), index_error);
  REQUIRE_THROWS_WITH(weights.dimRoll(2, 0), Contains("dimension 2 is out of range for rank 2"));
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "expand at bad positions", "[tensor][error]") {
  REQUIRE_THROWS_AS(weights.expand({3}), index_error);
  REQUIRE_THROWS_WITH(weights.expand({3}), Contains("position 3") && Contains("rank 2"));
  REQUIRE_THROWS_AS(weights.expand({0, 4}), index_error);
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "reinterpret to a size that does not fit", "[tensor][error]") {
  Tensor odd = graph.addVariable(FLOAT, {3}, "odd");
  REQUIRE_THROWS_AS(odd.reinterpret(LONGLONG), type_error);
  REQUIRE_THROWS_WITH(odd.reinterpret(LONGLONG), Contains("'odd'") && Contains("long long") &&
                                                     Contains("innermost dimension 3"));
  Tensor halves = graph.addVariable(HALF, {4, 4}, "halves");
  REQUIRE_THROWS_AS(halves.subSample(2, 1).reinterpret(FLOAT), type_error);
  REQUIRE_THROWS_WITH(halves.subSample(2, 1).reinterpret(FLOAT), Contains("consecutive"));
  REQUIRE_THROWS_AS(graph.addVariable(FLOAT, {}, "scalar").reinterpret(HALF), type_error);
  REQUIRE_THROWS_AS(weights.reinterpret(Type()), type_error);
  REQUIRE(halves.reinterpret(FLOAT).shape() == std::vector<std::size_t>{4, 2});
  requireUsable();
}

TEST_CASE_METHOD(Fixture, "subSample, broadcast and reverse of bad dimensions", "[tensor][error]") {
  REQUIRE_THROWS_AS(weights.subSample(0, 1), shape_error);
  REQUIRE_THROWS_WITH(weights.subSample(0, 1), Contains("at least 1"));
  REQUIRE_THROWS_AS(weights.broadcast(2, 5), index_error);
  REQUIRE_THROWS_WITH(weights.broadcast(2, 5), Contains("broadcast by 2 of dimension 5"));
  REQUIRE_THROWS_AS(weights.reverse(2), index_error);
  REQUIRE_THROWS_AS(weights.upsample(2, 2), index_error);
  requireUsable();
}

TEST_CASE("queries on an invalid tensor", "[tensor][error]") {
  Tensor invalid;
  REQUIRE_FALSE(invalid.valid());
  REQUIRE_THROWS_AS(invalid.shape(), error);
  REQUIRE_THROWS_WITH(invalid.rank(), Contains("invalid tensor"));
  REQUIRE_THROWS_WITH(invalid.numElements(), Contains("invalid tensor"));
  REQUIRE_THROWS_WITH(invalid.slice(0, 1), Contains("invalid tensor"));
  REQUIRE_THROWS_WITH(invalid.getDebugStr(), Contains("invalid tensor"));
  REQUIRE_THROWS_WITH(invalid.isContiguous(), Contains("invalid tensor"));
  Graph graph(Target::createGeneric(4));
  Tensor v = graph.addVariable(FLOAT, {2}, "v");
  REQUIRE_THROWS_WITH(concat(v, invalid), Contains("invalid tensor"));
  REQUIRE_THROWS_WITH(v.intersectsWith(invalid), Contains("invalid tensor"));
  REQUIRE(v.numElements() == 2);
}
