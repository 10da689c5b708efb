// Codelets for the time-limit tests: one that never returns, and one that returns at once.
#include <aspen/Vertex.hpp>

using namespace aspen;

// Counts for ever (the volatile store is a side effect, so the loop cannot be assumed to end).
class Spin : public Vertex {
public:
  InOut<unsigned> counter;

  bool compute() {
    volatile unsigned *c = &*counter;
    for (;;)
      *c = *c + 1;
    return true;
  }
};

// Counts to n (a long but finite wait: a GPU kernel that outlives its run ends by itself).
class SpinFor : public Vertex {
public:
  InOut<unsigned> counter;
  Input<unsigned> n;

  bool compute() {
    volatile unsigned *c = &*counter;
    for (unsigned i = 0; i < *n; ++i)
      *c = *c + 1;
    return true;
  }
};

class AddOne : public Vertex {
public:
  InOut<unsigned> x;

  bool compute() {
    *x += 1;
    return true;
  }
};

// A block codelet whose threads spin (each at its own word), for the fibers of the CPU executor.
class BlockSpin : public BlockVertex {
public:
  InOut<Vector<unsigned>> counters;

  bool compute(Block &block) {
    volatile unsigned *c = &counters[block.threadId() % counters.size()];
    for (;;)
      *c = *c + 1;
    return true;
  }
};
