// Type: the element type of a tensor. Not constructible from a string, so that an overload
// taking a DebugContext is always chosen for a string literal argument.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/Quarter.hpp>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>

namespace aspen {

// One list of element types; everything else (names, sizes, traits) is derived from it. QUARTER
// (8-bit floating point) and QUARTER_METADATA (its format and scale) are described in
// <aspen/Quarter.hpp>; a QUARTER tensor's values are only meaningful with its metadata.
//   X(enumerator, constant, name, host type, size, isFloat, isSigned)
#define ASPEN_FOR_EACH_TYPE(X)                                                                \
  X(Float, FLOAT, "float", float, 4, true, true)                                              \
  X(Half, HALF, "half", half, 2, true, true)                                                  \
  X(Int, INT, "int", int, 4, false, true)                                                     \
  X(UnsignedInt, UNSIGNED_INT, "unsigned int", unsigned int, 4, false, false)                 \
  X(Short, SHORT, "short", short, 2, false, true)                                             \
  X(UnsignedShort, UNSIGNED_SHORT, "unsigned short", unsigned short, 2, false, false)         \
  X(Char, CHAR, "char", char, 1, false, true)                                                 \
  X(UnsignedChar, UNSIGNED_CHAR, "unsigned char", unsigned char, 1, false, false)             \
  X(SignedChar, SIGNED_CHAR, "signed char", signed char, 1, false, true)                      \
  X(Bool, BOOL, "bool", bool, 1, false, false)                                                \
  X(LongLong, LONGLONG, "long long", long long, 8, false, true)                               \
  X(UnsignedLongLong, UNSIGNED_LONGLONG, "unsigned long long", unsigned long long, 8, false,  \
    false)                                                                                     \
  X(Quarter, QUARTER, "quarter", quarter, 1, true, true)                                      \
  X(QuarterMetadataType, QUARTER_METADATA, "quarter_metadata", QuarterMetadata, 1, false,     \
    false)

enum class TypeId : std::uint8_t {
#define ASPEN_TYPE_ENUM(e, c, n, h, s, f, sg) e,
  ASPEN_FOR_EACH_TYPE(ASPEN_TYPE_ENUM)
#undef ASPEN_TYPE_ENUM
  Invalid
};
inline constexpr unsigned kNumTypes = static_cast<unsigned>(TypeId::Invalid);
static_assert(kNumTypes == 14, "update ASPEN_FOR_EACH_TYPE users when adding a type");

class ASPEN_API Type {
public:
  constexpr Type() noexcept = default; // an invalid type, as a placeholder
  constexpr explicit Type(TypeId id) noexcept : id_(id) {}

  constexpr TypeId id() const noexcept { return id_; }
  constexpr bool valid() const noexcept { return id_ != TypeId::Invalid; }
  // Size in bytes of one element (0 for the invalid type).
  std::size_t size() const noexcept;
  bool isFloatingPoint() const noexcept;
  // QUARTER_METADATA is neither floating point nor integral.
  bool isIntegral() const noexcept {
    return valid() && !isFloatingPoint() && id_ != TypeId::QuarterMetadataType;
  }
  bool isSigned() const noexcept;
  // Whether values of this type mean something only with a metadata tensor (Poplar's rule):
  // true for QUARTER, whose QUARTER_METADATA gives the format and scale; false for every other
  // type, QUARTER_METADATA included.
  constexpr bool requiresMetadata() const noexcept { return id_ == TypeId::Quarter; }
  std::string toString() const;

  friend constexpr bool operator==(Type a, Type b) noexcept { return a.id_ == b.id_; }
  friend constexpr bool operator!=(Type a, Type b) noexcept { return a.id_ != b.id_; }
  friend constexpr bool operator<(Type a, Type b) noexcept { return a.id_ < b.id_; }
  friend std::ostream &operator<<(std::ostream &os, Type t) { return os << t.toString(); }

private:
  TypeId id_ = TypeId::Invalid;
};

#define ASPEN_TYPE_CONSTANT(e, c, n, h, s, f, sg) inline constexpr Type c{TypeId::e};
ASPEN_FOR_EACH_TYPE(ASPEN_TYPE_CONSTANT)
#undef ASPEN_TYPE_CONSTANT

// equivalent_device_type<T>().value is the device Type of host type T (Poplar's trait).
template <class T> struct equivalent_device_type;
#define ASPEN_EQUIVALENT_TYPE(e, c, n, h, s, f, sg)                                            \
  template <> struct equivalent_device_type<h> {                                               \
    const Type value = c;                                                                      \
  };
ASPEN_FOR_EACH_TYPE(ASPEN_EQUIVALENT_TYPE)
#undef ASPEN_EQUIVALENT_TYPE
template <> struct equivalent_device_type<long> {
  const Type value = LONGLONG;
};
template <> struct equivalent_device_type<unsigned long> {
  const Type value = UNSIGNED_LONGLONG;
};

namespace detail {

// The type of values the host hands over (constants, vertex state): an element type, or double,
// which has no device type but is what C++ literals like 0.5 are.
struct HostType {
  constexpr HostType() = default;
  constexpr HostType(Type t) : type(t) {} // an element type
  static constexpr HostType doubleType() {
    HostType h;
    h.isDouble = true;
    return h;
  }
  Type type;
  bool isDouble = false;
  std::size_t size() const { return isDouble ? sizeof(double) : type.size(); }
  bool valid() const { return isDouble || type.valid(); }
  std::string toString() const { return isDouble ? "double" : type.toString(); }
};

template <class T> constexpr HostType hostTypeOf() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_enum_v<U>)
    return hostTypeOf<std::underlying_type_t<U>>();
  else if constexpr (std::is_same_v<U, double>)
    return HostType::doubleType();
  else
    return HostType(equivalent_device_type<U>().value);
}

} // namespace detail

} // namespace aspen
