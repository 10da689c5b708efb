// Library codelets for single binary operations, for every row of ASPEN_EW_BINARY_OPS and every
// type of its type set:
//   BinaryOp<op, T>         out[r][i] = op(in1[r][i], in2[r][i])
//   BinaryOpScalarB<op, T>  out[r][i] = op(in1[r][i], *in2)   (a scalar second operand)
// In-place use connects `out` and `in1` to the same tensor.
#include <aspen/Vertex.hpp>
#include <aspen/ops/codelets/ElementwiseKernel.hpp>
#include <aspen/ops/codelets/ElementwiseMath.hpp>

namespace aspen::ops {

template <BinaryOpType op, class T> class BinaryOp : public MultiVertex {
public:
  Vector<Output<Vector<ew::BinaryResult<op, T>>>> out;
  Vector<Input<Vector<T>>> in1;
  Vector<Input<Vector<T>>> in2;
  bool compute(unsigned workerId) {
    ew::forEachWorkerRange(out, workerId, numWorkers(), [&](unsigned r, unsigned long long b,
                                                            unsigned long long e) {
      auto *o = out[r].data();
      const T *x = in1[r].data();
      const T *y = in2[r].data();
      for (unsigned long long i = b; i < e; ++i)
        o[i] = ew::store<ew::BinaryResult<op, T>>(
            ew::Binary<op>::template apply<T>(ew::load(x[i]), ew::load(y[i])));
    });
    return true;
  }
};

template <BinaryOpType op, class T> class BinaryOpScalarB : public MultiVertex {
public:
  Vector<Output<Vector<ew::BinaryResult<op, T>>>> out;
  Vector<Input<Vector<T>>> in1;
  Input<T> in2;
  bool compute(unsigned workerId) {
    const ew::Compute<T> y = ew::load(*in2);
    ew::forEachWorkerRange(out, workerId, numWorkers(), [&](unsigned r, unsigned long long b,
                                                            unsigned long long e) {
      auto *o = out[r].data();
      const T *x = in1[r].data();
      for (unsigned long long i = b; i < e; ++i)
        o[i] = ew::store<ew::BinaryResult<op, T>>(ew::Binary<op>::template apply<T>(ew::load(x[i]), y));
    });
    return true;
  }
};

#define ASPEN_EW_INSTANCE(e, T, C)                                                              \
  template class BinaryOp<BinaryOpType::e, T>;                                                  \
  template class BinaryOpScalarB<BinaryOpType::e, T>;
#define ASPEN_EW_ROW(e, node, fn, types, result) ASPEN_EW_TYPES_##types(ASPEN_EW_INSTANCE, e)
ASPEN_EW_BINARY_OPS(ASPEN_EW_ROW)

} // namespace aspen::ops
