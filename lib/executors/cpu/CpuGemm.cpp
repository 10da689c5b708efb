#include "CpuGemm.hpp"

#include "support/Logging.hpp"

#include <aspen/Error.hpp>
#include <aspen/HalfFloat.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>
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

// CBLAS's sgemm and sgemv, row-major: the values of CblasRowMajor, CblasNoTrans and CblasTrans.
enum : int { kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112 };
using Sgemm = void (*)(int order, int transA, int transB, int M, int N, int K, float alpha,
                       const float *A, int lda, const float *B, int ldb, float beta, float *C,
                       int ldc);
using Sgemv = void (*)(int order, int trans, int M, int N, float alpha, const float *A, int lda,
                       const float *x, int incx, float beta, float *y, int incy);

// OpenBLAS, opened at the first Gemm rather than linked: loading it starts its thread pool and
// reads OPENBLAS_NUM_THREADS, which a program may set first (the benchmarks do), and a process
// that never runs a kernel should not pay for either. The library the build found, then
// the loader's path (another CBLAS, such as the reference libblas.so.3 a GPU bundle carries,
// also serves); none: the portable loop, with a warning.
struct Blas {
  Sgemm sgemm = nullptr;
  Sgemv sgemv = nullptr; // for one-row products; sgemm when a library lacks it
  int (*numThreads)() = nullptr; // OpenBLAS only
};
const Blas &blas() {
  static std::once_flag once;
  static Blas api;
  std::call_once(once, [] {
    for (const char *name : {ASPEN_OPENBLAS_LIBRARY_PATH, "libopenblas.so.0", "libcblas.so.3",
                             "libblas.so.3"}) {
      if (!*name)
        continue;
      void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (!handle)
        continue;
      api.sgemm = reinterpret_cast<Sgemm>(dlsym(handle, "cblas_sgemm"));
      api.sgemv = reinterpret_cast<Sgemv>(dlsym(handle, "cblas_sgemv"));
      api.numThreads = reinterpret_cast<int (*)()>(dlsym(handle, "openblas_get_num_threads"));
      if (api.sgemm) {
        logger().debug("CPU executor: Gemm through {}", name);
        return;
      }
    }
    logger().warn("CPU executor: no CBLAS library found (OpenBLAS: Debian's libopenblas0); "
                  "Gemm runs a portable loop");
  });
  return api;
}

// Products smaller than this many MACs are not worth splitting over threads; larger ones are
// cut into a power of two of parts (so that 2, 4, 8... threads share them evenly), at least
// this many MACs and kMinPartExtent rows or columns each, at most kMaxParts: every call repacks
// the other operand, and 64 parts of 64 columns made an LSTM's H1024 B64 step about 10% slower
// than the 2 parts of 2 threads did, where 16 of 256 cost nothing measurable (2026-12-04).
constexpr std::uint64_t kMinSplitMacs = std::uint64_t(1) << 18;
constexpr std::uint64_t kMaxParts = 16, kMinPartExtent = 256;

std::uint64_t partsOf(std::uint64_t macs, std::uint64_t extent) {
  const std::uint64_t most = std::min({kMaxParts, macs / kMinSplitMacs, extent / kMinPartExtent});
  std::uint64_t parts = 1;
  while (parts * 2 <= most)
    parts *= 2;
  return parts;
}

// c = alpha * a . b + beta * c for one [M,K] . [K,N] block of floats, with the portable loop:
// rows in parallel, each accumulating a.b in float across K, then scaling once.
void loopGemm(std::uint64_t M, std::uint64_t K, std::uint64_t N, const float *a, const float *b,
              float *c, float alpha, float beta, ThreadPool &pool) {
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
}

// c = alpha * a . b + beta * c for rows [0, M) and columns [begin, end) of c (row-major, row
// length N): sgemm, or sgemv for one row (b^T . a) when `gemv` — OpenBLAS 0.3.21's sgemm packs
// all of b first even for one row of a, which took as long as the product itself. `gemv` only
// when OpenBLAS runs one thread: its threaded sgemv, called from two threads at once, ran 60x
// slower (codelets/linalg/matmul.cpp).
void blasGemm(const Blas &api, bool gemv, std::uint64_t M, std::uint64_t K, std::uint64_t N,
              std::uint64_t begin, std::uint64_t end, const float *a, const float *b, float *c,
              float alpha, float beta) {
  if (M == 1 && gemv)
    api.sgemv(kCblasRowMajor, kCblasTrans, int(K), int(end - begin), alpha, b + begin, int(N), a,
              1, beta, c + begin, 1);
  else
    api.sgemm(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, int(M), int(end - begin), int(K),
              alpha, a, int(K), b + begin, int(N), beta, c + begin, int(N));
}

// c = alpha * a . b + beta * c for one [M,K] . [K,N] block of floats, on all cores. The bits
// must not depend on the executor's thread count, and OpenBLAS's do depend on the shape of a
// call (the columns at a slice's edge take its kernel's tail path: a split over 3 threads
// changed 130 of 5476 sums of an LSTM's weight gradient against 1 thread). So the cut is a
// function of the shape alone: one call when OpenBLAS runs threads of its own (a process-wide
// setting) or the product is small; else partsOf's slices of the rows of c (or its columns,
// when there are fewer rows), which the executor's threads share.
void floatGemm(std::uint64_t M, std::uint64_t K, std::uint64_t N, const float *a, const float *b,
               float *c, float alpha, float beta, ThreadPool &pool) {
  const Blas &api = blas();
  if (!api.sgemm) {
    loopGemm(M, K, N, a, b, c, alpha, beta, pool);
    return;
  }
  const unsigned blasThreads = api.numThreads ? unsigned(std::max(1, api.numThreads())) : 1u;
  const bool gemv = api.sgemv && api.numThreads && blasThreads == 1;
  const bool byRows = M >= N;
  const std::uint64_t extent = byRows ? M : N;
  const std::uint64_t parts = blasThreads > 1 ? 1 : partsOf(M * N * K, extent);
  if (parts < 2) {
    blasGemm(api, gemv, M, K, N, 0, N, a, b, c, alpha, beta);
    return;
  }
  pool.parallelFor(parts, [&](std::size_t p) {
    const std::uint64_t begin = extent * p / parts, end = extent * (p + 1) / parts;
    if (byRows)
      blasGemm(api, gemv, end - begin, K, N, 0, N, a + begin * K, b, c + begin * N, alpha,
               beta);
    else
      blasGemm(api, gemv, M, K, N, begin, end, a, b, c, alpha, beta);
  });
}

} // namespace

bool hostBlasHasOwnThreads() {
  const Blas &api = blas();
  return api.sgemm && api.numThreads && api.numThreads() > 1;
}

void hostSgemm(bool transA, bool transB, std::uint64_t M, std::uint64_t N, std::uint64_t K,
               float alpha, const float *a, std::uint64_t lda, const float *b, std::uint64_t ldb,
               float beta, float *c, std::uint64_t ldc) {
  if (M == 0 || N == 0)
    return;
  const Blas &api = blas();
  if (api.sgemm && K > 0) {
    api.sgemm(kCblasRowMajor, transA ? kCblasTrans : kCblasNoTrans,
              transB ? kCblasTrans : kCblasNoTrans, int(M), int(N), int(K), alpha, a, int(lda), b,
              int(ldb), beta, c, int(ldc));
    return;
  }
  // The portable loop (and K = 0, which some CBLAS libraries refuse): float sums in k order.
  for (std::uint64_t i = 0; i < M; ++i)
    for (std::uint64_t j = 0; j < N; ++j) {
      float sum = 0.0f;
      for (std::uint64_t k = 0; k < K; ++k)
        sum += (transA ? a[k * lda + i] : a[i * lda + k]) * (transB ? b[j * ldb + k] : b[k * ldb + j]);
      float &cij = c[i * ldc + j];
      cij = alpha * sum + (beta != 0.0f ? beta * cij : 0.0f);
    }
}

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
