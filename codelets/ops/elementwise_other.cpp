// Library codelets for ternary operations and casts:
//   TernaryOp<CLAMP, T>   out = clamp(in1, in2, in3)         (x, lo, hi)
//   TernaryOp<SELECT, T>  out = in3 ? in1 : in2             (in3: bool)
//   Cast<Src, Dst>        out = ew::cast<Dst, Src>(in)       every pair of the twelve types (144)
#include <aspen/Vertex.hpp>
#include <aspen/ops/codelets/ElementwiseKernel.hpp>
#include <aspen/ops/codelets/ElementwiseMath.hpp>

namespace aspen::ops {

template <TernaryOpType op, class T> class TernaryOp : public MultiVertex {
public:
  Vector<Output<Vector<T>>> out;
  Vector<Input<Vector<T>>> in1;
  Vector<Input<Vector<T>>> in2;
  Vector<Input<Vector<ew::TernaryThird<op, T>>>> in3;
  bool compute(unsigned workerId) {
    ew::forEachWorkerRange(out, workerId, numWorkers(), [&](unsigned r, unsigned long long b,
                                                            unsigned long long e) {
      T *o = out[r].data();
      const T *x = in1[r].data();
      const T *y = in2[r].data();
      const auto *z = in3[r].data();
      for (unsigned long long i = b; i < e; ++i) {
        if constexpr (op == TernaryOpType::CLAMP)
          o[i] = ew::store<T>(ew::CLAMP<T>(ew::load(x[i]), ew::load(y[i]), ew::load(z[i])));
        else
          o[i] = ew::store<T>(ew::SELECT<T>(ew::load(x[i]), ew::load(y[i]), z[i]));
      }
    });
    return true;
  }
};

template <class Src, class Dst> class Cast : public MultiVertex {
public:
  Vector<Output<Vector<Dst>>> out;
  Vector<Input<Vector<Src>>> in;
  bool compute(unsigned workerId) {
    ew::forEachWorkerRange(out, workerId, numWorkers(), [&](unsigned r, unsigned long long b,
                                                            unsigned long long e) {
      Dst *o = out[r].data();
      const Src *a = in[r].data();
      for (unsigned long long i = b; i < e; ++i)
        o[i] = ew::store<Dst>(ew::cast<Dst, Src>(ew::load(a[i])));
    });
    return true;
  }
};

#define ASPEN_EW_INSTANCE(e, T, C) template class TernaryOp<TernaryOpType::e, T>;
#define ASPEN_EW_ROW(e, node, fn, types, result) ASPEN_EW_TYPES_##types(ASPEN_EW_INSTANCE, e)
ASPEN_EW_TERNARY_OPS(ASPEN_EW_ROW)

#define ASPEN_EW_CAST_INSTANCE(Src, Dst, C) template class Cast<Src, Dst>;
#define ASPEN_EW_CAST_ROW(unused, Src, C) ASPEN_EW_TYPES_CAST_AGAIN(ASPEN_EW_CAST_INSTANCE, Src)
ASPEN_EW_TYPES_CAST(ASPEN_EW_CAST_ROW, _)

} // namespace aspen::ops
