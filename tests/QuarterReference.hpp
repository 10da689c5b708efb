// An independent model of the QUARTER formats for tests, in double precision and by brute force,
// sharing nothing with aspen/Quarter.hpp's bit manipulation:
//   - decode: sign * (field == 0 ? m / 2^M * 2^(1 - bias) : (1 + m / 2^M) * 2^(field - bias))
//     * 2^scale, from the format's definition (Poplar's QuarterMetadata documentation, the FNUZ
//     formats: bias 8 for F143, 16 for F152; 0x80 the only NaN);
//   - encode: the code whose value is nearest, ties to the even code, where a magnitude at or
//     past the midpoint between the largest value and the next one the exponent would give is
//     an overflow (NaN), as is an infinity; NaN gives NaN and a result of zero is +0.
#pragma once

#include <aspen/Quarter.hpp>

#include <cmath>
#include <limits>

namespace aspen::test {

struct QuarterFormat {
  int mantissaBits, bias;
};

inline QuarterFormat formatOf(QuarterMetadata::Format f) {
  return f == QuarterMetadata::Format::F143 ? QuarterFormat{3, 8} : QuarterFormat{2, 16};
}

inline double referenceDecode(unsigned code, QuarterMetadata::Format format, int scale) {
  if (code == 0x80)
    return std::numeric_limits<double>::quiet_NaN();
  const QuarterFormat q = formatOf(format);
  const unsigned magnitude = code & 0x7f;
  const unsigned field = magnitude >> q.mantissaBits;
  const double fraction =
      double(magnitude & ((1u << q.mantissaBits) - 1)) / double(1u << q.mantissaBits);
  const double value = field == 0 ? std::ldexp(fraction, 1 - q.bias)
                                  : std::ldexp(1.0 + fraction, int(field) - q.bias);
  return std::ldexp((code & 0x80) ? -value : value, scale);
}

inline unsigned referenceEncode(double v, QuarterMetadata::Format format, int scale) {
  if (std::isnan(v) || std::isinf(v))
    return 0x80;
  const double a = std::fabs(v);
  // Candidates: the 128 magnitudes, and the overflow value one step past the largest.
  const double largest = referenceDecode(0x7f, format, scale);
  const double overflow = largest + (largest - referenceDecode(0x7e, format, scale));
  unsigned best = 0;
  double bestDistance = std::numeric_limits<double>::infinity();
  for (unsigned c = 0; c <= 0x80; ++c) {
    const double d = std::fabs(a - (c == 0x80 ? overflow : referenceDecode(c, format, scale)));
    if (d < bestDistance || (d == bestDistance && c % 2 == 0)) {
      bestDistance = d;
      best = c;
    }
  }
  if (best == 0x80)
    return 0x80;
  return best == 0 ? 0 : (best | (v < 0 ? 0x80u : 0u));
}

} // namespace aspen::test
