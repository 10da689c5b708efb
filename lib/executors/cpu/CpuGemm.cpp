#include "CpuGemm.hpp"

#include <aspen/Error.hpp>
#include <aspen/HalfFloat.hpp>

#if ASPEN_HAVE_CBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

namespace aspen::detail {

namespace {

void widen(const void *src, Type type, std::uint64_t n, float *dst) {
  if (type == FLOAT) {
    std::memcpy(dst, src, n * sizeof(float));
    return;
  }
  const auto *h = static_cast<const half *>(src);
  for (std::uint64_t i = 0; i < n; ++i)
    dst[i] = float(h[i]);
}

void narrow(const float *src, std::uint64_t n, void *dst) {
  auto *h = static_cast<half *>(dst);
  for (std::uint64_t i = 0; i < n; ++i)
    h[i] = half(src[i]);
}

// c = alpha * a . b + beta * c for one [M,K] . [K,N] block of floats.
void floatGemm(std::uint64_t M, std::uint64_t K, std::uint64_t N, const float *a, const float *b,
               float *c, float alpha, float beta, ThreadPool &pool) {
#if ASPEN_HAVE_CBLAS
  (void)pool;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(M), int(N), int(K), alpha, a, int(K),
              b, int(N), beta, c, int(N));
#else
  // Rows in parallel; each row accumulates a.b in float across K, then scales once.
  pool.parallelFor(M, [&](std::size_t i) {
    std::vector<float> row(N, 0.0f);
    for (std::uint64_t k = 0; k < K; ++k) {
      const float aik = a[i * K + k];
      const float *bk = b + k * N;
      for (std::uint64_t j = 0; j < N; ++j)
        row[j] += aik * bk[j];
    }
    float *ci = c + i * N;
    for (std::uint64_t j = 0; j < N; ++j)
      ci[j] = alpha * row[j] + (beta != 0.0f ? beta * ci[j] : 0.0f);
  });
#endif
}

} // namespace

bool cpuGemmUsesBlas() { return ASPEN_HAVE_CBLAS != 0; }

void checkCpuGemm(const CompiledKernel &kernel) {
  const GemmShape &s = kernel.gemm;
  const std::uint64_t limit = INT_MAX;
  if (s.M > limit || s.K > limit || s.N > limit)
    throw error("Gemm '" + kernel.name + "': M = " + std::to_string(s.M) +
                ", K = " + std::to_string(s.K) + ", N = " + std::to_string(s.N) +
                ": the CPU executor's BLAS takes dimensions up to " + std::to_string(limit));
}

void cpuGemm(const GemmShape &s, const void *a, const void *b, void *c, float alpha,
             ThreadPool &pool, std::vector<float> &workspace) {
  const std::uint64_t aBlock = s.M * s.K, bBlock = s.K * s.N, cBlock = s.M * s.N;
  const bool widenInputs = s.inputType != FLOAT, floatOut = s.outputType == FLOAT;
  const float beta = s.accumulate ? 1.0f : 0.0f;
  // Per group: widened a and b, and a float c when the result is half.
  workspace.resize((widenInputs ? aBlock + bBlock : 0) + (floatOut ? 0 : cBlock));
  float *wa = workspace.data(), *wb = wa + (widenInputs ? aBlock : 0),
        *wc = wb + (widenInputs ? bBlock : 0);
  const std::uint64_t inBytes = s.inputType.size(), outBytes = s.outputType.size();
  for (std::uint64_t g = 0; g < s.G; ++g) {
    const void *ag = static_cast<const std::uint8_t *>(a) + g * aBlock * inBytes;
    const void *bg = static_cast<const std::uint8_t *>(b) + g * bBlock * inBytes;
    void *cg = static_cast<std::uint8_t *>(c) + g * cBlock * outBytes;
    const float *fa = static_cast<const float *>(ag), *fb = static_cast<const float *>(bg);
    if (widenInputs) {
      widen(ag, s.inputType, aBlock, wa);
      widen(bg, s.inputType, bBlock, wb);
      fa = wa;
      fb = wb;
    }
    float *fc = static_cast<float *>(cg);
    if (!floatOut) {
      if (s.accumulate)
        widen(cg, s.outputType, cBlock, wc);
      fc = wc;
    }
    floatGemm(s.M, s.K, s.N, fa, fb, fc, alpha, beta, pool);
    if (!floatOut)
      narrow(wc, cBlock, cg);
  }
}

} // namespace aspen::detail
