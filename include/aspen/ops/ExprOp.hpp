// The element-wise operation kinds (popops' ExprOp.hpp): UnaryOpType (34), BinaryOpType (26)
// and TernaryOpType (CLAMP, SELECT), all from the table in codelets/ElementwiseOpTable.hpp,
// plus host-side queries derived from the same table.
#pragma once

#include <aspen/Type.hpp>
#include <aspen/ops/codelets/ElementwiseOpTable.hpp>

#include <string>

namespace aspen::ops {

// The enumerator's name, e.g. "ADD".
std::string toString(UnaryOpType op);
std::string toString(BinaryOpType op);
std::string toString(TernaryOpType op);

// Whether the operation accepts operands of element type `t` (its row's type set).
bool supportsType(UnaryOpType op, Type t);
bool supportsType(BinaryOpType op, Type t);
bool supportsType(TernaryOpType op, Type t);

// The element type of the result for operands of type `t` (t, or BOOL for comparisons and
// IS_FINITE/IS_INF/IS_NAN).
Type resultType(UnaryOpType op, Type t);
Type resultType(BinaryOpType op, Type t);

} // namespace aspen::ops
