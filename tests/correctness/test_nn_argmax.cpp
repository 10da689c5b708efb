// aspen::nn arg-max/arg-min, max/min with indices and top-k against a host model: ties (first
// index wins), NaN (ranks above everything), infinities, signed zeros; float, half, int and
// unsigned; 1, 7 and 1472 tiles; 1 and 4 threads.
#include "test_nn_harness.hpp"

#include <aspen/nn/Loss.hpp>

#include <algorithm>
#include <numeric>

using namespace nntest;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kCols = 6, kK = 3;

// Hand-picked rows first, then seeded random rows with many ties (small integer values).
Values inputFor(Type type, std::size_t rows) {
  Values v;
  if (type == FLOAT || type == HALF)
    v = {1,     3,     3,     2, 0, -1,   kNaN, 5,     kNaN, 1, 2,    3, -kInf, -kInf, -kInf,
         -kInf, -kInf, -kInf, 2, 7, kInf, 7,    -kInf, 0,    0, -0.0, 0, 0,     0,     0};
  else
    v = {1, 3, 3, 2, 0, 1, 4, 4, 4, 4, 4, 4, 9, 2, 9, 2, 9, 2};
  std::mt19937 rng(17);
  const int lo = type == UNSIGNED_INT ? 0 : -4;
  while (v.size() < rows * kCols)
    v.push_back(double(lo + int(rng() % 9)) / (type == FLOAT || type == HALF ? 2.0 : 1.0));
  return v;
}

// True when a ranks before b: NaN first, then larger values; the caller breaks ties by index.
bool ranksAbove(double a, double b) { return !std::isnan(b) && (std::isnan(a) || a > b); }
bool ranksBelow(double a, double b) { return !std::isnan(b) && (std::isnan(a) || a < b); }

std::vector<std::size_t> order(const Values &row, bool max) {
  std::vector<std::size_t> idx(row.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return max ? ranksAbove(row[a], row[b]) : ranksBelow(row[a], row[b]);
  });
  return idx;
}

Harness build(const Target &target, Type type, std::size_t rows) {
  Harness h(target);
  Tensor in = h.input(type, {rows, kCols}, "in", inputFor(type, rows));
  auto [maxValues, maxIndices] = nn::maxAndArgMax(h.graph, in, h.prog);
  auto [minValues, minIndices] = nn::minAndArgMin(h.graph, in, h.prog);
  h.output("max", maxValues);
  h.output("argMax", maxIndices);
  h.output("min", minValues);
  h.output("argMin", minIndices);
  h.output("argMaxOnly", nn::argMax(h.graph, in, h.prog));
  h.output("argMinOnly", nn::argMin(h.graph, in, h.prog));
  Tensor topIndices, allIndices;
  h.output("top", nn::topK(h.graph, in, topIndices, kK, true, h.prog));
  h.output("topIndices", topIndices);
  h.output("all", nn::topK(h.graph, in, allIndices, kCols, false, h.prog));
  h.output("allIndices", allIndices);
  return h;
}

void check(Type type, std::size_t rows, std::map<std::string, Values> &out) {
  const Values in = inputFor(type, rows);
  for (std::size_t r = 0; r < rows; ++r) {
    INFO("row " << r);
    const Values row(in.begin() + r * kCols, in.begin() + (r + 1) * kCols);
    const auto down = order(row, true), up = order(row, false);
    REQUIRE(out["argMax"][r] == down[0]);
    REQUIRE(out["argMin"][r] == up[0]);
    REQUIRE(out["argMaxOnly"][r] == down[0]);
    REQUIRE(out["argMinOnly"][r] == up[0]);
    REQUIRE(sameValues({out["max"][r]}, {row[down[0]]}));
    REQUIRE(sameValues({out["min"][r]}, {row[up[0]]}));
    for (std::size_t k = 0; k < kCols; ++k) {
      if (k < kK) {
        REQUIRE(out["topIndices"][r * kK + k] == down[k]);
        REQUIRE(sameValues({out["top"][r * kK + k]}, {row[down[k]]}));
      }
      REQUIRE(out["allIndices"][r * kCols + k] == down[k]);
      REQUIRE(sameValues({out["all"][r * kCols + k]}, {row[down[k]]}));
    }
  }
}

} // namespace

TEST_CASE("arg-max, arg-min and top-k match the host model on any tiles and threads",
          "[correctness][nn]") {
  const std::size_t rows = 41;
  for (Type type : {FLOAT, HALF, INT, UNSIGNED_INT}) {
    std::map<std::string, Values> first;
    for (auto &[targetName, target] : targets()) {
      INFO(type << " on " << targetName);
      Harness h = build(target, type, rows);
      auto one = h.run(1);
      auto four = h.run(4);
      for (auto &[name, values] : one) {
        INFO(name);
        REQUIRE(sameValues(values, four[name]));
        if (!first.empty())
          REQUIRE(sameValues(values, first[name]));
      }
      if (first.empty()) {
        check(type, rows, one);
        first = one;
      }
    }
  }
}

TEST_CASE("arg-max of no rows gives an empty result", "[correctness][nn]") {
  Harness h(Target::createGeneric(2));
  Tensor in = h.graph.addVariable(FLOAT, {0, 5}, "in");
  Tensor indices;
  REQUIRE(nn::argMax(h.graph, in, h.prog).shape() == Shape{0});
  REQUIRE(nn::topK(h.graph, in, indices, 2, true, h.prog).shape() == Shape{0, 2});
  REQUIRE(indices.shape() == Shape{0, 2});
}

TEST_CASE("top-k and arg-max of long rows mapped linearly over many tiles", "[correctness][nn]") {
  const std::size_t rows = 24, cols = 1000, k = 10;
  const Values in = roundAll(FLOAT, randomValues(rows * cols, -50, 50, 23));
  Harness h(Target::createModel("ipu2"));
  Tensor t = h.input(FLOAT, {rows, cols}, "in", in, false);
  Tensor indices;
  h.output("top", nn::topK(h.graph, t, indices, k, true, h.prog));
  h.output("indices", indices);
  h.output("argMax", nn::argMax(h.graph, t, h.prog));
  auto out = h.run(4);
  for (std::size_t r = 0; r < rows; ++r) {
    const Values row(in.begin() + r * cols, in.begin() + (r + 1) * cols);
    const auto down = order(row, true);
    REQUIRE(out["argMax"][r] == down[0]);
    for (std::size_t i = 0; i < k; ++i) {
      REQUIRE(out["indices"][r * k + i] == down[i]);
      REQUIRE(out["top"][r * k + i] == row[down[i]]);
    }
  }
}
