// popops::Operation: the reduction operations, from one table.
//
// ASPEN_FOR_EACH_REDUCE_OPERATION(X) lists every operation as
//   X(NAME, identity, types, compensated)
// and is the only list: the enum, the names, the type rules (lib/ops/ReduceValidate.cpp), the
// codelet traits (codelets/ops/reduceOps.hpp) and the tests' host reference are derived from it.
//   identity     the value of an empty reduction: Zero, One, Highest (+inf / largest), Lowest
//                (-inf / smallest), True, False
//   types        Numeric (float, half, int, unsigned int), Logical (bool), Floating (float, half)
//   compensated  partials carry a second term (the compensation of a TwoSum sum; for LOG_ADD the running
//                maximum), so that long float reductions stay accurate
//
// This header is also included by codelets: no standard library.
#pragma once

#include <aspen/Export.hpp>

#define ASPEN_FOR_EACH_REDUCE_OPERATION(X)                                                       \
  X(ADD, Zero, Numeric, true)                                                                    \
  X(MUL, One, Numeric, false)                                                                    \
  X(MIN, Highest, Numeric, false)                                                                \
  X(MAX, Lowest, Numeric, false)                                                                 \
  X(LOGICAL_AND, True, Logical, false)                                                           \
  X(LOGICAL_OR, False, Logical, false)                                                           \
  X(SQUARE_ADD, Zero, Numeric, true)                                                             \
  X(LOG_ADD, Lowest, Floating, true)

namespace aspen::ops {

enum class Operation : unsigned {
#define ASPEN_REDUCE_OPERATION_ENUM(name, identity, types, compensated) name,
  ASPEN_FOR_EACH_REDUCE_OPERATION(ASPEN_REDUCE_OPERATION_ENUM)
#undef ASPEN_REDUCE_OPERATION_ENUM
};

#define ASPEN_REDUCE_OPERATION_COUNT(name, identity, types, compensated) +1
inline constexpr unsigned kNumOperations = 0 ASPEN_FOR_EACH_REDUCE_OPERATION(ASPEN_REDUCE_OPERATION_COUNT);
#undef ASPEN_REDUCE_OPERATION_COUNT
static_assert(kNumOperations == 8, "popops has eight reduction operations");

// "ADD", "MUL", ...: the enumerator's name (host only).
ASPEN_API const char *toString(Operation op);

} // namespace aspen::ops
