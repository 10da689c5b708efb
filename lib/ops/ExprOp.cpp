// Host-side queries of the operation table: names, type sets and result types.
#include <aspen/ops/Expr.hpp>

#include <fmt/format.h>

namespace aspen::ops {

namespace {
#define ASPEN_EW_NAME(e, node, fn, types, result) #e,
const char *const kUnaryNames[] = {ASPEN_EW_UNARY_OPS(ASPEN_EW_NAME)};
const char *const kBinaryNames[] = {ASPEN_EW_BINARY_OPS(ASPEN_EW_NAME)};
const char *const kTernaryNames[] = {ASPEN_EW_TERNARY_OPS(ASPEN_EW_NAME)};
#undef ASPEN_EW_NAME

#define ASPEN_EW_TYPE_TEST(t, cpp, C) || t == C
#define ASPEN_EW_SUPPORTS(e, node, fn, types, result) false ASPEN_EW_TYPES_##types(ASPEN_EW_TYPE_TEST, t),
bool unarySupports(UnaryOpType op, Type t) {
  const bool table[] = {ASPEN_EW_UNARY_OPS(ASPEN_EW_SUPPORTS)};
  return table[static_cast<int>(op)];
}
bool binarySupports(BinaryOpType op, Type t) {
  const bool table[] = {ASPEN_EW_BINARY_OPS(ASPEN_EW_SUPPORTS)};
  return table[static_cast<int>(op)];
}
bool ternarySupports(TernaryOpType op, Type t) {
  const bool table[] = {ASPEN_EW_TERNARY_OPS(ASPEN_EW_SUPPORTS)};
  return table[static_cast<int>(op)];
}
#undef ASPEN_EW_SUPPORTS
#undef ASPEN_EW_TYPE_TEST

#define ASPEN_EW_BOOL_SAME false
#define ASPEN_EW_BOOL_BOOL true
#define ASPEN_EW_GIVES_BOOL(e, node, fn, types, result) ASPEN_EW_BOOL_##result,
const bool kUnaryBool[] = {ASPEN_EW_UNARY_OPS(ASPEN_EW_GIVES_BOOL)};
const bool kBinaryBool[] = {ASPEN_EW_BINARY_OPS(ASPEN_EW_GIVES_BOOL)};
#undef ASPEN_EW_GIVES_BOOL
} // namespace

std::string toString(UnaryOpType op) { return kUnaryNames[static_cast<int>(op)]; }
std::string toString(BinaryOpType op) { return kBinaryNames[static_cast<int>(op)]; }
std::string toString(TernaryOpType op) { return kTernaryNames[static_cast<int>(op)]; }

bool supportsType(UnaryOpType op, Type t) { return unarySupports(op, t); }
bool supportsType(BinaryOpType op, Type t) { return binarySupports(op, t); }
bool supportsType(TernaryOpType op, Type t) { return ternarySupports(op, t); }

Type resultType(UnaryOpType op, Type t) { return kUnaryBool[static_cast<int>(op)] ? BOOL : t; }
Type resultType(BinaryOpType op, Type t) { return kBinaryBool[static_cast<int>(op)] ? BOOL : t; }

std::string expr::Const::printValue() const {
  return isFloat_ ? fmt::format("{}", floatValue_) : fmt::format("{}", intValue_);
}

} // namespace aspen::ops
