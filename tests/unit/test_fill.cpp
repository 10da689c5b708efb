// fill, zero and iota against hand-computed values, on every configuration of the harness.
#include "correctness/test_fill_harness.hpp"

#include <aspen/ops/Fill.hpp>
#include <aspen/ops/Iota.hpp>
#include <aspen/ops/Zero.hpp>

#include <catch2/catch.hpp>

#include <limits>

using namespace aspen;

TEST_CASE("fill writes every element of views of several types, and nothing else", "[unit][fill]") {
  for (const auto &c : dmtest::configs()) {
    INFO(c.name);
    Graph g = dmtest::makeGraph(c);
    Tensor f = dmtest::variable(g, FLOAT, {5, 9}, "f");
    Tensor h = dmtest::variable(g, HALF, {33}, "h");
    Tensor i = dmtest::variable(g, INT, {2, 3, 4}, "i");
    Tensor u = dmtest::variable(g, UNSIGNED_CHAR, {13}, "u");
    Tensor s = dmtest::variable(g, FLOAT, {}, "s");
    Tensor empty = dmtest::variable(g, FLOAT, {0, 3}, "empty");
    program::Sequence prog;
    // Every other column of f (a strided view), transposed: the rest keeps its sentinel.
    ops::fill(g, f.subSample(2, 1).transpose(), prog, -1.5f);
    ops::fill(g, h, prog, 65504.0); // the largest half
    ops::fill(g, i.slice(1, 3, 2), prog, std::numeric_limits<int>::min());
    ops::zero(g, u.slice(3, 10), prog);
    ops::fill(g, s, prog, std::numeric_limits<float>::infinity());
    ops::zero(g, empty, prog);
    Engine e = dmtest::load(g, prog, c);
    dmtest::write(e, "f", std::vector<float>(45, 7.0f));
    dmtest::write(e, "h", std::vector<half>(33, half(0.0f)));
    dmtest::write(e, "i", std::vector<int>(24, 3));
    dmtest::write(e, "u", std::vector<unsigned char>(13, 200));
    dmtest::write(e, "s", std::vector<float>{0.0f});
    e.run();
    const auto fv = dmtest::read<float>(e, "f", 45);
    for (unsigned k = 0; k < 45; ++k)
      REQUIRE(fv[k] == ((k % 9) % 2 == 0 ? -1.5f : 7.0f));
    for (half x : dmtest::read<half>(e, "h", 33))
      REQUIRE(float(x) == 65504.0f);
    const auto iv = dmtest::read<int>(e, "i", 24);
    for (unsigned k = 0; k < 24; ++k)
      REQUIRE(iv[k] == (k % 4 >= 1 && k % 4 < 3 ? std::numeric_limits<int>::min() : 3));
    const auto uv = dmtest::read<unsigned char>(e, "u", 13);
    for (unsigned k = 0; k < 13; ++k)
      REQUIRE(uv[k] == (k >= 3 && k < 10 ? 0 : 200));
    REQUIRE(std::isinf(dmtest::read<float>(e, "s", 1)[0]));
  }
}

TEST_CASE("fill converts NaN and denormals exactly into float and half", "[unit][fill]") {
  const auto c = dmtest::configs()[1];
  Graph g = dmtest::makeGraph(c);
  Tensor a = dmtest::variable(g, FLOAT, {8}, "a");
  Tensor b = dmtest::variable(g, HALF, {8}, "b");
  Tensor d = dmtest::variable(g, FLOAT, {8}, "d");
  program::Sequence prog;
  ops::fill(g, a, prog, std::numeric_limits<float>::quiet_NaN());
  ops::fill(g, b, prog, 5.960464477539063e-08); // 2^-24, the smallest half subnormal
  ops::fill(g, d, prog, std::numeric_limits<float>::denorm_min());
  Engine e = dmtest::load(g, prog, c);
  e.run();
  for (float x : dmtest::read<float>(e, "a", 8))
    REQUIRE(std::isnan(x));
  for (half x : dmtest::read<half>(e, "b", 8))
    REQUIRE(float(x) == std::ldexp(1.0f, -24));
  for (float x : dmtest::read<float>(e, "d", 8))
    REQUIRE(x == std::numeric_limits<float>::denorm_min());
}

TEST_CASE("iota counts from the start over every tile and wraps like 32-bit integers",
          "[unit][fill]") {
  for (const auto &c : dmtest::configs()) {
    INFO(c.name);
    Graph g = dmtest::makeGraph(c);
    Tensor a = dmtest::variable(g, INT, {50}, "a");
    Tensor b = dmtest::variable(g, UNSIGNED_INT, {20}, "b");
    Tensor r = dmtest::variable(g, INT, {10}, "r");
    Tensor empty = dmtest::variable(g, INT, {0}, "empty");
    program::Sequence prog;
    ops::iota(g, a, -7, prog);
    ops::iota(g, b, 4294967290u, prog);    // wraps after 5 values
    ops::iota(g, r.reverse(0), 100, prog); // a reversed view: r[9] = 100
    ops::iota(g, empty, 0, prog);
    Engine e = dmtest::load(g, prog, c);
    e.run();
    const auto av = dmtest::read<int>(e, "a", 50);
    for (int k = 0; k < 50; ++k)
      REQUIRE(av[k] == k - 7);
    const auto bv = dmtest::read<unsigned>(e, "b", 20);
    for (unsigned k = 0; k < 20; ++k)
      REQUIRE(bv[k] == 4294967290u + k); // unsigned wrap-around on the host too
    const auto rv = dmtest::read<int>(e, "r", 10);
    for (int k = 0; k < 10; ++k)
      REQUIRE(rv[k] == 109 - k);
  }
}
