// Misuse of the element-wise builders raises the documented aspen::error subclass, naming the
// objects and values, and leaves the graph usable.
#include <aspen/Engine.hpp>
#include <aspen/ops/Cast.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
namespace ex = aspen::ops::expr;
using Catch::Matchers::Contains;

namespace {
struct Fixture {
  Graph g{Target::createGeneric(4)};
  program::Sequence prog;
  Tensor f4, f3, i4, c4;
  Fixture() {
    ops::addCodelets(g);
    f4 = g.addVariable(FLOAT, {4}, "f4");
    f3 = g.addVariable(FLOAT, {3}, "f3");
    i4 = g.addVariable(INT, {4}, "i4");
    c4 = g.addConstant<float>(FLOAT, {4}, {1, 2, 3, 4}, "c4");
    for (const Tensor &t : {f4, f3, i4, c4})
      util::mapTensorLinearly(g, t);
  }
};
} // namespace

TEST_CASE("operands that do not broadcast are a shape_error naming both shapes",
          "[error][elementwise]") {
  Fixture fx;
  REQUIRE_THROWS_AS(ops::add(fx.g, fx.f4, fx.f3, fx.prog), shape_error);
  REQUIRE_THROWS_WITH(ops::add(fx.g, fx.f4, fx.f3, fx.prog), Contains("{4}") && Contains("{3}"));
  Tensor out = fx.g.addVariable(FLOAT, {3}, "out3");
  REQUIRE_THROWS_WITH(ops::addWithOutput(fx.g, fx.f4, fx.f4, out, fx.prog),
                      Contains("out3") && Contains("{3}") && Contains("{4}"));
}

TEST_CASE("mismatched operand types are a type_error naming both types and tensors",
          "[error][elementwise]") {
  Fixture fx;
  REQUIRE_THROWS_AS(ops::add(fx.g, fx.f4, fx.i4, fx.prog), type_error);
  REQUIRE_THROWS_WITH(ops::add(fx.g, fx.f4, fx.i4, fx.prog), Contains("ADD") && Contains("float") &&
                                                                 Contains("int") &&
                                                                 Contains("f4") && Contains("i4"));
  // An operation not defined for a type names both.
  REQUIRE_THROWS_AS(ops::bitwiseAnd(fx.g, fx.f4, fx.f4, fx.prog), type_error);
  REQUIRE_THROWS_WITH(ops::bitwiseAnd(fx.g, fx.f4, fx.f4, fx.prog),
                      Contains("BITWISE_AND") && Contains("float"));
  REQUIRE_THROWS_AS(ops::sqrt(fx.g, fx.i4, fx.prog), type_error);
  REQUIRE_THROWS_WITH(ops::map(fx.g, ex::Select(ex::_1, ex::_1, ex::_2), {fx.f4, fx.i4}, fx.prog),
                      Contains("SELECT") && Contains("bool"));
}

TEST_CASE("signed char, long long and unsigned long long are only cast: other operations and "
          "constants of them are a type_error naming the type",
          "[error][elementwise][cast]") {
  Fixture fx;
  Tensor ll = fx.g.addVariable(LONGLONG, {4}, "ll4");
  Tensor sc = fx.g.addVariable(SIGNED_CHAR, {4}, "sc4");
  util::mapTensorLinearly(fx.g, ll);
  util::mapTensorLinearly(fx.g, sc);
  REQUIRE_THROWS_AS(ops::add(fx.g, ll, ll, fx.prog), type_error);
  REQUIRE_THROWS_WITH(ops::add(fx.g, ll, ll, fx.prog), Contains("ADD") && Contains("long long"));
  REQUIRE_THROWS_WITH(ops::neg(fx.g, sc, fx.prog), Contains("NEGATE") && Contains("signed char"));
  // In a fused expression: a cast to a 64-bit type followed by arithmetic.
  REQUIRE_THROWS_WITH(ops::map(fx.g, ex::Cast(ex::_1, UNSIGNED_LONGLONG) * 2, {fx.f4}, fx.prog),
                      Contains("MULTIPLY") && Contains("unsigned long long"));
  REQUIRE_THROWS_AS(ops::map(fx.g, ex::Cast(ex::Const(5, LONGLONG), FLOAT), {}, fx.prog),
                    type_error);
  REQUIRE_THROWS_WITH(ops::map(fx.g, ex::Cast(ex::Const(5, LONGLONG), FLOAT), {}, fx.prog),
                      Contains("constant") && Contains("long long"));
  // Casts themselves are fine, and the graph stays usable.
  CHECK(ops::cast(fx.g, ll, SIGNED_CHAR, fx.prog).elementType() == SIGNED_CHAR);
  CHECK(ops::map(fx.g, ex::Cast(ex::Cast(ex::_1, LONGLONG), HALF), {sc}, fx.prog).elementType() ==
        HALF);
}

TEST_CASE("a placeholder beyond the tensors given is an index_error", "[error][elementwise]") {
  Fixture fx;
  REQUIRE_THROWS_AS(ops::map(fx.g, ex::_1 + ex::_3, {fx.f4, fx.f4}, fx.prog), index_error);
  REQUIRE_THROWS_WITH(ops::map(fx.g, ex::_1 + ex::_3, {fx.f4, fx.f4}, fx.prog),
                      Contains("_3") && Contains("2 tensors"));
}

TEST_CASE("in-place into a tensor that is not parallel-writeable is refused",
          "[error][elementwise]") {
  Fixture fx;
  REQUIRE_THROWS_AS(ops::addInPlace(fx.g, fx.c4, fx.f4, fx.prog), graph_connection_error);
  REQUIRE_THROWS_WITH(ops::addInPlace(fx.g, fx.c4, fx.f4, fx.prog),
                      Contains("c4") && Contains("parallel-writeable"));
  REQUIRE_THROWS_AS(ops::negInPlace(fx.g, fx.f4.slice(0, 1).broadcast(4, 0), fx.prog),
                    graph_connection_error);
  // In place, the result must keep the first operand's shape and type.
  REQUIRE_THROWS_AS(ops::ltInPlace(fx.g, fx.f4, fx.f4, fx.prog), type_error);
  REQUIRE_THROWS_AS(ops::mapInPlace(fx.g, ex::_1 + ex::_2, {fx.f4.slice(0, 1), fx.f4}, fx.prog),
                    shape_error);
}

TEST_CASE("an unknown option is an invalid_option naming the key", "[error][elementwise]") {
  Fixture fx;
  REQUIRE_THROWS_AS(ops::map(fx.g, ex::_1 + 1, {fx.f4}, fx.prog, {}, {{"enableFusion", "true"}}),
                    invalid_option);
  REQUIRE_THROWS_WITH(ops::map(fx.g, ex::_1 + 1, {fx.f4}, fx.prog, {}, {{"enableFusion", "true"}}),
                      Contains("enableFusion"));
  REQUIRE_THROWS_AS(
      ops::map(fx.g, ex::_1 + 1, {fx.f4}, fx.prog, {}, {{"enableGenerateCodelet", "maybe"}}),
      invalid_option);
}

TEST_CASE("after failed calls the graph still builds and runs", "[error][elementwise]") {
  Fixture fx;
  CHECK_THROWS(ops::add(fx.g, fx.f4, fx.i4, fx.prog));
  CHECK_THROWS(ops::add(fx.g, fx.f4, fx.f3, fx.prog));
  Tensor r = ops::add(fx.g, fx.c4, 1.0f, fx.prog);
  fx.g.createHostRead("r", r);
  Engine e(fx.g, fx.prog);
  e.load(Device::createModelDevice(fx.g.getTarget()));
  e.run();
  std::vector<float> v(4);
  e.readTensor("r", v.data(), v.data() + 4);
  CHECK(v == std::vector<float>{2, 3, 4, 5});
}
