// The operation table, expression trees, type inference and code generation, without running
// anything.
#include "ops/ExprCodegen.hpp"
#include "ops/ExprLowering.hpp"

#include <aspen/Error.hpp>
#include <aspen/ops/Expr.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
using namespace aspen::ops;
namespace ex = aspen::ops::expr;

TEST_CASE("the operation table gives popops' names and type sets", "[unit][expr]") {
  CHECK(toString(UnaryOpType::EXPONENT_MINUS_ONE) == "EXPONENT_MINUS_ONE");
  CHECK(toString(BinaryOpType::SHIFT_RIGHT_SIGN_EXTEND) == "SHIFT_RIGHT_SIGN_EXTEND");
  CHECK(toString(TernaryOpType::SELECT) == "SELECT");
  CHECK(supportsType(BinaryOpType::ADD, HALF));
  CHECK_FALSE(supportsType(BinaryOpType::ADD, BOOL));
  CHECK_FALSE(supportsType(UnaryOpType::SQRT, INT));
  CHECK(supportsType(UnaryOpType::POPCOUNT, UNSIGNED_INT));
  CHECK_FALSE(supportsType(UnaryOpType::POPCOUNT, SHORT));
  CHECK(resultType(BinaryOpType::LESS_THAN, HALF) == BOOL);
  CHECK(resultType(UnaryOpType::IS_NAN, FLOAT) == BOOL);
  CHECK(resultType(BinaryOpType::MAXIMUM, SHORT) == SHORT);
}

TEST_CASE("operators build trees and untyped constants adopt their operand's type", "[unit][expr]") {
  const ex::Any e = (ex::_1 + 2) * ex::Sqrt(ex::_2) < 3;
  CHECK(aspen::ops::detail::exprToString(e) == "LESS_THAN(MULTIPLY(ADD(_1,2),SQRT(_2)),3)");
  const auto lowered = aspen::ops::detail::lowerExpr(e, {HALF, HALF}, {"a", "b"}, "test");
  CHECK(lowered.root().type == BOOL);
  for (const auto &n : lowered.nodes)
    if (n.kind == aspen::ops::detail::ExprNode::Kind::Const)
      CHECK(n.type == HALF);
  CHECK(lowered.numOperations() == 4);
  // A typed constant does not adopt: a type_error naming both types.
  CHECK_THROWS_AS(aspen::ops::detail::lowerExpr(ex::_1 + ex::Const(1, INT), {FLOAT}, {"a"}, "t"), type_error);
  // Where it meets no typed operand, a literal has its C++ type.
  CHECK(aspen::ops::detail::lowerExpr(ex::Cast(ex::Const(3u), FLOAT), {}, {}, "t").nodes[0].type == UNSIGNED_INT);
  // Constants convert as casts do.
  CHECK(aspen::ops::detail::lowerExpr(ex::_1 + 300, {UNSIGNED_CHAR}, {"a"}, "t").nodes[1].intValue == 44);
  CHECK(aspen::ops::detail::lowerExpr(ex::_1 + 2.7, {INT}, {"a"}, "t").nodes[1].intValue == 2);
  CHECK(aspen::ops::detail::lowerExpr(ex::_1 + 1e6, {HALF}, {"a"}, "t").nodes[1].floatValue ==
        std::numeric_limits<double>::infinity());
  // A placeholder used twice is read once.
  CHECK(aspen::ops::detail::lowerExpr(ex::_1 * ex::_1, {INT}, {"a"}, "t").nodes.size() == 2);
}

TEST_CASE("code generation is deterministic and names every operation's function", "[unit][expr]") {
  const ex::Any e = ex::Clamp(ex::Exp(ex::_1) - ex::_2, ex::Const(0.0f), ex::Const(6.0f));
  const auto lowered = aspen::ops::detail::lowerExpr(e, {FLOAT, FLOAT}, {"a", "b"}, "t");
  const std::vector<aspen::ops::detail::CodegenOperand> operands{{FLOAT, false, true}, {FLOAT, true, true}};
  const auto g1 = aspen::ops::detail::generateExpr(lowered, operands);
  const auto g2 = aspen::ops::detail::generateExpr(lowered, operands);
  CHECK(g1.codeletSource == g2.codeletSource);
  CHECK(g1.vertexName.rfind("aspen::ops::GeneratedExpr_", 0) == 0);
  CHECK(g1.codeletSource.find("ew::EXPONENT<float>") != std::string::npos);
  CHECK(g1.codeletSource.find("ew::CLAMP<float>") != std::string::npos);
  CHECK(g1.codeletSource.find("Input<float> in1;") != std::string::npos);
  CHECK(g1.cudaSource.find("__global__ void " + g1.kernelName) != std::string::npos);
  CHECK(g1.numFields == 3);
  // A different expression is a different codelet.
  const auto other = aspen::ops::detail::generateExpr(aspen::ops::detail::lowerExpr(ex::Exp(ex::_1) + ex::_2, {FLOAT, FLOAT}, {"a", "b"}, "t"), operands);
  CHECK(other.vertexName != g1.vertexName);
}
