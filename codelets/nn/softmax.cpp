// Softmax over rows (the innermost dimension) and its input gradient.
// One MultiVertex per tile holding whole rows; worker w takes rows w, w + numWorkers(), ...
// Sums are accumulated in float for float and half.
#include "NnCodeletMath.hpp"

namespace aspen::nn {

// One row of T: out = outputScale * exp(in - m) / sum(exp(in - m)), m = max(in) when Stable,
// else 0. `in` and `out` may be the same row. Float rows keep the exponentials in `out` and scale
// them; half rows compute each exponential twice, because exp(in - m) alone can overflow half
// (unstable) or lose its precision to half subnormals before the scaling brings it back.
template <class T, bool Stable, class In, class Out>
ASPEN_HD inline void nnSoftmaxRow(const In &in, const Out &out, float outputScale) {
  const unsigned n = out.size();
  float shift = 0.0f;
  if (Stable && n != 0) {
    shift = float(in[0]);
    for (unsigned i = 1; i < n; ++i)
      shift = nnRanksAbove(float(in[i]), shift) ? float(in[i]) : shift;
  }
  float sum = 0.0f;
  if constexpr (NnIsFloat<T>::value) {
    for (unsigned i = 0; i < n; ++i) {
      out[i] = nnExp(float(in[i]) - shift);
      sum += out[i];
    }
    const float factor = outputScale / sum;
    for (unsigned i = 0; i < n; ++i)
      out[i] *= factor;
  } else {
    for (unsigned i = 0; i < n; ++i)
      sum += nnExp(float(in[i]) - shift);
    const float factor = outputScale / sum;
    for (unsigned i = 0; i < n; ++i)
      out[i] = nnExp(float(in[i]) - shift) * factor;
  }
}

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
      const unsigned n = inGrad[r].size();
      float dot = 0.0f;
      for (unsigned i = 0; i < n; ++i)
        dot += float(outGrad[r][i]) * float(out[r][i]);
      for (unsigned i = 0; i < n; ++i)
        inGrad[r][i] = T(float(out[r][i]) * (float(outGrad[r][i]) - dot));
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
