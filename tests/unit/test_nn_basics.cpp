// The aspen::nn non-linearity table and the tests' double-precision models: names, families,
// scalings, and the analytic derivatives against central differences.
#include "correctness/test_nn_reference.hpp"

#include <aspen/nn/NonLinearity.hpp>

#include <catch2/catch.hpp>

#include <set>
#include <sstream>

using aspen::nn::NonLinearityType;

TEST_CASE("the non-linearity table drives names and families", "[unit][nn]") {
  std::set<std::string> names;
  for (unsigned i = 0; i < aspen::nn::kNumNonLinearityTypes; ++i) {
    const auto type = static_cast<NonLinearityType>(i);
    names.insert(aspen::nn::asString(type));
    std::ostringstream os;
    os << type;
    REQUIRE(os.str() == aspen::nn::asString(type));
  }
  REQUIRE(names.size() == 10);
  REQUIRE(aspen::nn::asString(NonLinearityType::SOFTMAX_SCALED) == "SOFTMAX_SCALED");
  REQUIRE(aspen::nn::asString(NonLinearityType::HARD_SIGMOID) == "HARD_SIGMOID");
  for (auto type : {NonLinearityType::SOFTMAX, NonLinearityType::SOFTMAX_STABLE,
                    NonLinearityType::SOFTMAX_SCALED})
    REQUIRE(aspen::nn::isSoftmax(type));
  REQUIRE_FALSE(aspen::nn::isSoftmax(NonLinearityType::SWISH));
  std::set<NonLinearityType> takesInput;
  for (unsigned i = 0; i < aspen::nn::kNumNonLinearityTypes; ++i)
    if (aspen::nn::gradientTakesInput(static_cast<NonLinearityType>(i)))
      takesInput.insert(static_cast<NonLinearityType>(i));
  REQUIRE(takesInput == std::set<NonLinearityType>{NonLinearityType::GELU,
                                                   NonLinearityType::GELU_ERF,
                                                   NonLinearityType::SWISH});
  REQUIRE(aspen::nn::getNonLinearityScaling(NonLinearityType::SOFTMAX_SCALED) == 62000.0f);
  REQUIRE(aspen::nn::getNonLinearityScaling(NonLinearityType::SOFTMAX_STABLE) == 1.0f);
  REQUIRE(aspen::nn::getNonLinearityScaling(NonLinearityType::GELU) == 1.0f);
  REQUIRE(aspen::nn::isStableSoftmax(NonLinearityType::SOFTMAX_SCALED));
  REQUIRE(aspen::nn::isStableSoftmax(NonLinearityType::SOFTMAX_STABLE));
  REQUIRE_FALSE(aspen::nn::isStableSoftmax(NonLinearityType::SOFTMAX));
}

TEST_CASE("analytic derivatives of the host models match central differences", "[unit][nn]") {
  const double h = 1e-5;
  for (unsigned i = 0; i < aspen::nn::kNumNonLinearityTypes; ++i) {
    const auto type = static_cast<NonLinearityType>(i);
    if (aspen::nn::isSoftmax(type))
      continue;
    // Points away from the kinks of relu (0) and hard sigmoid (+-2.5).
    for (double x : {-7.3, -3.1, -2.4, -1.0, -0.31, 0.05, 0.7, 1.9, 2.45, 3.3, 8.2}) {
      INFO(aspen::nn::asString(type) << " at " << x);
      const double numeric =
          (nntest::refForward(type, x + h) - nntest::refForward(type, x - h)) / (2 * h);
      REQUIRE(std::fabs(numeric - nntest::refDerivative(type, x)) < 1e-7);
    }
  }
  // Hard sigmoid's true gradient is 0 outside (-2.5, 2.5) (popnn: 0.2 everywhere).
  REQUIRE(nntest::refDerivative(NonLinearityType::HARD_SIGMOID, 3.0) == 0.0);
  REQUIRE((nntest::refForward(NonLinearityType::HARD_SIGMOID, 3.0 + h) -
           nntest::refForward(NonLinearityType::HARD_SIGMOID, 3.0 - h)) == 0.0);
}

TEST_CASE("the softmax gradient formula matches central differences", "[unit][nn]") {
  const std::vector<double> x{0.3, -1.2, 2.0, 0.0, 0.7}, g{0.5, -0.25, 1.0, 0.1, -0.6};
  for (double scale : {1.0, 62000.0}) {
    const auto y = nntest::refSoftmax(x, scale);
    double dot = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      dot += g[i] * y[i];
    // L(x) = sum g * y(x); dL/dx_j = y_j (g_j - sum(g y) / S).
    auto lossAt = [&](std::vector<double> at) {
      const auto ya = nntest::refSoftmax(at, scale);
      double l = 0;
      for (std::size_t i = 0; i < at.size(); ++i)
        l += g[i] * ya[i];
      return l;
    };
    for (std::size_t j = 0; j < x.size(); ++j) {
      auto plus = x, minus = x;
      plus[j] += 1e-6;
      minus[j] -= 1e-6;
      const double numeric = (lossAt(plus) - lossAt(minus)) / 2e-6;
      const double analytic = y[j] * (g[j] - dot / scale);
      REQUIRE(std::fabs(numeric - analytic) < 1e-6 * scale);
    }
  }
}
