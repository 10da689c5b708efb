// aspen::quarter and aspen::QuarterMetadata: Poplar's 8-bit floating-point element type.
//
// A QUARTER element is one byte. Its value is decoded with a QuarterMetadata, one byte held in a
// QUARTER_METADATA tensor, which gives the format and a scale:
//
//   value = decoded(code, format) * 2^scale        scale in [-32, 31]
//
//   format  sign exp mantissa  bias  largest   smallest normal  smallest subnormal
//   F143    1    4   3         8     240       2^-7             2^-10
//   F152    1    5   2         16    57344     2^-15            2^-17
//
// Every exponent field is finite (0x7F is the largest value); there are no infinities and no
// negative zero: 0x80 is the one NaN. These are the FNUZ formats (E4M3FNUZ, E5M2FNUZ).
// Encoding (float or half to quarter) divides by 2^scale exactly and rounds to nearest, ties to
// even, once. A magnitude that rounds above the largest value, an infinity or a NaN gives NaN
// (0x80); one that rounds to zero gives +0, whatever its sign. Decoding is exact in float for
// every scale; into half it rounds once, to nearest even.
//
// QuarterMetadata's byte: bit 7 the format (0 = F143, 1 = F152), bits 0..5 the scale in two's
// complement. This header uses no standard library so that codelets compile with NVRTC.
#pragma once

#include <aspen/HalfFloat.hpp>

#if !defined(__CUDACC_RTC__) && !defined(__CUDA_ARCH__)
#define ASPEN_QUARTER_HOST 1
#include <aspen/Error.hpp>
#include <ostream>
#include <string>
#endif

namespace aspen {

class QuarterMetadata {
public:
  enum class Format : unsigned char { F143 = 0, F152 = 1 };
  static constexpr int kMinScale = -32;
  static constexpr int kMaxScale = 31;

  QuarterMetadata() = default; // F143, scale 0
  // Raises aspen::type_error on the host when scale is outside [-32, 31] (an int, so that no
  // value wraps before it is checked).
  ASPEN_HD QuarterMetadata(Format format, int scale)
      : value_(static_cast<unsigned char>((format == Format::F152 ? 0x80u : 0u) |
                                          (static_cast<unsigned>(scale) & 0x3fu))) {
#ifdef ASPEN_QUARTER_HOST
    if (scale < kMinScale || scale > kMaxScale)
      throw type_error("QuarterMetadata: scale " + std::to_string(scale) + " is outside [-32, 31]");
    if (format != Format::F143 && format != Format::F152)
      throw type_error("QuarterMetadata: the format is neither F143 nor F152");
#endif
  }
  // From getBinary()'s byte; bit 6 must be clear.
  ASPEN_HD explicit QuarterMetadata(unsigned char value) : value_(value) {
#ifdef ASPEN_QUARTER_HOST
    if (value & 0x40u)
      throw type_error("QuarterMetadata: byte " + std::to_string(unsigned(value)) +
                       " has bit 6 set, which no metadata uses");
#endif
  }

  // From a byte, unchecked (codelets; bit 6 is ignored by every query).
  ASPEN_HD static QuarterMetadata fromBits(unsigned char value) {
    QuarterMetadata m;
    m.value_ = value;
    return m;
  }

  ASPEN_HD Format getFormat() const { return (value_ & 0x80u) ? Format::F152 : Format::F143; }
  ASPEN_HD signed char getScale() const {
    const int low = value_ & 0x3f;
    return static_cast<signed char>(low >= 32 ? low - 64 : low);
  }
  ASPEN_HD unsigned char getBinary() const { return value_; }
  ASPEN_HD const unsigned char *data() const { return &value_; }
  ASPEN_HD unsigned mantissaBits() const { return getFormat() == Format::F143 ? 3u : 2u; }
  ASPEN_HD int exponentBias() const { return getFormat() == Format::F143 ? 8 : 16; }

  ASPEN_HD friend bool operator==(QuarterMetadata a, QuarterMetadata b) {
    return a.value_ == b.value_;
  }
  ASPEN_HD friend bool operator!=(QuarterMetadata a, QuarterMetadata b) {
    return a.value_ != b.value_;
  }

#ifdef ASPEN_QUARTER_HOST
  // "F143 scale -3".
  std::string toString() const {
    return std::string(getFormat() == Format::F143 ? "F143" : "F152") + " scale " +
           std::to_string(int(getScale()));
  }
  friend std::ostream &operator<<(std::ostream &os, const QuarterMetadata &m) {
    return os << m.toString();
  }
#endif

private:
  unsigned char value_ = 0;
};

// One QUARTER element: its code, without its metadata.
struct quarter {
  unsigned char bits;
};

static_assert(sizeof(QuarterMetadata) == 1, "QuarterMetadata must be one byte");
static_assert(sizeof(quarter) == 1, "quarter must be one byte");

namespace detail {

inline constexpr unsigned char kQuarterNaN = 0x80;

// The value of `code` under `m`, exactly.
ASPEN_HD inline float quarterToFloat(unsigned char code, QuarterMetadata m) {
  if (code == kQuarterNaN)
    return bitsFloat(0x7fc00000u);
  const unsigned mb = m.mantissaBits();
  const unsigned magnitude = code & 0x7fu;
  const unsigned field = magnitude >> mb;
  const unsigned mantissa = magnitude & ((1u << mb) - 1u);
  // magnitude = n * 2^k with n the significand as an integer.
  const unsigned n = field == 0 ? mantissa : ((1u << mb) | mantissa);
  const int k = (field == 0 ? 1 : static_cast<int>(field)) - m.exponentBias() -
                static_cast<int>(mb) + m.getScale();
  // 2^k is a normal float for every code and scale (k in [-51, 44]).
  const float value = static_cast<float>(n) * bitsFloat(static_cast<unsigned>(k + 127) << 23);
  return (code & 0x80u) ? -value : value;
}

// `value` divided by 2^scale and rounded to nearest even, as a code of m's format.
ASPEN_HD inline unsigned char floatToQuarter(float value, QuarterMetadata m) {
  const unsigned x = floatBits(value);
  const unsigned sign = x >> 31;
  const unsigned absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or NaN
    return kQuarterNaN;
  if (absx == 0)
    return 0;
  const int mb = static_cast<int>(m.mantissaBits());
  const int bias = m.exponentBias();
  // absx = M * 2^(E - 23): M has its implicit bit for normals (E is the float's exponent).
  int e = static_cast<int>(absx >> 23);
  unsigned M = absx & 0x7fffffu;
  if (e == 0)
    e = 1; // float subnormal: no implicit bit
  else
    M |= 0x800000u;
  const int E = e - 127 - m.getScale(); // the exponent after the division by 2^scale
  // Quanta of the result: 2^(max(E, 1 - bias) - mb); n = M * 2^(E - 23) / quantum, rounded.
  const int quantumExp = (E > 1 - bias ? E : 1 - bias) - mb;
  const int shift = quantumExp - (E - 23); // at least 23 - mb, so > 0
  if (shift >= 32)
    return 0; // M < 2^24 is below half a quantum 2^(shift - 1)
  unsigned n = M >> shift;
  const unsigned remainder = M & ((1u << shift) - 1u);
  const unsigned halfway = 1u << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (n & 1u)))
    ++n;
  if (n == 0)
    return 0; // no negative zero
  // Normal results: code = (E + bias - 1) << mb plus n (n in [2^mb, 2^(mb+1)], a carry to the
  // next exponent included); subnormal ones: code = n (2^mb being the smallest normal).
  const int base = E > 1 - bias ? E + bias - 1 : 0;
  if (base > (0x7f >> mb)) // clear of the range before the shift (and any int overflow)
    return kQuarterNaN;
  const unsigned code = (static_cast<unsigned>(base) << mb) + n;
  if (code > 0x7fu)
    return kQuarterNaN;
  return static_cast<unsigned char>((sign << 7) | code);
}

ASPEN_HD inline unsigned char halfToQuarter(half value, QuarterMetadata m) {
  return floatToQuarter(static_cast<float>(value), m);
}
ASPEN_HD inline half quarterToHalf(unsigned char code, QuarterMetadata m) {
  return half(quarterToFloat(code, m));
}

} // namespace detail

} // namespace aspen
