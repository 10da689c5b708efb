// Every operation of the table, for every type of its type set, on seeded random values and the
// type's edge values (NaN, ±inf, denormals, half overflow/underflow, integer min/max), against
// the double-precision reference of test_elementwise_harness.hpp. Single operations run on the
// library codelets; one graph per type holds every operation.
#include "correctness/test_elementwise_harness.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

using namespace ewtest;

namespace {

constexpr std::size_t kN = 48;

double absTolerance(Type t, bool exact, double ref, double a, double b) {
  if (!t.isFloatingPoint() || exact)
    return 0;
  return 1e-6 * (1 + std::fabs(std::isfinite(ref) ? ref : 0) + std::fabs(std::isfinite(a) ? a : 0) +
                 std::fabs(std::isfinite(b) ? b : 0));
}

struct OpCase {
  std::string name;
  std::function<double(double, double, double)> ref;
  bool exact;
  std::function<Tensor(Graph &, const std::vector<Tensor> &, program::Sequence &)> build;
  Type resultType;
};

std::vector<OpCase> casesFor(Type t) {
  std::vector<OpCase> cases;
#define EWTEST_UNARY(e, node, fn, types, result)                                                \
  if (ops::supportsType(UnaryOpType::e, t))                                                     \
    cases.push_back({#e, [t](double a, double, double) { return refUnary(UnaryOpType::e, t, a); }, \
                     correctlyRounded(UnaryOpType::e),                                          \
                     [](Graph &g, const std::vector<Tensor> &in, program::Sequence &p) {        \
                       return ops::fn(g, in[0], p);                                             \
                     },                                                                         \
                     ops::resultType(UnaryOpType::e, t)});
  ASPEN_EW_UNARY_OPS(EWTEST_UNARY)
#undef EWTEST_UNARY
#define EWTEST_BINARY(e, node, fn, types, result)                                               \
  if (ops::supportsType(BinaryOpType::e, t))                                                    \
    cases.push_back({#e, [t](double a, double b, double) { return refBinary(BinaryOpType::e, t, a, b); }, \
                     correctlyRounded(BinaryOpType::e),                                         \
                     [](Graph &g, const std::vector<Tensor> &in, program::Sequence &p) {        \
                       return ops::fn(g, in[0], in[1], p);                                      \
                     },                                                                         \
                     ops::resultType(BinaryOpType::e, t)});
  ASPEN_EW_BINARY_OPS(EWTEST_BINARY)
#undef EWTEST_BINARY
  if (ops::supportsType(TernaryOpType::CLAMP, t))
    cases.push_back({"CLAMP",
                     [](double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; },
                     true,
                     [](Graph &g, const std::vector<Tensor> &in, program::Sequence &p) {
                       return ops::clamp(g, in[2], ops::min(g, in[0], in[1], p),
                                         ops::max(g, in[0], in[1], p), p);
                     },
                     t});
  cases.push_back({"SELECT", [](double a, double b, double) { return a; }, true,
                   [](Graph &g, const std::vector<Tensor> &in, program::Sequence &p) {
                     return ops::select(g, in[0], in[1], ops::gteq(g, in[0], in[1], p), p);
                   },
                   t});
  return cases;
}

void checkAllOperations(Type t) {
  const auto cases = casesFor(t);
  std::vector<HostTensor> inputs{{t, {kN}, sample(t, kN, 1)}, {t, {kN}, sample(t, kN, 2)},
                                 {t, {kN}, sample(t, kN, 3)}};
  // The second operand's edge values meet the first's in a different order.
  std::reverse(inputs[1].values.begin(), inputs[1].values.end());
  const auto results = run(Target::createGeneric(7), inputs,
                           [&](Graph &g, const std::vector<Tensor> &in, program::Sequence &p) {
                             std::vector<Tensor> outs;
                             for (const OpCase &c : cases)
                               outs.push_back(c.build(g, in, p));
                             return outs;
                           });
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Type outType = cases[c].resultType;
    for (std::size_t i = 0; i < kN; ++i) {
      const double a = inputs[0].values[i], b = inputs[1].values[i], x = inputs[2].values[i];
      double ref;
      if (cases[c].name == "CLAMP") // clamp(x, min(a, b), max(a, b))
        ref = cases[c].ref(x, refBinary(BinaryOpType::MINIMUM, t, a, b),
                           refBinary(BinaryOpType::MAXIMUM, t, a, b));
      else if (cases[c].name == "SELECT")
        ref = a >= b ? a : b;
      else
        ref = cases[c].ref(a, b, x);
      double tol = absTolerance(t, cases[c].exact, ref, a, b);
      if (cases[c].name == "INV_STD_DEV_TO_VARIANCE")
        tol += 1e-6 * std::fabs(1 / (a * a));
      INFO(fmt::format("{} on {}: element {}: a={} b={} x={} got {} reference {}", cases[c].name,
                       t.toString(), i, a, b, x, results[c][i], ref));
      CHECK(matches(outType, results[c][i], ref, cases[c].exact ? 0 : 4, tol));
    }
  }
}

} // namespace

TEST_CASE("every operation on float and half matches the double reference",
          "[correctness][elementwise]") {
  checkAllOperations(FLOAT);
  checkAllOperations(HALF);
}

TEST_CASE("every operation on the integer types and bool matches the reference exactly",
          "[correctness][elementwise]") {
  for (Type t : {INT, UNSIGNED_INT, SHORT, UNSIGNED_SHORT, CHAR, UNSIGNED_CHAR, BOOL})
    checkAllOperations(t);
}
