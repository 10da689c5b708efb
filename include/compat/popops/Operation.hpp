// popops/Operation.hpp: popops::Operation (ADD, MUL, MIN, MAX, LOGICAL_AND, LOGICAL_OR,
// SQUARE_ADD, LOG_ADD), and its stream operators as PopLibs declares them: names in lower case
// with '-' for '_' ("add", "logical-and", "square-add", "log-add"); operator>> throws
// poputil::poplibs_error naming an unrecognised operation.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <poputil/exceptions.hpp>
#include <aspen/ops/Operation.hpp>

#include <cctype>
#include <istream>
#include <ostream>
#include <string>

namespace aspen::ops {

namespace compat_detail {
inline std::string operationToken(Operation op) {
  std::string token = toString(op);
  for (char &c : token)
    c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return token;
}
} // namespace compat_detail

inline std::ostream &operator<<(std::ostream &os, const Operation &op) {
  return os << compat_detail::operationToken(op);
}

inline std::istream &operator>>(std::istream &in, Operation &op) {
  std::string token;
  in >> token;
  for (unsigned i = 0; i < kNumOperations; ++i)
    if (token == compat_detail::operationToken(static_cast<Operation>(i))) {
      op = static_cast<Operation>(i);
      return in;
    }
  throw poputil::poplibs_error("Unrecognised operation " + token);
}

} // namespace aspen::ops
