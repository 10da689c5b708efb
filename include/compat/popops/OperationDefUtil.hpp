// PopLibs' <popops/OperationDefUtil.hpp>: poputil::asString(Operation), the operation's name in
// words ("Add", "Logical And", "Square Add", "Log Add"), and the Operation spelling for
// templateVertex ("popops::Operation::ADD"), as PopLibs declares them.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Operation.hpp>
#include <poputil/VertexTemplates.hpp>
#include <poputil/exceptions.hpp>

#include <array>
#include <cctype>
#include <string>

namespace poputil {

namespace compat_detail {
// "LOGICAL_AND" -> "Logical And": each word capitalised, '_' as a space.
inline std::string operationWords(popops::Operation op) {
  std::string words = aspen::ops::toString(op);
  bool wordStart = true;
  for (char &c : words) {
    if (c == '_') {
      c = ' ';
      wordStart = true;
      continue;
    }
    c = wordStart ? c : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    wordStart = false;
  }
  return words;
}
} // namespace compat_detail

inline const char *asString(const popops::Operation &op) {
  static const auto names = [] {
    std::array<std::string, aspen::ops::kNumOperations> words;
    for (unsigned i = 0; i < words.size(); ++i)
      words[i] = compat_detail::operationWords(static_cast<popops::Operation>(i));
    return words;
  }();
  const auto i = static_cast<unsigned>(op);
  if (i >= names.size())
    throw poputil::poplibs_error("Unsupported operation type " + std::to_string(i));
  return names[i].c_str();
}

template <> struct VertexTemplateToString<popops::Operation> {
  static std::string to_string(const popops::Operation &op) {
    return std::string("popops::Operation::") + aspen::ops::toString(op);
  }
};

} // namespace poputil
