// Codelets for the first-steps example: compiled on the host when the example calls
// graph.addCodelets (and by NVRTC for the GPU, once the CUDA backend is built).
#include <aspen/Vertex.hpp>

using namespace aspen;

// out[i] = scale * in[i] + offset: `scale` and `offset` are vertex state set by the host.
class ScaleShift : public Vertex {
public:
  Input<Vector<float>> in;
  Output<Vector<float>> out;
  float scale;
  float offset;

  bool compute() {
    for (unsigned i = 0; i < in.size(); ++i)
      out[i] = scale * in[i] + offset;
    return true;
  }
};

// Sums each row of a 2-D field into one output element; workers take rows in turn.
class RowSums : public MultiVertex {
public:
  Vector<Input<Vector<float>>> rows;
  Output<Vector<float>> sums;

  void compute(unsigned workerId) {
    for (unsigned r = workerId; r < rows.size(); r += numWorkers()) {
      float total = 0;
      for (float x : rows[r])
        total += x;
      sums[r] = total;
    }
  }
};
