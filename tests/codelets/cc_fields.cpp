// Test codelets for the codelet compiler: one vertex per field kind, a class template with two
// explicit instantiations, a MultiVertex, a failing vertex and a half-precision vertex.
#include <aspen/Vertex.hpp>

using namespace aspen;

namespace cc {

// Scalar edges: sum = 2 * a, counter += 3.
class ScalarEdges : public Vertex {
public:
  Input<float> a;
  Output<float> sum;
  InOut<int> counter;

  bool compute() {
    *sum = *a * 2.0f;
    *counter += 3;
    return true;
  }
};

// Vector edges and plain members: out[i] = in[i] * scale + offsets[i]; acc[i] += 1.
class VectorEdges : public Vertex {
public:
  Input<Vector<float>> in;
  Output<Vector<float, VectorLayout::ONE_PTR, 8>> out;
  InOut<Vector<short>> acc;
  const unsigned short size;
  float scale;
  Vector<unsigned> offsets;
  Output<unsigned> inSize;

  void compute() {
    for (unsigned i = 0; i < size; ++i)
      out[i] = in[i] * scale + static_cast<float>(offsets[i]);
    for (auto &x : acc)
      x += 1;
    *inSize = static_cast<unsigned>(in->size());
  }
};

// 2-D edges: rowSums[r] = sum of rows[r]; listTotals[r] = sum of lists[r]; outs[r][j] = r.
class TwoDimensional : public Vertex {
public:
  Vector<Input<Vector<float>>> rows;
  Input<VectorList<int, VectorListLayout::DELTANELEMENTS>> lists;
  Vector<Output<Vector<float>>, VectorLayout::ONE_PTR> outs;
  Output<Vector<float>> rowSums;
  Output<Vector<int>> listTotals;

  bool compute() {
    for (unsigned r = 0; r < rows.size(); ++r) {
      float total = 0;
      for (float x : rows[r])
        total += x;
      rowSums[r] = total;
    }
    unsigned r = 0;
    for (auto list : lists) {
      int total = 0;
      for (unsigned j = 0; j < list.size(); ++j)
        total += list[j];
      listTotals[r++] = total;
    }
    for (unsigned o = 0; o < outs.size(); ++o)
      for (auto &x : outs[o])
        x = static_cast<float>(o);
    return true;
  }
};

// InOut<VectorList>: every element doubled.
class DoubleLists : public Vertex {
public:
  InOut<VectorList<float, VectorListLayout::DELTAN>> lists;
  void compute() {
    for (unsigned i = 0; i < lists.size(); ++i)
      for (auto &x : lists[i])
        x *= 2;
  }
};

// out = sum(in) / 2 in T: float keeps the fraction, int divides integrally.
template <typename T> class HalfSum : public Vertex {
public:
  Input<Vector<T>> in;
  Output<T> out;
  bool compute() {
    T total = 0;
    for (T x : in)
      total += x;
    *out = total / T(2);
    return true;
  }
};
template class HalfSum<float>;
template class HalfSum<int>;

// Workers take elements in turn: out[i] = in[i] * in[i]; workerCount[w] = numWorkers().
class Squares : public MultiVertex {
public:
  Input<Vector<float>> in;
  Output<Vector<float>> out;
  Output<Vector<unsigned>> workerCount;
  void compute(unsigned workerId) {
    for (unsigned i = workerId; i < in.size(); i += numWorkers())
      out[i] = in[i] * in[i];
    workerCount[workerId] = numWorkers();
  }
};

// Fails when its input is not positive.
class PositiveCheck : public Vertex {
public:
  Input<int> x;
  bool compute() { return *x > 0; }
};

// data[i] = src[i] + 1: connected in place, src and data are one buffer.
class AddOne : public Vertex {
public:
  Input<Vector<float>> src;
  Output<Vector<float>> dst;
  void compute() {
    for (unsigned i = 0; i < src.size(); ++i)
      dst[i] = src[i] + 1.0f;
  }
};

enum class Mode : unsigned char { Add, Multiply };

// half edges and an enum member: out = in (+|*) 2.
class HalfOp : public Vertex {
public:
  Input<half> in;
  Output<half> out;
  Mode mode;
  long long big;
  void compute() { *out = mode == Mode::Add ? float(*in) + 2.0f : float(*in) * 2.0f; }
};

} // namespace cc
