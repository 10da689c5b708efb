// Normalisation's per-row moments (aspen::nn::work::rowMoments, lib/nn/NnWork.hpp): for each row r
// of a vertex's rows (a channel of one image, say),
//   out[2 r]     = the sum of a[r]
//   out[2 r + 1] = the sum of a[r] * (b[r] - shift[r])
// in float, in one pass over both: batch norm's statistics (a = b = x, shift 0: the sums of x and
// x^2) and its parameter gradients (a = dy, b = x, shift the channel's mean: the sums of dy and
// dy * (x - mean)) without a full-size product written first. Eight interleaved partial sums,
// combined pairwise, keep long rows accurate; a worker takes whole rows, so the result does not
// depend on the worker or thread count.
#include "NnCodeletMath.hpp"

namespace aspen::nn {

template <class T> class RowMoments : public MultiVertex {
public:
  Vector<Input<Vector<T>>> a;
  Vector<Input<Vector<T>>> b;
  Input<Vector<float>> shift;
  Output<Vector<float>> out;

  bool compute(unsigned wid) {
    nnForWorkerRows(unsigned(a.size()), wid, numWorkers(), [&](unsigned r) {
      const T *x = a[r].data();
      const T *y = b[r].data();
      const float m = shift[r];
      const unsigned long long n = a[r].size();
      float s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      unsigned long long i = 0;
      for (; i + 8 <= n; i += 8)
        for (unsigned k = 0; k < 8; ++k) {
          const float v = float(x[i + k]);
          s[k] += v;
          p[k] += v * (float(y[i + k]) - m);
        }
      for (unsigned k = 0; i < n; ++i, ++k) {
        const float v = float(x[i]);
        s[k] += v;
        p[k] += v * (float(y[i]) - m);
      }
      out[2 * r] = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
      out[2 * r + 1] = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
    });
    return true;
  }
};

template class RowMoments<float>;
template class RowMoments<half>;

} // namespace aspen::nn
