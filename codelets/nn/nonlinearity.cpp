// Element-wise non-linearities and their input gradients (aspen::nn::nonLinearity*).
// One MultiVertex per tile; its 2-D fields hold the tile's contiguous regions, and each worker
// takes a contiguous share of their concatenation. Computed in float for float and half.
#include "NnCodeletMath.hpp"

namespace aspen::nn {

// out = f(in), region by region.
template <class T, NonLinearityType K> class NonLinearity : public MultiVertex {
public:
  Vector<Input<Vector<T>>> in;
  Vector<Output<Vector<T>>> out;
  bool compute(unsigned workerId) {
    nnForWorkerShare(out, workerId, numWorkers(),
                     [&](unsigned r, unsigned i) { out[r][i] = T(nnForward<K>(float(in[r][i]))); });
    return true;
  }
};

// data = f(data).
template <class T, NonLinearityType K> class NonLinearityInPlace : public MultiVertex {
public:
  Vector<InOut<Vector<T>>> data;
  bool compute(unsigned workerId) {
    nnForWorkerShare(data, workerId, numWorkers(), [&](unsigned r, unsigned i) {
      data[r][i] = T(nnForward<K>(float(data[r][i])));
    });
    return true;
  }
};

// inGrad = gradient(act, outGrad) element by element, over this worker's share: what every
// gradient vertex below does, with its own derivative.
template <class T, class Act, class Grad, class Out, class F>
inline void nnGradientShare(const Act &act, const Grad &outGrad, const Out &inGrad,
                            unsigned workerId, unsigned numWorkers, F gradient) {
  nnForWorkerShare(inGrad, workerId, numWorkers, [&](unsigned r, unsigned i) {
    inGrad[r][i] = T(gradient(float(act[r][i]), float(outGrad[r][i])));
  });
}

// inGrad = f'(.) * outGrad, with f' taken from `act` (the forward output, or the forward input for
// the kinds whose table entry says so).
template <class T, NonLinearityType K> class NonLinearityGrad : public MultiVertex {
public:
  Vector<Input<Vector<T>>> act;
  Vector<Input<Vector<T>>> outGrad;
  Vector<Output<Vector<T>>> inGrad;
  bool compute(unsigned workerId) {
    nnGradientShare<T>(act, outGrad, inGrad, workerId, numWorkers(),
                       [](float a, float g) { return nnGradient<K>(a, g); });
    return true;
  }
};

// popnn's HARD_SIGMOID gradient (nnHardSigmoidGradPopnn). The true derivative, 0 where the
// output is clamped, is NonLinearityGrad<T, HARD_SIGMOID>.
template <class T> class HardSigmoidGradPopnn : public MultiVertex {
public:
  Vector<Input<Vector<T>>> act;
  Vector<Input<Vector<T>>> outGrad;
  Vector<Output<Vector<T>>> inGrad;
  bool compute(unsigned workerId) {
    nnGradientShare<T>(act, outGrad, inGrad, workerId, numWorkers(),
                       [](float y, float g) { return nnHardSigmoidGradPopnn(y, g); });
    return true;
  }
};
template class HardSigmoidGradPopnn<float>;
template class HardSigmoidGradPopnn<half>;

#define ASPEN_NN_INSTANTIATE_ELEMENTWISE(name, helper, takesInput)                                 \
  template class NonLinearity<float, NonLinearityType::name>;                                      \
  template class NonLinearity<half, NonLinearityType::name>;                                       \
  template class NonLinearityInPlace<float, NonLinearityType::name>;                               \
  template class NonLinearityInPlace<half, NonLinearityType::name>;                                \
  template class NonLinearityGrad<float, NonLinearityType::name>;                                  \
  template class NonLinearityGrad<half, NonLinearityType::name>;
ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(ASPEN_NN_INSTANTIATE_ELEMENTWISE)
#undef ASPEN_NN_INSTANTIATE_ELEMENTWISE

} // namespace aspen::nn
