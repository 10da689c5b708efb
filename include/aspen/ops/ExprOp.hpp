// The element-wise operation kinds (popops' ExprOp.hpp): UnaryOpType (34), BinaryOpType (26)
// and TernaryOpType (CLAMP, SELECT), all from the table in codelets/ElementwiseOpTable.hpp,
// plus host-side queries derived from the same table.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Type.hpp>
#include <aspen/ops/codelets/ElementwiseOpTable.hpp>

#include <string>

namespace aspen::ops {

// The enumerator's name, e.g. "ADD".
ASPEN_API std::string toString(UnaryOpType op);
ASPEN_API std::string toString(BinaryOpType op);
ASPEN_API std::string toString(TernaryOpType op);

// Whether the operation accepts operands of element type `t` (its row's type set).
ASPEN_API bool supportsType(UnaryOpType op, Type t);
ASPEN_API bool supportsType(BinaryOpType op, Type t);
ASPEN_API bool supportsType(TernaryOpType op, Type t);

// The element type of the result for operands of type `t` (t, or BOOL for comparisons and
// IS_FINITE/IS_INF/IS_NAN).
ASPEN_API Type resultType(UnaryOpType op, Type t);
ASPEN_API Type resultType(BinaryOpType op, Type t);

} // namespace aspen::ops
