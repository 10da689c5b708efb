// Codelets for ported_control.cpp, written for Poplar in the modern PopLibs style
// (`using namespace poplar;`, `void compute()`); only the include path changes for Aspen.
#include <poplar/Vertex.hpp>

using namespace poplar;

// The loop condition: result = count < limit.
class LessThan : public Vertex {
public:
  Input<unsigned> count;
  Input<unsigned> limit;
  Output<bool> result;

  void compute() { *result = *count < *limit; }
};

// The loop body: counts one more iteration and doubles every value.
class CountAndDouble : public Vertex {
public:
  InOut<unsigned> count;
  InOut<Vector<float>> values;

  void compute() {
    *count += 1;
    for (auto &v : values)
      v *= 2;
  }
};

class AddOne : public Vertex {
public:
  InOut<Vector<int>> data;

  void compute() {
    for (unsigned i = 0; i < data.size(); ++i)
      data[i] += 1;
  }
};

// flag = any element of `in` is above threshold.
class AnyAbove : public Vertex {
public:
  Input<Vector<float>> in;
  Input<float> threshold;
  Output<bool> flag;

  void compute() {
    bool above = false;
    for (float v : in)
      above = above || v > *threshold;
    *flag = above;
  }
};
