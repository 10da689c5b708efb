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

} // namespace bc
