// poputil::toProfileValue for the element-wise operation kinds, which PopLibs' ElementWise.hpp
// declares (what DI_ARGS(op) records): PopLibs' debug name of the operation. And the int
// specialisation PopLibs' DebugInfo.hpp has beside the unsigned ones.
#include <popops/ElementWise.hpp>
#include <popops/Expr.hpp>
#include <poputil/DebugInfo.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {
bool named(const poplar::ProfileValue &value, const std::string &expected) {
  return value.type() == poplar::ProfileValue::Type::STRING && value.asString() == expected;
}
} // namespace

int main() {
  using popops::expr::BinaryOpType;
  using popops::expr::TernaryOpType;
  using popops::expr::UnaryOpType;
  bool ok = named(poputil::toProfileValue(UnaryOpType::ABSOLUTE), "Absolute") &&
            named(poputil::toProfileValue(UnaryOpType::COUNT_LEADING_ZEROS), "CountLeadingZeros") &&
            named(poputil::toProfileValue(UnaryOpType::EXPONENT_MINUS_ONE), "ExponentMinusOne") &&
            named(poputil::toProfileValue(BinaryOpType::GREATER_THAN_EQUAL), "GreaterThanEqual") &&
            named(poputil::toProfileValue(BinaryOpType::VARIANCE_TO_INV_STD_DEV),
                  "VarianceToInvStdDev") &&
            named(poputil::toProfileValue(TernaryOpType::SELECT), "Select");
  // As DI_ARGS records arguments: the spelling paired with the value.
  const BinaryOpType op = BinaryOpType::SHIFT_RIGHT_SIGN_EXTEND;
  const int offset = -3;
  const std::vector<poputil::ArgType> args = DI_ARGS(op, offset);
  ok = ok && args.size() == 2 && args[0].n == "op" && named(args[0].pv, "ShiftRightSignExtend") &&
       args[1].n == "offset" && args[1].pv.type() == poplar::ProfileValue::Type::NUMBER &&
       args[1].pv.asDouble() == -3;
  std::cout << (ok ? "expr_op_profile_values ok" : "expr_op_profile_values FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
