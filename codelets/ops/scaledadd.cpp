// Codelets of scaledAddTo / scaledSubtractFrom and the counter of countedForLoop.
#include "fillCommon.hpp"

namespace aspen::ops {

// A[r][i] = scaleA * A[r][i] +/- scaleB * B[r][i], or with xMinusAx (popops'
// X_MINUS_AX_PLUS_BY) A[r][i] - scaleA * A[r][i] + scaleB * B[r][i], computed in
// ScaledAddArithmetic<TA> and rounded once to TA. Workers split each region.
template <class TA, class TB, class TS> class ScaledAdd : public MultiVertex {
public:
  Vector<InOut<Vector<TA>>> A;
  Vector<Input<Vector<TB>>> B;
  Input<TS> scaleA;
  Input<TS> scaleB;
  bool subtract;
  bool xMinusAx;

  bool compute(unsigned wid) {
    typedef typename datamove::ScaledAddArithmetic<TA>::type C;
    const C a = C(*scaleA);
    const C b = subtract ? C(0) - C(*scaleB) : C(*scaleB);
    for (unsigned r = 0; r < A.size(); ++r) {
      unsigned begin, end;
      ::aspen::detail::workerShare(A[r].size(), wid, numWorkers(), begin, end);
      for (unsigned i = begin; i < end; ++i) {
        const C x = C(A[r][i]);
        A[r][i] = TA((xMinusAx ? x - a * x : a * x) + b * C(B[r][i]));
      }
    }
    return true;
  }
};

// One table of the supported (A, B, scale) type triples; the host side has the same list.
// clang-format off
#define ASPEN_SCALEDADD_INSTANCES(X)                                                               \
  X(float, float, float) X(float, float, half) X(float, half, float) X(float, half, half)          \
  X(half, float, float) X(half, float, half) X(half, half, float) X(half, half, half)              \
  X(int, int, int) X(unsigned, unsigned, unsigned)
// clang-format on
#define ASPEN_SCALEDADD_INSTANCE(A, B, S) template class ScaledAdd<A, B, S>;
ASPEN_SCALEDADD_INSTANCES(ASPEN_SCALEDADD_INSTANCE)
#undef ASPEN_SCALEDADD_INSTANCE

// The condition of countedForLoop: count += step; more = (count != limit).
template <class T> class ForLoopCounter : public Vertex {
public:
  InOut<T> count;
  Input<T> limit;
  Output<bool> more;
  int step;

  bool compute() {
    *count = T(unsigned(*count) + unsigned(step));
    *more = *count != *limit;
    return true;
  }
};
template class ForLoopCounter<int>;
template class ForLoopCounter<unsigned>;

} // namespace aspen::ops
