// aspen::half: IEEE 754 binary16 storage with float arithmetic.
//
// Conversion from float rounds to nearest, ties to even, and keeps NaN, infinities, signed zero
// and subnormals. Arithmetic happens in float and rounds back on store. This header uses no
// standard library so that codelets including it compile with NVRTC as well as on the host.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define ASPEN_HD __host__ __device__
#else
#define ASPEN_HD
#endif

namespace aspen {

namespace detail {

// NVRTC has no __builtin_memcpy; device code uses CUDA's bit-cast intrinsics.
ASPEN_HD inline unsigned floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  unsigned u;
  __builtin_memcpy(&u, &f, sizeof u);
  return u;
#endif
}

ASPEN_HD inline float bitsFloat(unsigned u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
#endif
}

ASPEN_HD inline unsigned short floatToHalfBits(float value) {
  const unsigned x = floatBits(value);
  const unsigned sign = (x >> 16) & 0x8000u;
  const unsigned absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) { // inf or NaN; NaN keeps a quiet payload bit
    const unsigned mantissa = absx > 0x7f800000u ? (0x200u | ((absx >> 13) & 0x3ffu)) : 0u;
    return static_cast<unsigned short>(sign | 0x7c00u | mantissa);
  }
  if (absx >= 0x477ff000u) // rounds to a value >= 65520: overflow to infinity
    return static_cast<unsigned short>(sign | 0x7c00u);
  if (absx < 0x38800000u) { // result is subnormal or zero in half
    if (absx < 0x33000000u) // below half the smallest subnormal (2^-25): rounds to zero
      return static_cast<unsigned short>(sign);
    const unsigned exponent = absx >> 23;
    const unsigned mantissa = (absx & 0x7fffffu) | 0x800000u;
    const unsigned shift = 126u - exponent; // 14..24
    unsigned result = mantissa >> shift;
    const unsigned remainder = mantissa & ((1u << shift) - 1u);
    const unsigned halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (result & 1u)))
      ++result;
    return static_cast<unsigned short>(sign | result);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  unsigned result = ((absx - 0x38000000u) >> 13);
  const unsigned remainder = absx & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u)))
    ++result; // a carry into the exponent is the correct rounding
  return static_cast<unsigned short>(sign | result);
}

ASPEN_HD inline float halfBitsToFloat(unsigned short h) {
  const unsigned sign = (static_cast<unsigned>(h) & 0x8000u) << 16;
  const unsigned exponent = (h >> 10) & 0x1fu;
  unsigned mantissa = h & 0x3ffu;
  if (exponent == 0x1fu)
    return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0)
      return bitsFloat(sign);
    // Subnormal, mantissa * 2^-24: shift the leading one up to the implicit bit (bit 10),
    // lowering the float exponent from that of 2^-14 (113) once per shift.
    unsigned e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    return bitsFloat(sign | (e << 23) | ((mantissa & 0x3ffu) << 13));
  }
  return bitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

} // namespace detail

class half {
public:
  half() = default;
  ASPEN_HD half(float f) : bits_(detail::floatToHalfBits(f)) {}
  ASPEN_HD half(double d) : bits_(detail::floatToHalfBits(static_cast<float>(d))) {}
  ASPEN_HD half(int i) : bits_(detail::floatToHalfBits(static_cast<float>(i))) {}
  ASPEN_HD half(unsigned i) : bits_(detail::floatToHalfBits(static_cast<float>(i))) {}
  ASPEN_HD operator float() const { return detail::halfBitsToFloat(bits_); }

  ASPEN_HD static half fromBits(unsigned short bits) {
    half h;
    h.bits_ = bits;
    return h;
  }
  ASPEN_HD unsigned short bits() const { return bits_; }

  ASPEN_HD half &operator+=(float v) { return *this = half(float(*this) + v); }
  ASPEN_HD half &operator-=(float v) { return *this = half(float(*this) - v); }
  ASPEN_HD half &operator*=(float v) { return *this = half(float(*this) * v); }
  ASPEN_HD half &operator/=(float v) { return *this = half(float(*this) / v); }
  ASPEN_HD half operator-() const { return fromBits(static_cast<unsigned short>(bits_ ^ 0x8000u)); }

private:
  unsigned short bits_;
};

static_assert(sizeof(half) == 2, "half must be two bytes");

} // namespace aspen
