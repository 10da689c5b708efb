// Seeded random inputs for the tests: the same values on every run and machine.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace aspen::test {

// n floats drawn uniformly from [lo, hi) by a Mersenne twister seeded with `seed`.
inline std::vector<float> randomFloats(std::size_t n, unsigned seed, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

} // namespace aspen::test
