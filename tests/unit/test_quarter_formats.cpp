// The QUARTER formats (aspen/Quarter.hpp) against an independent model (QuarterReference.hpp:
// the formats' definition in double precision, encoding by brute-force nearest search): every
// one of the 256 codes of each format at every scale, every half value, midpoints, overflow,
// and the host conversions of aspen/TypeConversion.hpp; plus values worked out by hand.
#include "QuarterReference.hpp"

#include <aspen/HalfFloat.hpp>
#include <aspen/Quarter.hpp>
#include <aspen/Type.hpp>
#include <aspen/TypeConversion.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace aspen;
using Format = QuarterMetadata::Format;

namespace {

const Format kFormats[] = {Format::F143, Format::F152};

bool sameValue(double a, double b) { return std::isnan(a) ? std::isnan(b) : a == b; }

} // namespace

TEST_CASE("quarter types: sizes, traits and names", "[unit][quarter]") {
  REQUIRE(QUARTER.size() == 1);
  REQUIRE(QUARTER_METADATA.size() == 1);
  REQUIRE(QUARTER.isFloatingPoint());
  REQUIRE(!QUARTER.isIntegral());
  REQUIRE(!QUARTER_METADATA.isFloatingPoint());
  REQUIRE(!QUARTER_METADATA.isIntegral());
  REQUIRE(QUARTER.toString() == "quarter");
  REQUIRE(QUARTER_METADATA.toString() == "quarter_metadata");
  REQUIRE(equivalent_device_type<QuarterMetadata>().value == QUARTER_METADATA);
}

TEST_CASE("QuarterMetadata holds a format and a scale in one byte", "[unit][quarter]") {
  const QuarterMetadata def;
  REQUIRE(def.getFormat() == Format::F143);
  REQUIRE(int(def.getScale()) == 0);
  for (Format f : kFormats)
    for (int s = QuarterMetadata::kMinScale; s <= QuarterMetadata::kMaxScale; ++s) {
      const QuarterMetadata m(f, s);
      REQUIRE(m.getFormat() == f);
      REQUIRE(int(m.getScale()) == s);
      REQUIRE(QuarterMetadata(m.getBinary()) == m); // the byte round trips
    }
  // By hand: F152 is bit 7, -3 is 0b111101 in six bits.
  REQUIRE(unsigned(QuarterMetadata(Format::F152, -3).getBinary()) == 0xbdu);
  REQUIRE(unsigned(QuarterMetadata(Format::F143, 31).getBinary()) == 0x1fu);
  REQUIRE(QuarterMetadata(Format::F143, 1) != QuarterMetadata(Format::F152, 1));
  REQUIRE(QuarterMetadata(Format::F152, -3).toString() == "F152 scale -3");
  REQUIRE_THROWS_AS(QuarterMetadata(Format::F143, 32), type_error);
  REQUIRE_THROWS_AS(QuarterMetadata(Format::F143, -33), type_error);
  REQUIRE_THROWS_AS(QuarterMetadata(static_cast<unsigned char>(0x40)), type_error);
}

TEST_CASE("quarter values worked out by hand", "[unit][quarter]") {
  const QuarterMetadata f143(Format::F143, 0), f152(Format::F152, 0);
  using aspen::detail::quarterToFloat;
  REQUIRE(quarterToFloat(0x00, f143) == 0.0f);
  REQUIRE(quarterToFloat(0x01, f143) == 0.0009765625f); // smallest subnormal, 2^-10
  REQUIRE(quarterToFloat(0x07, f143) == 7 * 0.0009765625f);
  REQUIRE(quarterToFloat(0x08, f143) == 0.0078125f); // smallest normal, 2^-7
  REQUIRE(quarterToFloat(0x40, f143) == 1.0f);       // exponent field 8 = bias
  REQUIRE(quarterToFloat(0x44, f143) == 1.5f);
  REQUIRE(quarterToFloat(0x7f, f143) == 240.0f); // 1.875 * 2^7
  REQUIRE(quarterToFloat(0xc0, f143) == -1.0f);
  REQUIRE(quarterToFloat(0xff, f143) == -240.0f);
  REQUIRE(std::isnan(quarterToFloat(0x80, f143)));
  REQUIRE(quarterToFloat(0x01, f152) == std::ldexp(1.0f, -17));
  REQUIRE(quarterToFloat(0x04, f152) == std::ldexp(1.0f, -15));
  REQUIRE(quarterToFloat(0x40, f152) == 1.0f);
  REQUIRE(quarterToFloat(0x7f, f152) == 57344.0f); // 1.75 * 2^15
  REQUIRE(quarterToFloat(0x40, QuarterMetadata(Format::F143, 3)) == 8.0f);
  REQUIRE(quarterToFloat(0x01, QuarterMetadata(Format::F143, -32)) == std::ldexp(1.0f, -42));
  // Encoding: 1.0625 lies half way between 1.0 (0x40) and 1.125 (0x41): the even code wins;
  // 1.1875 between 0x41 and 1.25 (0x42) goes up to the even 0x42.
  using aspen::detail::floatToQuarter;
  REQUIRE(floatToQuarter(1.0625f, f143) == 0x40);
  REQUIRE(floatToQuarter(1.1875f, f143) == 0x42);
  REQUIRE(floatToQuarter(247.9f, f143) == 0x7f); // below 248, the midpoint past 240
  REQUIRE(floatToQuarter(248.0f, f143) == 0x80); // ties away from the odd 0x7f: overflow
  REQUIRE(floatToQuarter(-1e-9f, f143) == 0x00); // rounds to zero, which has no sign
  REQUIRE(floatToQuarter(INFINITY, f152) == 0x80);
  REQUIRE(floatToQuarter(8.0f, QuarterMetadata(Format::F143, 3)) == 0x40);
}

TEST_CASE("every code of both formats decodes as the formats define, at every scale",
          "[unit][quarter]") {
  for (Format f : kFormats)
    for (int s = QuarterMetadata::kMinScale; s <= QuarterMetadata::kMaxScale; ++s) {
      const QuarterMetadata m(f, s);
      std::vector<unsigned char> codes(256);
      for (unsigned c = 0; c < 256; ++c)
        codes[c] = static_cast<unsigned char>(c);
      std::vector<float> asFloat(256);
      std::vector<double> asDouble(256);
      std::vector<half> asHalf(256);
      convertFromDeviceType(QUARTER, m, codes.data(), ArrayRef<float>(asFloat));
      convertFromDeviceType(QUARTER, m, codes.data(), ArrayRef<double>(asDouble));
      convertFromDeviceType(QUARTER, m, codes.data(), ArrayRef<half>(asHalf));
      for (unsigned c = 0; c < 256; ++c) {
        const double expected = test::referenceDecode(c, f, s);
        INFO("format " << m << " code " << c);
        REQUIRE(
            sameValue(aspen::detail::quarterToFloat(static_cast<unsigned char>(c), m), expected));
        REQUIRE(sameValue(asFloat[c], expected));
        REQUIRE(sameValue(asDouble[c], expected));
        // Into half: the exact value rounded once (subnormal or infinite where half must).
        REQUIRE(sameValue(float(asHalf[c]), float(half(static_cast<float>(expected)))));
        if (c != 0x80) // and back: every code but NaN is its own value's encoding
          REQUIRE(unsigned(aspen::detail::floatToQuarter(static_cast<float>(expected), m)) == c);
      }
    }
}

TEST_CASE("encoding rounds to the nearest code, ties to even, at and around every midpoint",
          "[unit][quarter]") {
  for (Format f : kFormats)
    for (int s : {-32, -14, -1, 0, 5, 31}) {
      const QuarterMetadata m(f, s);
      for (unsigned c = 0; c < 0x7f; ++c) {
        const double lo = test::referenceDecode(c, f, s), hi = test::referenceDecode(c + 1, f, s);
        const float mid = static_cast<float>((lo + hi) / 2); // exact in float
        REQUIRE(double(mid) == (lo + hi) / 2);
        for (float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)})
          for (float sign : {1.0f, -1.0f}) {
            INFO("format " << m << " value " << sign * v);
            REQUIRE(unsigned(aspen::detail::floatToQuarter(sign * v, m)) ==
                    test::referenceEncode(double(sign * v), f, s));
          }
      }
      // Past the largest value: below the midpoint to the next step stays, from it on is NaN.
      const double largest = test::referenceDecode(0x7f, f, s);
      const double step = largest - test::referenceDecode(0x7e, f, s);
      const float overflowMid = static_cast<float>(largest + step / 2);
      REQUIRE(aspen::detail::floatToQuarter(std::nextafter(overflowMid, 0.0f), m) == 0x7f);
      REQUIRE(aspen::detail::floatToQuarter(overflowMid, m) == 0x80);
      REQUIRE(aspen::detail::floatToQuarter(-overflowMid, m) == 0x80);
    }
}

TEST_CASE("every half value encodes as the brute-force reference does", "[unit][quarter]") {
  // The scales PopLibs' tests use to keep quarter within half, and 0.
  const std::pair<Format, int> cases[] = {{Format::F143, -14},
                                          {Format::F143, 0},
                                          {Format::F143, 8},
                                          {Format::F152, -7},
                                          {Format::F152, 0}};
  for (const auto &[f, s] : cases) {
    const QuarterMetadata m(f, s);
    std::vector<half> values(65536);
    for (unsigned b = 0; b < 65536; ++b)
      values[b] = half::fromBits(static_cast<unsigned short>(b));
    std::vector<unsigned char> codes(values.size());
    convertToDeviceType(QUARTER, m, ArrayRef<half>(values), codes.data());
    for (unsigned b = 0; b < 65536; ++b) {
      INFO("format " << m << " half bits " << b);
      REQUIRE(unsigned(codes[b]) == test::referenceEncode(double(float(values[b])), f, s));
    }
  }
}

TEST_CASE("random float bit patterns encode as the brute-force reference does", "[unit][quarter]") {
  std::mt19937 rng(20261201);
  for (Format f : kFormats)
    for (int s : {-32, -7, 0, 13, 31}) {
      const QuarterMetadata m(f, s);
      std::vector<float> values(4000);
      for (std::size_t i = 0; i < values.size(); ++i) {
        std::uint32_t bits = rng();
        if (i % 2) // half of them near the format's range: exponent within +-24 of 2^scale
          bits = (bits & 0x807fffffu) |
                 (static_cast<std::uint32_t>(127 + s + int(rng() % 49) - 24) << 23);
        std::memcpy(&values[i], &bits, sizeof bits);
      }
      std::vector<unsigned char> codes(values.size());
      convertToDeviceType(QUARTER, m, ArrayRef<float>(values), codes.data());
      for (std::size_t i = 0; i < values.size(); ++i) {
        INFO("format " << m << " value " << values[i]);
        REQUIRE(unsigned(codes[i]) == test::referenceEncode(double(values[i]), f, s));
      }
    }
}

TEST_CASE("host conversions of the other types follow the constants' rules", "[unit][quarter]") {
  const std::vector<double> in{0.5, -2.0, 65504.0, 3.0};
  std::vector<unsigned short> halfBits(4);
  convertToDeviceType(HALF, ArrayRef<double>(in), halfBits.data());
  REQUIRE(halfBits[0] == 0x3800); // 0.5
  REQUIRE(halfBits[1] == 0xc000); // -2
  REQUIRE(halfBits[2] == 0x7bff); // 65504, the largest half
  std::vector<float> back(4);
  convertFromDeviceType(HALF, halfBits.data(), ArrayRef<float>(back));
  REQUIRE(back == std::vector<float>{0.5f, -2.0f, 65504.0f, 3.0f});
  std::vector<int> ints(4);
  REQUIRE_THROWS_AS(convertToDeviceType(INT, ArrayRef<double>(in), ints.data()), type_error);
  REQUIRE(ints == std::vector<int>(4, 0)); // nothing written
  // Without metadata QUARTER is refused; with metadata anything else is.
  std::vector<unsigned char> codes(4, 0xaa);
  REQUIRE_THROWS_AS(convertToDeviceType(QUARTER, ArrayRef<double>(in), codes.data()), type_error);
  REQUIRE_THROWS_AS(
      convertToDeviceType(FLOAT, QuarterMetadata(), ArrayRef<double>(in), back.data()), type_error);
  REQUIRE(codes == std::vector<unsigned char>(4, 0xaa));
  // Doubles are rounded to float, then once to quarter: 3 is exact in F143.
  convertToDeviceType(QUARTER, QuarterMetadata(), ArrayRef<double>(in), codes.data());
  REQUIRE(codes == std::vector<unsigned char>{0x38, 0xc8, 0x80, 0x4c});
}
