// Poplar's <poplar/Target.hpp>, mapped onto <aspen/Target.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Target.hpp>

#include <aspen/HalfFloat.hpp>

#include <cstddef>
#include <cstring>

namespace poplar {

// Poplar's host conversions to and from the device's half format (IEEE binary16 on every
// Aspen target; round to nearest even). `dst`/`src` hold numElements 2-byte values.
inline void copyFloatToDeviceHalf(const Target &, const float *src, void *dst,
                                  std::size_t numElements) {
  for (std::size_t i = 0; i < numElements; ++i) {
    const unsigned short bits = aspen::detail::floatToHalfBits(src[i]);
    std::memcpy(static_cast<unsigned char *>(dst) + 2 * i, &bits, 2);
  }
}
inline void copyDeviceHalfToFloat(const Target &, const void *src, float *dst,
                                  std::size_t numElements) {
  for (std::size_t i = 0; i < numElements; ++i) {
    unsigned short bits;
    std::memcpy(&bits, static_cast<const unsigned char *>(src) + 2 * i, 2);
    dst[i] = aspen::detail::halfBitsToFloat(bits);
  }
}

} // namespace poplar
