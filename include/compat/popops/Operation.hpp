// popops/Operation.hpp: popops::Operation (ADD, MUL, MIN, MAX, LOGICAL_AND, LOGICAL_OR,
// SQUARE_ADD, LOG_ADD) and its stream operators as PopLibs declares them. operator<< writes the
// enumerator's name ("ADD", "LOGICAL_AND", "LOG_ADD"), as PopLibs does; operator>> reads those
// names and, ignoring case and taking '-' for '_', the lower-case spellings too ("add",
// "square-add", "log_add"). An unrecognised word throws poputil::poplibs_error naming it and
// the operations.
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
// The word as an enumerator name: upper case, '-' read as '_'.
inline std::string operationName(std::string word) {
  for (char &c : word)
    c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return word;
}
} // namespace compat_detail

inline std::ostream &operator<<(std::ostream &os, const Operation &op) {
  return os << toString(op);
}

inline std::istream &operator>>(std::istream &in, Operation &op) {
  std::string word;
  in >> word;
  const std::string name = compat_detail::operationName(word);
  std::string names;
  for (unsigned i = 0; i < kNumOperations; ++i) {
    const auto candidate = static_cast<Operation>(i);
    if (name == toString(candidate)) {
      op = candidate;
      return in;
    }
    names += std::string(i ? ", " : "") + toString(candidate);
  }
  throw poputil::poplibs_error("Unrecognised operation '" + word +
                               "': popops::Operation is one of " + names +
                               " (in any case, '-' for '_')");
}

} // namespace aspen::ops
