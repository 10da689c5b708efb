// Reductions against the double-precision host model: random data for every operation, type
// and set of dimensions; scale, update and output types; edge values; bit-identical results for
// any thread count and any mapping over 1, 7 and 1472 tiles; a 2^24-element compensated sum; the
// compute-set and reduceMany forms; a Poplar-style use through <popops/Reduce.hpp>.
#include "correctness/test_reduce_harness.hpp"

#include <poplar/Engine.hpp>
#include <popops/Reduce.hpp>
#include <popops/codelets.hpp>
#include <poputil/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

using namespace reducetest;

namespace {

std::vector<double> randomValues(std::mt19937 &rng, Operation op, Type type, std::size_t n) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) {
    if (type == BOOL)
      v.push_back(op == Operation::LOGICAL_AND ? rng() % 16 != 0 : rng() % 16 == 0);
    else if (op == Operation::MUL)
      v.push_back(type == UNSIGNED_INT || type == INT // products that fit in 31 bits
                      ? (rng() % (n / 16 + 2) == 0       ? 2.0
                         : type == INT && rng() % 8 == 0 ? -1.0
                                                         : 1.0)
                      : std::uniform_real_distribution<double>(0.7, 1.4)(rng));
    else if (type == UNSIGNED_INT)
      v.push_back(rng() % 1000);
    else if (type == INT)
      v.push_back(int(rng() % 2000) - 1000);
    else
      v.push_back(std::uniform_real_distribution<double>(-10, 10)(rng));
  }
  return v;
}

// The same bits (so -0 differs from +0).
bool identical(const std::vector<double> &a, const std::vector<double> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

struct ShapeAndDims {
  Shape shape;
  std::vector<std::size_t> dims;
};
const std::vector<ShapeAndDims> kLayouts = {
    {{300}, {0}},
    {{300}, {}},
    {{40, 33}, {1}},
    {{40, 33}, {0}},
    {{40, 33}, {0, 1}},
    {{6, 20, 9}, {1}},
    {{6, 20, 9}, {0, 2}},
    {{6, 20, 9}, {2, 0, 1}},
    {{2, 3, 4, 25}, {1, 3}},
    {{1, 50, 1}, {1}},
    {{}, {}},
    {{7, 1, 12}, {1}},
};

} // namespace

TEST_CASE("reduce matches the host model for every operation, type and layout",
          "[correctness][reduce]") {
  std::mt19937 rng(101);
  const Target target = Target::createGeneric(7);
  for (Operation op : kAllOperations)
    for (Type type : inputTypes(op))
      for (const auto &layout : kLayouts) {
        Case c;
        c.op = op;
        c.inType = c.outType = type;
        c.shape = layout.shape;
        c.dims = layout.dims;
        c.in = randomValues(rng, op, type, count(c.shape));
        INFO(ops::toString(op) << " " << type << " shape " << c.shape.size() << "-d, "
                               << c.dims.size() << " dims");
        REQUIRE(mismatches(c, run(target, c)) == 0);
      }
}

TEST_CASE("reduce applies scale and update as popops does", "[correctness][reduce]") {
  std::mt19937 rng(7);
  const Target target = Target::createGeneric(7);
  for (Operation op : kAllOperations)
    for (Type type : inputTypes(op))
      for (int variant = 0; variant < 3; ++variant) {
        Case c;
        c.op = op;
        c.inType = c.outType = type;
        c.shape = {12, 30};
        c.dims = {1};
        c.in = randomValues(rng, op, type, count(c.shape));
        c.update = variant != 1;
        if (variant != 0 && type != BOOL)
          c.scale = type == INT || type == UNSIGNED_INT ? 3.0f : 0.375f;
        c.initialOut = randomValues(rng, op, type, 12);
        INFO(ops::toString(op) << " " << type << " update " << c.update << " scale "
                               << c.scale.value_or(1));
        REQUIRE(mismatches(c, run(target, c)) == 0);
      }
}

TEST_CASE("reduce gives float results for half inputs and half results for float inputs",
          "[correctness][reduce]") {
  std::mt19937 rng(9);
  const Target target = Target::createGeneric(7);
  for (Operation op : {Operation::ADD, Operation::SQUARE_ADD, Operation::MAX, Operation::LOG_ADD})
    for (auto [in, out] : {std::pair{HALF, FLOAT}, std::pair{FLOAT, HALF}}) {
      Case c;
      c.op = op;
      c.inType = in;
      c.outType = out;
      c.shape = {64, 50};
      c.dims = {0};
      c.in = randomValues(rng, op, in, count(c.shape));
      INFO(ops::toString(op) << " " << in << " -> " << out);
      REQUIRE(mismatches(c, run(target, c)) == 0);
    }
  // Half accumulates in float: 4096 halves of 2^-14 give 0.25 exactly, and 3000 x 40000
  // overflows half but not float.
  Case c;
  c.inType = HALF;
  c.shape = {4096};
  c.dims = {0};
  c.in.assign(4096, std::ldexp(1.0, -14));
  REQUIRE(run(target, c) == std::vector<double>{0.25});
  c.shape = {3000};
  c.in.assign(3000, 40000.0);
  REQUIRE(run(target, c) == std::vector<double>{1.2e8});
  c.outType = HALF;
  REQUIRE(run(target, c) == std::vector<double>{INFINITY});
}

TEST_CASE("reduce edge values: NaN, infinities, denormals, empty tensors",
          "[correctness][reduce]") {
  const Target target = Target::createGeneric(7);
  auto one = [&](Operation op, Type type, std::vector<double> values) {
    Case c;
    c.op = op;
    c.inType = c.outType = type;
    c.shape = {values.size()};
    c.dims = {0};
    c.in = std::move(values);
    return run(target, c).at(0);
  };
  // MIN and MAX propagate NaN wherever it is.
  for (Operation op : {Operation::MIN, Operation::MAX}) {
    REQUIRE(std::isnan(one(op, FLOAT, {1, NAN, 3, 4, 5, 6, 7, 8, 9, 10})));
    REQUIRE(std::isnan(one(op, FLOAT, {1, 2, 3, 4, 5, 6, 7, 8, 9, NAN})));
    REQUIRE(std::isnan(one(op, HALF, {NAN, -INFINITY, INFINITY})));
  }
  REQUIRE(one(Operation::MAX, FLOAT, {-INFINITY, -1e38, 3}) == 3);
  REQUIRE(one(Operation::MIN, FLOAT, {INFINITY, -1e38, 3}) == float(-1e38));
  REQUIRE(std::isnan(one(Operation::ADD, FLOAT, {1, NAN, 2})));
  REQUIRE(one(Operation::ADD, FLOAT, std::vector<double>(100, 1.0e38)) == INFINITY);
  REQUIRE(one(Operation::ADD, FLOAT, {1, INFINITY, 2, 3, 4, 5, 6, 7, 8, 9, 10}) == INFINITY);
  REQUIRE(std::isnan(one(Operation::ADD, FLOAT, {INFINITY, -INFINITY})));
  REQUIRE(one(Operation::LOG_ADD, FLOAT, {-INFINITY, -INFINITY}) == -INFINITY);
  REQUIRE(one(Operation::LOG_ADD, FLOAT, {0, INFINITY, 1}) == INFINITY);
  REQUIRE(std::isnan(one(Operation::LOG_ADD, FLOAT, {0, NAN, 1})));
  REQUIRE(one(Operation::LOG_ADD, FLOAT, {1000, 1000}) == Approx(1000 + std::log(2.0)));
  // Float denormals add exactly.
  REQUIRE(one(Operation::ADD, FLOAT, std::vector<double>(1000, std::ldexp(1.0, -149))) ==
          std::ldexp(1000.0, -149));
  REQUIRE(one(Operation::MUL, INT, {-1, 2, 3}) == -6);

  // Empty reductions give the identity; empty outputs do nothing.
  for (Operation op : kAllOperations)
    for (Type type : inputTypes(op)) {
      Case c;
      c.op = op;
      c.inType = c.outType = type;
      c.shape = {3, 0};
      c.dims = {1};
      const std::vector<double> expected(3, identity(op, type == HALF ? FLOAT : type));
      INFO(ops::toString(op) << " " << type);
      REQUIRE(run(target, c) == expected);
      c.shape = {0, 3};
      c.dims = {1};
      REQUIRE(run(target, c).empty());
    }
}

TEST_CASE("reduce results are bit-identical for any thread count and any mapping over 1, 7, "
          "1472 tiles and 132 tiles of 256 workers",
          "[correctness][reduce]") {
  std::mt19937 rng(23);
  const std::vector<Target> targets = {Target::createCPUTarget(), Target::createGeneric(7),
                                       Target::createModel("ipu2"), Target::createModel("h200")};
  // Several blocks per output: along rows (600 = 2.3 blocks), along columns (520 rows), across
  // outer rows (6 rows of 50), and all of it.
  const std::vector<ShapeAndDims> layouts = {
      {{8, 600}, {1}}, {{520, 6}, {0}}, {{6, 10, 50}, {0, 2}}, {{20, 200}, {0, 1}}};
  for (std::size_t l = 0; l < layouts.size(); ++l)
    for (Operation op : kAllOperations)
      for (Type type : inputTypes(op)) {
        Case c;
        c.op = op;
        c.inType = c.outType = type;
        c.shape = layouts[l].shape;
        c.dims = layouts[l].dims;
        c.in = randomValues(rng, op, type, count(c.shape));
        if (type.isFloatingPoint() && op != Operation::MUL)
          for (double &x : c.in) // values of very different sizes make the order matter
            x *= std::pow(10.0, int(rng() % 9) - 4);
        if ((type == INT || type == UNSIGNED_INT) && op == Operation::SQUARE_ADD)
          for (double &x : c.in) // 4000 squares that fit in 31 bits
            x = std::trunc(x / 10);
        const auto expected = run(targets.front(), c, "1");
        INFO(ops::toString(op) << " " << type << " " << c.shape.size() << "-d, " << c.dims.size()
                               << " dims reduced");
        REQUIRE(mismatches(c, expected) == 0);
        // Half of the (target, mapping) pairs per layout, each pair in two of the layouts.
        for (std::size_t t = 0; t < targets.size(); ++t)
          for (std::size_t m = 0; m < std::size(kAllMappings); ++m) {
            if ((t + m + l) % 2 != 0)
              continue;
            INFO(targets[t].getNumTiles() << " tiles, mapping " << m);
            REQUIRE(identical(run(targets[t], c, "4", kAllMappings[m]), expected));
          }
        REQUIRE(identical(run(targets[1], c, "1", Mapping::Intervals), expected));
      }
}

TEST_CASE("reduce sums 16M floats to 1e-6 where naive float summation is not close",
          "[correctness][reduce]") {
  const std::size_t n = std::size_t{1} << 24;
  Case c;
  c.shape = {n};
  c.dims = {0};
  c.in.resize(n);
  double exact = 0;
  float naive = 0;
  for (std::size_t i = 0; i < n; ++i) {
    c.in[i] = 1.0 + std::ldexp(double(i % 1024), -12); // 1 + small increments, exact in float
    exact += c.in[i];
    naive += float(c.in[i]);
  }
  REQUIRE(std::fabs(naive - exact) / exact > 1e-2); // the test can tell
  for (const Target &target : {Target::createCPUTarget(), Target::createGeneric(7)}) {
    const double got = run(target, c).at(0);
    INFO(target.getNumTiles() << " tiles: " << got << " vs " << exact);
    REQUIRE(std::fabs(got - exact) / exact < 1e-6);
  }
}

TEST_CASE("reduce in compute sets, reduceMany and the popops names", "[correctness][reduce]") {
  using namespace poplar;
  using namespace poplar::program;
  Graph g(Target::createGeneric(7));
  popops::addCodelets(g);
  Tensor in = g.addVariable(FLOAT, {4, 6}, "in");
  poputil::mapTensorLinearly(g, in);
  Tensor rows = g.addVariable(FLOAT, {4}, "rows");
  poputil::mapTensorLinearly(g, rows);
  std::vector<ComputeSet> css;
  popops::reduceWithOutput(g, in, rows, {1}, popops::ReduceParams(popops::Operation::ADD), css,
                           "rows");
  REQUIRE(css.size() == 2);
  Sequence prog;
  for (const ComputeSet &cs : css)
    prog.add(Execute(cs));
  Tensor scale = g.addConstant(FLOAT, {}, 0.5f, "half");
  g.setTileMapping(scale, 0);
  Tensor cols = popops::reduce(
      g, in, {0}, popops::ReduceParams(popops::Operation::MAX, false, scale), prog, "cols");
  std::vector<Tensor> many;
  popops::reduceMany(
      g,
      {popops::SingleReduceOp(in, {0, 1}, popops::ReduceParams(popops::Operation::SQUARE_ADD)),
       popops::SingleReduceOp(in, {0}, popops::ReduceParams(popops::Operation::MIN), HALF)},
      many, prog, "many");
  REQUIRE(many.size() == 2);
  REQUIRE(many[1].elementType() == HALF);
  g.createHostWrite("in", in);
  g.createHostRead("rows", rows);
  g.createHostRead("cols", cols);
  g.createHostRead("sq", many[0]);
  g.createHostRead("min", many[1]);
  Engine e(g, prog);
  e.load(aspen::test::deviceFor(g.getTarget()));
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i)
    x[i] = float(i % 7) - 2.0f;
  e.writeTensor("in", x.data(), x.data() + 24);
  e.run();
  std::vector<float> r(4), cmax(6), sq(1);
  std::vector<unsigned short> cmin(6);
  e.readTensor("rows", r.data(), r.data() + 4);
  e.readTensor("cols", cmax.data(), cmax.data() + 6);
  e.readTensor("sq", sq.data(), sq.data() + 1);
  e.readTensor("min", cmin.data(), cmin.data() + 6);
  float sumSquares = 0;
  for (int row = 0; row < 4; ++row) {
    float sum = 0;
    for (int col = 0; col < 6; ++col)
      sum += x[row * 6 + col], sumSquares += x[row * 6 + col] * x[row * 6 + col];
    REQUIRE(r[row] == sum);
  }
  REQUIRE(sq[0] == sumSquares);
  for (int col = 0; col < 6; ++col) {
    float mx = -INFINITY, mn = INFINITY;
    for (int row = 0; row < 4; ++row)
      mx = std::max(mx, x[row * 6 + col]), mn = std::min(mn, x[row * 6 + col]);
    REQUIRE(cmax[col] == 0.5f * mx);
    REQUIRE(float(half::fromBits(cmin[col])) == mn);
  }
}

TEST_CASE("LOG_ADD's scale is a log multiply (added) and its update a log add, as popops says",
          "[correctness][reduce]") {
  using namespace poplar;
  using namespace poplar::program;
  Graph g(Target::createGeneric(3));
  popops::addCodelets(g);
  Tensor in = g.addVariable(FLOAT, {2, 3}, "in");
  poputil::mapTensorLinearly(g, in);
  Tensor scale = g.addConstant(FLOAT, {}, 1.2f, "scale");
  g.setTileMapping(scale, 0);
  Sequence prog;
  // Rows reduced: scaled, scaled with update into `acc`, and without a scale.
  Tensor scaled = popops::reduce(g, in, {1}, {popops::Operation::LOG_ADD, false, scale}, prog);
  Tensor acc = g.addVariable(FLOAT, {2}, "acc");
  poputil::mapTensorLinearly(g, acc);
  popops::reduceWithOutput(g, in, acc, {1}, {popops::Operation::LOG_ADD, true, scale}, prog);
  Tensor plain = popops::reduce(g, in, {1}, {popops::Operation::LOG_ADD}, prog);
  g.createHostWrite("in", in);
  g.createHostWrite("acc", acc);
  g.createHostRead("acc-read", acc);
  g.createHostRead("scaled", scaled);
  g.createHostRead("plain", plain);
  Engine e(g, prog);
  e.load(aspen::test::deviceFor(g.getTarget()));
  const std::vector<float> x = {1, 2, 3, -1, 0.5f, 4};
  const std::vector<float> acc0 = {0.5f, -3};
  e.writeTensor("in", x.data(), x.data() + x.size());
  e.writeTensor("acc", acc0.data(), acc0.data() + acc0.size());
  e.run();
  std::vector<float> got(2), gotAcc(2), gotPlain(2);
  e.readTensor("scaled", got.data(), got.data() + 2);
  e.readTensor("acc-read", gotAcc.data(), gotAcc.data() + 2);
  e.readTensor("plain", gotPlain.data(), gotPlain.data() + 2);
  for (int r = 0; r < 2; ++r) {
    const double logSum =
        std::log(std::exp(double(x[3 * r])) + std::exp(double(x[3 * r + 1])) +
                 std::exp(double(x[3 * r + 2])));
    INFO("row " << r);
    REQUIRE(gotPlain[r] == Approx(logSum).epsilon(1e-6));
    REQUIRE(got[r] == Approx(logSum + 1.2).epsilon(1e-6)); // not logSum + log(1.2)
    REQUIRE(gotAcc[r] ==
            Approx(std::log(std::exp(double(acc0[r])) + std::exp(logSum + 1.2))).epsilon(1e-6));
  }
  // Row 0 by hand: log(e + e^2 + e^3) = 3.40760596, plus 1.2.
  REQUIRE(got[0] == Approx(4.60760596).epsilon(1e-6));
}
