// Lowering of an expression tree (aspen::ops::expr) into a typed list of nodes.
//
// lowerExpr checks the placeholders against the tensors given (index_error), infers the element
// type of every node with popops' rules and checks each operation's type set (type_error naming
// the operation, the types and the tensors):
//   - the operands of an operation have one type; comparisons, IS_FINITE/IS_INF/IS_NAN give BOOL;
//   - SELECT's predicate is BOOL; Cast gives its type;
//   - an untyped Const takes the type of the operands it meets (or of the result wanted by its
//     parent), and its literal's type where it meets none.
// Nodes are in evaluation order (operands before users), the last is the root; each placeholder
// has at most one Input node.
#pragma once

#include <aspen/Type.hpp>
#include <aspen/ops/Expr.hpp>

#include <string>
#include <vector>

namespace aspen::ops::detail {

struct ExprNode {
  enum class Kind { Input, Const, Cast, Unary, Binary, Ternary };
  Kind kind = Kind::Input;
  unsigned op = 0;       // the UnaryOpType/BinaryOpType/TernaryOpType, as an integer
  Type type;             // the node's result type
  Type operandType;      // operations: the type of their (first two) operands; casts: the source
  unsigned args[3] = {}; // operand node indices
  unsigned input = 0;    // Input: the 0-based index of the tensor (placeholder _1 is 0)
  // Const: the value converted to `type` (floatValue for float and half, intValue otherwise).
  bool isFloat = false;
  double floatValue = 0;
  long long intValue = 0;
};

struct LoweredExpr {
  std::vector<ExprNode> nodes;
  const ExprNode &root() const { return nodes.back(); }
  // Number of operations and casts (0 for a bare placeholder or constant).
  unsigned numOperations() const;
};

// `operandTypes[i]` and `operandNames[i]` describe the tensor that placeholder _(i+1) stands
// for; `caller` names the builder in messages.
LoweredExpr lowerExpr(const expr::Expr &e, const std::vector<Type> &operandTypes,
                      const std::vector<std::string> &operandNames, const std::string &caller);

// A short spelling of an expression, e.g. "ADD(_1,MULTIPLY(_2,2))".
std::string exprToString(const expr::Expr &e);

} // namespace aspen::ops::detail
