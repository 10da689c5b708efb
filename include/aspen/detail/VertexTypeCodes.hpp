// Element type codes of codelet fields: the aspen::TypeId value of a C++ element type, computed
// at compile time so that compiled metadata is exact for template instances. Enums use their
// underlying type; anything else is kOtherTypeCode. No standard library (NVRTC).
#pragma once

#include <aspen/HalfFloat.hpp>
#include <aspen/Quarter.hpp>
#include <aspen/detail/VertexAbi.hpp>

namespace aspen {
namespace detail {

template <class T> struct TypeCodeOf { static constexpr unsigned char value = kOtherTypeCode; };
template <class T> struct TypeCodeOf<const T> : TypeCodeOf<T> {};
template <class T> struct TypeCodeOf<volatile T> : TypeCodeOf<T> {};
template <class T> struct TypeCodeOf<const volatile T> : TypeCodeOf<T> {};

#define ASPEN_VERTEX_TYPE_CODE(type, code)                                                         \
  template <> struct TypeCodeOf<type> { static constexpr unsigned char value = code; };
ASPEN_VERTEX_TYPE_CODE(float, 0)
ASPEN_VERTEX_TYPE_CODE(half, 1)
ASPEN_VERTEX_TYPE_CODE(int, 2)
ASPEN_VERTEX_TYPE_CODE(unsigned, 3)
ASPEN_VERTEX_TYPE_CODE(short, 4)
ASPEN_VERTEX_TYPE_CODE(unsigned short, 5)
ASPEN_VERTEX_TYPE_CODE(char, 6)
ASPEN_VERTEX_TYPE_CODE(unsigned char, 7)
ASPEN_VERTEX_TYPE_CODE(signed char, 8)
ASPEN_VERTEX_TYPE_CODE(bool, 9)
ASPEN_VERTEX_TYPE_CODE(long long, 10)
ASPEN_VERTEX_TYPE_CODE(unsigned long long, 11)
ASPEN_VERTEX_TYPE_CODE(long, 10)
ASPEN_VERTEX_TYPE_CODE(unsigned long, 11)
ASPEN_VERTEX_TYPE_CODE(quarter, 12)
ASPEN_VERTEX_TYPE_CODE(QuarterMetadata, 13)
#undef ASPEN_VERTEX_TYPE_CODE

template <class T, bool IsEnum = __is_enum(T)> struct ElementTypeCode : TypeCodeOf<T> {};
template <class T> struct ElementTypeCode<T, true> : TypeCodeOf<__underlying_type(T)> {};

} // namespace detail
} // namespace aspen
