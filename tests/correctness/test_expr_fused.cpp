// Fused expressions (one generated codelet) against the double reference and against the same
// expression evaluated operation by operation (bit-identical), for thread counts 1 and 4 and
// mappings over 1, 7 and 1472 tiles; in-place with aliasing operands, broadcasting, scalars,
// empty tensors, casts, and the PopLibs header names.
#include "correctness/test_elementwise_harness.hpp"

#include <aspen/ops/Cast.hpp>
#include <popops/Cast.hpp>
#include <popops/ElementWise.hpp>

#include <catch2/catch.hpp>

using namespace ewtest;
namespace ex = aspen::ops::expr;

namespace {

// Ten operations on two float tensors (also the benchmark's shape of work).
const ex::Any kFloatExpr =
    ex::Select(ex::Exp(ex::Neg(ex::Abs(ex::_1))) * 2.0f + ex::Sqrt(ex::Abs(ex::_2)),
               ex::Max(ex::_1, ex::_2) - 1, ex::_1 < ex::_2) *
    ex::_1;
double floatReference(double a, double b) {
  const double s = std::exp(-std::fabs(a)) * 2 + std::sqrt(std::fabs(b));
  const double m = std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  return (a < b ? s : m - 1) * a;
}

const ex::Any kIntExpr = ((ex::_1 * 3 + ex::_2) >> 1) & 0xff ^ ex::Cast(ex::_2 > ex::_1, INT);

Builder mapWith(const ex::Expr &e, bool generate) {
  ex::Any copy(e);
  return [copy, generate](Graph &g, const std::vector<Tensor> &in, program::Sequence &p) {
    return std::vector<Tensor>{ops::map(g, copy, in, p, "fused",
                                        {{"enableGenerateCodelet", generate ? "true" : "false"}})};
  };
}

} // namespace

TEST_CASE("a fused float expression matches the reference and the operation-by-operation result",
          "[correctness][elementwise][expr]") {
  const std::size_t n = 1000;
  for (Type t : {FLOAT, HALF}) {
    std::vector<HostTensor> in{{t, {n}, sample(t, n, 11, -3, 3)}, {t, {n}, sample(t, n, 12, -3, 3)}};
    const auto fused = run(Target::createGeneric(7), in, mapWith(kFloatExpr, true))[0];
    const auto stepwise = run(Target::createGeneric(7), in, mapWith(kFloatExpr, false))[0];
    for (std::size_t i = 0; i < n; ++i) {
      INFO(t.toString() << " element " << i << ": " << in[0].values[i] << ", " << in[1].values[i]);
      REQUIRE((fused[i] == stepwise[i] || (std::isnan(fused[i]) && std::isnan(stepwise[i]))));
      const double a = in[0].values[i];
      CHECK(matches(t, fused[i], floatReference(a, in[1].values[i]), 8,
                    (t == HALF ? 4e-3 : 4e-6) * (1 + std::fabs(a)) * (3 + std::fabs(a))));
    }
  }
}

TEST_CASE("a fused integer expression is exact and mixes bool through Cast",
          "[correctness][elementwise][expr]") {
  const std::size_t n = 300;
  std::vector<HostTensor> in{{INT, {n}, sample(INT, n, 21)}, {INT, {n}, sample(INT, n, 22)}};
  const auto fused = run(Target::createGeneric(7), in, mapWith(kIntExpr, true))[0];
  const auto stepwise = run(Target::createGeneric(7), in, mapWith(kIntExpr, false))[0];
  for (std::size_t i = 0; i < n; ++i) {
    const long long a = static_cast<long long>(in[0].values[i]), b = static_cast<long long>(in[1].values[i]);
    const long long sum = static_cast<int>(static_cast<std::uint32_t>(a) * 3u + static_cast<std::uint32_t>(b));
    const long long ref = ((sum >> 1) & 0xff) ^ (b > a ? 1 : 0);
    INFO("element " << i << ": " << a << ", " << b);
    REQUIRE(fused[i] == static_cast<double>(ref));
    REQUIRE(stepwise[i] == fused[i]);
  }
}

TEST_CASE("results are identical for 1 and 4 threads and over 1, 7 and 1472 tiles",
          "[correctness][elementwise][expr]") {
  const std::size_t n = 5000;
  std::vector<HostTensor> in{{FLOAT, {50, 100}, sample(FLOAT, n, 31)},
                             {FLOAT, {100}, sample(FLOAT, 100, 32)}};
  const auto reference = run(Target::createGeneric(1), in, mapWith(kFloatExpr, true), 1)[0];
  for (const Target &target : {Target::createGeneric(7), Target::createModel("ipu2")})
    for (unsigned threads : {1u, 4u}) {
      const auto got = run(target, in, mapWith(kFloatExpr, true), threads)[0];
      const auto single = run(target, in, [](Graph &g, const std::vector<Tensor> &t, program::Sequence &p) {
        return std::vector<Tensor>{ops::sub(g, t[0], t[1], p)};
      }, threads)[0];
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE((got[i] == reference[i] || (std::isnan(got[i]) && std::isnan(reference[i]))));
        const double d = in[0].values[i] - in[1].values[i % 100];
        REQUIRE((single[i] == static_cast<float>(d) || (std::isnan(single[i]) && std::isnan(d))));
      }
    }
}

TEST_CASE("in-place forms write through aliases correctly", "[correctness][elementwise][expr]") {
  const std::size_t n = 64;
  std::vector<HostTensor> in{{FLOAT, {n}, sample(FLOAT, n, 41, -4, 4)}};
  const auto out = run(Target::createGeneric(7), in, [](Graph &g, const std::vector<Tensor> &t, program::Sequence &p) {
    Tensor x = ops::add(g, t[0], 0.0f, p); // copies of the input
    Tensor y = ops::add(g, t[0], 0.0f, p);
    Tensor z = ops::add(g, t[0], 0.0f, p);
    ops::mapInPlace(g, ex::_1 * ex::_2 + ex::_1, {x, x}, p);          // element-wise alias
    ops::addInPlace(g, y, y.reverse(0), p);                            // reversed alias
    ops::mapInPlace(g, ex::_1 - ex::_2 * 2, {z, z.slice(0, 1)}, p);    // broadcast alias
    return std::vector<Tensor>{x, y, z};
  });
  const auto &v = in[0].values;
  for (std::size_t i = 0; i < n; ++i) {
    INFO("element " << i);
    CHECK(matches(FLOAT, out[0][i], static_cast<float>(static_cast<float>(v[i] * v[i]) + v[i]), 0, 0));
    CHECK(matches(FLOAT, out[1][i], v[i] + v[n - 1 - i], 0, 0));
    CHECK(matches(FLOAT, out[2][i], v[i] - v[0] * 2, 0, 0));
  }
}

TEST_CASE("broadcasting, scalars, constants and empty tensors", "[correctness][elementwise][expr]") {
  std::vector<HostTensor> in{{FLOAT, {4, 1}, {1, 2, 3, 4}}, {FLOAT, {3}, {10, 20, 30}},
                             {FLOAT, {}, {0.5}}, {FLOAT, {0, 3}, {}}};
  std::vector<std::size_t> emptyShape;
  const auto out = run(Target::createGeneric(3), in, [&](Graph &g, const std::vector<Tensor> &t, program::Sequence &p) {
    Tensor outer = ops::map(g, ex::_1 * ex::_2 + ex::_3 + 1, {t[0], t[1], t[2]}, p);
    REQUIRE(outer.shape() == std::vector<std::size_t>{4, 3});
    Tensor scaled = ops::mul(g, 2, t[1], p);
    Tensor filled = ops::map(g, ex::Const(7), {t[1]}, p);
    Tensor empty = ops::map(g, ex::Exp(ex::_1) + ex::_2, {t[3], t[1]}, p);
    emptyShape = empty.shape();
    return std::vector<Tensor>{outer, scaled, filled};
  });
  REQUIRE(emptyShape == std::vector<std::size_t>{0, 3});
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t c = 0; c < 3; ++c)
      CHECK(out[0][r * 3 + c] == (r + 1.0) * (c + 1) * 10 + 1.5);
  CHECK(out[1] == std::vector<double>{20, 40, 60});
  CHECK(out[2] == std::vector<double>{7, 7, 7});
}

TEST_CASE("cast follows C++ for values in range and saturates, NaN to 0, out of range",
          "[correctness][elementwise][cast]") {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<HostTensor> in{{FLOAT, {12}, {2.5, -2.5, -3.7, 0.99, NAN, inf, -inf, 3e9, -3e9, 65519, 65520, 1e-8}},
                             {INT, {4}, {300, -129, 65537, 0}}};
  const auto out = run(Target::createGeneric(2), in, [](Graph &g, const std::vector<Tensor> &t, program::Sequence &p) {
    return std::vector<Tensor>{ops::cast(g, t[0], INT, p), ops::cast(g, t[0], UNSIGNED_CHAR, p),
                               ops::cast(g, t[0], HALF, p), ops::cast(g, t[0], BOOL, p),
                               ops::cast(g, t[1], CHAR, p), ops::cast(g, t[1], UNSIGNED_SHORT, p),
                               popops::cast(g, t[1], FLOAT, p)};
  });
  CHECK(out[0] == std::vector<double>{2, -2, -3, 0, 0, 2147483647, -2147483648.0, 2147483647,
                                      -2147483648.0, 65519, 65520, 0});
  CHECK(out[1] == std::vector<double>{2, 0, 0, 0, 0, 255, 0, 255, 0, 255, 255, 0});
  CHECK(out[2][0] == 2.5);
  CHECK(out[2][9] == 65504);  // rounds down to the largest half
  CHECK(std::isinf(out[2][10])); // 65520 rounds to infinity
  CHECK(out[2][11] == std::ldexp(1.0, -24) * 0); // 1e-8 is below half the smallest subnormal
  CHECK(std::isnan(out[2][4]));
  CHECK(out[3] == std::vector<double>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  CHECK(out[4] == std::vector<double>{44, 127, 1, 0});
  CHECK(out[5] == std::vector<double>{300, 65407, 1, 0});
  CHECK(out[6] == std::vector<double>{300, -129, 65537, 0});
}

TEST_CASE("a Poplar-style use through the popops headers", "[correctness][elementwise][compat]") {
  std::vector<HostTensor> in{{FLOAT, {3}, {1, 2, 3}}, {FLOAT, {3}, {4, 5, 6}}};
  const auto out = run(Target::createGeneric(2), in, [](Graph &g, const std::vector<Tensor> &t, program::Sequence &p) {
    namespace pe = popops::expr;
    Tensor a = popops::map(g, pe::Add(pe::_1, pe::Mul(pe::_2, pe::Const(2.0f))), {t[0], t[1]}, p, "m");
    Tensor b = popops::add(g, t[0], t[1], p, "add");
    popops::mulInPlace(g, b, 10.0f, p);
    Tensor c = popops::map(g, popops::expr::UnaryOp(popops::UnaryOpType::SQUARE, pe::_1), {t[0]}, p);
    return std::vector<Tensor>{a, b, c};
  });
  CHECK(out[0] == std::vector<double>{9, 12, 15});
  CHECK(out[1] == std::vector<double>{50, 70, 90});
  CHECK(out[2] == std::vector<double>{1, 4, 9});
}

TEST_CASE("operands broadcast along rows (a channel's scale, an image's shift) are exact over any "
          "tile split", "[correctness][elementwise][expr]") {
  // x [N, C, HW] with s [C, 1] (a channel's value over its image) and b [N, 1, 1]: the generated
  // codelet reads s and b once a row; ipu2's 1472 tiles cut the rows at arbitrary places.
  const std::size_t N = 3, C = 5, HW = 40, n = N * C * HW;
  for (Type t : {FLOAT, HALF}) {
    std::vector<HostTensor> in{{t, {N, C, HW}, sample(t, n, 51, -4, 4)},
                               {t, {C, 1}, sample(t, C, 52, -2, 2)},
                               {t, {N, 1, 1}, sample(t, N, 53, -2, 2)}};
    for (double &v : in[1].values)
      v = std::isfinite(v) ? v : 1.5;
    const auto build = [](bool generate) -> Builder {
      return [generate](Graph &g, const std::vector<Tensor> &ts, program::Sequence &p) {
        const OptionFlags o{{"enableGenerateCodelet", generate ? "true" : "false"}};
        return std::vector<Tensor>{ops::map(g, ex::_1 * ex::_2 + ex::_3, ts, p, "affine", o),
                                   ops::map(g, ex::_1 * ex::_2, {ts[0], ts[1]}, p, "scale", o)};
      };
    };
    const auto gathered = run(Target::createGeneric(1), in, build(false));
    for (const Target &target : {Target::createGeneric(7), Target::createModel("ipu2")}) {
      const auto rows = run(target, in, build(true));
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t c = i / HW % C, b = i / (C * HW);
        const double x = in[0].values[i], s = in[1].values[c];
        INFO(t.toString() << " element " << i << ": x " << x << ", s " << s);
        // Each operation in float, its result rounded to the element type.
        const double product = representable(t, float(x) * float(s));
        const double affine = representable(t, float(product) + float(in[2].values[b]));
        CHECK(matches(t, rows[0][i], affine, 0, 0));
        CHECK(matches(t, rows[1][i], product, 0, 0));
        CHECK(matches(t, rows[0][i], gathered[0][i], 0, 0));
      }
    }
  }
}
