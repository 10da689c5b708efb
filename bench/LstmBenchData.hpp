// The deterministic data of the LSTM benchmarks (bench_lstm, bench_gpu_lstm), which Aspen and the
// PyTorch peer both build, and the checksum their forward outputs are compared by.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace aspen::bench::lstm_data {

// Element k of the tensor numbered `seed`, uniform in [-scale, scale); the peers' Python data()
// computes the same doubles.
enum Seed : unsigned { kInput = 1, kInputWeights = 2, kOutputWeights = 3, kBiases = 4,
                       kOutputGrad = 5, kChecksumWeights = 9 };
inline std::vector<float> data(std::size_t n, Seed seed, double scale) {
  std::vector<float> v(n);
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint64_t m = (k * 2654435761ull + seed * 40503ull) % 1000003ull;
    v[k] = float((double(m) * (2.0 / 1000003) - 1.0) * scale);
  }
  return v;
}
// Weights of this size keep the gates' pre-activations of order 1 (no saturated sigmoids).
inline double weightScale(std::size_t H) { return 1.0 / std::sqrt(double(2 * H)); }
constexpr double kBiasScale = 0.1;

// {sum_k y[k] * w[k], sum_k |y[k] * w[k]|} with w = data(kChecksumWeights): the second is the
// scale a difference is measured against.
inline std::pair<double, double> checksum(const std::vector<float> &y) {
  const std::vector<float> w = data(y.size(), kChecksumWeights, 1.0);
  double sum = 0, scale = 0;
  for (std::size_t k = 0; k < y.size(); ++k) {
    sum += double(y[k]) * w[k];
    scale += std::fabs(double(y[k]) * w[k]);
  }
  return {sum, scale};
}

} // namespace aspen::bench::lstm_data
