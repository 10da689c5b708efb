// A codelet file written for Poplar: only the include path changes when it moves to Aspen.
#include <poplar/Vertex.hpp>

using namespace poplar;

class SumVertex : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;

  bool compute() {
    *out = 0;
    for (const auto &v : in)
      *out += v;
    return true;
  }
};
