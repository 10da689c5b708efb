// A user block codelet for the installed-package consumer: reverses its vector through shared
// memory, which needs the barrier.
#include <aspen/Vertex.hpp>
class Reverse : public aspen::BlockVertex {
public:
  aspen::Input<aspen::Vector<float>> in;
  aspen::Output<aspen::Vector<float>> out;
  void compute(aspen::Block &b) {
    float *s = b.shared<float>();
    const unsigned t = b.threadId(), n = b.numThreads();
    s[t] = in[t];
    b.sync();
    out[t] = s[n - 1 - t];
  }
};
