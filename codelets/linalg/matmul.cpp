// Codelets of aspen::linalg's matmul (lib/linalg/MatMul.cpp builds them from a MatMulPlan):
//
//   MatMulPartials<InT, PartialsT>   one tile's block product P[m,n] = A[m,k] . B[k,n]
//   MatMulPartialsAcc<InT, PartialsT>  P += A . B (serial k steps after the first)
//   ReducePartials<PartialsT, OutT>  C = sum of the k-partition parts of P, cast to OutT
//   ReducePartialsAcc<PartialsT, OutT>  C += scale * that sum (matMulAcc)
//   ConvDirect<InT, OutT>            one output channel of one image of a direct convolution
//
// Operands arrive as lists of rows (one contiguous segment each), so row-major operands are read
// in place and only transposed or strided views need the compiler to gather. Every output element
// is summed by one worker in a fixed order (k ascending, then partition parts ascending), in float,
// so results do not depend on worker order or thread count.
//
// Three implementations of the block product:
//   - the portable loop (the reference, any host compiler);
//   - __CUDA_ARCH__: FFMA per element for float, tensor-core mma.sync m16n8k16 (f16 inputs, f32
//     accumulators) for half, with a scalar loop for the edges that do not fill an MMA tile;
//   - ASPEN_LINALG_HOST_BLAS (host build with OpenBLAS, set by codelets/CMakeLists.txt): the
//     float/float product is one cblas_sgemm per block, run by worker 0 (the CPU executor runs a
//     tile's workers one after another on one thread, so splitting rows would only add calls).
//     OpenBLAS's thread count is left alone: 0.3.21 only has a process-wide setting, and concurrent
//     callers of sgemm are safe (see docs/performance.md for what two callers measured). A
//     one-row block is an sgemv only when OpenBLAS runs one thread: its threaded sgemv, called
//     from two tiles at once, ran 60x slower (a 1x1024x4096 product on the h200 model: 89 ms).
#include <aspen/Vertex.hpp>

#if defined(ASPEN_LINALG_HOST_BLAS) && !defined(__CUDA_ARCH__)
#include <cblas.h>

#include <vector>
#endif

namespace aspen::linalg {

namespace detail {

// Element counts and indices: 64-bit, as a tile's memory on a GPU target can exceed 2^32 bytes.
using ::aspen::detail::SizeType;

template <class T> ASPEN_HD inline float toFloat(T x) { return float(x); }

// Portable block product of rows [rowBegin, rowEnd): for each row, columns in chunks whose float
// accumulators live on the stack; k ascending within a chunk.
template <class InT, class PartialsT, class ARows, class BRows, class PRows>
ASPEN_HD void blockProductRows(const ARows &a, const BRows &b, const PRows &p, bool accumulate,
                               SizeType rowBegin, SizeType rowEnd) {
  constexpr unsigned kChunk = 64;
  const SizeType kSize = b.size();
  for (SizeType i = rowBegin; i < rowEnd; ++i) {
    const auto aRow = a[i];
    const auto pRow = p[i];
    const SizeType n = pRow.size();
    for (SizeType j0 = 0; j0 < n; j0 += kChunk) {
      const unsigned w = n - j0 < kChunk ? unsigned(n - j0) : kChunk;
      float acc[kChunk];
      for (unsigned j = 0; j < w; ++j)
        acc[j] = accumulate ? toFloat(pRow[j0 + j]) : 0.0f;
      for (SizeType k = 0; k < kSize; ++k) {
        const float x = toFloat(aRow[k]);
        const InT *bRow = b[k].data() + j0;
        for (unsigned j = 0; j < w; ++j)
          acc[j] += x * toFloat(bRow[j]);
      }
      for (unsigned j = 0; j < w; ++j)
        pRow[j0 + j] = PartialsT(acc[j]);
    }
  }
}

#if defined(__CUDA_ARCH__)
// One element of the block product in float, k ascending (the FFMA path and the MMA edges).
template <class InT, class ARows, class BRows>
__device__ float dotColumn(const ARows &a, const BRows &b, SizeType i, SizeType j, SizeType k0,
                           SizeType k1, float acc) {
  const auto aRow = a[i];
  for (SizeType k = k0; k < k1; ++k)
    acc = fmaf(toFloat(aRow[k]), toFloat(b[k][j]), acc);
  return acc;
}

__device__ inline unsigned packHalves(half lo, half hi) {
  return unsigned(lo.bits()) | (unsigned(hi.bits()) << 16);
}

// Tensor-core product of half rows: each full warp takes 16x8 output tiles in turn and runs
// mma.sync m16n8k16 over the whole 16-deep k slices, then the k remainder in scalar code; the
// elements outside full 16x8 tiles (and everything, when no warp is full) go to a scalar loop
// over all workers.
template <class PartialsT, class ARows, class BRows, class PRows>
__device__ void halfBlockProduct(const ARows &a, const BRows &b, const PRows &p, bool accumulate,
                                 unsigned wid, unsigned workers) {
  const SizeType m = p.size(), n = m ? p[0].size() : 0, kSize = b.size();
  const unsigned fullWarps = workers / 32;
  const SizeType tilesM = fullWarps ? m / 16 : 0, tilesN = fullWarps ? n / 8 : 0;
  const SizeType kFull = kSize - kSize % 16;
  if (wid < fullWarps * 32) {
    const unsigned warp = wid / 32, lane = wid % 32, group = lane / 4, inGroup = lane % 4;
    for (SizeType t = warp; t < tilesM * tilesN; t += fullWarps) {
      const SizeType i0 = (t / tilesN) * 16, j0 = (t % tilesN) * 8;
      const SizeType r0 = i0 + group, r1 = r0 + 8, c = j0 + inGroup * 2;
      float d[4];
      d[0] = accumulate ? toFloat(p[r0][c]) : 0.0f;
      d[1] = accumulate ? toFloat(p[r0][c + 1]) : 0.0f;
      d[2] = accumulate ? toFloat(p[r1][c]) : 0.0f;
      d[3] = accumulate ? toFloat(p[r1][c + 1]) : 0.0f;
      for (SizeType k0 = 0; k0 < kFull; k0 += 16) {
        const SizeType ka = k0 + inGroup * 2;
        const unsigned a0 = packHalves(a[r0][ka], a[r0][ka + 1]);
        const unsigned a1 = packHalves(a[r1][ka], a[r1][ka + 1]);
        const unsigned a2 = packHalves(a[r0][ka + 8], a[r0][ka + 9]);
        const unsigned a3 = packHalves(a[r1][ka + 8], a[r1][ka + 9]);
        const SizeType col = j0 + group;
        const unsigned b0 = packHalves(b[ka][col], b[ka + 1][col]);
        const unsigned b1 = packHalves(b[ka + 8][col], b[ka + 9][col]);
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      }
      d[0] = dotColumn<half>(a, b, r0, c, kFull, kSize, d[0]);
      d[1] = dotColumn<half>(a, b, r0, c + 1, kFull, kSize, d[1]);
      d[2] = dotColumn<half>(a, b, r1, c, kFull, kSize, d[2]);
      d[3] = dotColumn<half>(a, b, r1, c + 1, kFull, kSize, d[3]);
      p[r0][c] = PartialsT(d[0]);
      p[r0][c + 1] = PartialsT(d[1]);
      p[r1][c] = PartialsT(d[2]);
      p[r1][c + 1] = PartialsT(d[3]);
    }
  }
  // Edge elements: rows below the last full tile row, or columns right of the last full column.
  const SizeType coveredM = tilesM * 16, coveredN = tilesN * 8;
  for (SizeType e = wid; e < m * n; e += workers) {
    const SizeType i = e / n, j = e % n;
    if (i < coveredM && j < coveredN)
      continue;
    const float init = accumulate ? toFloat(p[i][j]) : 0.0f;
    p[i][j] = PartialsT(dotColumn<half>(a, b, i, j, 0, kSize, init));
  }
}
#endif

#if defined(ASPEN_LINALG_HOST_BLAS) && !defined(__CUDA_ARCH__)
// The distance between consecutive rows when it is the same for all of them (and rows do not
// overlap), else 0. A single row has stride `width`.
template <class Rows> std::size_t constantStride(const Rows &rows, std::size_t width) {
  if (rows.size() < 2)
    return width;
  const std::ptrdiff_t stride = rows[1].data() - rows[0].data();
  if (stride < std::ptrdiff_t(width))
    return 0;
  for (std::size_t i = 2; i < rows.size(); ++i)
    if (rows[i].data() - rows[i - 1].data() != stride)
      return 0;
  return std::size_t(stride);
}

// Rows packed one after another (when they are not evenly spaced).
template <class Rows> std::vector<float> packRows(const Rows &rows, std::size_t width) {
  std::vector<float> packed(rows.size() * width);
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < width; ++j)
      packed[i * width + j] = rows[i][j];
  return packed;
}

// OpenBLAS's thread count (weak: the build links OpenBLAS, whose cblas.h may not be the one found).
extern "C" int openblas_get_num_threads(void) __attribute__((weak));

// Whether one-row products may be sgemv calls: OpenBLAS runs one thread (see the top of the file).
inline bool gemvIsSerial() {
  return openblas_get_num_threads != nullptr && openblas_get_num_threads() == 1;
}

// P (+)= A . B for float rows with one cblas_sgemm (cblas_sgemv for one row, when OpenBLAS runs
// one thread); A and B rows that are not evenly spaced are packed first, and so is P (then
// written back row by row).
template <class ARows, class BRows, class PRows>
void blasBlockProduct(const ARows &a, const BRows &b, const PRows &p, bool accumulate) {
  const std::size_t m = p.size(), n = p[0].size(), k = b.size();
  if (n == 0)
    return;
  if (k == 0) {
    if (!accumulate)
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j)
          p[i][j] = 0.0f;
    return;
  }
  std::vector<float> aPacked, bPacked, pPacked;
  std::size_t lda = constantStride(a, k), ldb = constantStride(b, n), ldp = constantStride(p, n);
  const float *aData = a[0].data(), *bData = b[0].data();
  float *pData = p[0].data();
  if (lda == 0)
    aPacked = packRows(a, k), aData = aPacked.data(), lda = k;
  if (ldb == 0)
    bPacked = packRows(b, n), bData = bPacked.data(), ldb = n;
  if (ldp == 0)
    pPacked = packRows(p, n), pData = pPacked.data(), ldp = n;
  // A vector times a matrix: sgemv streams B once, where sgemm first packs it.
  if (m == 1 && gemvIsSerial())
    cblas_sgemv(CblasRowMajor, CblasTrans, int(k), int(n), 1.0f, bData, int(ldb), aData, 1,
                accumulate ? 1.0f : 0.0f, pData, 1);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f, aData,
                int(lda), bData, int(ldb), accumulate ? 1.0f : 0.0f, pData, int(ldp));
  if (!pPacked.empty())
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j)
        p[i][j] = pPacked[i * n + j];
}
#endif

// P (+)= A . B by the implementation this compilation has (see the top of the file); worker
// `wid` of `workers` does its share.
template <class InT, class PartialsT, class ARows, class BRows, class PRows>
void blockProduct(const ARows &a, const BRows &b, const PRows &p, bool accumulate, unsigned wid,
                  unsigned workers) {
  if (p.size() == 0)
    return;
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(InT) == 2) {
    halfBlockProduct<PartialsT>(a, b, p, accumulate, wid, workers);
  } else {
    const SizeType m = p.size(), n = p[0].size(), kSize = b.size();
    for (SizeType e = wid; e < m * n; e += workers) {
      const SizeType i = e / n, j = e % n;
      const float init = accumulate ? float(p[i][j]) : 0.0f;
      p[i][j] = PartialsT(dotColumn<InT>(a, b, i, j, 0, kSize, init));
    }
  }
#else
#if defined(ASPEN_LINALG_HOST_BLAS)
  if constexpr (sizeof(InT) == 4 && sizeof(PartialsT) == 4) {
    if (wid == 0)
      blasBlockProduct(a, b, p, accumulate);
    return;
  }
#endif
  SizeType begin, end;
  ::aspen::detail::workerShare(p.size(), wid, workers, begin, end);
  blockProductRows<InT, PartialsT>(a, b, p, accumulate, begin, end);
#endif
}

} // namespace detail

// P[i][j] = sum over k of A[i][k] * B[k][j] for one block: aRows holds the block's m rows of A
// (k elements each), bRows its k rows of B (n elements each), partials its m rows (n elements
// each).
template <class InT, class PartialsT> class MatMulPartials : public MultiVertex {
public:
  Vector<Input<Vector<InT>>> aRows;
  Vector<Input<Vector<InT>>> bRows;
  Vector<Output<Vector<PartialsT>>> partials;

  bool compute(unsigned wid) {
    detail::blockProduct<InT, PartialsT>(aRows, bRows, partials, false, wid, numWorkers());
    return true;
  }
};

// P[i][j] += the same product (the serial k steps after the first): partials are read, so they
// are an InOut edge.
template <class InT, class PartialsT> class MatMulPartialsAcc : public MultiVertex {
public:
  Vector<Input<Vector<InT>>> aRows;
  Vector<Input<Vector<InT>>> bRows;
  Vector<InOut<Vector<PartialsT>>> partials;

  bool compute(unsigned wid) {
    detail::blockProduct<InT, PartialsT>(aRows, bRows, partials, true, wid, numWorkers());
    return true;
  }
};

namespace detail {

// out[r][j] = (out[r][j] + k *) sum over p of partials[r * numParts + p][j], summed in part order
// in float and rounded once. All rows have out[0]'s length; worker `wid` takes one contiguous
// chunk of the elements in row order.
template <bool Accumulate, class OutT, class Partials, class Out>
ASPEN_HD void reduceParts(const Partials &partials, const Out &out, unsigned numParts, float k,
                          unsigned wid, unsigned workers) {
  const SizeType n = out.size() ? out[0].size() : 0;
  if (n == 0)
    return;
  SizeType begin, end;
  ::aspen::detail::workerShare(out.size() * n, wid, workers, begin, end);
  SizeType r = begin / n, j = begin % n;
  for (SizeType e = begin; e < end; ++e) {
    float sum = 0.0f;
    for (unsigned p = 0; p < numParts; ++p)
      sum += toFloat(partials[r * numParts + p][j]);
    out[r][j] = Accumulate ? OutT(toFloat(out[r][j]) + k * sum) : OutT(sum);
    if (++j == n)
      j = 0, ++r;
  }
}

} // namespace detail

// out[r][j] = OutT(sum over p of partials[r * numParts + p][j]): each output row r is the sum of
// its numParts k-partition parts (see detail::reduceParts).
template <class PartialsT, class OutT> class ReducePartials : public MultiVertex {
public:
  Vector<Input<Vector<PartialsT>>> partials;
  Vector<Output<Vector<OutT>>> out;
  unsigned numParts;

  bool compute(unsigned wid) {
    detail::reduceParts<false, OutT>(partials, out, numParts, 1.0f, wid, numWorkers());
    return true;
  }
};

// out[r][j] += scale * (the sum ReducePartials computes), in float, rounded once to OutT.
template <class PartialsT, class OutT> class ReducePartialsAcc : public MultiVertex {
public:
  Vector<Input<Vector<PartialsT>>> partials;
  Vector<InOut<Vector<OutT>>> out;
  Input<float> scale;
  unsigned numParts;

  bool compute(unsigned wid) {
    detail::reduceParts<true, OutT>(partials, out, numParts, *scale, wid, numWorkers());
    return true;
  }
};

// A direct convolution of one image, group and output channel (the "direct" method of
// lib/linalg/Convolution.cpp, for convolutions with few input channels and taps a group):
//   out[p] = sum over ci < inChans, t < taps of weights[ci * taps + t] * in[ci * fieldSize + o]
//   where o = offsets[t * P + p] (P = out's size), a term being 0 when o < 0.
// in holds the group's input channels of the image [inChans, fieldSize], weights the output
// channel's kept kernel [inChans * taps], offsets the convolution's table [taps, P]. Each output
// is one worker's float sum, ci then t ascending, rounded once to OutT.
template <class InT, class OutT> class ConvDirect : public MultiVertex {
public:
  Input<Vector<InT>> in;
  Input<Vector<InT>> weights;
  Input<Vector<int>> offsets;
  Output<Vector<OutT>> out;
  unsigned inChans;
  unsigned taps;
  unsigned fieldSize;

  bool compute(unsigned wid) {
    const detail::SizeType outputs = out.size();
    detail::SizeType begin = 0, end = 0;
    ::aspen::detail::workerShare(outputs, wid, numWorkers(), begin, end);
    for (detail::SizeType p = begin; p < end; ++p) {
      float sum = 0.0f;
      for (unsigned ci = 0; ci < inChans; ++ci)
        for (unsigned t = 0; t < taps; ++t) {
          const int o = offsets[t * outputs + p];
          if (o >= 0)
            sum += detail::toFloat(weights[ci * taps + t]) *
                   detail::toFloat(in[detail::SizeType(ci) * fieldSize + detail::SizeType(o)]);
        }
      out[p] = OutT(sum);
    }
    return true;
  }
};

template class ConvDirect<float, float>;
template class ConvDirect<half, half>;
template class ConvDirect<half, float>;

// The supported type pairs; lib/linalg/MatMul.cpp checks against the same lists.
// clang-format off
#define ASPEN_MATMUL_PARTIALS_INSTANCES(X) X(float, float) X(half, float) X(half, half)
#define ASPEN_MATMUL_REDUCE_INSTANCES(X)                                                           \
  X(float, float) X(float, half) X(half, float) X(half, half)
// clang-format on
#define ASPEN_MATMUL_PARTIALS_INSTANCE(I, P)                                                       \
  template class MatMulPartials<I, P>;                                                             \
  template class MatMulPartialsAcc<I, P>;
ASPEN_MATMUL_PARTIALS_INSTANCES(ASPEN_MATMUL_PARTIALS_INSTANCE)
#undef ASPEN_MATMUL_PARTIALS_INSTANCE
#define ASPEN_MATMUL_REDUCE_INSTANCE(P, O)                                                         \
  template class ReducePartials<P, O>;                                                             \
  template class ReducePartialsAcc<P, O>;
ASPEN_MATMUL_REDUCE_INSTANCES(ASPEN_MATMUL_REDUCE_INSTANCE)
#undef ASPEN_MATMUL_REDUCE_INSTANCE

} // namespace aspen::linalg
