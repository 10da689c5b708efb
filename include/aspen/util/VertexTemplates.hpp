// templateVertex: the name of a template vertex instance ("ns::V<float,true>"), as poputil
// spells it, matching the names Aspen gives explicit instantiations in codelet files.
//
// Each argument is spelled by VertexTemplateToString<T>::to_string (poputil's customisation
// point): Type by its name, bool as true/false, integers in decimal, strings as they are. A
// program specialises it for its own enums, as popnn's NonLinearityDefUtil.hpp does for
// NonLinearityType. The template is declared in namespace poputil, PopLibs' own, because an
// explicit specialisation must be written in the template's namespace and ported programs write
// theirs in poputil; aspen::util::VertexTemplateToString names the same template.
#pragma once

#include <aspen/Type.hpp>

#include <string>
#include <type_traits>

namespace poputil {

template <class T> struct VertexTemplateToString {
  static_assert(std::is_integral_v<T>, "templateVertex: no VertexTemplateToString for this "
                                       "argument type (specialise it)");
  static std::string to_string(const T &value) { return std::to_string(value); }
};
template <> struct VertexTemplateToString<bool> {
  static std::string to_string(const bool &value) { return value ? "true" : "false"; }
};
template <> struct VertexTemplateToString<aspen::Type> {
  static std::string to_string(const aspen::Type &type) { return type.toString(); }
};
template <> struct VertexTemplateToString<std::string> {
  static std::string to_string(const std::string &s) { return s; }
};
template <> struct VertexTemplateToString<const char *> {
  static std::string to_string(const char *s) { return s; }
};
template <> struct VertexTemplateToString<char *> {
  static std::string to_string(const char *s) { return s; }
};

} // namespace poputil

namespace aspen::util {

using ::poputil::VertexTemplateToString;

template <class... Args> std::string templateVertex(const std::string &name, Args &&...args) {
  std::string result = name + "<";
  bool first = true;
  ((result += (first ? "" : ",") +
              VertexTemplateToString<std::decay_t<Args>>::to_string(std::forward<Args>(args)),
    first = false),
   ...);
  return result + ">";
}

} // namespace aspen::util
