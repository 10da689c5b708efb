// Library codelets for single unary operations: UnaryOp<op, T> for every row of
// ASPEN_EW_UNARY_OPS and every type of its type set. out[r][i] = op(in[r][i]) over the tile's
// regions; in-place use connects `out` and `in` to the same tensor.
#include <aspen/Vertex.hpp>
#include <aspen/ops/codelets/ElementwiseKernel.hpp>
#include <aspen/ops/codelets/ElementwiseMath.hpp>

namespace aspen::ops {

template <UnaryOpType op, class T> class UnaryOp : public MultiVertex {
public:
  Vector<Output<Vector<ew::UnaryResult<op, T>>>> out;
  Vector<Input<Vector<T>>> in;
  bool compute(unsigned workerId) {
    ew::forEachWorkerRange(out, workerId, numWorkers(), [&](unsigned r, unsigned long long b,
                                                            unsigned long long e) {
      auto *o = out[r].data();
      const T *a = in[r].data();
      for (unsigned long long i = b; i < e; ++i)
        o[i] = ew::store<ew::UnaryResult<op, T>>(ew::Unary<op>::template apply<T>(ew::load(a[i])));
    });
    return true;
  }
};

#define ASPEN_EW_INSTANCE(e, T, C) template class UnaryOp<UnaryOpType::e, T>;
#define ASPEN_EW_ROW(e, node, fn, types, result) ASPEN_EW_TYPES_##types(ASPEN_EW_INSTANCE, e)
ASPEN_EW_UNARY_OPS(ASPEN_EW_ROW)

} // namespace aspen::ops
