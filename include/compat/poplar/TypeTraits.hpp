// Poplar's <poplar/TypeTraits.hpp>: equivalent_device_type<T>() and TypeTraits.
#pragma once

#include <poplar/Namespace.hpp>
#include <aspen/Type.hpp>

#include <type_traits>

namespace poplar {
struct TypeTraits {
  template <class T> static TypeTraits make() { return TypeTraits{sizeof(T), alignof(T)}; }
  template <class T> static constexpr bool isSimpleType() {
    return std::is_arithmetic_v<T> || std::is_same_v<T, aspen::half>;
  }
  std::size_t size;
  std::size_t align;
};
} // namespace poplar
