// templateVertex: the name of a template vertex instance ("ns::V<float,true>"), as poputil
// spells it, matching the names Aspen gives explicit instantiations in codelet files.
#pragma once

#include <aspen/Type.hpp>

#include <string>
#include <type_traits>

namespace aspen::util {

namespace detail {
inline std::string templateArgument(const std::string &s) { return s; }
inline std::string templateArgument(const char *s) { return s; }
inline std::string templateArgument(Type t) { return t.toString(); }
inline std::string templateArgument(bool b) { return b ? "true" : "false"; }
template <class T, class = std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>>
std::string templateArgument(T v) {
  return std::to_string(v);
}
} // namespace detail

template <class... Args> std::string templateVertex(const std::string &name, Args &&...args) {
  std::string result = name + "<";
  bool first = true;
  ((result += (first ? "" : ",") + detail::templateArgument(std::forward<Args>(args)), first = false),
   ...);
  return result + ">";
}

} // namespace aspen::util
