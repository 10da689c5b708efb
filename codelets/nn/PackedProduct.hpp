// The product kernel of the fused recurrent steps (rnn.cpp's LstmFusedFwd): rows of the
// previous output times a panel of packed recurrent weights, 16 columns wide, accumulated in
// float in registers. No standard library (NVRTC).
//
// A panel is [K][16] floats, row k holding the 16 columns' weights for input k (PackLstmWeights
// writes them once a run). macs adds rows[r][k] * panel[k][c] for k in [k0, k1) to acc[r][c],
// r < rb (1 to 4), in increasing k for every column, so each output's sum has one order
// whichever worker or tile computes it.
//
// On an x86 host the loop is a vector of 16 floats per row (GCC/Clang vector extensions), built
// three times: for AVX-512F, for AVX2 with FMA and for the baseline (SSE2); the first call picks
// the widest the CPU has (__builtin_cpu_supports). With FMA the multiply-add rounds once, so
// results differ in the last bit between a CPU with FMA and one without; on one machine they
// are the same for any thread count or split of the work. Elsewhere (other hosts, the GPU) the
// same sums are plain loops.
#pragma once

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
constexpr unsigned kRows = 4;   // rows a call accumulates at once

// acc[q][r][c] (acc + (q * kRows + r) * kPanel + c) for the np (1 or 2) panels panel0 and
// panel0 + panelStride.
template <unsigned RB>
ASPEN_HD inline void macsPlain(float *acc, const float *const *rows, const float *panel,
                               unsigned np, unsigned long long panelStride, unsigned k0,
                               unsigned k1) {
  for (unsigned q = 0; q < np; ++q)
    for (unsigned k = k0; k < k1; ++k) {
      const float *w = panel + q * panelStride + kPanel * k;
      for (unsigned r = 0; r < RB; ++r) {
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

// Two panels at once share each row's broadcast and keep 2 x RB sums in flight.
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

#define ASPEN_PACKED_CASE(rb)                                                                  \
  case rb:                                                                                     \
    if (np == 2)                                                                               \
      macsVector<rb, 2>(acc, rows, panel, panelStride, k0, k1);                                \
    else                                                                                       \
      macsVector<rb, 1>(acc, rows, panel, panelStride, k0, k1);                                \
    break;
#define ASPEN_PACKED_MACS(name, attributes)                                                   \
  attributes inline void name(float *acc, const float *const *rows, unsigned rb,               \
                              const float *panel, unsigned np, unsigned long long panelStride, \
                              unsigned k0, unsigned k1) {                                      \
    switch (rb) {                                                                              \
      ASPEN_PACKED_CASE(1)                                                                     \
      ASPEN_PACKED_CASE(2)                                                                     \
      ASPEN_PACKED_CASE(3)                                                                     \
    default:                                                                                   \
      ASPEN_PACKED_CASE(4)                                                                     \
    }                                                                                          \
  }
ASPEN_PACKED_MACS(macsAvx512, __attribute__((target("avx512f"))))
ASPEN_PACKED_MACS(macsAvx2, __attribute__((target("avx2,fma"))))
ASPEN_PACKED_MACS(macsBaseline, )
#undef ASPEN_PACKED_MACS
#undef ASPEN_PACKED_CASE

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

// For q < np (1 or 2) and r < rb (1 to kRows): acc[q][r][c] += sum over k in [k0, k1) of
// rows[r][k] * panel_q[k][c], panel_q = panel + q * panelStride; acc is [2][kRows][kPanel].
ASPEN_HD inline void macs(float *acc, const float *const *rows, unsigned rb, const float *panel,
                          unsigned np, unsigned long long panelStride, unsigned k0,
                          unsigned k1) {
#if defined(ASPEN_PACKED_X86)
  static const MacsFn fn = chooseMacs();
  fn(acc, rows, rb, panel, np, panelStride, k0, k1);
#else
  switch (rb) {
  case 1: macsPlain<1>(acc, rows, panel, np, panelStride, k0, k1); break;
  case 2: macsPlain<2>(acc, rows, panel, np, panelStride, k0, k1); break;
  case 3: macsPlain<3>(acc, rows, panel, np, panelStride, k0, k1); break;
  default: macsPlain<4>(acc, rows, panel, np, panelStride, k0, k1); break;
  }
#endif
}

} // namespace aspen::nn::packed
