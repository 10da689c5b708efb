// The product kernel of the fused recurrent steps (rnn.cpp's LstmFusedFwd): rows of the
// previous output times a panel of packed recurrent weights, 16 columns wide, accumulated in
// float in registers. No standard library (NVRTC).
//
// A panel is [K][16] floats, row k holding the 16 columns' weights for input k (PackLstmWeights
// writes them once a run). macs adds rows[r][k] * panel[k][c] for k in [k0, k1) to acc[r][c],
// r < rb (1 to kRows), in increasing k for every column, so each output's sum has one order
// whichever worker or tile computes it.
//
// On an x86 host the loop is built three times: AVX-512F and AVX2 fused multiply-adds
// (intrinsics: codelets are compiled with -ffp-contract=off, so FMA is only where asked for) and
// 16-float vectors for the baseline (SSE2, multiply then add); the first call picks the widest
// the CPU has (__builtin_cpu_supports). FMA rounds once, so results differ in the last bits
// between a CPU with FMA and one without; on one machine they are the same for any thread count
// or split of the work. Elsewhere (other hosts, the GPU) the same sums are plain loops.
#pragma once

#if !defined(__CUDACC_RTC__) && !defined(__CUDA_ARCH__) && defined(__x86_64__) &&             \
    defined(__GNUC__)
#include <immintrin.h> // the AVX-512 and AVX2 kernels below (host only)
#endif

// ASPEN_FLATTEN: on the host, everything a function calls is inlined into it, so that the
// activation polynomials of a cell loop vectorise with it (GCC otherwise stops inlining in a
// large loop body and calls them element by element).
#if !defined(__CUDACC_RTC__) && !defined(__CUDA_ARCH__) && defined(__GNUC__)
#define ASPEN_FLATTEN __attribute__((flatten))
#define ASPEN_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define ASPEN_FLATTEN
#define ASPEN_ALWAYS_INLINE inline
#endif

namespace aspen::nn::packed {

constexpr unsigned kPanel = 16; // columns a panel holds: 4 gates x 4 units
// Rows a pass accumulates at once: 8 on the host, so that at B = 8 and more each panel streams
// from cache half as often as with 4 (the LSTM's H256 B16 inference step about 13% faster,
// 2026-12-04); AVX2 and the baseline still take them in fours. On the GPU a vertex's arrays live in local memory, which the
// library's dispatch kernel reserves for every resident thread, so they stay small there (the
// sums and their order do not depend on it).
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
constexpr unsigned kRows = 1;
#else
constexpr unsigned kRows = 8;
#endif

// acc[q][r][c] (acc + (q * kRows + r) * kPanel + c) for the np (1 or 2) panels panel0 and
// panel0 + panelStride.
ASPEN_HD inline void macsPlain(float *acc, const float *const *rows, unsigned rb,
                               const float *panel, unsigned np, unsigned long long panelStride,
                               unsigned k0, unsigned k1) {
  for (unsigned q = 0; q < np; ++q)
    for (unsigned k = k0; k < k1; ++k) {
      const float *w = panel + q * panelStride + kPanel * k;
      for (unsigned r = 0; r < rb; ++r) {
        const float x = rows[r][k];
        for (unsigned c = 0; c < kPanel; ++c)
          acc[(q * kRows + r) * kPanel + c] += x * w[c];
      }
    }
}

#if !defined(__CUDACC_RTC__) && !defined(__CUDA_ARCH__) && defined(__x86_64__) &&             \
    defined(__GNUC__)
#define ASPEN_PACKED_X86 1

typedef float Vec16 __attribute__((vector_size(64), aligned(4), may_alias));

// The baseline build (SSE2: no FMA): 16-float vectors, multiply then add.
template <unsigned RB, unsigned NP>
__attribute__((always_inline)) inline void macsVector(float *acc, const float *const *rows,
                                                      const float *panel,
                                                      unsigned long long panelStride,
                                                      unsigned k0, unsigned k1) {
  Vec16 a[NP][RB];
  for (unsigned q = 0; q < NP; ++q)
    for (unsigned r = 0; r < RB; ++r)
      a[q][r] = *reinterpret_cast<const Vec16 *>(acc + (q * kRows + r) * kPanel);
  for (unsigned k = k0; k < k1; ++k) {
    Vec16 w[NP];
    for (unsigned q = 0; q < NP; ++q)
      w[q] = *reinterpret_cast<const Vec16 *>(panel + q * panelStride + kPanel * k);
    for (unsigned r = 0; r < RB; ++r) {
      const float x = rows[r][k];
      for (unsigned q = 0; q < NP; ++q)
        a[q][r] += x * w[q];
    }
  }
  for (unsigned q = 0; q < NP; ++q)
    for (unsigned r = 0; r < RB; ++r)
      *reinterpret_cast<Vec16 *>(acc + (q * kRows + r) * kPanel) = a[q][r];
}

// AVX-512: one register a row and panel, fused multiply-adds; two panels at once share each
// row's broadcast and keep 2 x RB sums in flight.
template <unsigned RB, unsigned NP>
__attribute__((target("avx512f"), always_inline)) inline void
macsAvx512Kernel(float *acc, const float *const *rows, const float *panel,
                 unsigned long long panelStride, unsigned k0, unsigned k1) {
  __m512 a[NP][RB];
  for (unsigned q = 0; q < NP; ++q)
    for (unsigned r = 0; r < RB; ++r)
      a[q][r] = _mm512_loadu_ps(acc + (q * kRows + r) * kPanel);
  for (unsigned k = k0; k < k1; ++k) {
    __m512 w[NP];
    for (unsigned q = 0; q < NP; ++q)
      w[q] = _mm512_loadu_ps(panel + q * panelStride + kPanel * k);
    for (unsigned r = 0; r < RB; ++r) {
      const __m512 x = _mm512_set1_ps(rows[r][k]);
      for (unsigned q = 0; q < NP; ++q)
        a[q][r] = _mm512_fmadd_ps(x, w[q], a[q][r]);
    }
  }
  for (unsigned q = 0; q < NP; ++q)
    for (unsigned r = 0; r < RB; ++r)
      _mm512_storeu_ps(acc + (q * kRows + r) * kPanel, a[q][r]);
}

// AVX2: a panel row is two registers, so one panel at a time (2 x RB sums fill the 16).
template <unsigned RB>
__attribute__((target("avx2,fma"), always_inline)) inline void
macsAvx2Kernel(float *acc, const float *const *rows, const float *panel, unsigned k0,
               unsigned k1) {
  __m256 a[RB][2];
  for (unsigned r = 0; r < RB; ++r)
    for (unsigned h = 0; h < 2; ++h)
      a[r][h] = _mm256_loadu_ps(acc + r * kPanel + 8 * h);
  for (unsigned k = k0; k < k1; ++k) {
    const __m256 w0 = _mm256_loadu_ps(panel + kPanel * k);
    const __m256 w1 = _mm256_loadu_ps(panel + kPanel * k + 8);
    for (unsigned r = 0; r < RB; ++r) {
      const __m256 x = _mm256_set1_ps(rows[r][k]);
      a[r][0] = _mm256_fmadd_ps(x, w0, a[r][0]);
      a[r][1] = _mm256_fmadd_ps(x, w1, a[r][1]);
    }
  }
  for (unsigned r = 0; r < RB; ++r)
    for (unsigned h = 0; h < 2; ++h)
      _mm256_storeu_ps(acc + r * kPanel + 8 * h, a[r][h]);
}

// AVX-512 takes up to 8 rows a call (2 x 8 sums and two panel rows in the 32 registers), so
// at B = 8 and more each panel streams from cache half as often as with 4; AVX2 (16
// registers) and the baseline take 4 and loop over the pass's rows in fours.
__attribute__((target("avx512f"))) inline void
macsAvx512(float *acc, const float *const *rows, unsigned rb, const float *panel, unsigned np,
           unsigned long long panelStride, unsigned k0, unsigned k1) {
  for (unsigned r0 = 0; r0 < rb; r0 += 8) {
    const unsigned n = rb - r0 < 8 ? rb - r0 : 8;
#define ASPEN_PACKED_K(m)                                                                      \
  (np == 2 ? macsAvx512Kernel<m, 2>(acc + r0 * kPanel, rows + r0, panel, panelStride, k0, k1)  \
           : macsAvx512Kernel<m, 1>(acc + r0 * kPanel, rows + r0, panel, panelStride, k0, k1))
    switch (n) {
    case 1: ASPEN_PACKED_K(1); break;
    case 2: ASPEN_PACKED_K(2); break;
    case 3: ASPEN_PACKED_K(3); break;
    case 4: ASPEN_PACKED_K(4); break;
    case 5: ASPEN_PACKED_K(5); break;
    case 6: ASPEN_PACKED_K(6); break;
    case 7: ASPEN_PACKED_K(7); break;
    default: ASPEN_PACKED_K(8); break;
    }
#undef ASPEN_PACKED_K
  }
}
__attribute__((target("avx2,fma"))) inline void
macsAvx2(float *acc, const float *const *rows, unsigned rb, const float *panel, unsigned np,
         unsigned long long panelStride, unsigned k0, unsigned k1) {
  for (unsigned r0 = 0; r0 < rb; r0 += 4)
    for (unsigned q = 0; q < np; ++q) {
      float *accQ = acc + (q * kRows + r0) * kPanel;
      const float *const *rowsQ = rows + r0;
      const float *panelQ = panel + q * panelStride;
      const unsigned n = rb - r0 < 4 ? rb - r0 : 4;
#define ASPEN_PACKED_K(m) macsAvx2Kernel<m>(accQ, rowsQ, panelQ, k0, k1)
      switch (n) {
      case 1: ASPEN_PACKED_K(1); break;
      case 2: ASPEN_PACKED_K(2); break;
      case 3: ASPEN_PACKED_K(3); break;
      default: ASPEN_PACKED_K(4); break;
      }
#undef ASPEN_PACKED_K
    }
}
inline void macsBaseline(float *acc, const float *const *rows, unsigned rb, const float *panel,
                         unsigned np, unsigned long long panelStride, unsigned k0,
                         unsigned k1) {
  for (unsigned r0 = 0; r0 < rb; r0 += 4) {
    const unsigned n = rb - r0 < 4 ? rb - r0 : 4;
#define ASPEN_PACKED_K(m)                                                                      \
  (np == 2 ? macsVector<m, 2>(acc + r0 * kPanel, rows + r0, panel, panelStride, k0, k1)        \
           : macsVector<m, 1>(acc + r0 * kPanel, rows + r0, panel, panelStride, k0, k1))
    switch (n) {
    case 1: ASPEN_PACKED_K(1); break;
    case 2: ASPEN_PACKED_K(2); break;
    case 3: ASPEN_PACKED_K(3); break;
    default: ASPEN_PACKED_K(4); break;
    }
#undef ASPEN_PACKED_K
  }
}

// The widest of the three builds this CPU runs, found once.
enum class HostIsa { Baseline, Avx2, Avx512 };
inline HostIsa hostIsa() {
  static const HostIsa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
      return HostIsa::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return HostIsa::Avx2;
    return HostIsa::Baseline;
  }();
  return isa;
}

using MacsFn = void (*)(float *, const float *const *, unsigned, const float *, unsigned,
                        unsigned long long, unsigned, unsigned);
inline MacsFn chooseMacs() {
  switch (hostIsa()) {
  case HostIsa::Avx512: return macsAvx512;
  case HostIsa::Avx2: return macsAvx2;
  default: return macsBaseline;
  }
}
#endif

// The k chunk a product widens from half at a time: small on the GPU (local memory).
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
constexpr unsigned kChunkK = 32;
#else
constexpr unsigned kChunkK = 256;
#endif

// For q < np (1 or 2) and r < rb (1 to kRows): acc[q][r][c] += sum over k in [k0, k1) of
// rows[r][k] * panel_q[k][c], panel_q = panel + q * panelStride; acc is [2][kRows][kPanel].
ASPEN_HD inline void macs(float *acc, const float *const *rows, unsigned rb, const float *panel,
                          unsigned np, unsigned long long panelStride, unsigned k0,
                          unsigned k1) {
#if defined(ASPEN_PACKED_X86)
  static const MacsFn fn = chooseMacs();
  fn(acc, rows, rb, panel, np, panelStride, k0, k1);
#else
  macsPlain(acc, rows, rb, panel, np, panelStride, k0, k1);
#endif
}

// acc [2][kRows][kPanel] += rows [r0, r0 + rb) of x (K elements of type T a row, rows ld
// apart: K when 0) times np panels ([K][kPanel] floats each, panelStride apart), in chunks of
// kChunkK of k widened to float when T is not float. Every column's sum runs in increasing k.
template <class T>
ASPEN_HD inline void productRows(float *acc, const T *x, unsigned K, unsigned r0, unsigned rb,
                                 const float *panel, unsigned np,
                                 unsigned long long panelStride, unsigned ld = 0) {
  if (ld == 0)
    ld = K;
  for (unsigned k0 = 0; k0 < K; k0 += kChunkK) {
    const unsigned k1 = K - k0 < kChunkK ? K : k0 + kChunkK;
    const float *rowPtr[kRows];
    float wide[kRows][kChunkK];
    for (unsigned r = 0; r < rb; ++r) {
      const T *src = x + (unsigned long long)(r0 + r) * ld + k0;
      if (sizeof(T) == sizeof(float)) {
        rowPtr[r] = reinterpret_cast<const float *>(src);
      } else {
        for (unsigned k = 0; k < k1 - k0; ++k)
          wide[r][k] = float(src[k]);
        rowPtr[r] = wide[r];
      }
    }
    macs(acc, rowPtr, rb, panel + k0 * kPanel, np, panelStride, 0, k1 - k0);
  }
}

// The walk of the one-gate fused steps (16-unit panels, rnn.cpp and gru.cpp): for the blocks
// [lo, hi) of 16 units, two a pass where there are (two panels' sums in flight), and the rows
// in passes of kRows, acc = x . the blocks' panels (block b's at panels + b * stride; zero when
// x is null; x's rows ld apart, K when 0), then finish(row, block, products) for each row and
// block of the pass.
template <class T, class F>
ASPEN_HD inline void forBlockPairs(const T *x, unsigned K, unsigned rows, unsigned lo,
                                   unsigned hi, const float *panels,
                                   unsigned long long stride, F finish, unsigned ld = 0) {
  for (unsigned b0 = lo; b0 < hi; b0 += 2) {
    const unsigned nb = hi - b0 < 2 ? 1 : 2;
    for (unsigned r0 = 0; r0 < rows; r0 += kRows) {
      const unsigned rb = rows - r0 < kRows ? rows - r0 : kRows;
      float acc[2 * kRows * kPanel];
      for (unsigned j = 0; j < 2 * kRows * kPanel; ++j)
        acc[j] = 0.0f;
      if (x)
        productRows(acc, x, K, r0, rb, panels + b0 * stride, nb, stride, ld);
      for (unsigned q = 0; q < nb; ++q)
        for (unsigned r = 0; r < rb; ++r)
          finish(r0 + r, b0 + q, acc + (q * kRows + r) * kPanel);
    }
  }
}

} // namespace aspen::nn::packed
