// pad: constant, tensor-value, edge and reflect padding and truncation, against a host model
// of numpy.pad, run on every configuration of the harness.
#include "correctness/test_fill_harness.hpp"

#include <aspen/ops/Pad.hpp>

#include <catch2/catch.hpp>

using namespace aspen;

namespace {

// numpy.pad of a rows x cols matrix (modes "constant", "edge", "reflect"), negative amounts
// cropping first; -1 stands for the constant.
std::vector<int> model(const std::vector<int> &m, long rows, long cols, long l0, long u0, long l1,
                       long u1, const std::string &mode) {
  // Crop.
  const long r0 = l0 < 0 ? -l0 : 0, r1 = rows - (u0 < 0 ? -u0 : 0);
  const long c0 = l1 < 0 ? -l1 : 0, c1 = cols - (u1 < 0 ? -u1 : 0);
  const long R = r1 - r0, C = c1 - c0;
  const long pl0 = std::max(l0, 0L), pu0 = std::max(u0, 0L), pl1 = std::max(l1, 0L),
             pu1 = std::max(u1, 0L);
  const auto source = [&](long i, long n) -> long { // index into [0, n) or -1
    if (i >= 0 && i < n)
      return i;
    if (mode == "constant")
      return -1;
    if (mode == "edge")
      return i < 0 ? 0 : n - 1;
    return i < 0 ? -i : 2 * (n - 1) - i; // reflect
  };
  std::vector<int> out;
  for (long i = -pl0; i < R + pu0; ++i)
    for (long j = -pl1; j < C + pu1; ++j) {
      const long si = source(i, R), sj = source(j, C);
      out.push_back(si < 0 || sj < 0 ? -1 : m[(r0 + si) * cols + c0 + sj]);
    }
  return out;
}

} // namespace

TEST_CASE("pad matches numpy.pad for constant, edge and reflect modes and crops", "[unit][pad]") {
  struct Amounts {
    long l0, u0, l1, u1;
  };
  const std::vector<Amounts> amounts = {
      {1, 2, 0, 3}, {0, 0, 0, 0}, {-1, 2, 1, -2}, {1, -3, -1, 2}, {2, 2, 2, 2}};
  std::vector<int> m(5 * 4);
  for (int i = 0; i < 20; ++i)
    m[i] = 10 * i + 3;
  for (const auto &c : dmtest::configs()) {
    INFO(c.name);
    Graph g = dmtest::makeGraph(c);
    Tensor t = dmtest::variable(g, INT, {5, 4}, "t");
    Tensor minusOne = dmtest::variable(g, INT, {1}, "minusOne");
    program::Sequence prog;
    std::vector<std::pair<std::vector<int>, Tensor>> checks;
    for (const auto &a : amounts)
      for (const std::string mode : {"constant", "tensor", "edge", "reflect", "edgeMapped"}) {
        const std::vector<std::ptrdiff_t> lo{a.l0, a.l1}, up{a.u0, a.u1};
        Tensor p;
        if (mode == "constant")
          p = ops::pad(g, t, lo, up, -1);
        else if (mode == "edgeMapped")
          p = ops::pad(g, t, lo, up, -1.0f, ops::padding::MappingMethod::EDGE);
        else if (mode == "tensor")
          p = ops::pad(g, t, lo, up, minusOne);
        else
          p = ops::pad(t, lo, up,
                       mode == "edge" ? ops::padding::Type::EDGE : ops::padding::Type::REFLECT);
        // Copy the view into a variable: the padding must hold its values on device.
        Tensor out = g.addVariable(INT, p.shape());
        util::mapTensorLinearly(g, out, 1, 1);
        prog.add(program::Copy(p, out));
        const std::string name = "out" + std::to_string(checks.size());
        g.createHostRead(name + "-read", out);
        const std::string modelMode = mode == "tensor" || mode == "edgeMapped" ? "constant" : mode;
        checks.push_back({model(m, 5, 4, a.l0, a.u0, a.l1, a.u1, modelMode), out});
      }
    // One-dimension forms: rows padded by reflection, columns by the constant 7.
    Tensor rows = ops::pad(t, 2, 1, 0, ops::padding::Type::REFLECT);
    REQUIRE(rows.shape() == std::vector<std::size_t>{8, 4});
    REQUIRE(rows[0] == t[2]);
    REQUIRE(rows[7] == t[3]);
    REQUIRE(ops::pad(g, t, 0, 1, 1, 7).shape() == std::vector<std::size_t>{5, 5});
    Engine e = dmtest::load(g, prog, c);
    dmtest::write(e, "t", m);
    dmtest::write(e, "minusOne", std::vector<int>{-1});
    e.run();
    for (std::size_t k = 0; k < checks.size(); ++k) {
      INFO("check " << k);
      REQUIRE(dmtest::read<int>(e, "out" + std::to_string(k), checks[k].first.size()) ==
              checks[k].first);
    }
  }
}

TEST_CASE("edge and reflect padding are views of t; constant padding maps as asked",
          "[unit][pad]") {
  Graph g(Target::createGeneric(7));
  Tensor t = g.addVariable(FLOAT, {3, 4}, "t");
  util::mapTensorLinearly(g, t, 1, 1);
  Tensor e = ops::pad(t, {1, 0}, {0, 2}, ops::padding::Type::EDGE);
  REQUIRE(e.shape() == std::vector<std::size_t>{4, 6});
  REQUIRE(!e.containsConstant());
  REQUIRE(e[0] == e[1]);                         // the first row repeated
  REQUIRE(e.slice(5, 6, 1) == e.slice(3, 4, 1)); // the last column repeated
  Tensor c = ops::pad(g, t, {0, 1}, {0, 0}, 2.5f, ops::padding::MappingMethod::EDGE);
  REQUIRE(c.containsConstant());
  // Each pad element lives on the tile of its nearest element of t.
  const auto padMapping = g.getTileMapping(c.slice(0, 1, 1));
  const auto edgeMapping = g.getTileMapping(t.slice(0, 1, 1));
  REQUIRE(padMapping == edgeMapping);
  Tensor z = ops::pad(g, t, {1, 1}, {1, 1});
  REQUIRE(g.getTileMapping(z[0])[0] == std::vector<Interval>{Interval(0, 6)});
}
