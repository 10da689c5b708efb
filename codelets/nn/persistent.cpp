// The persistent recurrent kernels (docs/architecture.md "Persistent recurrent kernels",
// lib/nn/LstmPersistent.cpp): one co-resident launch runs the whole sequence. Block b owns the
// hidden units [b U, (b + 1) U) of every row (U = ceil(H / blocks)) and all four gate columns of
// them; its slice of the recurrent weights is staged once into shared memory (on chip for the
// whole sequence) when the builder gives it room, else read from the weights each step. The
// blocks hand each other h_t through `exchange`, [T][B][H], filled with -0.0 before the launch
// and written once per element with aspen::publish (the write-once sentinel protocol,
// Vertex.hpp): a block waits for the elements of h_{t-1} it reads, so no flag and no grid
// barrier is needed.
//
// The exact arithmetic variant: each (row, unit) is one thread's, its four gate sums run over k
// in increasing order through explicit fused multiply-adds (correctly rounded on the host and on
// the GPU), so the results are the same bits whatever the launch shape, the host threads, the
// order fibers run in, and on a GPU. The cell is LstmCellFwd's and LstmFusedFwd's arithmetic
// (same functions, same roundings to T), so only the recurrent product's summation order
// differs from the per-step path.
#include "RnnCellMath.hpp"
// after RnnCellMath.hpp
#include "LstmCellMath.hpp"
#include "GruCellMath.hpp"

namespace aspen::nn {

namespace persistent {

ASPEN_HD inline float exactFma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}

// The tensor variant (field `tensor`; HALF data, threadsPerBlock a multiple of 32): a step's
// recurrent product of a block is one warp-level product on tensor cores (Block::mmaF16)
// before the pairs' cells, P[m][n] = sum_k A(m, k) X(n, k) over its M weight rows, the batch's
// N rows and K, written to shared memory as `splits` partial results. The M rows are cut into
// 16-row tiles and each tile's 16-deep k slices into `splits` ranges; the (row tile, range)
// items are dealt to the warps in turn, and a warp computes its item for every 8-column tile of
// the batch (kColumnTiles at a time), so each weight fragment is loaded once a step, and once a
// launch when it sits in the warp's registers (WeightFragments). A(m, k) = a(m, k) and X(n, k)
// = x[n ldx + k] are the values of halves held as floats (exact in half); outside M x K x N
// they are zero. The pairs then read Product::at, the splits summed in order, and round it to T
// as the exact variant rounds its sum. Every thread of the block calls it together (it ends
// with a block barrier).
struct Product {
  unsigned M, N, K, splits;
  float *part; // splits x Mp x Np floats of shared memory

  ASPEN_HD unsigned mp() const { return (M + 15) / 16 * 16; }
  ASPEN_HD unsigned np() const { return (N + 7) / 8 * 8; }
  ASPEN_HD unsigned kTiles() const { return (K + 15) / 16; }
  ASPEN_HD unsigned perSplit() const { return (kTiles() + splits - 1) / splits; }
  ASPEN_HD unsigned items() const { return (M + 15) / 16 * splits; }
  // A warp's weight fragments a step: its turns at the items times a range's k slices (the
  // same for every warp; the builder counts them the same way, RnnPersistent.cpp).
  ASPEN_HD unsigned fragments(unsigned warps) const {
    return (items() + warps - 1) / warps * perSplit();
  }
  ASPEN_HD float at(unsigned m, unsigned n) const {
    float sum = 0.0f;
    for (unsigned s = 0; s < splits; ++s)
      sum += part[((unsigned long long)s * mp() + m) * np() + n];
    return sum;
  }
};

constexpr unsigned kColumnTiles = 1; // a warp's 8-column tiles at once: 8 batch rows
// The weight fragments a warp keeps in registers (4 registers each): the LSTM's one product,
// the GRU's first and second (lib/nn/RnnPersistent.cpp counts with the same numbers).
constexpr unsigned kLstmFragments = 16, kGruFragments = 12, kGruSecondFragments = 4;

// The staged vector of a step (h_{t-1}, r*h or the gate gradients): floats, or halves in the
// tensor variant (half the shared memory; exact either way, the exchange holds T), in words
// rounded up to 16 bytes.
ASPEN_HD inline unsigned long long stageWords(unsigned long long n, bool halves) {
  return halves ? (n + 7) / 8 * 4 : n;
}
ASPEN_HD inline float stagedAt(const float *stage, bool halves, unsigned long long i) {
  return halves ? float(reinterpret_cast<const half *>(stage)[i]) : stage[i];
}
ASPEN_HD inline void setStaged(float *stage, bool halves, unsigned long long i, float v) {
  if (halves)
    reinterpret_cast<half *>(stage)[i] = half(v);
  else
    stage[i] = v;
}

// A weight's half bits (the FLOAT kernels compile the call but never take the variant).
ASPEN_HD inline unsigned short halfBitsOf(half h) { return h.bits(); }
ASPEN_HD inline unsigned short halfBitsOf(float f) { return half(f).bits(); }

// The shared floats a Product of at most `rows` weight rows and `n` batch rows takes.
ASPEN_HD inline unsigned long long productFloats(unsigned rows, unsigned n, unsigned splits) {
  return (unsigned long long)splits * ((rows + 15) / 16 * 16) * ((n + 7) / 8 * 8);
}

// Where a warp's fragment f falls: its item (row tile, range), the k slice, and whether the
// item and the slice exist.
struct FragmentPlace {
  unsigned mTile, split, kTile, s;
  bool active, live;
};
ASPEN_HD inline FragmentPlace placeOf(const Product &p, unsigned warps, unsigned warp,
                                      unsigned f) {
  const unsigned perSplit = p.perSplit(), item = f / perSplit * warps + warp;
  const unsigned mTiles = (p.M + 15) / 16;
  FragmentPlace place;
  place.s = f % perSplit;
  place.active = item < p.items();
  place.mTile = place.active ? item % mTiles : 0;
  place.split = place.active ? item / mTiles : 0;
  place.kTile = place.split * perSplit + place.s;
  place.live = place.active && place.kTile < p.kTiles();
  return place;
}

// A lane's four A registers of one fragment.
struct Fragment {
  unsigned r[4];
};

// Where a product's weights are in Wo: element (m, k) at base[slot[m % rowsPerUnit] + (u0 + m /
// rowsPerUnit) unitStride + k kStride] (the kernels' row orders: gate-major units forward,
// Wo's rows backward).
template <class T> struct WeightLayout {
  const T *base;
  unsigned long long kStride, unitStride;
  unsigned rowsPerUnit, u0;
  unsigned slot[4];

  ASPEN_HD const T &at(unsigned m, unsigned k) const {
    return base[slot[m % rowsPerUnit] + (u0 + m / rowsPerUnit) * unitStride + k * kStride];
  }
};

// The lane's fragment at `place` (zero where it is not live): the weights' half bits, no
// conversion. Out of line on the GPU, where WeightFragments::load calls it once a fragment,
// unrolled, at entry; its arguments are plain values, so the call keeps the caller's state in
// registers.
#if defined(__CUDA_ARCH__)
#define ASPEN_PERSISTENT_OUT_OF_LINE __noinline__
#else
#define ASPEN_PERSISTENT_OUT_OF_LINE
#endif
template <class T>
ASPEN_HD ASPEN_PERSISTENT_OUT_OF_LINE Fragment loadFragment(Product p, WeightLayout<T> w,
                                                            FragmentPlace place,
                                                            unsigned lane) {
  // Weights (m, k) and (m, k + 1) as one register.
  auto pair = [&](unsigned m, unsigned k) {
    if (m >= p.M)
      return 0u;
    return (k < p.K ? unsigned(halfBitsOf(w.at(m, k))) : 0u) |
           (k + 1 < p.K ? unsigned(halfBitsOf(w.at(m, k + 1))) << 16 : 0u);
  };
  Fragment f = {{0u, 0u, 0u, 0u}};
  if (!place.live)
    return f;
  const unsigned k = place.kTile * 16 + 2 * (lane % 4), m = place.mTile * 16 + lane / 4;
  f.r[0] = pair(m, k);
  f.r[1] = pair(m + 8, k);
  f.r[2] = pair(m, k + 8);
  f.r[3] = pair(m + 8, k + 8);
  return f;
}

// The shared words a product's fragments past a warp's N registers take: each warp's, a
// fragment's 32 lanes' four registers together (one 16-byte load a lane).
ASPEN_HD inline unsigned long long stagedFragmentWords(const Product &p, unsigned warps,
                                                      unsigned n) {
  const unsigned total = p.fragments(warps);
  return total > n ? (unsigned long long)warps * (total - n) * 32 * 4 : 0;
}

// A warp's weight fragments for the whole launch: the first min(fragments, N) in registers,
// the rest staged in shared memory (`staged`, stagedFragmentWords of it; loaded from the
// weights every step when null). `count` is the same in every warp.
template <unsigned N> struct WeightFragments {
  Fragment a[N];
  unsigned count;
  unsigned *staged;
  unsigned rest; // fragments a warp has staged

  template <class T>
  ASPEN_HD void load(const Block &block, const Product &p, const WeightLayout<T> &weight,
                     unsigned *stage) {
    const unsigned warps = block.numThreads() / 32, warp = block.threadId() / 32;
    const unsigned lane = block.threadId() % 32;
    const unsigned total = p.fragments(warps);
    count = total < N ? total : N;
    rest = total - count;
    staged = stage;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (unsigned f = 0; f < N; ++f)
      if (f < count)
        a[f] = loadFragment(p, weight, placeOf(p, warps, warp, f), lane);
    if (staged)
      for (unsigned i = 0; i < rest; ++i) {
        const Fragment fragment = loadFragment(p, weight, placeOf(p, warps, warp, count + i), lane);
        unsigned *to = staged + (((unsigned long long)warp * rest + i) * 32 + lane) * 4;
        for (unsigned r = 0; r < 4; ++r)
          to[r] = fragment.r[r];
      }
  }

  // Fragment count + i of the calling lane, staged.
  ASPEN_HD Fragment stagedAt(unsigned warp, unsigned i, unsigned lane) const {
    const unsigned *from = staged + (((unsigned long long)warp * rest + i) * 32 + lane) * 4;
    return Fragment{{from[0], from[1], from[2], from[3]}};
  }
};

template <unsigned N, class T>
ASPEN_HD void tensorProduct(const Block &block, const Product &p, const WeightLayout<T> &a,
                            const WeightFragments<N> &cached, const float *stage,
                            unsigned long long ldx) {
  const half *x = reinterpret_cast<const half *>(stage); // the tensor variant stages halves
  const unsigned warps = block.numThreads() / 32, warp = block.threadId() / 32;
  const unsigned lane = block.threadId() % 32, g = lane / 4, q = lane % 4;
  const unsigned fragments = p.fragments(warps), perSplit = p.perSplit();
  const unsigned nTiles = (p.N + 7) / 8;
  const unsigned chunks = (nTiles + kColumnTiles - 1) / kColumnTiles;
  // Batch row n's halves k and k + 1 as one register, their bits as staged (0 outside).
  auto inputPair = [&](unsigned n, unsigned k) {
    if (n >= p.N)
      return 0u;
    const half *row = x + n * ldx;
    return (k < p.K ? unsigned(row[k].bits()) : 0u) |
           (k + 1 < p.K ? unsigned(row[k + 1].bits()) << 16 : 0u);
  };
  for (unsigned chunk = 0; chunk < chunks; ++chunk) {
    float d[kColumnTiles][4];
    // Fragment f against the chunk's column tiles; every warp makes the same calls (the
    // host's mmaF16 is a barrier).
    auto step = [&](unsigned f, const Fragment &fragment) {
      const unsigned *ra = fragment.r;
      const FragmentPlace place = placeOf(p, warps, warp, f);
      if (place.s == 0) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (unsigned c = 0; c < kColumnTiles; ++c)
          d[c][0] = d[c][1] = d[c][2] = d[c][3] = 0.0f;
      }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (unsigned c = 0; c < kColumnTiles; ++c) {
        const unsigned nTile = chunk * kColumnTiles + c;
        const bool live = place.live && nTile < nTiles;
        unsigned rb[2] = {0u, 0u};
        if (live) {
          const unsigned k = place.kTile * 16 + 2 * q, n = nTile * 8 + g;
          rb[0] = inputPair(n, k);
          rb[1] = inputPair(n, k + 8);
        }
        block.mmaF16(live, ra, rb, d[c]);
      }
      if (place.s + 1 == perSplit && place.active) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (unsigned c = 0; c < kColumnTiles; ++c) {
          if (chunk * kColumnTiles + c >= nTiles)
            continue;
          float *tile = p.part +
                        ((unsigned long long)place.split * p.mp() + place.mTile * 16 + g) * p.np() +
                        (chunk * kColumnTiles + c) * 8;
          tile[2 * q] = d[c][0];
          tile[2 * q + 1] = d[c][1];
          tile[8ull * p.np() + 2 * q] = d[c][2];
          tile[8ull * p.np() + 2 * q + 1] = d[c][3];
        }
      }
    };
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (unsigned f = 0; f < N; ++f)
      if (f < cached.count)
        step(f, cached.a[f]);
    for (unsigned f = cached.count; f < fragments; ++f)
      step(f, cached.staged ? cached.stagedAt(warp, f - cached.count, lane)
                            : loadFragment(p, a, placeOf(p, warps, warp, f), lane));
  }
  block.sync();
}

} // namespace persistent

// The LSTM's forward over the whole sequence (fields as LstmPersistent.cpp connects them):
//   weights  Wo, [H][4H], gate columns in slot order (the cell order)
//   gatesIn  the pre-weighted input x_t . Wi, [T][B][4H] in slot order, when hasGatesIn
//   bias     [4H] in slot order; h0, c0 [B][H]; lengths [B], or [1] for every row
//   exchange [T][B][H] of -0.0 at entry: h_t as published, the held h_{t-1} for a row past its
//            length (so the next step reads the state it keeps)
//   out      [T][B][H] when hasOut: h_t, zero past a row's length (as the per-step cell)
//   inter    [T][n][B][H], n = numInter(): the intermediates in InterLayout's order
//   hLast, cLast [B][H]: the final state (cLast is also the running cell state)
// Shared memory: B H floats of staged h_{t-1}, then, when weightsInShared, the block's U x 4 x H
// weights as floats.
template <class T> class LstmPersistentFwd : public BlockVertex {
public:
  static constexpr bool coResident = true;
  static constexpr unsigned maxThreadsPerBlock = 256;

  Input<Vector<T>> weights;
  Input<Vector<T>> gatesIn;
  Input<Vector<T>> bias;
  Input<Vector<T>> h0;
  Input<Vector<T>> c0;
  Input<Vector<unsigned>> lengths;
  InOut<Vector<T>> exchange;
  Output<Vector<T>> out;
  Output<Vector<T>> inter;
  Output<Vector<T>> hLast;
  Output<Vector<T>> cLast;
  unsigned H;
  unsigned B;
  unsigned steps;
  unsigned slotF, slotI, slotG, slotO;
  unsigned activation;
  unsigned recurrentActivation;
  unsigned saveMode;
  bool saveH;
  bool rawCandidate;
  unsigned cellClipMode; // the cell clip (cell::CellClip): 0 none
  float cellClipMin;
  float cellClipMax;
  ASPEN_HD cell::CellClip cellClip() const { return {cellClipMode, cellClipMin, cellClipMax}; }
  bool hasGatesIn;
  bool hasOut;
  bool weightsInShared;
  bool tensor;     // the tensor variant (persistent::tensorProduct), HALF only
  unsigned splits; // its k ranges a tile
  // The tensor variant's code exists in the HALF kernels only (FLOAT is refused).
  ASPEN_HD bool tensorKernel() const { return sizeof(T) == 2 && tensor; }

  unsigned numInter() const {
    return (saveMode == 0 ? 0u : saveMode == 1 ? 4u : 6u) + (saveH ? 1u : 0u);
  }
  ASPEN_HD unsigned slotOf(unsigned g) const {
    return g == 0 ? slotF : g == 1 ? slotI : g == 2 ? slotG : slotO;
  }

  bool compute(Block &block) {
    const unsigned blocks = block.numBlocks(), threads = block.numThreads();
    const unsigned tid = block.threadId();
    const unsigned U = (H + blocks - 1) / blocks;
    const unsigned u0 = block.blockId() * U;
    const unsigned units = u0 >= H ? 0u : (H - u0 < U ? H - u0 : U);
    const unsigned long long BH = (unsigned long long)B * H;
    if (exchange.size() != steps * BH || hLast.size() != BH || cLast.size() != BH ||
        h0.size() != BH || c0.size() != BH || weights.size() != 4ull * H * H ||
        (hasOut && out.size() != steps * BH) ||
        (numInter() > 0 && inter.size() != steps * numInter() * BH) ||
        (hasGatesIn && gatesIn.size() != steps * 4 * BH) ||
        (tensor && (sizeof(T) != 2 || threads % 32 != 0 || splits == 0 || weightsInShared)))
      return false;
    // The tensor variant's fragments past the registers (sized for the largest block's rows).
    const unsigned long long productWords =
        tensor ? persistent::productFloats(4 * U, B, splits) : 0;
    const unsigned long long fragmentWords =
        tensor ? persistent::stagedFragmentWords({4 * U, B, H, splits, nullptr}, threads / 32,
                                                 persistent::kLstmFragments)
               : 0;
    const unsigned long long weightWords = weightsInShared ? 4ull * U * H : 0;
    const unsigned long long hWords = persistent::stageWords(BH, tensor);
    if (block.sharedBytes() < (hWords + weightWords + productWords + fragmentWords) * sizeof(float))
      return false; // the shared memory too: a shorter launch would overrun it
    if (units == 0)
      return true; // more blocks than units: nothing is this block's
    float *hStage = block.shared<float>();
    float *wStage = hStage + hWords;
    const bool halves = tensorKernel();
    // The tensor variant's rows: m = 4 j + g, unit u0 + j's gate g; its weights come from
    // Wo (it never stages them as floats), fragment by fragment at entry.
    const persistent::Product product{4 * units, B, H, splits, wStage + weightWords};
    unsigned *fragmentStage =
        fragmentWords ? block.shared<unsigned>() + hWords + weightWords + productWords : nullptr;
    const persistent::WeightLayout<T> weight{
        weights.data(), 4ull * H, 1, 4, u0, {slotF * H, slotI * H, slotG * H, slotO * H}};
    const unsigned slots[4] = {slotF, slotI, slotG, slotO};
    const unsigned pairs = B * units;
    for (unsigned q = tid; q < pairs; q += threads) {
      const unsigned long long at = (unsigned long long)(q / units) * H + u0 + q % units;
      cLast[at] = c0[at];
      hLast[at] = h0[at];
    }
    if (weightsInShared) // wStage[(j * 4 + g) * H + k] = Wo[k][slot_g H + u0 + j]
      for (unsigned long long i = tid; i < 4ull * units * H; i += threads) {
        const unsigned k = unsigned(i % H), g = unsigned(i / H % 4), j = unsigned(i / H / 4);
        wStage[i] = float(weights[(unsigned long long)k * 4 * H + slots[g] * H + u0 + j]);
      }
    block.sync(); // the staged weights complete before any thread reads them
    persistent::WeightFragments<persistent::kLstmFragments> fragments;
    fragments.count = 0;
    if (tensorKernel())
      fragments.load(block, product, weight, fragmentStage);
    const bool fixed = recurrentActivation == unsigned(NonLinearityType::SIGMOID) &&
                       activation == unsigned(NonLinearityType::TANH);
    for (unsigned t = 0; t < steps; ++t) {
      // h_{t-1}, whole, into shared memory: from h0, or as the other blocks publish it.
      if (t == 0) {
        for (unsigned long long i = tid; i < BH; i += threads)
          persistent::setStaged(hStage, halves, i, float(h0[i]));
      } else {
        const T *previous = exchange.data() + (t - 1) * BH;
        for (unsigned long long i = tid; i < BH; i += threads) {
          const T *p = previous + i;
          if (!block.waitUntil([&] { return !isUnpublished(loadAcquire(p)); }))
            return false;
          persistent::setStaged(hStage, halves, i, float(loadAcquire(p)));
        }
      }
      block.sync();
      if (tensorKernel())
        persistent::tensorProduct(block, product, weight, fragments, hStage, H);
      for (unsigned q = tid; q < pairs; q += threads) {
        if (fixed)
          pair(t, q / units, u0, q % units, hStage, wStage, product,
               cell::Fixed<NonLinearityType::SIGMOID>(), cell::Fixed<NonLinearityType::TANH>());
        else
          pair(t, q / units, u0, q % units, hStage, wStage, product,
               cell::Dynamic{NonLinearityType(recurrentActivation)},
               cell::Dynamic{NonLinearityType(activation)});
      }
      block.sync(); // every thread done with hStage before the next step overwrites it
    }
    return true;
  }

private:
  // Step t of row r, unit u0 + j.
  template <class Rho, class Phi>
  ASPEN_HD void pair(unsigned t, unsigned r, unsigned u0, unsigned j, const float *hStage,
                     const float *wStage, const persistent::Product &product, Rho rho,
                     Phi phi) {
    constexpr unsigned F = 0, I = 1, G = 2, O = 3;
    const unsigned u = u0 + j;
    const unsigned long long BH = (unsigned long long)B * H;
    const unsigned long long at = (unsigned long long)r * H + u; // in a [B][H] array
    const unsigned long long step = t * BH + at;                 // in a [T][B][H] one
    const unsigned n = numInter();
    const unsigned length = lengths.size() == 1 ? lengths[0] : lengths[r];
    if (t >= length) { // past the row's length: the state is kept, outputs are zero
      publish(&exchange[step], persistent::stagedAt(hStage, tensorKernel(), at));
      if (hasOut)
        out[step] = T(0.0f);
      for (unsigned s = 0; s < n; ++s)
        inter[(t * n + s) * BH + at] = T(0.0f);
      return;
    }
    const unsigned slots[4] = {slotF, slotI, slotG, slotO};
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const float *h = hStage + (unsigned long long)r * H;
    if (tensor) {
      for (unsigned g = 0; g < 4; ++g)
        acc[g] = product.at(j * 4 + g, r);
    } else if (weightsInShared) {
      for (unsigned g = 0; g < 4; ++g) {
        const float *w = wStage + (unsigned long long)(j * 4 + g) * H;
        for (unsigned k = 0; k < H; ++k)
          acc[g] = persistent::exactFma(h[k], w[k], acc[g]);
      }
    } else {
      for (unsigned g = 0; g < 4; ++g) {
        const T *w = weights.data() + slots[g] * H + u;
        for (unsigned k = 0; k < H; ++k)
          acc[g] = persistent::exactFma(h[k], float(w[(unsigned long long)k * 4 * H]), acc[g]);
      }
    }
    float a[4];
    for (unsigned g = 0; g < 4; ++g) {
      const float b = float(bias[slots[g] * H + u]);
      if (hasGatesIn) {
        const float x = float(gatesIn[(unsigned long long)t * 4 * BH + r * 4ull * H + slots[g] * H + u]);
        a[g] = float(T(x + float(T(acc[g])))) + b;
      } else {
        a[g] = float(T(acc[g])) + b;
      }
    }
    const float cPrev = float(cLast[at]);
    const float preG = a[G];
    a[F] = rho.forward(a[F]);
    a[I] = rho.forward(a[I]);
    a[G] = phi.forward(a[G]);
    a[O] = rho.forward(a[O]);
    const float cNew = cellClip().apply(a[F] * cPrev + a[I] * a[G]);
    const float phiC = phi.forward(cNew);
    const float hNew = a[O] * phiC;
    cLast[at] = T(cNew);
    hLast[at] = T(hNew);
    if (hasOut)
      out[step] = T(hNew);
    if (saveMode != 0)
      for (unsigned g = 0; g < 4; ++g)
        inter[(t * n + g) * BH + at] = T(g == G && rawCandidate ? preG : a[g]);
    if (saveMode == 2) {
      inter[(t * n + 4) * BH + at] = T(rawCandidate ? cNew : phiC);
      inter[(t * n + 5) * BH + at] = T(cPrev);
    }
    if (saveH)
      inter[(t * n + n - 1) * BH + at] = T(hNew);
    publish(&exchange[step], hNew);
  }
};

template class LstmPersistentFwd<float>;
template class LstmPersistentFwd<half>;

// The LSTM's backward loop over the whole sequence, steps T - 1 down to 0 (LstmPersistent.cpp):
// block b owns units [b U, (b + 1) U) of every row; for step t it waits for the gate gradients
// of step t + 1 (all 4H of every row, published by every block), stages them in shared
// memory, forms dhMM = delta_{t+1} . Wo^T for its units (k over 4H in increasing order through
// fma, rounded to T as the per-step product is; zero at the last step), runs LstmCellBwd's cell
// (lstm_cell::bwdElements, the same function) and publishes the unit's four gate gradients.
//   weights  Wo, [H][4H] (row u: what h unit u feeds to every gate column)
//   fwd      the saved gates, [T][4][B][H] canonical; cell [T][2][B][H]; outGrad [T][B][H]
//            when hasOutGrad; lengths [B] or [1]
//   dhCarry, dcState [B][H], updated in place (their units are the block's own)
//   delta    [T][B][4H] in slot columns, -0.0 at entry: the gate gradients, the exchange, and
//            what the weight gradients and dx are computed from after the launch
// Shared memory: B x 4H floats of staged delta_{t+1}, then, when weightsInShared, the block's
// U rows of Wo as floats.
template <class T> class LstmPersistentBwd : public BlockVertex {
public:
  static constexpr bool coResident = true;
  static constexpr unsigned maxThreadsPerBlock = 256;

  Input<Vector<T>> weights;
  Input<Vector<T>> fwd;
  Input<Vector<T>> cell;
  Input<Vector<T>> outGrad;
  Input<Vector<unsigned>> lengths;
  InOut<Vector<T>> dhCarry;
  InOut<Vector<T>> dcState;
  InOut<Vector<T>> delta;
  unsigned H;
  unsigned B;
  unsigned steps;
  unsigned slotF, slotI, slotG, slotO;
  unsigned activation;
  unsigned recurrentActivation;
  bool rawCell;
  bool rawCandidate;
  unsigned cellClipMode; // the cell clip (cell::CellClip): 0 none
  float cellClipMin;
  float cellClipMax;
  ASPEN_HD cell::CellClip cellClip() const { return {cellClipMode, cellClipMin, cellClipMax}; }
  bool hasOutGrad;
  bool popnnHardSigmoidGrad;
  bool weightsInShared;
  bool tensor;     // the tensor variant (persistent::tensorProduct), HALF only
  unsigned splits; // its k ranges a tile
  // The tensor variant's code exists in the HALF kernels only (FLOAT is refused).
  ASPEN_HD bool tensorKernel() const { return sizeof(T) == 2 && tensor; }

  bool compute(Block &block) {
    const unsigned blocks = block.numBlocks(), threads = block.numThreads();
    const unsigned tid = block.threadId();
    const unsigned U = (H + blocks - 1) / blocks;
    const unsigned u0 = block.blockId() * U;
    const unsigned units = u0 >= H ? 0u : (H - u0 < U ? H - u0 : U);
    const unsigned long long BH = (unsigned long long)B * H, G4 = 4ull * H;
    if (delta.size() != steps * 4 * BH || fwd.size() != steps * 4 * BH ||
        cell.size() != steps * 2 * BH || dhCarry.size() != BH || dcState.size() != BH ||
        weights.size() != 4ull * H * H || (hasOutGrad && outGrad.size() != steps * BH) ||
        (tensor && (sizeof(T) != 2 || threads % 32 != 0 || splits == 0 || weightsInShared)))
      return false;
    // The tensor variant's fragments past the registers (sized for the largest block's rows).
    const unsigned long long productWords = tensor ? persistent::productFloats(U, B, splits) : 0;
    const unsigned long long fragmentWords =
        tensor ? persistent::stagedFragmentWords({U, B, 4 * H, splits, nullptr}, threads / 32,
                                                 persistent::kLstmFragments)
               : 0;
    const unsigned long long weightWords = weightsInShared ? U * G4 : 0;
    const unsigned long long dWords = persistent::stageWords(B * G4, tensor);
    if (block.sharedBytes() < (dWords + weightWords + productWords + fragmentWords) * sizeof(float))
      return false;
    if (units == 0)
      return true;
    float *dStage = block.shared<float>();
    float *wStage = dStage + dWords;
    const bool halves = tensorKernel();
    // The tensor variant's rows: m = j, unit u0 + j's row of Wo (read from Wo at entry).
    const persistent::Product product{units, B, 4 * H, splits, wStage + weightWords};
    unsigned *fragmentStage =
        fragmentWords ? block.shared<unsigned>() + dWords + weightWords + productWords : nullptr;
    const persistent::WeightLayout<T> weight{weights.data(), 1, G4, 1, u0, {0, 0, 0, 0}};
    if (weightsInShared) // wStage[j * 4H + col] = Wo[u0 + j][col]
      for (unsigned long long i = tid; i < units * G4; i += threads)
        wStage[i] = float(weights[u0 * G4 + i]);
    block.sync(); // the staged weights complete before any thread reads them
    persistent::WeightFragments<persistent::kLstmFragments> fragments;
    fragments.count = 0;
    if (tensorKernel())
      fragments.load(block, product, weight, fragmentStage);
    const bool fixed = recurrentActivation == unsigned(NonLinearityType::SIGMOID) &&
                       activation == unsigned(NonLinearityType::TANH);
    const unsigned pairs = B * units;
    for (unsigned i = 0; i < steps; ++i) {
      const unsigned t = steps - 1 - i;
      if (t + 1 < steps) {
        const T *next = delta.data() + (t + 1) * B * G4;
        for (unsigned long long e = tid; e < B * G4; e += threads) {
          const T *p = next + e;
          if (!block.waitUntil([&] { return !isUnpublished(loadAcquire(p)); }))
            return false;
          persistent::setStaged(dStage, halves, e, float(loadAcquire(p)));
        }
      }
      block.sync();
      if (tensorKernel() && t + 1 < steps)
        persistent::tensorProduct(block, product, weight, fragments, dStage, G4);
      for (unsigned q = tid; q < pairs; q += threads) {
        if (fixed)
          pair(t, q / units, u0, q % units, dStage, wStage, product,
               cell::Fixed<NonLinearityType::SIGMOID>(), cell::Fixed<NonLinearityType::TANH>());
        else
          pair(t, q / units, u0, q % units, dStage, wStage, product,
               cell::Dynamic{NonLinearityType(recurrentActivation), popnnHardSigmoidGrad},
               cell::Dynamic{NonLinearityType(activation), popnnHardSigmoidGrad});
      }
      block.sync(); // every thread done with dStage before the next step overwrites it
    }
    return true;
  }

private:
  // One element of a row, as bwdElements reads it (its row 0, element 0).
  struct Seg {
    T *p;
    ASPEN_HD T *data() const { return p; }
  };
  struct Row {
    Seg fwd[4], cell[2], outGrad[1], dhMM[1], dhCarry[1], dcState[1], delta[4];
    T mask[1];
    bool rawCell, rawCandidate, hasOutGrad;
  };

  // Step t of row r, unit u0 + j.
  template <class Rho, class Phi>
  ASPEN_HD void pair(unsigned t, unsigned r, unsigned u0, unsigned j, const float *dStage,
                     const float *wStage, const persistent::Product &product, Rho rho,
                     Phi phi) {
    const unsigned u = u0 + j;
    const unsigned long long BH = (unsigned long long)B * H, G4 = 4ull * H;
    float acc = 0.0f;
    if (t + 1 < steps) {
      const float *d = dStage + r * G4;
      if (tensor) {
        acc = product.at(j, r);
      } else if (weightsInShared) {
        const float *w = wStage + j * G4;
        for (unsigned k = 0; k < 4 * H; ++k)
          acc = persistent::exactFma(d[k], w[k], acc);
      } else {
        const T *w = weights.data() + u * G4;
        for (unsigned k = 0; k < 4 * H; ++k)
          acc = persistent::exactFma(d[k], float(w[k]), acc);
      }
    }
    T mm = T(acc), gates[4];
    Row v;
    auto at = [&](const T *base) { return Seg{const_cast<T *>(base) + r * H + u}; };
    for (unsigned g = 0; g < 4; ++g) {
      v.fwd[g] = at(fwd.data() + (t * 4ull + g) * BH);
      v.delta[g] = Seg{gates + g};
    }
    v.cell[0] = at(cell.data() + (t * 2ull) * BH);
    v.cell[1] = at(cell.data() + (t * 2ull + 1) * BH);
    v.outGrad[0] = hasOutGrad ? at(outGrad.data() + t * BH) : v.cell[0]; // unread without
    v.dhMM[0] = Seg{&mm};
    v.dhCarry[0] = at(dhCarry.data());
    v.dcState[0] = at(dcState.data());
    const unsigned length = lengths.size() == 1 ? lengths[0] : lengths[r];
    v.mask[0] = T(t < length ? 1.0f : 0.0f);
    v.rawCell = rawCell;
    v.rawCandidate = rawCandidate;
    v.hasOutGrad = hasOutGrad;
    lstm_cell::bwdElements<T>(v, 0, 0, 1, rho, phi, cellClip());
    const unsigned slots[4] = {slotF, slotI, slotG, slotO};
    T *row = delta.data() + t * B * G4 + r * G4;
    for (unsigned g = 0; g < 4; ++g)
      publish(row + slots[g] * H + u, float(gates[g]));
  }
};

template class LstmPersistentBwd<float>;
template class LstmPersistentBwd<half>;

// The GRU's (and AUGRU's) forward over the whole sequence (GruPersistent in
// LstmPersistent.cpp), with the LSTM's ownership and exchange: block b owns units
// [b U, (b + 1) U) of every row and their three gate columns of Wo ([H][3H], canonical r, u,
// c), staged into shared memory when weightsInShared. resetAfter: one exchange a step (h_t),
// the cell as GruFusedFwd's phase 0. Without resetAfter two: the gates r and u from h_{t-1},
// then r*h of every unit (rhExchange [T][B][H], also written once per element) for the
// candidate's product, then the state, as phases 1 and 2 (u kept in shared memory between
// them, rounded to T as the per-step path stores it). Each product is the exact variant's: one
// thread, k increasing, fma, rounded to T before the cell adds it.
//   xw [T][B][3H] canonical, bias [3H] (or [6H]: input r, u, c then recurrent r, u, c),
//   attention [T][B] when hasAttention, h0 [B][H], lengths [B] or [1], exchange [T][B][H]
//   (-0.0 at entry), rhExchange [T][B][H] (-0.0 at entry; without resetAfter), out [T][B][H]
//   when hasOut, inter [T][n][B][H] when hasInter (r, u, c, (h), (n)), hLast [B][H].
// Shared memory: B H floats of staged h_{t-1}, B H of staged r*h (without resetAfter), B U of
// u, then the weights (3 U H floats) when weightsInShared.
template <class T> class GruPersistentFwd : public BlockVertex {
public:
  static constexpr bool coResident = true;
  static constexpr unsigned maxThreadsPerBlock = 256;

  Input<Vector<T>> weights;
  Input<Vector<T>> xw;
  Input<Vector<T>> bias;
  Input<Vector<T>> attention;
  Input<Vector<T>> h0;
  Input<Vector<unsigned>> lengths;
  InOut<Vector<T>> exchange;
  InOut<Vector<T>> rhExchange;
  Output<Vector<T>> out;
  Output<Vector<T>> inter;
  Output<Vector<T>> hLast;
  unsigned H;
  unsigned B;
  unsigned steps;
  unsigned activation;
  unsigned recurrentActivation;
  bool resetAfter;
  bool hasAttention;
  bool hasOut;
  bool hasInter;
  bool rawCandidate;
  bool saveH;
  bool saveN;
  bool weightsInShared;
  bool tensor;     // the tensor variant (persistent::tensorProduct), HALF only
  unsigned splits; // its k ranges a tile
  // The tensor variant's code exists in the HALF kernels only (FLOAT is refused).
  ASPEN_HD bool tensorKernel() const { return sizeof(T) == 2 && tensor; }

  unsigned numInter() const { return 3u + (saveH ? 1u : 0u) + (saveN ? 1u : 0u); }

  bool compute(Block &block) {
    const unsigned blocks = block.numBlocks(), threads = block.numThreads();
    const unsigned tid = block.threadId();
    const unsigned U = (H + blocks - 1) / blocks;
    const unsigned u0 = block.blockId() * U;
    const unsigned units = u0 >= H ? 0u : (H - u0 < U ? H - u0 : U);
    const unsigned long long BH = (unsigned long long)B * H;
    if (exchange.size() != steps * BH || hLast.size() != BH || h0.size() != BH ||
        weights.size() != 3ull * H * H || xw.size() != steps * 3 * BH ||
        bias.size() != (resetAfter ? 6ull : 3ull) * H ||
        (!resetAfter && rhExchange.size() != steps * BH) ||
        (hasOut && out.size() != steps * BH) ||
        (hasInter && inter.size() != steps * numInter() * BH) ||
        (hasAttention && attention.size() != steps * B) ||
        (tensor && (sizeof(T) != 2 || threads % 32 != 0 || splits == 0 || weightsInShared)))
      return false;
    // The tensor variant's fragments past the registers, of both products (sized for the
    // largest block's rows).
    const unsigned long long productWords =
        tensor ? persistent::productFloats(3 * U, B, splits) : 0;
    const unsigned long long gateWords =
        tensor ? persistent::stagedFragmentWords({3 * U, B, H, splits, nullptr}, threads / 32,
                                                 persistent::kGruFragments)
               : 0;
    const unsigned long long candidateWords =
        tensor && !resetAfter
            ? persistent::stagedFragmentWords({U, B, H, splits, nullptr}, threads / 32,
                                              persistent::kGruSecondFragments)
            : 0;
    const unsigned long long weightWords = weightsInShared ? 3ull * U * H : 0;
    const unsigned long long hWords = persistent::stageWords(BH, tensor);
    const unsigned long long stageWords =
        hWords + (resetAfter ? 0 : hWords + (unsigned long long)B * U);
    if (block.sharedBytes() <
        (stageWords + weightWords + productWords + gateWords + candidateWords) * sizeof(float))
      return false;
    if (units == 0)
      return true;
    float *hStage = block.shared<float>();
    float *rhStage = hStage + hWords;
    float *uKept = rhStage + (resetAfter ? 0 : hWords);
    float *wStage = uKept + (resetAfter ? 0 : B * U);
    // The tensor variant's rows: m = 3 j + g, unit u0 + j's gate g (wStage's rows); the
    // candidate's product without resetAfter takes rows 3 j + 2 only.
    float *part = wStage + weightWords;
    const persistent::Product gates{3 * units, B, H, splits, part};
    const persistent::Product candidates{units, B, H, splits, part};
    unsigned *gateStage = block.shared<unsigned>() + stageWords + weightWords + productWords;
    unsigned *candidateStage = gateStage + gateWords;
    const persistent::WeightLayout<T> weight{weights.data(), 3ull * H, 1, 3, u0, {0, H, 2 * H, 0}};
    const persistent::WeightLayout<T> candidateWeight{weights.data(), 3ull * H, 1, 1, u0,
                                                      {2 * H, 0, 0, 0}};
    const unsigned pairs = B * units;
    for (unsigned q = tid; q < pairs; q += threads) {
      const unsigned long long at = (unsigned long long)(q / units) * H + u0 + q % units;
      hLast[at] = h0[at];
    }
    if (weightsInShared) // wStage[(j * 3 + g) * H + k] = Wo[k][g H + u0 + j]
      for (unsigned long long i = tid; i < 3ull * units * H; i += threads) {
        const unsigned k = unsigned(i % H), g = unsigned(i / H % 3), j = unsigned(i / H / 3);
        wStage[i] = float(weights[(unsigned long long)k * 3 * H + g * H + u0 + j]);
      }
    block.sync(); // the staged weights complete before any thread reads them
    persistent::WeightFragments<persistent::kGruFragments> gateFragments;
    persistent::WeightFragments<persistent::kGruSecondFragments> candidateFragments;
    gateFragments.count = candidateFragments.count = 0;
    if (tensorKernel()) {
      gateFragments.load(block, gates, weight, gateWords ? gateStage : nullptr);
      if (!resetAfter)
        candidateFragments.load(block, candidates, candidateWeight,
                                candidateWords ? candidateStage : nullptr);
    }
    const bool fixed = recurrentActivation == unsigned(NonLinearityType::SIGMOID) &&
                       activation == unsigned(NonLinearityType::TANH);
    for (unsigned t = 0; t < steps; ++t) {
      if (!stage(block, t == 0 ? h0.data() : exchange.data() + (t - 1) * BH, t == 0, hStage))
        return false;
      block.sync();
      if (tensorKernel())
        persistent::tensorProduct(block, gates, weight, gateFragments, hStage, H);
      for (unsigned q = tid; q < pairs; q += threads) {
        if (fixed)
          first(t, q / units, u0, q % units, U, hStage, wStage, gates, uKept,
                cell::Fixed<NonLinearityType::SIGMOID>(), cell::Fixed<NonLinearityType::TANH>());
        else
          first(t, q / units, u0, q % units, U, hStage, wStage, gates, uKept,
                cell::Dynamic{NonLinearityType(recurrentActivation)},
                cell::Dynamic{NonLinearityType(activation)});
      }
      if (!resetAfter) { // the candidate needs r*h of every unit
        if (!stage(block, rhExchange.data() + t * BH, false, rhStage))
          return false;
        block.sync();
        if (tensorKernel())
          persistent::tensorProduct(block, candidates, candidateWeight, candidateFragments,
                                    rhStage, H);
        for (unsigned q = tid; q < pairs; q += threads) {
          if (fixed)
            candidate(t, q / units, u0, q % units, U, hStage, rhStage, wStage, candidates,
                      uKept, cell::Fixed<NonLinearityType::TANH>());
          else
            candidate(t, q / units, u0, q % units, U, hStage, rhStage, wStage, candidates,
                      uKept,
                      cell::Dynamic{NonLinearityType(activation)});
        }
      }
      block.sync(); // every thread done with the stages before the next step overwrites them
    }
    return true;
  }

private:
  // A [B][H] vector into shared memory as floats: from `from` directly, or waiting for each
  // element to be published.
  bool stage(Block &block, const T *from, bool direct, float *to) {
    const bool halves = tensorKernel();
    const unsigned long long BH = (unsigned long long)B * H;
    for (unsigned long long i = block.threadId(); i < BH; i += block.numThreads()) {
      const T *p = from + i;
      if (!direct && !block.waitUntil([&] { return !isUnpublished(loadAcquire(p)); }))
        return false;
      persistent::setStaged(to, halves, i, float(direct ? *p : loadAcquire(p)));
    }
    return true;
  }

  // sum_k v[k] Wo[k][g H + u] in increasing k through fma.
  ASPEN_HD float dot(const float *v, unsigned g, unsigned u, unsigned j, const float *wStage) const {
    float acc = 0.0f;
    if (weightsInShared) {
      const float *w = wStage + (unsigned long long)(j * 3 + g) * H;
      for (unsigned k = 0; k < H; ++k)
        acc = persistent::exactFma(v[k], w[k], acc);
    } else {
      const T *w = weights.data() + g * H + u;
      for (unsigned k = 0; k < H; ++k)
        acc = persistent::exactFma(v[k], float(w[(unsigned long long)k * 3 * H]), acc);
    }
    return acc;
  }

  ASPEN_HD void slot(unsigned t, unsigned s, unsigned long long at, float v) {
    if (hasInter)
      inter[((unsigned long long)t * numInter() + s) * B * H + at] = T(v);
  }

  // The state h_t of an active row, or the held h_{t-1}: hLast, out, the h slot, published.
  ASPEN_HD void finish(unsigned t, unsigned long long at, float h, bool active) {
    const unsigned long long step = (unsigned long long)t * B * H + at;
    if (active) {
      hLast[at] = T(h);
      if (hasOut)
        out[step] = T(h);
      if (saveH)
        slot(t, 3, at, h);
    } else if (hasOut) {
      out[step] = T(0.0f);
    }
    publish(&exchange[step], h);
  }

  // resetAfter: the whole step (GruFusedFwd phase 0); otherwise the gates and r*h (phase 1).
  // The product for gate g of row r, unit u0 + j over v: the tensor variant's, else dot's.
  ASPEN_HD float gate(const persistent::Product &product, unsigned row, unsigned r,
                      const float *v, unsigned g, unsigned u, unsigned j,
                      const float *wStage) const {
    return tensor ? product.at(row, r) : dot(v, g, u, j, wStage);
  }

  template <class Rho, class Phi>
  ASPEN_HD void first(unsigned t, unsigned r, unsigned u0, unsigned j, unsigned U,
                      const float *hStage, const float *wStage,
                      const persistent::Product &product, float *uKept, Rho rho, Phi phi) {
    const unsigned u = u0 + j;
    const unsigned long long at = (unsigned long long)r * H + u;
    const unsigned length = lengths.size() == 1 ? lengths[0] : lengths[r];
    const bool active = t < length;
    const float hp = persistent::stagedAt(hStage, tensorKernel(), at);
    const T *x = xw.data() + ((unsigned long long)t * B + r) * 3 * H + u;
    const float keep = hasAttention ? 1.0f - float(attention[t * B + r]) : 1.0f;
    const float *h = hStage + (unsigned long long)r * H;
    if (!active) { // state kept, what the step writes is zero
      for (unsigned s = 0; s < (resetAfter ? numInter() : 2u); ++s)
        slot(t, s, at, 0.0f);
      if (resetAfter)
        finish(t, at, hp, false);
      else
        publish(&rhExchange[(unsigned long long)t * B * H + at], 0.0f);
      return;
    }
    if (resetAfter) {
      const float pr = float(T(gate(product, 3 * j, r, h, 0, u, j, wStage)));
      const float pu = float(T(gate(product, 3 * j + 1, r, h, 1, u, j, wStage)));
      const float pc = float(T(gate(product, 3 * j + 2, r, h, 2, u, j, wStage)));
      float vr = (float(x[0]) + float(bias[u])) + (pr + float(bias[3 * H + u]));
      float vu = (float(x[H]) + float(bias[H + u])) + (pu + float(bias[4 * H + u]));
      const float vn = pc + float(bias[5 * H + u]);
      float vp = float(x[2 * H]) + float(bias[2 * H + u]);
      vr = rho.forward(vr);
      vu = rho.forward(vu) * keep;
      vp = vp + vr * vn;
      const float vc = phi.forward(vp);
      const float vh = vu * hp + (1.0f - vu) * vc;
      slot(t, 0, at, vr);
      slot(t, 1, at, vu);
      slot(t, 2, at, rawCandidate ? vp : vc);
      if (saveN)
        slot(t, numInter() - 1, at, vn);
      finish(t, at, vh, true);
      return;
    }
    const float pr = float(T(gate(product, 3 * j, r, h, 0, u, j, wStage)));
    const float pu = float(T(gate(product, 3 * j + 1, r, h, 1, u, j, wStage)));
    float vr = float(x[0]) + pr + float(bias[u]);
    float vu = float(x[H]) + pu + float(bias[H + u]);
    vr = rho.forward(vr);
    vu = rho.forward(vu) * keep;
    slot(t, 0, at, vr);
    slot(t, 1, at, vu);
    uKept[r * U + j] = float(T(vu)); // read back rounded, as the per-step path stores it
    publish(&rhExchange[(unsigned long long)t * B * H + at], vr * hp);
  }

  // Without resetAfter: the candidate from r*h of every unit, then the state (phase 2).
  template <class Phi>
  ASPEN_HD void candidate(unsigned t, unsigned r, unsigned u0, unsigned j, unsigned U,
                          const float *hStage, const float *rhStage, const float *wStage,
                          const persistent::Product &product, const float *uKept, Phi phi) {
    const unsigned u = u0 + j;
    const unsigned long long at = (unsigned long long)r * H + u;
    const unsigned length = lengths.size() == 1 ? lengths[0] : lengths[r];
    const float hp = persistent::stagedAt(hStage, tensorKernel(), at);
    if (t >= length) {
      for (unsigned s = 2; s < numInter(); ++s)
        slot(t, s, at, 0.0f);
      finish(t, at, hp, false);
      return;
    }
    const T *x = xw.data() + ((unsigned long long)t * B + r) * 3 * H + u;
    const float pc =
        float(T(gate(product, j, r, rhStage + (unsigned long long)r * H, 2, u, j, wStage)));
    const float vp = float(x[2 * H]) + pc + float(bias[2 * H + u]);
    const float vc = phi.forward(vp);
    const float uu = uKept[r * U + j];
    const float vh = uu * hp + (1.0f - uu) * vc;
    slot(t, 2, at, rawCandidate ? vp : vc);
    finish(t, at, vh, true);
  }
};

template class GruPersistentFwd<float>;
template class GruPersistentFwd<half>;

// The GRU's (and AUGRU's) backward loop over the whole sequence, steps T - 1 down to 0
// (GruPersistent in LstmPersistent.cpp's manner): block b owns units [b U, (b + 1) U) and the
// rows u of Wo ([H][3H], canonical r, u, c) they feed back through, staged in shared memory
// when weightsInShared. The gate gradients are the exchange, each element published once:
//   resetAfter: deltaH_{t+1} (r, u, n: 3H a row) staged, dhMM = deltaH_{t+1} . Wo^T, then
//     GruBwdResetAfter's cell (gru_cell::bwdResetAfterElements); deltaX written, deltaH
//     published;
//   otherwise two phases, as GruFusedBwd's 1 and 2: [delta_r | delta_u]_{t+1} staged, dhMM =
//     that . [Wo_r | Wo_u]^T, GruBwdA's cell (delta_u, delta_c of step t published, carry =
//     dh u); then delta_c,t of every unit staged, d(r*h) = delta_c . Wo_c^T, GruBwdB's
//     (delta_r of step t published, carry += d(r*h) r).
// Products: one thread, k increasing, fma, rounded to T as the per-step matMul output is.
//   fwd [T][n][B][H]: the forward's intermediates (r, u, c at slots 0-2, n at nSlot with
//   resetAfter); hPrev and outGrad (when hasOutGrad) [T][B][H]; attention [T][B] (AUGRU);
//   lengths [B] or [1]; dhCarry [B][H] in place; deltaX [T][B][3H] (-0.0 at entry without
//   resetAfter: the exchange), deltaH [T][B][3H] (resetAfter; -0.0 at entry); attPartial
//   [T][B][H] floats: each element's d(attention), summed over H after the launch.
// Shared memory: B x 3H floats of the staged gradients (2H without resetAfter), then the
// block's U x 3H weights.
template <class T> class GruPersistentBwd : public BlockVertex {
public:
  static constexpr bool coResident = true;
  static constexpr unsigned maxThreadsPerBlock = 256;

  Input<Vector<T>> weights;
  Input<Vector<T>> fwd;
  Input<Vector<T>> hPrev;
  Input<Vector<T>> outGrad;
  Input<Vector<T>> attention;
  Input<Vector<unsigned>> lengths;
  InOut<Vector<T>> dhCarry;
  InOut<Vector<T>> deltaX;
  InOut<Vector<T>> deltaH;
  Output<Vector<float>> attPartial;
  unsigned H;
  unsigned B;
  unsigned steps;
  unsigned numInter;
  unsigned nSlot;
  unsigned activation;
  unsigned recurrentActivation;
  bool resetAfter;
  bool hasOutGrad;
  bool hasAttention;
  bool rawCandidate;
  bool popnnHardSigmoidGrad;
  bool weightsInShared;
  bool tensor;     // the tensor variant (persistent::tensorProduct), HALF only
  unsigned splits; // its k ranges a tile
  // The tensor variant's code exists in the HALF kernels only (FLOAT is refused).
  ASPEN_HD bool tensorKernel() const { return sizeof(T) == 2 && tensor; }

  bool compute(Block &block) {
    const unsigned blocks = block.numBlocks(), threads = block.numThreads();
    const unsigned tid = block.threadId();
    const unsigned U = (H + blocks - 1) / blocks;
    const unsigned u0 = block.blockId() * U;
    const unsigned units = u0 >= H ? 0u : (H - u0 < U ? H - u0 : U);
    const unsigned long long BH = (unsigned long long)B * H, G3 = 3ull * H;
    if (deltaX.size() != steps * 3 * BH || (resetAfter && deltaH.size() != steps * 3 * BH) ||
        fwd.size() != steps * numInter * BH || hPrev.size() != steps * BH ||
        dhCarry.size() != BH || weights.size() != 3ull * H * H ||
        (hasOutGrad && outGrad.size() != steps * BH) ||
        (hasAttention && (attention.size() != steps * B || attPartial.size() != steps * BH)) ||
        (tensor && (sizeof(T) != 2 || threads % 32 != 0 || splits == 0 || weightsInShared)))
      return false;
    // The tensor variant's fragments past the registers, of both products (sized for the
    // largest block's rows).
    const unsigned long long productWords = tensor ? persistent::productFloats(U, B, splits) : 0;
    const unsigned long long gateWords =
        tensor ? persistent::stagedFragmentWords({U, B, resetAfter ? 3 * H : 2 * H, splits,
                                                  nullptr},
                                                 threads / 32, persistent::kGruFragments)
               : 0;
    const unsigned long long resetWords =
        tensor && !resetAfter
            ? persistent::stagedFragmentWords({U, B, H, splits, nullptr}, threads / 32,
                                              persistent::kGruSecondFragments)
            : 0;
    const unsigned long long weightWords = weightsInShared ? U * G3 : 0;
    const unsigned long long stageWords =
        persistent::stageWords(B * (resetAfter ? G3 : 2ull * H), tensor);
    if (block.sharedBytes() <
        (stageWords + weightWords + productWords + gateWords + resetWords) * sizeof(float))
      return false;
    if (units == 0)
      return true;
    // The staged gradients: 3H a row with resetAfter, else 2H (then H in the second phase).
    float *stage = block.shared<float>();
    float *wStage = stage + stageWords;
    // The tensor variant's rows: m = j, unit u0 + j's row of Wo from column col0 on.
    float *part = wStage + weightWords;
    const persistent::Product gates{units, B, resetAfter ? 3 * H : 2 * H, splits, part};
    const persistent::Product resets{units, B, H, splits, part};
    unsigned *gateStage = block.shared<unsigned>() + stageWords + weightWords + productWords;
    unsigned *resetStage = gateStage + gateWords;
    auto weightFrom = [&](unsigned col0) { // Wo's row u0 + m from column col0
      return persistent::WeightLayout<T>{weights.data(), 1, G3, 1, u0, {col0, 0, 0, 0}};
    };
    if (weightsInShared) // wStage[j * 3H + col] = Wo[u0 + j][col]
      for (unsigned long long i = tid; i < units * G3; i += threads)
        wStage[i] = float(weights[u0 * G3 + i]);
    block.sync(); // the staged weights complete before any thread reads them
    persistent::WeightFragments<persistent::kGruFragments> gateFragments;
    persistent::WeightFragments<persistent::kGruSecondFragments> resetFragments;
    gateFragments.count = resetFragments.count = 0;
    if (tensorKernel()) {
      gateFragments.load(block, gates, weightFrom(0), gateWords ? gateStage : nullptr);
      if (!resetAfter)
        resetFragments.load(block, resets, weightFrom(2 * H), resetWords ? resetStage : nullptr);
    }
    const unsigned pairs = B * units;
    const T *exchange = resetAfter ? deltaH.data() : deltaX.data();
    for (unsigned i = 0; i < steps; ++i) {
      const unsigned t = steps - 1 - i;
      // resetAfter: all 3H of deltaH_{t+1}; otherwise delta_r and delta_u of t + 1 (2H).
      const unsigned width = resetAfter ? 3 * H : 2 * H;
      if (t + 1 < steps && !stageRows(block, exchange + (t + 1) * B * G3, width, stage))
        return false;
      block.sync();
      if (tensorKernel() && t + 1 < steps)
        persistent::tensorProduct(block, gates, weightFrom(0), gateFragments, stage, width);
      for (unsigned q = tid; q < pairs; q += threads)
        first(t, q / units, u0, q % units, stage, wStage, gates);
      if (!resetAfter) { // delta_c of step t, every unit, for d(r*h)
        block.sync(); // every thread done reading the staged t + 1 gradients
        if (!stageRows(block, deltaX.data() + t * B * G3 + 2 * H, H, stage))
          return false;
        block.sync();
        if (tensorKernel())
          persistent::tensorProduct(block, resets, weightFrom(2 * H), resetFragments, stage, H);
        for (unsigned q = tid; q < pairs; q += threads)
          reset(t, q / units, u0, q % units, stage, wStage, resets);
      }
      block.sync(); // every thread done with the stage before the next step overwrites it
    }
    return true;
  }

private:
  // Columns [0, width) of each row (3H apart) into stage[r * width + k], waiting for each.
  bool stageRows(Block &block, const T *from, unsigned width, float *stage) {
    const unsigned long long n = (unsigned long long)B * width;
    for (unsigned long long e = block.threadId(); e < n; e += block.numThreads()) {
      const T *p = from + (e / width) * 3ull * H + e % width;
      if (!block.waitUntil([&] { return !isUnpublished(loadAcquire(p)); }))
        return false;
      persistent::setStaged(stage, tensorKernel(), e, float(loadAcquire(p)));
    }
    return true;
  }

  // sum over k < width of v[k] Wo[u][col0 + k], increasing k, through fma.
  ASPEN_HD float dot(const float *v, unsigned width, unsigned col0, unsigned u, unsigned j,
                     const float *wStage) const {
    float acc = 0.0f;
    if (weightsInShared) {
      const float *w = wStage + (unsigned long long)j * 3 * H + col0;
      for (unsigned k = 0; k < width; ++k)
        acc = persistent::exactFma(v[k], w[k], acc);
    } else {
      const T *w = weights.data() + (unsigned long long)u * 3 * H + col0;
      for (unsigned k = 0; k < width; ++k)
        acc = persistent::exactFma(v[k], float(w[k]), acc);
    }
    return acc;
  }

  ASPEN_HD bool past(unsigned t, unsigned r) const {
    return t >= (lengths.size() == 1 ? lengths[0] : lengths[r]);
  }
  ASPEN_HD float keep(unsigned t, unsigned r) const {
    return hasAttention ? 1.0f - float(attention[t * B + r]) : 1.0f;
  }
  ASPEN_HD const T *saved(unsigned t, unsigned slot, unsigned long long at) const {
    return fwd.data() + ((unsigned long long)t * numInter + slot) * B * H + at;
  }

  // resetAfter: the whole step; otherwise phase 1 (delta_u, delta_c, carry = dh u).
  ASPEN_HD void first(unsigned t, unsigned r, unsigned u0, unsigned j, const float *stage,
                      const float *wStage, const persistent::Product &product) {
    using namespace gru_cell;
    const unsigned u = u0 + j;
    const unsigned long long BH = (unsigned long long)B * H, G3 = 3ull * H;
    const unsigned long long at = (unsigned long long)r * H + u;
    const unsigned width = resetAfter ? 3 * H : 2 * H;
    const T mm = t + 1 >= steps ? T(0.0f)
                 : tensor       ? T(product.at(j, r))
                                : T(dot(stage + r * (unsigned long long)width, width, 0, u, j,
                                        wStage));
    T *carry = dhCarry.data() + at;
    T *dx = deltaX.data() + t * B * G3 + r * G3 + u; // gate g at dx[g H]
    T *dh = resetAfter ? deltaH.data() + t * B * G3 + r * G3 + u : dx;
    float dAtt = 0.0f;
    if (past(t, r)) { // as the unfused vertices' masked rows
      if (resetAfter) {
        for (unsigned g = 0; g < 3; ++g) {
          dx[g * H] = T(0.0f);
          publish(dh + g * H, 0.0f);
        }
      } else {
        publish(dx + H, 0.0f);
        publish(dx + 2 * H, 0.0f);
      }
      *carry = T(float(mm) + float(*carry));
    } else {
      const T *hp = hPrev.data() + t * BH + at;
      const T *dy = hasOutGrad ? outGrad.data() + t * BH + at : carry;
      T gx[3], gh[3];
      withActivations(recurrentActivation, activation, [&](auto rho, auto phi) {
        const BwdCommon<decltype(rho), decltype(phi)> common{rho, phi, rawCandidate, keep(t, r)};
        if (resetAfter) {
          const BwdResetAfterRow<T> v{saved(t, 0, at), saved(t, 1, at), saved(t, 2, at),
                                      saved(t, nSlot, at), hp, dy, &mm, carry,
                                      gx + R, gx + U, gx + C, gh + R, gh + U, gh + C};
          dAtt = bwdResetAfterElements(v, 0, 1, hasOutGrad, common);
        } else {
          const BwdARow<T> v{saved(t, 1, at), saved(t, 2, at), hp, dy, &mm, carry, gx + U,
                             gx + C};
          dAtt = bwdAElements(v, 0, 1, hasOutGrad, common);
        }
      }, popnnHardSigmoidGrad);
      if (resetAfter) {
        for (unsigned g = 0; g < 3; ++g) {
          dx[g * H] = gx[g];
          publish(dh + g * H, float(gh[g]));
        }
      } else {
        publish(dx + H, float(gx[U]));
        publish(dx + 2 * H, float(gx[C]));
      }
    }
    if (hasAttention)
      attPartial[t * BH + at] = dAtt;
  }

  // Without resetAfter, phase 2: delta_r of step t, carry += d(r*h) r.
  ASPEN_HD void reset(unsigned t, unsigned r, unsigned u0, unsigned j, const float *stage,
                      const float *wStage, const persistent::Product &product) {
    using namespace gru_cell;
    const unsigned u = u0 + j;
    const unsigned long long BH = (unsigned long long)B * H, G3 = 3ull * H;
    const unsigned long long at = (unsigned long long)r * H + u;
    T *dr = deltaX.data() + t * B * G3 + r * G3 + u;
    if (past(t, r)) {
      publish(dr, 0.0f);
      return;
    }
    const T g = tensor ? T(product.at(j, r))
                       : T(dot(stage + (unsigned long long)r * H, H, 2 * H, u, j, wStage));
    const T *hp = hPrev.data() + t * BH + at;
    T dR;
    withActivations(recurrentActivation, unsigned(NonLinearityType::TANH),
                    [&](auto rho, auto) {
                      bwdBElements(saved(t, 0, at), hp, &g, &dR, dhCarry.data() + at, 0, 1, rho);
                    },
                    popnnHardSigmoidGrad);
    publish(dr, float(dR));
  }
};

template class GruPersistentBwd<float>;
template class GruPersistentBwd<half>;

} // namespace aspen::nn
