// The product kernel of the fused recurrent steps (codelets/nn/PackedProduct.hpp), each build
// this CPU can run: every sum is the sequential one, in increasing k, bit for bit (one fused
// multiply-add a term in the AVX-512 and AVX2 builds, a multiply then an add in the baseline),
// whatever the pass's row count and panel count, and nothing outside the pass's sums is written.
// The fused LSTM, GRU and RNN vertices rest on this: their results must not depend on how the
// rows of a step fall into passes, nor on the thread count.
#include <aspen/HalfFloat.hpp>

#include "../../codelets/nn/PackedProduct.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace packed = aspen::nn::packed;

namespace {

constexpr unsigned kRows = packed::kRows, kPanel = packed::kPanel;

struct Data {
  unsigned K;
  std::vector<std::vector<float>> rows; // kRows rows of K inputs
  std::vector<float> panels;            // two panels of [K][kPanel], stride K * kPanel
  std::vector<float> acc;               // [2][kRows][kPanel], nonzero to start
};

Data randomData(unsigned K, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Data d{K, {}, std::vector<float>(2ull * K * kPanel), std::vector<float>(2 * kRows * kPanel)};
  for (unsigned r = 0; r < kRows; ++r) {
    d.rows.emplace_back(K);
    for (float &x : d.rows.back())
      x = u(rng);
  }
  for (float &w : d.panels)
    w = u(rng);
  for (float &a : d.acc)
    a = u(rng);
  return d;
}

// acc[q][r][c] after k in [k0, k1) of the sequential sums, one rounding a term (fused) or two.
std::vector<float> reference(const Data &d, unsigned rb, unsigned np, unsigned k0, unsigned k1,
                             bool fused) {
  std::vector<float> acc = d.acc;
  for (unsigned q = 0; q < np; ++q)
    for (unsigned r = 0; r < rb; ++r)
      for (unsigned c = 0; c < kPanel; ++c) {
        float &a = acc[(q * kRows + r) * kPanel + c];
        for (unsigned k = k0; k < k1; ++k) {
          const float x = d.rows[r][k], w = d.panels[(q * d.K + k) * kPanel + c];
          if (fused) {
            a = std::fma(x, w, a);
          } else {
            volatile float p = x * w; // rounded on its own, as the baseline build does
            a = a + p;
          }
        }
      }
  return acc;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

#if defined(ASPEN_PACKED_X86)
TEST_CASE("every build of the packed product kernel gives the sequential sums bit for bit, for "
          "every pass of rows and panels",
          "[unit][nn][packed]") {
  struct Build {
    std::string name;
    packed::MacsFn fn;
    bool fused;
    bool runs;
  };
  __builtin_cpu_init();
  const Build builds[] = {
      {"baseline", packed::macsBaseline, false, true},
      {"avx2", packed::macsAvx2, true,
       __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")},
      {"avx512", packed::macsAvx512, true, __builtin_cpu_supports("avx512f") != 0},
  };
  unsigned ran = 0;
  for (const Build &b : builds) {
    if (!b.runs)
      continue;
    ++ran;
    for (unsigned np = 1; np <= 2; ++np)
      for (unsigned rb = 1; rb <= kRows; ++rb)
        for (const auto &[k0, k1] : {std::pair{0u, 37u}, std::pair{5u, 29u}, std::pair{3u, 3u}}) {
          INFO(b.name << ": " << rb << " rows, " << np << " panels, k in [" << k0 << ", " << k1
                      << ")");
          const Data d = randomData(37, 100 * rb + np);
          const float *rowPtr[kRows];
          for (unsigned r = 0; r < kRows; ++r)
            rowPtr[r] = d.rows[r].data();
          std::vector<float> acc = d.acc;
          b.fn(acc.data(), rowPtr, rb, d.panels.data(), np, 37ull * kPanel, k0, k1);
          const std::vector<float> expected = reference(d, rb, np, k0, k1, b.fused);
          CHECK(sameBits(acc, expected));
          // Not vacuous: the sums moved wherever the range is not empty.
          if (k1 > k0)
            CHECK(acc[0] != d.acc[0]);
        }
  }
  CHECK(ran >= 1);
  // The widest build is the one the vertices call (packed::macs).
  const bool wide = packed::hostIsa() != packed::HostIsa::Baseline;
  CHECK(wide == (__builtin_cpu_supports("avx512f") ||
                 (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))));
}
#endif

TEST_CASE("productRows sums half and float rows in increasing k across its chunks, the same bits "
          "for each row whichever pass it is in",
          "[unit][nn][packed]") {
  // K beyond one chunk (kChunkK), so a sum crosses a chunk boundary; rows 11: on the host a
  // pass of kRows (8) and one of 3.
  const unsigned K = packed::kChunkK + 45, B = 11;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(B * K), panels(2ull * K * kPanel);
  for (float &v : x)
    v = u(rng);
  for (float &v : panels)
    v = u(rng);
  std::vector<aspen::half> xh(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    xh[i] = aspen::half(x[i]);
#if defined(ASPEN_PACKED_X86)
  const bool fused = packed::hostIsa() != packed::HostIsa::Baseline;
#else
  const bool fused = false;
#endif
  for (const bool half : {false, true}) {
    INFO((half ? "half" : "float") << " rows");
    // Each row alone (a pass of one row) gives the reference bits...
    std::vector<float> alone(B * 2 * kPanel);
    for (unsigned r = 0; r < B; ++r)
      for (unsigned q = 0; q < 2; ++q)
        for (unsigned c = 0; c < kPanel; ++c) {
          float a = 0.0f;
          for (unsigned k = 0; k < K; ++k) {
            const float xv = half ? float(xh[r * K + k]) : x[r * K + k];
            const float w = panels[(q * K + k) * kPanel + c];
            if (fused) {
              a = std::fma(xv, w, a);
            } else {
              volatile float p = xv * w;
              a = a + p;
            }
          }
          alone[(r * 2 + q) * kPanel + c] = a;
        }
    // ... and the passes of kRows rows give each row the same.
    std::vector<float> passes(B * 2 * kPanel);
    for (unsigned r0 = 0; r0 < B; r0 += kRows) {
      const unsigned rb = B - r0 < kRows ? B - r0 : kRows;
      std::vector<float> acc(2 * kRows * kPanel, 0.0f);
      if (half)
        packed::productRows(acc.data(), xh.data(), K, r0, rb, panels.data(), 2,
                            (unsigned long long)K * kPanel);
      else
        packed::productRows(acc.data(), x.data(), K, r0, rb, panels.data(), 2,
                            (unsigned long long)K * kPanel);
      for (unsigned r = 0; r < rb; ++r)
        for (unsigned q = 0; q < 2; ++q)
          for (unsigned c = 0; c < kPanel; ++c)
            passes[((r0 + r) * 2 + q) * kPanel + c] = acc[(q * kRows + r) * kPanel + c];
    }
    CHECK(sameBits(passes, alone));
    // And the sums are the product: within float rounding of a double sum.
    double worst = 0.0;
    for (unsigned r = 0; r < B; ++r)
      for (unsigned c = 0; c < kPanel; ++c) {
        double s = 0.0;
        for (unsigned k = 0; k < K; ++k)
          s += double(half ? float(xh[r * K + k]) : x[r * K + k]) * panels[k * kPanel + c];
        worst = std::max(worst, std::fabs(s - alone[(r * 2) * kPanel + c]));
      }
    CHECK(worst < 1e-4);
  }
}
