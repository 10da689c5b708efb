// scaledAddTo / scaledSubtractFrom against a double-precision host model, for every supported
// type combination, host and tensor scales, on every configuration of the harness.
#include "correctness/test_fill_harness.hpp"

#include <aspen/ops/ScaledAdd.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

using namespace aspen;

namespace {

struct Case {
  Type a, b, scale;
  bool tensorScales, withScaleA, subtract;
};

// The model: scaleA * A +/- scaleB * B in double (integers: wrapping 32-bit arithmetic).
double model(const Case &k, double sa, double a, double sb, double b) {
  if (k.a == INT || k.a == UNSIGNED_INT) {
    const auto u = [](double x) {
      return static_cast<std::uint32_t>(static_cast<std::int64_t>(x));
    };
    const std::uint32_t r = k.subtract ? u(sa) * u(a) - u(sb) * u(b) : u(sa) * u(a) + u(sb) * u(b);
    return k.a == INT ? static_cast<double>(static_cast<std::int32_t>(r)) : r;
  }
  return k.subtract ? sa * a - sb * b : sa * a + sb * b;
}

// Worst-case error of float arithmetic rounded once to the result type.
double tolerance(const Case &k, double sa, double a, double sb, double b) {
  if (k.a == INT || k.a == UNSIGNED_INT)
    return 0;
  const double magnitude = std::abs(sa * a) + std::abs(sb * b);
  return k.a == HALF ? magnitude * std::ldexp(1.0, -10) + std::ldexp(1.0, -24)
                     : magnitude * std::ldexp(1.0, -22);
}

std::vector<double> runCase(const Case &k, const dmtest::Config &c, const std::vector<double> &a,
                            const std::vector<double> &b, double sa, double sb) {
  Graph g = dmtest::makeGraph(c);
  Tensor A = dmtest::variable(g, k.a, {3, a.size() / 3}, "A");
  Tensor B = dmtest::variable(g, k.b, {3, a.size() / 3}, "B");
  program::Sequence prog;
  if (k.tensorScales) {
    Tensor SA = dmtest::variable(g, k.scale, {1}, "SA");
    Tensor SB = dmtest::variable(g, k.scale, {}, "SB");
    if (k.subtract)
      k.withScaleA ? ops::scaledSubtractFrom(g, A, SA, B, SB, prog)
                   : ops::scaledSubtractFrom(g, A, B, SB, prog);
    else
      k.withScaleA ? ops::scaledAddTo(g, A, SA, B, SB, prog) : ops::scaledAddTo(g, A, B, SB, prog);
  } else {
    const auto fa = static_cast<float>(sa), fb = static_cast<float>(sb);
    if (k.subtract)
      k.withScaleA
          ? ops::scaledSubtractFrom(g, A, fa, B, fb, prog, "sub", {{"optimizeForSpeed", "true"}})
          : ops::scaledSubtractFrom(g, A, B, fb, prog);
    else
      k.withScaleA ? ops::scaledAddTo(g, A, fa, B, fb, prog) : ops::scaledAddTo(g, A, B, fb, prog);
  }
  Engine e = dmtest::load(g, prog, c);
  dmtest::writeAs(e, "A", k.a, a);
  dmtest::writeAs(e, "B", k.b, b);
  if (k.tensorScales) {
    dmtest::writeAs(e, "SA", k.scale, {sa});
    dmtest::writeAs(e, "SB", k.scale, {sb});
  }
  e.run();
  return dmtest::readAs(e, "A", k.a, a.size());
}

} // namespace

TEST_CASE("scaled additions match the host model for every type combination and scale form",
          "[correctness][scaledadd]") {
  std::vector<std::array<Type, 3>> types = {{INT, INT, INT},
                                            {UNSIGNED_INT, UNSIGNED_INT, UNSIGNED_INT}};
  for (Type a : {FLOAT, HALF})
    for (Type b : {FLOAT, HALF})
      for (Type s : {FLOAT, HALF})
        types.push_back({a, b, s});
  const std::size_t n = 3 * 67;
  unsigned seed = 1;
  for (const auto &t : types)
    for (int form = 0; form < 8; ++form) {
      const Case k{t[0], t[1], t[2], (form & 1) != 0, (form & 2) != 0, (form & 4) != 0};
      // Host scales are converted to float (or the integer type); tensor scales to their type.
      const Type hostScaleType = k.a.isFloatingPoint() ? FLOAT : k.a;
      const Type st = k.tensorScales ? k.scale : hostScaleType;
      const bool integral = !k.a.isFloatingPoint();
      std::vector<double> a(n), b(n);
      std::mt19937 rng(seed++);
      std::uniform_real_distribution<double> fp(-100, 100);
      std::uniform_int_distribution<std::int64_t> in(k.a == INT ? -100000 : 0, 100000);
      for (std::size_t i = 0; i < n; ++i) {
        a[i] = integral ? static_cast<double>(in(rng)) : dmtest::quantize(fp(rng), k.a);
        b[i] = integral ? static_cast<double>(in(rng)) : dmtest::quantize(fp(rng), k.b);
      }
      const double sa = k.withScaleA ? (integral ? 3 : dmtest::quantize(-0.3, st)) : 1;
      const double sb = integral ? 70000 : dmtest::quantize(1.7, st); // integers overflow
      std::vector<double> first;
      for (const auto &c : dmtest::configs()) {
        INFO(c.name << ", A " << k.a << ", B " << k.b << ", scale " << st << ", form " << form);
        const auto got = runCase(k, c, a, b, sa, sb);
        for (std::size_t i = 0; i < n; ++i) {
          const double want = model(k, sa, a[i], sb, b[i]);
          INFO("element " << i << ": A " << a[i] << " B " << b[i] << " got " << got[i] << " want "
                          << want);
          REQUIRE(std::abs(got[i] - want) <= tolerance(k, sa, a[i], sb, b[i]));
        }
        if (first.empty())
          first = got;
        else
          REQUIRE(got == first); // bit-identical on every configuration
      }
    }
}

TEST_CASE("scaled additions propagate NaN and infinities, keep denormals and overflow half",
          "[correctness][scaledadd]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float den = std::numeric_limits<float>::denorm_min();
  for (const auto &c : dmtest::configs()) {
    INFO(c.name);
    Graph g = dmtest::makeGraph(c);
    Tensor A = dmtest::variable(g, FLOAT, {7}, "A");
    Tensor B = dmtest::variable(g, FLOAT, {7}, "B");
    Tensor H = dmtest::variable(g, HALF, {4}, "H");
    Tensor HB = dmtest::variable(g, HALF, {4}, "HB");
    Tensor Z = dmtest::variable(g, FLOAT, {0, 4}, "Z");
    program::Sequence prog;
    ops::scaledAddTo(g, A, B, 1.0f, prog);
    ops::scaledAddTo(g, H, HB, 1e-5f, prog); // a float scale that half cannot hold exactly
    ops::scaledAddTo(g, Z, Z, 2.0f, prog);   // empty: nothing to do
    Engine e = dmtest::load(g, prog, c);
    dmtest::write(e, "A", std::vector<float>{nan, inf, inf, -inf, den, 1.0f, -0.0f});
    dmtest::write(e, "B", std::vector<float>{1.0f, 1.0f, -inf, 2.0f, den, -1.0f, -0.0f});
    dmtest::write(e, "H", std::vector<half>{half(60000.0f), half(0.0f), half(1.0f), half(0.0f)});
    dmtest::write(e, "HB",
                  std::vector<half>{half(65504.0f), half(1000.0f), half(0.5f), half(6e-5f)});
    e.run();
    const auto a = dmtest::read<float>(e, "A", 7);
    REQUIRE(std::isnan(a[0]));
    REQUIRE(a[1] == inf);
    REQUIRE(std::isnan(a[2])); // inf + -inf
    REQUIRE(a[3] == -inf);
    REQUIRE(a[4] == 2 * den); // denormals are not flushed
    REQUIRE(dmtest::sameValue(a[5], 0.0));
    REQUIRE(dmtest::sameValue(a[6], -0.0)); // -0 + 1 * -0 = -0
    const auto h = dmtest::read<half>(e, "H", 4);
    REQUIRE(float(h[0]) == 60000.0f); // + 0.655 is below half's spacing (32) there
    // The product is formed in float (1000 * 1e-5f), then rounded once to half.
    REQUIRE(float(h[1]) == float(half(1000.0f * 1e-5f)));
    REQUIRE(float(h[1]) != float(half(1000.0f * float(half(1e-5f)))));
    REQUIRE(float(h[2]) == 1.0f); // 1 + 5e-6 rounds back to 1 in half
    REQUIRE(float(h[3]) == float(half(float(half(6e-5f)) * 1e-5f))); // underflows to a subnormal
  }
}

TEST_CASE("scaled additions in half overflow to infinity and integer ones wrap",
          "[correctness][scaledadd]") {
  const auto c = dmtest::configs()[3];
  Graph g = dmtest::makeGraph(c);
  Tensor H = dmtest::variable(g, HALF, {2}, "H");
  Tensor HB = dmtest::variable(g, HALF, {2}, "HB");
  Tensor U = dmtest::variable(g, UNSIGNED_INT, {2}, "U");
  Tensor UB = dmtest::variable(g, UNSIGNED_INT, {2}, "UB");
  program::Sequence prog;
  ops::scaledAddTo(g, H, HB, 1.0f, prog);
  ops::scaledSubtractFrom(g, U, UB, 2.0f, prog);
  Engine e = dmtest::load(g, prog, c);
  dmtest::write(e, "H", std::vector<half>{half(60000.0f), half(-60000.0f)});
  dmtest::write(e, "HB", std::vector<half>{half(60000.0f), half(-60000.0f)});
  dmtest::write(e, "U", std::vector<unsigned>{1, 10});
  dmtest::write(e, "UB", std::vector<unsigned>{1, 3});
  e.run();
  const auto h = dmtest::read<half>(e, "H", 2);
  REQUIRE(float(h[0]) == std::numeric_limits<float>::infinity());
  REQUIRE(float(h[1]) == -std::numeric_limits<float>::infinity());
  REQUIRE(dmtest::read<unsigned>(e, "U", 2) == std::vector<unsigned>{0xffffffffu, 4u});
}
