// popops/ElementWise.hpp: aspen::ops (ElementWise.hpp) under PopLibs' header name; popops:: resolves to aspen::ops.
//
// As PopLibs' header does, it also gives poputil::toProfileValue for the operation kinds
// (what DI_ARGS(op) records): PopLibs' debug name of the operation, the enumerator's words
// capitalised and joined (ABSOLUTE "Absolute", GREATER_THAN_EQUAL "GreaterThanEqual").
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <poputil/DebugInfo.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/ExprOp.hpp>

#include <cctype>
#include <string>

namespace popops::compat_detail {
// "GREATER_THAN_EQUAL" -> "GreaterThanEqual".
inline std::string debugName(const std::string &enumerator) {
  std::string name;
  bool wordStart = true;
  for (char c : enumerator) {
    if (c == '_') {
      wordStart = true;
      continue;
    }
    const auto u = static_cast<unsigned char>(c);
    name += static_cast<char>(wordStart ? std::toupper(u) : std::tolower(u));
    wordStart = false;
  }
  return name;
}
} // namespace popops::compat_detail

namespace poputil {
template <> inline poplar::ProfileValue toProfileValue(const aspen::ops::UnaryOpType &op) {
  return popops::compat_detail::debugName(aspen::ops::toString(op));
}
template <> inline poplar::ProfileValue toProfileValue(const aspen::ops::BinaryOpType &op) {
  return popops::compat_detail::debugName(aspen::ops::toString(op));
}
template <> inline poplar::ProfileValue toProfileValue(const aspen::ops::TernaryOpType &op) {
  return popops::compat_detail::debugName(aspen::ops::toString(op));
}
} // namespace poputil
