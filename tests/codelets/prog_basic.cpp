// Vertices for the program, stream and engine tests.
#include <aspen/Vertex.hpp>

using namespace aspen;

// x += 1
class Increment : public Vertex {
public:
  InOut<int> x;
  bool compute() {
    *x += 1;
    return true;
  }
};

// count += 1; more = count < limit; done = !more
class Counter : public Vertex {
public:
  InOut<int> count;
  Output<bool> more;
  Output<bool> done;
  int limit;
  bool compute() {
    *count += 1;
    *more = *count < limit;
    *done = !*more;
    return true;
  }
};

// out[i] = in[i] * factor + offset
class Scale : public Vertex {
public:
  Input<Vector<float>> in;
  Output<Vector<float>> out;
  float factor;
  float offset;
  bool compute() {
    for (unsigned i = 0; i < in.size(); ++i)
      out[i] = in[i] * factor + offset;
    return true;
  }
};

// data[i] = data[i] * 3 + delta[i]
class MulAdd : public Vertex {
public:
  InOut<Vector<float>> data;
  Input<Vector<float>> delta;
  bool compute() {
    for (unsigned i = 0; i < data.size(); ++i)
      data[i] = data[i] * 3 + delta[i];
    return true;
  }
};

// Worker w handles elements w, w + numWorkers, ...: out[i] = in[i] * in[i] - i
class SquareMulti : public MultiVertex {
public:
  Input<Vector<float>> in;
  Output<Vector<float>> out;
  bool compute(unsigned workerId) {
    for (unsigned i = workerId; i < in.size(); i += numWorkers())
      out[i] = in[i] * in[i] - float(i);
    return true;
  }
};

// sums[r] = sum of rows[r]
class SumRows : public Vertex {
public:
  Vector<Input<Vector<float>>> rows;
  Output<Vector<float>> sums;
  bool compute() {
    for (unsigned r = 0; r < rows.size(); ++r) {
      float total = 0;
      for (float x : rows[r])
        total += x;
      sums[r] = total;
    }
    return true;
  }
};

// Fails when in == 13.
class FailOn13 : public Vertex {
public:
  Input<int> in;
  bool compute() { return *in != 13; }
};

// Succeeds only when both fields see the same memory (a shared temporary when the same
// non-contiguous tensor is connected to both), adding one in place.
class SameMemory : public Vertex {
public:
  Input<Vector<float>> a;
  Output<Vector<float>> b;
  bool compute() {
    if (a.data() != b.data())
      return false;
    for (unsigned i = 0; i < b.size(); ++i)
      b[i] = a[i] + 1;
    return true;
  }
};
