// Codelets for ported_streams.cpp, written for Poplar (fully qualified names, older
// `bool compute()` style); only the include path changes when they move to Aspen.
#include <poplar/Vertex.hpp>

// out[i] = scale * in[i] + offset, with scale and offset vertex state set by the host.
class ScaleOffset : public poplar::Vertex {
public:
  poplar::Input<poplar::Vector<float>> in;
  poplar::Output<poplar::Vector<float>> out;
  float scale;
  float offset;

  bool compute() {
    for (unsigned i = 0; i < in.size(); ++i)
      out[i] = scale * in[i] + offset;
    return true;
  }
};

// Adds every element of `in` into the running total.
class Accumulate : public poplar::Vertex {
public:
  poplar::Input<poplar::Vector<float>> in;
  poplar::InOut<float> total;

  bool compute() {
    for (auto v : in)
      *total += v;
    return true;
  }
};
