// A vertex with one field of each kind, for the graph-construction tests.
#include <aspen/Vertex.hpp>

using namespace aspen;

class FieldKinds : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;
  Vector<Input<Vector<float>>> rows;
  unsigned char small;
  float scale;

  bool compute() {
    float total = 0;
    for (unsigned i = 0; i < in.size(); ++i)
      total += in[i];
    for (unsigned r = 0; r < rows.size(); ++r)
      for (float x : rows[r])
        total += x;
    *out = scale * total + small;
    return true;
  }
};
