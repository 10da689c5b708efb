// Block codelets for the tests (test_block_codelets.cpp, gpu_codegen): each needs its barriers
// and its shared memory to give the right answer, so a runner that does not honour them fails.
#include <aspen/Vertex.hpp>

using namespace aspen;

namespace bc {

// out[b] = the sum of block b's chunk of `in` (ceil(n / blocks) elements): each thread sums a
// strided share into shared memory, then a tree reduction halves the active threads at each
// barrier. Thread 0 reads every other thread's partial, so it is wrong without the barriers.
class BlockSum : public BlockVertex {
public:
  Input<Vector<float>> in;
  Output<Vector<float>> out;

  bool compute(Block &block) {
    float *partial = block.shared<float>();
    const unsigned t = block.threadId(), threads = block.numThreads();
    const unsigned long long n = in.size(), blocks = block.numBlocks();
    const unsigned long long chunk = (n + blocks - 1) / blocks;
    const unsigned long long begin = block.blockId() * chunk;
    const unsigned long long end = begin + chunk < n ? begin + chunk : n;
    float sum = 0;
    for (unsigned long long i = begin + t; i < end; i += threads)
      sum += in[i];
    partial[t] = sum;
    block.sync();
    for (unsigned stride = 1; stride < threads; stride *= 2) {
      if (t % (2 * stride) == 0 && t + stride < threads)
        partial[t] += partial[t + stride];
      block.sync();
    }
    if (t == 0)
      out[block.blockId()] = partial[0];
    return true;
  }
};

// out = the inclusive prefix sums of `in` (one block, in.size() <= threads): Hillis-Steele with
// two buffers in shared memory, one barrier per step, each reading what the others wrote.
class BlockScan : public BlockVertex {
public:
  Input<Vector<float>> in;
  Output<Vector<float>> out;

  void compute(Block &block) {
    const unsigned t = block.threadId();
    const unsigned n = unsigned(in.size());
    float *buffers[2] = {block.shared<float>(), block.shared<float>() + block.numThreads()};
    buffers[0][t] = t < n ? in[t] : 0.0f;
    block.sync();
    unsigned from = 0;
    for (unsigned offset = 1; offset < block.numThreads(); offset *= 2) {
      const float *src = buffers[from];
      buffers[1 - from][t] = t >= offset ? src[t] + src[t - offset] : src[t];
      from = 1 - from;
      block.sync();
    }
    if (t < n)
      out[t] = buffers[from][t];
  }
};

// What a launch looks like from the inside: out[b * threads + t] = the thread's view.
class BlockShape : public BlockVertex {
public:
  Output<Vector<unsigned>> out;
  Output<Vector<unsigned>> shape; // threads, blocks, shared bytes

  void compute(Block &block) {
    const unsigned t = block.threadId(), b = block.blockId();
    out[b * block.numThreads() + t] = b * 1000 + t;
    if (t == 0 && b == 0) {
      shape[0] = block.numThreads();
      shape[1] = block.numBlocks();
      shape[2] = unsigned(block.sharedBytes());
    }
  }
};

// Fails (returns false) on thread 3 of block 1 when `fail` is non-zero.
class BlockFail : public BlockVertex {
public:
  Input<int> fail;

  bool compute(Block &block) {
    return !(*fail != 0 && block.blockId() == 1 && block.threadId() == 3);
  }
};

// An ordinary vertex, for the error tests.
class Plain : public Vertex {
public:
  Output<float> out;
  void compute() { *out = 1.0f; }
};

// Co-resident launches (LaunchShape::coResident).

// A ring passed from block to block: ring[s * blocks + b] = ring[s * blocks + b - 1] + 1, so
// element i holds i + 1 and every element waits for the one before it, written by another
// block (block 0 waits for the last block's value of the step before). ring starts as -0.0
// (unpublished). Thread 0 waits and publishes; the other threads meet it at a barrier each
// step, so waits and barriers mix. Hangs on a runner that runs a block to completion first.
class BlockRing : public BlockVertex {
public:
  static constexpr bool coResident = true;
  InOut<Vector<float>> ring;
  unsigned steps;

  bool compute(Block &block) {
    const unsigned b = block.blockId(), blocks = block.numBlocks();
    for (unsigned s = 0; s < steps; ++s) {
      const unsigned long long i = (unsigned long long)s * blocks + b;
      if (block.threadId() == 0) {
        float previous = 0.0f;
        if (i > 0) {
          const float *p = &ring[i - 1];
          if (!block.waitUntil([&] { return !isUnpublished(loadAcquire(p)); }))
            return false;
          previous = loadAcquire(p);
        }
        publish(&ring[i], previous + 1.0f);
      }
      block.sync();
    }
    return true;
  }
};

// out[k * blocks + b] = the sum over the whole grid of (k + 1) * in[j], as block b sees it after
// a gridSync, for k in [0, rounds): every thread writes its share into scratch, gridSync, every
// block's thread 0 sums all of scratch in index order, gridSync before the next round
// overwrites it. Integer-valued inputs keep every sum exact. Not declared coResident, so the
// error for a launch that is not co-resident can be shown.
class GridSum : public BlockVertex {
public:
  Input<Vector<float>> in; // blocks * threads values
  InOut<Vector<float>> scratch; // blocks * threads
  Output<Vector<float>> out;    // rounds * blocks
  unsigned rounds;

  bool compute(Block &block) {
    const unsigned t = block.threadId(), b = block.blockId();
    const unsigned long long mine = (unsigned long long)b * block.numThreads() + t;
    for (unsigned k = 0; k < rounds; ++k) {
      scratch[mine] = in[mine] * float(k + 1);
      if (!block.gridSync())
        return false;
      if (t == 0) {
        float sum = 0.0f;
        for (unsigned long long j = 0; j < scratch.size(); ++j)
          sum += scratch[j];
        out[(unsigned long long)k * block.numBlocks() + b] = sum;
      }
      if (!block.gridSync())
        return false;
    }
    return true;
  }
};

// The sentinel protocol in T: block b publishes values[j] * factor for its share j of the
// buffer (which starts unpublished), then every block reads the whole buffer, waiting for each
// element, into received[b * n + j]. A publish that kept -0.0 would leave a consumer waiting.
template <class T> class SentinelExchange : public BlockVertex {
public:
  static constexpr bool coResident = true;
  Input<Vector<float>> values;
  InOut<Vector<T>> buffer;
  Output<Vector<T>> received;
  float factor;

  bool compute(Block &block) {
    const unsigned long long n = buffer.size(), blocks = block.numBlocks();
    const unsigned long long chunk = (n + blocks - 1) / blocks;
    const unsigned long long begin = block.blockId() * chunk;
    const unsigned long long end = begin + chunk < n ? begin + chunk : n;
    for (unsigned long long j = begin + block.threadId(); j < end; j += block.numThreads())
      publish(&buffer[j], values[j] * factor);
    for (unsigned long long j = block.threadId(); j < n; j += block.numThreads()) {
      const T *p = &buffer[n - 1 - j]; // the other end first: most of it is another block's
      if (!block.waitUntil([&] { return !isUnpublished(loadAcquire(p)); }))
        return false;
      received[block.blockId() * n + (n - 1 - j)] = loadAcquire(p);
    }
    return true;
  }
};

// Waits for a flag nobody sets: thread 0 of every block at waitUntil, the others at the barrier
// after it. With `skipGridSync` set instead, block 0 returns at once and the others wait at a
// gridSync it never reaches.
class NeverPublished : public BlockVertex {
public:
  static constexpr bool coResident = true;
  Input<Vector<unsigned>> flag;
  unsigned skipGridSync;

  bool compute(Block &block) {
    if (skipGridSync) {
      if (block.blockId() == 0)
        return true;
      return block.gridSync();
    }
    if (block.threadId() == 0 && !block.waitUntil([&] { return loadAcquire(&flag[0]) != 0u; }))
      return false;
    block.sync();
    return true;
  }
};

// Declares a block size limit: out[b * threads + t] = t + 1.
class BoundedBlock : public BlockVertex {
public:
  static constexpr unsigned maxThreadsPerBlock = 64;
  Output<Vector<unsigned>> out;

  void compute(Block &block) {
    out[block.blockId() * block.numThreads() + block.threadId()] = block.threadId() + 1;
  }
};

// Block::mmaF16 over the block's full warps: warp w computes D_w = A B_w (A 16 x 16 row-major,
// B_w 16 x 8, column w of the tiles' batch: b[(w * 16 + k) * 8 + n]) in mma.sync's fragment
// layout, adds it to D_w = init, and writes d[w * 128 + row * 8 + col]. A block with a partial
// last warp runs it only in the full ones (the partial warp's threads still call it with
// `active` false, so the host's barrier sees them).
class WarpMma : public BlockVertex {
public:
  Input<Vector<half>> a;
  Input<Vector<half>> b;
  Output<Vector<float>> d;
  float init;

  bool compute(Block &block) {
    const unsigned lane = block.threadId() % 32, warp = block.threadId() / 32;
    const bool full = (warp + 1) * 32 <= block.numThreads();
    const unsigned g = lane / 4, q = lane % 4;
    auto pack = [](half lo, half hi) { return unsigned(lo.bits()) | (unsigned(hi.bits()) << 16); };
    auto A = [&](unsigned row, unsigned k) { return a[row * 16 + k]; };
    auto B = [&](unsigned k, unsigned n) { return full ? b[(warp * 16 + k) * 8 + n] : half(0.0f); };
    const unsigned ra[4] = {pack(A(g, 2 * q), A(g, 2 * q + 1)),
                            pack(A(g + 8, 2 * q), A(g + 8, 2 * q + 1)),
                            pack(A(g, 2 * q + 8), A(g, 2 * q + 9)),
                            pack(A(g + 8, 2 * q + 8), A(g + 8, 2 * q + 9))};
    const unsigned rb[2] = {pack(B(2 * q, g), B(2 * q + 1, g)), pack(B(2 * q + 8, g), B(2 * q + 9, g))};
    float acc[4] = {init, init, init, init};
    block.mmaF16(full, ra, rb, acc);
    if (full) {
      float *out = &d[warp * 128];
      out[g * 8 + 2 * q] = acc[0];
      out[g * 8 + 2 * q + 1] = acc[1];
      out[(g + 8) * 8 + 2 * q] = acc[2];
      out[(g + 8) * 8 + 2 * q + 1] = acc[3];
    }
    return true;
  }
};

template class SentinelExchange<float>;
template class SentinelExchange<half>;

} // namespace bc
