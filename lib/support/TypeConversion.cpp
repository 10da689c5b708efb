#include "TypeConversion.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace aspen::detail {

namespace {

template <class T> T load(const void *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T> void store(void *p, T v) { std::memcpy(p, &v, sizeof v); }

// A host value held exactly: integers as 64-bit integers, floating point as double.
struct HostValue {
  bool isFloat = false;
  bool isNegative = false;
  std::uint64_t magnitudeBits = 0; // integers: the value as uint64 (two's complement if signed)
  double real = 0;
};

// One element type's value (a template, so that the branches not taken are not compiled).
template <class H, bool IsFloat, bool IsSigned> void readAs(HostValue &v, const void *p) {
  if constexpr (std::is_same_v<H, quarter> || std::is_same_v<H, QuarterMetadata>) {
    throw type_error(std::string("a ") + Type(equivalent_device_type<H>().value).toString() +
                     " value has no numeric value without its metadata; convert quarter data "
                     "with convertFromDeviceType and a QuarterMetadata");
  } else if constexpr (IsFloat) {
    v.isFloat = true;
    v.real = static_cast<double>(static_cast<float>(load<H>(p)));
  } else {
    const H x = load<H>(p);
    v.isNegative = IsSigned && static_cast<long long>(x) < 0;
    v.magnitudeBits = static_cast<std::uint64_t>(static_cast<long long>(x));
    if constexpr (!IsSigned)
      v.magnitudeBits = static_cast<std::uint64_t>(x);
    v.real = static_cast<double>(x);
  }
}

HostValue read(HostType host, const void *p) {
  HostValue v;
  if (host.isDouble) {
    v.isFloat = true;
    v.real = load<double>(p);
    return v;
  }
  switch (host.type.id()) {
#define ASPEN_READ(e, c, n, h, s, f, sg)                                                       \
  case TypeId::e:                                                                              \
    readAs<h, f, sg>(v, p);                                                                    \
    break;
    ASPEN_FOR_EACH_TYPE(ASPEN_READ)
#undef ASPEN_READ
  case TypeId::Invalid:
    throw type_error("cannot convert a value of an invalid type");
  }
  return v;
}

std::string describe(const HostValue &v) {
  if (v.isFloat)
    return fmt::format("{}", v.real);
  if (v.isNegative)
    return fmt::format("{}", static_cast<long long>(v.magnitudeBits));
  return fmt::format("{}", v.magnitudeBits);
}

template <class T> bool fitsInteger(const HostValue &v) {
  if (v.isFloat) {
    if (!std::isfinite(v.real) || std::trunc(v.real) != v.real)
      return false;
    return v.real >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
           v.real <= static_cast<double>(std::numeric_limits<T>::max());
  }
  if (v.isNegative)
    return std::numeric_limits<T>::is_signed &&
           static_cast<long long>(v.magnitudeBits) >=
               static_cast<long long>(std::numeric_limits<T>::lowest());
  return v.magnitudeBits <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
}

template <class T> T toInteger(const HostValue &v) {
  if (v.isFloat)
    return static_cast<T>(v.real);
  if (v.isNegative)
    return static_cast<T>(static_cast<long long>(v.magnitudeBits));
  return static_cast<T>(v.magnitudeBits);
}

// Integer destinations; false for the others (handled by the caller or refused).
template <class H, bool IsFloat>
bool writeInteger(const HostValue &v, HostType hostType, Type dstType, void *dst,
                  const std::string &what) {
  if constexpr (!IsFloat && !std::is_same_v<H, bool> && !std::is_same_v<H, QuarterMetadata>) {
    if (!fitsInteger<H>(v))
      throw type_error(fmt::format("{}: value {} of host type {} is not representable as {}", what,
                                   describe(v), hostType.toString(), dstType.toString()));
    store(dst, toInteger<H>(v));
    return true;
  } else {
    return false;
  }
}

void writeOne(const HostValue &v, HostType hostType, Type dstType, void *dst, const std::string &what) {
  if (dstType == FLOAT) {
    store(dst, static_cast<float>(v.real));
    return;
  }
  if (dstType == HALF) {
    store(dst, half(static_cast<float>(v.real)).bits());
    return;
  }
  if (dstType == BOOL) {
    if (v.isFloat ? (v.real != 0.0 && v.real != 1.0) : (v.isNegative || v.magnitudeBits > 1))
      throw type_error(fmt::format("{}: value {} of host type {} is not a bool (0 or 1)", what,
                                   describe(v), hostType.toString()));
    store(dst, static_cast<bool>(v.isFloat ? v.real != 0.0 : v.magnitudeBits != 0));
    return;
  }
  if (dstType == QUARTER || dstType == QUARTER_METADATA)
    throw type_error(fmt::format("{}: a value of host type {} cannot become {}: quarter values "
                                 "need metadata (convert with convertToDeviceType and a "
                                 "QuarterMetadata, or cast on the device with a metadata tensor)",
                                 what, hostType.toString(), dstType.toString()));
  switch (dstType.id()) {
#define ASPEN_WRITE_INT(e, c, n, h, s, f, sg)                                                  \
  case TypeId::e:                                                                              \
    if (writeInteger<h, f>(v, hostType, dstType, dst, what))                                   \
      return;                                                                                  \
    break;
    ASPEN_FOR_EACH_TYPE(ASPEN_WRITE_INT)
#undef ASPEN_WRITE_INT
  case TypeId::Invalid:
    break;
  }
  throw type_error(fmt::format("{}: cannot convert to an invalid type", what));
}

} // namespace

void convertValues(HostType hostType, const void *src, Type dstType, void *dst, std::size_t count,
                   const std::string &what) {
  if (!hostType.valid())
    throw type_error(fmt::format("{}: the host value's type is not an Aspen element type", what));
  if (!hostType.isDouble && hostType.type == dstType) {
    if (count != 0) // memcpy's pointers must be valid even for no bytes
      std::memcpy(dst, src, count * dstType.size());
    return;
  }
  const auto *in = static_cast<const std::uint8_t *>(src);
  auto *out = static_cast<std::uint8_t *>(dst);
  for (std::size_t i = 0; i < count; ++i)
    writeOne(read(hostType, in + i * hostType.size()), hostType, dstType,
             out + i * dstType.size(), what);
}

double loadAsDouble(Type t, const void *p) { return read(HostType(t), p).real; }

} // namespace aspen::detail
