// Size arithmetic that would overflow 64 bits (or the 2^63 - 1 bytes a tensor view addresses)
// raises an aspen error naming the object and the numbers, instead of wrapping into a small,
// wrong size: variables, constants, views, streams, matMul and the recurrent layers' parameters.
// The graph stays usable after each refusal.
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace aspen;
using namespace aspen::program;
using Catch::Contains;

namespace {
constexpr std::size_t k2to40 = std::size_t(1) << 40;
constexpr std::size_t k2to62 = std::size_t(1) << 62;
} // namespace

TEST_CASE("shapes whose element or byte counts overflow are refused", "[error][overflow]") {
  Graph g(Target::createGeneric(2));
  ops::addCodelets(g);
  // 2^80 elements: the count itself wraps (to 0, which once made an empty tensor).
  REQUIRE_THROWS_AS(g.addVariable(FLOAT, {k2to40, k2to40}, "huge"), tensor_creation_error);
  REQUIRE_THROWS_WITH(g.addVariable(FLOAT, {k2to40, k2to40}, "huge"),
                      Contains("'huge'") && Contains("1099511627776,1099511627776") &&
                          Contains("2^64 elements"));
  // 2^62 floats: the count fits, the bytes (2^64) do not.
  REQUIRE_THROWS_WITH(g.addVariable(FLOAT, {k2to62}, "bytes"),
                      Contains("'bytes'") && Contains("4 bytes") && Contains("2^63 - 1"));
  REQUIRE_THROWS_AS(g.addVariable(QUARTER, {k2to62, 2}, "q"), tensor_creation_error);
  REQUIRE_THROWS_AS(g.addConstant(FLOAT, {k2to40, k2to40}, 1.0f, "c"), tensor_creation_error);
  REQUIRE_THROWS_AS(g.addHostToDeviceFIFO("s", FLOAT, k2to62), stream_connection_error);
  // A zero dimension makes any shape empty, however large the others.
  REQUIRE(g.addVariable(FLOAT, {0, k2to62, k2to62}, "empty").numElements() == 0);
  // Large addressable ones are fine: 2^62 bytes of char, 2^60 floats. (They live in a
  // graph of their own: no device holds them, and g must still run at the end.)
  Graph huge(Target::createGeneric(2));
  Tensor big = huge.addVariable(CHAR, {k2to62}, "big");
  REQUIRE(huge.addVariable(FLOAT, {std::size_t(1) << 60}).numElements() == std::size_t(1) << 60);

  // Views that grow: broadcast, concat, and a reshape whose product wraps.
  Tensor row = huge.addVariable(FLOAT, {k2to40}, "row");
  REQUIRE_THROWS_AS(row.broadcast(1u << 30, 0), shape_error); // 2^70 elements
  REQUIRE_THROWS_WITH(row.expand({0}).broadcast(1u << 22, 0), Contains("2^63 - 1")); // 2^64 B
  REQUIRE_THROWS_WITH(concat({big, big}), Contains("2^63 - 1"));                     // 2^63 bytes
  REQUIRE_THROWS_WITH(concat({big, big, big, big, big}), Contains("overflows 64 bits"));
  Tensor none = huge.addVariable(FLOAT, {0}, "none");
  // {2^32, 2^32} has 2^64 elements, which wrapped to the 0 that `none` has.
  REQUIRE_THROWS_AS(none.reshape({std::size_t(1) << 32, std::size_t(1) << 32}), shape_error);
  REQUIRE(none.reshape({std::size_t(1) << 32, 0}).numElements() == 0); // a real zero is fine
  REQUIRE_THROWS_AS(row.slice(0, 8).reshape({std::size_t(1) << 33, std::size_t(1) << 31}),
                    shape_error); // 2^64 wraps to 0, which is not 8 either

  // matMul: an output of 2^64 elements; the operands need not even be mapped to be refused.
  Tensor a = huge.addVariable(FLOAT, {std::size_t(1) << 31, 1}, "a");
  Tensor b = huge.addVariable(FLOAT, {1, std::size_t(1) << 33}, "b");
  Sequence hugeProg;
  REQUIRE_THROWS_WITH(linalg::matMul(huge, a, b, hugeProg), Contains("output") && Contains("2^64"));
  // The recurrent layers: a sequence of gate activations past 2^63 bytes.
  nn::lstm::LstmParams params(FLOAT, std::size_t(1) << 20, std::size_t(1) << 20,
                              {std::size_t(1) << 20, std::size_t(1) << 20});
  REQUIRE_THROWS_WITH(nn::lstm::createInput(g, params, "in"),
                      Contains("gate activations") && Contains("2^63 - 1"));

  // Nothing above changed g's usability: a small program still builds and runs.
  Sequence prog;
  Tensor x = g.addVariable(FLOAT, {4}, VariableMappingMethod::LINEAR, "x");
  g.createHostWrite("x", x);
  g.createHostRead("x", x);
  ops::addInPlace(g, x, 1.0f, prog);
  Engine e(g, prog);
  e.load(test::deviceFor(g.getTarget()));
  std::vector<float> v{1, 2, 3, 4};
  e.writeTensor("x", v.data(), v.data() + 4);
  e.run();
  e.readTensor("x", v.data(), v.data() + 4);
  REQUIRE(v == std::vector<float>{2, 3, 4, 5});
}
