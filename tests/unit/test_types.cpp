// Element types, IEEE half conversion and host-value conversion.
#include "support/TypeConversion.hpp"

#include <aspen/Error.hpp>
#include <aspen/Type.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace aspen;

namespace {

// The value of half bit pattern h, decoded from the IEEE 754 definition in double precision.
double halfValueReference(unsigned h) {
  const int sign = (h >> 15) & 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(mantissa, -24);
  else if (exponent == 31)
    magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else
    magnitude = std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -magnitude : magnitude;
}

// The correctly rounded half of x (round to nearest, ties to even), found by searching the
// finite non-negative halves: independent of the bit-twiddling conversion under test.
unsigned short roundToHalfReference(float x) {
  const unsigned short sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(x));
  // 65504 is the largest finite half; values at or beyond 65520 (the midpoint to 2^16) overflow.
  if (a >= 65520.0)
    return sign | 0x7c00;
  unsigned lo = 0, hi = 0x7bff;
  while (lo < hi) { // largest pattern with value <= a
    const unsigned mid = (lo + hi + 1) / 2;
    if (halfValueReference(mid) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  const double below = halfValueReference(lo);
  if (below == a || lo == 0x7bff)
    return sign | lo;
  const double above = halfValueReference(lo + 1);
  const double dBelow = a - below, dAbove = above - a;
  if (dBelow < dAbove || (dBelow == dAbove && (lo & 1) == 0))
    return sign | lo;
  return sign | (lo + 1);
}

float bitsToFloat(unsigned u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

} // namespace

TEST_CASE("every half decodes to its IEEE value and re-encodes to itself", "[unit][half]") {
  for (unsigned h = 0; h < 0x10000; ++h) {
    const float f = half::fromBits(static_cast<unsigned short>(h));
    const double expected = halfValueReference(h);
    if (std::isnan(expected)) {
      REQUIRE(std::isnan(f));
      REQUIRE(std::isnan(static_cast<float>(half(f)))); // NaN stays NaN
      continue;
    }
    REQUIRE(static_cast<double>(f) == expected);
    REQUIRE(half(f).bits() == h); // also keeps the sign of zero
  }
}

TEST_CASE("float to half rounds to nearest even", "[unit][half]") {
  std::vector<float> samples = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f,
                                std::ldexp(1.0f, -24), std::ldexp(1.0f, -25),
                                std::ldexp(1.0f, -25) * 1.0000001f, std::ldexp(3.0f, -26),
                                std::ldexp(1.0f, -14), std::ldexp(1023.0f, -24), 1e-9f, 1e9f,
                                INFINITY, -INFINITY};
  // Exact midpoints between neighbouring halves, both parities: ties must go to even.
  for (unsigned h : {0x0001u, 0x0002u, 0x03ffu, 0x0400u, 0x3c00u, 0x3c01u, 0x7bfeu}) {
    const double mid = (halfValueReference(h) + halfValueReference(h + 1)) / 2;
    samples.push_back(static_cast<float>(mid));
    samples.push_back(-static_cast<float>(mid));
  }
  std::mt19937 rng(1234);
  std::uniform_int_distribution<unsigned> bits(0, 0xffffffffu);
  for (int i = 0; i < 20000; ++i) {
    const float f = bitsToFloat(bits(rng));
    if (!std::isnan(f) && std::fabs(f) < 1e6f)
      samples.push_back(f);
  }
  std::uniform_real_distribution<float> near(-70000.0f, 70000.0f);
  for (int i = 0; i < 20000; ++i)
    samples.push_back(near(rng));
  for (float f : samples) {
    INFO("value " << f);
    REQUIRE(half(f).bits() == roundToHalfReference(f));
  }
}

TEST_CASE("types have Poplar's names and sizes", "[unit][type]") {
  REQUIRE(FLOAT.toString() == "float");
  REQUIRE(UNSIGNED_INT.toString() == "unsigned int");
  REQUIRE(HALF.size() == 2);
  REQUIRE(LONGLONG.size() == 8);
  REQUIRE(BOOL.size() == 1);
  REQUIRE(HALF.isFloatingPoint());
  REQUIRE(INT.isIntegral());
  REQUIRE_FALSE(UNSIGNED_SHORT.isSigned());
  REQUIRE(equivalent_device_type<unsigned>().value == UNSIGNED_INT);
  REQUIRE(equivalent_device_type<half>().value == HALF);
  REQUIRE_FALSE(Type().valid());
  static_assert(!std::is_constructible_v<Type, const char *>, "a string must not make a Type");
}

TEST_CASE("host values convert into device types, or are rejected by name", "[unit][type]") {
  using detail::convertValues;
  const int ints[] = {-3, 0, 70000};
  float floats[3];
  convertValues(INT, ints, FLOAT, floats, 3, "test");
  REQUIRE(floats[0] == -3.0f);
  REQUIRE(floats[2] == 70000.0f);

  unsigned short halves[1];
  const double third = 1.0 / 3.0;
  convertValues(Type(TypeId::Float), &floats[2], HALF, halves, 1, "test");
  REQUIRE(halves[0] == 0x7c00); // 70000 overflows half to +inf, as IEEE conversion does
  const float thirdF = static_cast<float>(third);
  convertValues(FLOAT, &thirdF, HALF, halves, 1, "test");
  REQUIRE(halves[0] == roundToHalfReference(thirdF));

  unsigned char uc;
  REQUIRE_THROWS_AS(convertValues(INT, &ints[0], UNSIGNED_CHAR, &uc, 1, "constant 'c'"), type_error);
  REQUIRE_THROWS_WITH(convertValues(INT, &ints[2], SHORT, &uc, 1, "constant 'c'"),
                      Catch::Contains("constant 'c'") && Catch::Contains("70000") &&
                          Catch::Contains("short"));
  const float fraction = 2.5f;
  int out;
  REQUIRE_THROWS_AS(convertValues(FLOAT, &fraction, INT, &out, 1, "x"), type_error);
  const float whole = -7.0f;
  convertValues(FLOAT, &whole, INT, &out, 1, "x");
  REQUIRE(out == -7);
  const long long big = std::numeric_limits<long long>::min();
  long long back;
  convertValues(LONGLONG, &big, LONGLONG, &back, 1, "x");
  REQUIRE(back == big);
  const unsigned long long huge = std::numeric_limits<unsigned long long>::max();
  REQUIRE_THROWS_AS(convertValues(UNSIGNED_LONGLONG, &huge, LONGLONG, &back, 1, "x"), type_error);
  bool b;
  const int two = 2;
  REQUIRE_THROWS_WITH(convertValues(INT, &two, BOOL, &b, 1, "flag"), Catch::Contains("bool"));
}
