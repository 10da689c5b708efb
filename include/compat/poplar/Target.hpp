// Poplar's <poplar/Target.hpp>, mapped onto <aspen/Target.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Target.hpp>

#include <aspen/HalfFloat.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace poplar {

namespace compat_detail {
// `value` rounded to the nearest half, ties to even, in one rounding: the double is first
// rounded to float by rounding to odd (truncate, then set the last bit when inexact), which
// keeps every bit the half rounding needs, since a float's 24 bits are at least 2 x 11 + 2.
inline unsigned short doubleToHalfBits(double value) {
  float f = static_cast<float>(value);
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (!std::isnan(value)) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(value))
      --bits; // towards zero: the float below |value| (FLT_MAX for a value past it)
    float truncated;
    std::memcpy(&truncated, &bits, 4);
    if (static_cast<double>(truncated) != value)
      bits |= 1u;
  }
  std::memcpy(&f, &bits, 4);
  return aspen::detail::floatToHalfBits(f);
}
} // namespace compat_detail

namespace compat_detail {
// numElements 2-byte halves at dst, each toBits(src[i]); and back, each fromBits(bits).
template <class T, class ToBits>
void copyToDeviceHalf(const T *src, void *dst, std::size_t numElements, ToBits toBits) {
  for (std::size_t i = 0; i < numElements; ++i) {
    const unsigned short bits = toBits(src[i]);
    std::memcpy(static_cast<unsigned char *>(dst) + 2 * i, &bits, 2);
  }
}
template <class T>
void copyFromDeviceHalf(const void *src, T *dst, std::size_t numElements) {
  for (std::size_t i = 0; i < numElements; ++i) {
    unsigned short bits;
    std::memcpy(&bits, static_cast<const unsigned char *>(src) + 2 * i, 2);
    dst[i] = static_cast<T>(aspen::detail::halfBitsToFloat(bits)); // exact: halves fit both
  }
}
} // namespace compat_detail

// Poplar's host conversions to and from the device's half format (IEEE binary16 on every
// Aspen target; round to nearest even). `dst`/`src` hold numElements 2-byte values. Doubles
// are rounded to half once (not through float, whose own rounding could move a value onto a
// tie), and halves are exact in float and double.
inline void copyFloatToDeviceHalf(const Target &, const float *src, void *dst,
                                  std::size_t numElements) {
  compat_detail::copyToDeviceHalf(src, dst, numElements, aspen::detail::floatToHalfBits);
}
inline void copyDeviceHalfToFloat(const Target &, const void *src, float *dst,
                                  std::size_t numElements) {
  compat_detail::copyFromDeviceHalf(src, dst, numElements);
}
inline void copyDoubleToDeviceHalf(const Target &, const double *src, void *dst,
                                   std::size_t numElements) {
  compat_detail::copyToDeviceHalf(src, dst, numElements, compat_detail::doubleToHalfBits);
}
inline void copyDeviceHalfToDouble(const Target &, const void *src, double *dst,
                                   std::size_t numElements) {
  compat_detail::copyFromDeviceHalf(src, dst, numElements);
}

} // namespace poplar
