// Softmax over rows (the innermost dimension) and its input gradient.
// One MultiVertex per tile holding whole rows; worker w takes rows w, w + numWorkers(), ...
// Sums are accumulated in float for float and half.
#include "NnCodeletMath.hpp"

namespace aspen::nn {

template <class T, bool Stable> class Softmax : public MultiVertex {
public:
  Vector<Input<Vector<T>>> in;
  Vector<Output<Vector<T>>> out;
  float outputScale;
  bool compute(unsigned workerId) {
    for (unsigned r = workerId; r < out.size(); r += numWorkers())
      nnSoftmaxRow<T, Stable>(in[r], out[r], outputScale);
    return true;
  }
};

template <class T, bool Stable> class SoftmaxInPlace : public MultiVertex {
public:
  Vector<InOut<Vector<T>>> data;
  float outputScale;
  bool compute(unsigned workerId) {
    for (unsigned r = workerId; r < data.size(); r += numWorkers())
      nnSoftmaxRow<T, Stable>(data[r], data[r], outputScale);
    return true;
  }
};

// dL/dx = y * (g - sum(g * y)) from the output y, as popnn, for every softmax kind: for
// SOFTMAX_SCALED (y = S softmax(x)) this is not the true gradient, which divides the sum by S.
template <class T> class SoftmaxGrad : public MultiVertex {
public:
  Vector<Input<Vector<T>>> out;
  Vector<Input<Vector<T>>> outGrad;
  Vector<Output<Vector<T>>> inGrad;
  bool compute(unsigned workerId) {
    for (unsigned r = workerId; r < inGrad.size(); r += numWorkers()) {
      nnSoftmaxGradRow<T>(out[r], outGrad[r], inGrad[r]);
    }
    return true;
  }
};

template class Softmax<float, false>;
template class Softmax<float, true>;
template class Softmax<half, false>;
template class Softmax<half, true>;
template class SoftmaxInPlace<float, false>;
template class SoftmaxInPlace<float, true>;
template class SoftmaxInPlace<half, false>;
template class SoftmaxInPlace<half, true>;
template class SoftmaxGrad<float>;
template class SoftmaxGrad<half>;

} // namespace aspen::nn
