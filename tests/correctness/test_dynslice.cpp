// Dynamic and multi slices against a host model of popops' offset rules, with offsets written
// at run time, on every configuration of the harness.
#include "correctness/test_fill_harness.hpp"

#include <aspen/ops/DynamicSlice.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <numeric>

using namespace aspen;
using Shape = std::vector<std::size_t>;

namespace {

std::size_t numElements(const Shape &s) {
  return std::accumulate(s.begin(), s.end(), std::size_t{1}, std::multiplies<>());
}

// Row-major coordinates of flat index i in shape s.
Shape coordinates(std::size_t i, const Shape &s) {
  Shape c(s.size());
  for (std::size_t d = s.size(); d-- > 0;) {
    c[d] = i % s[d];
    i /= s[d];
  }
  return c;
}

std::size_t flatIndex(const Shape &c, const Shape &s) {
  std::size_t i = 0;
  for (std::size_t d = 0; d < s.size(); ++d)
    i = i * s[d] + c[d];
  return i;
}

struct Slicing {
  Shape shape;       // of t
  Shape dims, sizes; // k each
  Shape sliceShape() const {
    Shape s = shape;
    for (std::size_t i = 0; i < dims.size(); ++i)
      s[dims[i]] = sizes[i];
    return s;
  }
  // The flat index in t of element `c` (slice coordinates) of the slice at `offsets`, or -1
  // when out of range. wrap: dynamicSlice's rule; otherwise multiSlice's.
  long source(const Shape &c, const std::vector<unsigned> &offsets, bool wrap) const {
    Shape t = c;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      const std::size_t dim = shape[dims[i]];
      std::size_t o = offsets[i];
      if (wrap) {
        o = o >= dim ? 0 : o;
        t[dims[i]] = (o + c[dims[i]]) % dim;
      } else {
        if (o + sizes[i] > dim)
          return -1;
        t[dims[i]] = o + c[dims[i]];
      }
    }
    return static_cast<long>(flatIndex(t, shape));
  }
};

std::vector<double> iotaValues(std::size_t n, double start) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

} // namespace

TEST_CASE("dynamicSlice and dynamicUpdate read offsets at run time and wrap like popops",
          "[correctness][dynslice]") {
  const std::vector<Slicing> cases = {
      {{6, 5}, {0}, {2}}, {{6, 5}, {1}, {5}}, {{4, 5, 6}, {2, 0}, {3, 2}}, {{7}, {0}, {7}}};
  const std::vector<std::vector<unsigned>> offsetSets = {{0, 0}, {1, 3},   {4, 5}, {5, 1},
                                                         {6, 2}, {100, 4}, {3, 7}};
  for (Type type : {INT, FLOAT, HALF})
    for (const Slicing &s : cases) {
      std::vector<std::vector<double>> first;
      for (const auto &c : dmtest::configs()) {
        INFO(c.name << ", type " << type << ", shape " << s.shape.size() << "-D, dims[0] "
                    << s.dims[0]);
        Graph g = dmtest::makeGraph(c);
        Tensor t = dmtest::variable(g, type, s.shape, "t");
        Tensor u = dmtest::variable(g, type, s.shape, "u");
        Tensor offset = dmtest::variable(g, UNSIGNED_INT, {s.dims.size()}, "offset");
        Tensor in = dmtest::variable(g, type, s.sliceShape(), "in");
        program::Sequence prog;
        Tensor out = ops::dynamicSlice(g, t, offset, s.dims, s.sizes, prog, "slice");
        REQUIRE(out.shape() == s.sliceShape());
        ops::dynamicUpdate(g, u, in, offset, s.dims, s.sizes, prog, "update");
        g.createHostRead("out-read", out);
        Engine e = dmtest::load(g, prog, c);
        const std::size_t n = numElements(s.shape), m = numElements(s.sliceShape());
        const auto tv = iotaValues(n, 1), inv = iotaValues(m, -1000);
        std::vector<double> results;
        for (const auto &o : offsetSets) {
          std::vector<unsigned> offsets(o.begin(), o.begin() + s.dims.size());
          INFO("offsets " << offsets[0]
                          << (offsets.size() > 1 ? "," + std::to_string(offsets[1]) : ""));
          dmtest::writeAs(e, "t", type, tv);
          dmtest::writeAs(e, "u", type, std::vector<double>(n, -777.0));
          dmtest::writeAs(e, "in", type, inv);
          dmtest::write(e, "offset", offsets);
          e.run();
          const auto got = dmtest::readAs(e, "out", type, m);
          std::vector<double> want(n, -777.0);
          for (std::size_t i = 0; i < m; ++i) {
            const long from = s.source(coordinates(i, s.sliceShape()), offsets, true);
            REQUIRE(got[i] == tv[from]);
            want[from] = inv[i];
          }
          REQUIRE(dmtest::readAs(e, "u", type, n) == want);
          results.insert(results.end(), got.begin(), got.end());
        }
        first.push_back(results);
        REQUIRE(results == first.front());
      }
    }
}

TEST_CASE("multiSlice zeroes out-of-range slices; multiUpdate writes in order and ignores them",
          "[correctness][dynslice]") {
  const Slicing s{{10, 3, 4}, {0, 2}, {2, 3}};
  // Slices 3 and 5 are out of range in dim 0 (9 + 2 > 10, 10), slice 6 in dim 2 (2 + 3 > 4);
  // slices 0 and 4 have the same offsets.
  const std::vector<unsigned> offsets = {1, 0, 8, 1, 0, 1, 9, 0, 1, 0, 10, 0, 2, 2, 4, 1};
  const std::size_t N = offsets.size() / 2;
  for (Type type : {INT, HALF}) {
    std::vector<double> first;
    for (const auto &c : dmtest::configs()) {
      INFO(c.name << ", type " << type);
      Graph g = dmtest::makeGraph(c);
      Tensor t = dmtest::variable(g, type, s.shape, "t");
      Tensor u = dmtest::variable(g, type, s.shape, "u");
      Tensor off = dmtest::variable(g, UNSIGNED_INT, {N, 2}, "off");
      Shape multiShape = s.sliceShape();
      multiShape.insert(multiShape.begin(), N);
      Tensor in = dmtest::variable(g, type, multiShape, "in");
      program::Sequence prog;
      Tensor out = ops::multiSlice(g, t, off, s.dims, s.sizes, prog);
      REQUIRE(out.shape() == multiShape);
      ops::multiUpdate(g, u, in, off, s.dims, s.sizes, prog);
      g.createHostRead("out-read", out);
      Engine e = dmtest::load(g, prog, c);
      const std::size_t n = numElements(s.shape), m = numElements(s.sliceShape());
      const auto tv = iotaValues(n, 1), inv = iotaValues(N * m, -500);
      dmtest::writeAs(e, "t", type, tv);
      dmtest::writeAs(e, "u", type, std::vector<double>(n, -777.0));
      dmtest::writeAs(e, "in", type, inv);
      dmtest::write(e, "off", offsets);
      e.run();
      const auto got = dmtest::readAs(e, "out", type, N * m);
      std::vector<double> want(n, -777.0);
      for (std::size_t k = 0; k < N; ++k)
        for (std::size_t i = 0; i < m; ++i) {
          const std::vector<unsigned> o{offsets[2 * k], offsets[2 * k + 1]};
          const long from = s.source(coordinates(i, s.sliceShape()), o, false);
          REQUIRE(got[k * m + i] == (from < 0 ? 0.0 : tv[from]));
          if (from >= 0)
            want[from] = inv[k * m + i];
        }
      REQUIRE(dmtest::readAs(e, "u", type, n) == want);
      if (first.empty())
        first = got;
      REQUIRE(got == first);
    }
  }
}

TEST_CASE("multiUpdateAdd accumulates equal offsets and scales on device",
          "[correctness][dynslice]") {
  const Slicing s{{9, 7}, {0}, {1}};
  const std::vector<unsigned> offsets = {3, 0, 3, 8, 9, 3, 100};
  const std::size_t N = offsets.size();
  for (Type type : {FLOAT, HALF, INT, UNSIGNED_INT}) {
    std::vector<double> first;
    for (const auto &c : dmtest::configs()) {
      INFO(c.name << ", type " << type);
      Graph g = dmtest::makeGraph(c);
      Tensor t = dmtest::variable(g, type, s.shape, "t");
      Tensor off = dmtest::variable(g, UNSIGNED_INT, {N, 1}, "off");
      Tensor in = dmtest::variable(g, type, {N, 1, 7}, "in");
      Tensor scale = dmtest::variable(g, type, {}, "scale");
      program::Sequence prog;
      ops::multiUpdateAdd(g, t, in, off, scale, s.dims, s.sizes, prog);
      Engine e = dmtest::load(g, prog, c);
      const auto tv = iotaValues(63, 0);
      std::vector<double> inv(N * 7);
      for (std::size_t i = 0; i < inv.size(); ++i)
        inv[i] =
            type.isFloatingPoint() ? dmtest::quantize(0.25 * double(i) - 3.1, type) : double(i);
      dmtest::writeAs(e, "t", type, tv);
      dmtest::writeAs(e, "in", type, inv);
      dmtest::writeAs(e, "scale", type, {3});
      dmtest::write(e, "off", offsets);
      e.run();
      const auto got = dmtest::readAs(e, "t", type, 63);
      std::vector<double> want = tv;
      for (std::size_t k = 0; k < N; ++k)
        if (offsets[k] < 9)
          for (std::size_t j = 0; j < 7; ++j)
            want[offsets[k] * 7 + j] += 3 * inv[k * 7 + j];
      for (std::size_t i = 0; i < 63; ++i) {
        INFO("element " << i);
        // Three half roundings at most per element (one per accumulated slice).
        const double tol = type == HALF ? 3 * std::ldexp(std::abs(want[i]) + 64, -11) : 1e-5;
        REQUIRE(std::abs(got[i] - want[i]) <= tol);
      }
      if (first.empty())
        first = got;
      REQUIRE(got == first);
    }
  }
}

TEST_CASE("slices move NaN, infinities and denormals bit for bit, and empty slices do nothing",
          "[correctness][dynslice]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float den = std::numeric_limits<float>::denorm_min();
  const std::vector<float> tv = {nan, -inf, den, -0.0f, inf, -den, 1.0f, -nan};
  for (const auto &c : dmtest::configs()) {
    INFO(c.name);
    Graph g = dmtest::makeGraph(c);
    Tensor t = dmtest::variable(g, FLOAT, {4, 2}, "t");
    Tensor off = dmtest::variable(g, UNSIGNED_INT, {1}, "off");
    Tensor noOffsets = dmtest::variable(g, UNSIGNED_INT, {0, 1}, "noOffsets");
    Tensor none = dmtest::variable(g, FLOAT, {0, 4, 2}, "none");
    program::Sequence prog;
    Tensor all = ops::dynamicSlice(g, t, off, {0}, {4}, prog); // every row, rotated
    Tensor nothing = ops::dynamicSlice(g, t, off, {1}, {0}, prog);
    Tensor noSlices = ops::multiSlice(g, t, noOffsets, {1}, {2}, prog);
    ops::multiUpdate(g, t, none, noOffsets, {0}, {4}, prog);
    REQUIRE(nothing.shape() == Shape{4, 0});
    REQUIRE(noSlices.shape() == Shape{0, 4, 2});
    g.createHostRead("all-read", all);
    Engine e = dmtest::load(g, prog, c);
    dmtest::write(e, "t", tv);
    dmtest::write(e, "off", std::vector<unsigned>{3});
    e.run();
    const auto got = dmtest::read<float>(e, "all", 8);
    const auto unchanged = dmtest::read<float>(e, "t", 8);
    for (std::size_t i = 0; i < 8; ++i) {
      // Row r of the slice is row (3 + r) mod 4 of t; bit patterns compared, so NaN payloads,
      // signs of zero and denormals must survive.
      REQUIRE(std::memcmp(&got[i], &tv[(i + 6) % 8], sizeof(float)) == 0);
      REQUIRE(std::memcmp(&unchanged[i], &tv[i], sizeof(float)) == 0);
    }
  }
}
