// Pooling (aspen::nn::pooling, Pooling.hpp): one MultiVertex per tile over its channels (an
// image's channel is a row: its input field [F] flattened, its output field [P]). The windows
// come as tables the builder makes once a layer, shared by every row:
//   offsets[t * P + p]  the input element output p reads through kernel position t, or -1
//                       (padding, truncation);
//   readers[t * F + f]  the output that reads input element f through position t, or -1;
//   scales[p]           what output p's sum is multiplied by (AVG: 1 / its divisor; SUM: 1);
//   origins[p]          for a window wholly inside the field, its first element, else -1;
//   deltas[t]           such a window's kernel position t: origins[p] + deltas[t] (the same
//                       element as offsets[t * P + p], without a table lookup a tap).
// Workers share the rows' elements (workerShare over their concatenation). Sums are float, in
// kernel-position order, so results do not depend on workers or threads; backward passes are
// gathers (each input element sums the outputs reading it), with no two workers writing one
// element.
#include "NnCodeletMath.hpp"

namespace aspen::nn {

namespace detail {
ASPEN_HD inline float poolLowest() { return ::aspen::detail::bitsFloat(0xff800000u); }
// The running maximum: NaN wins and stays (as PyTorch's max pooling). The comparison is a select,
// not a branch: on random data it is a coin toss, and a branch on it mispredicts every other tap.
ASPEN_HD inline float poolMax(float best, float v) {
  const float larger = v > best ? v : best; // x86's maxss exactly: no branch
  return v != v ? v : larger;                // NaN is rare: a branch that predicts well
}

// Calls f(t, o) for the taps t of window p that read an input element, o, in kernel-position
// order: from the window's origin and the deltas inside the field, from the table at its edges.
template <class Origins, class Deltas, class Offsets, class F>
ASPEN_HD inline void poolWindow(const Origins &origins, const Deltas &deltas,
                                const Offsets &offsets, unsigned taps,
                                unsigned long long outputs, unsigned long long p, F f) {
  const int origin = origins[p];
  if (origin >= 0) {
    for (unsigned t = 0; t < taps; ++t)
      f(t, origin + deltas[t]);
    return;
  }
  for (unsigned t = 0; t < taps; ++t) {
    const int o = offsets[t * outputs + p];
    if (o >= 0)
      f(t, o);
  }
}
} // namespace detail

// out[r][p] = max (kind 0) or scales[p] * sum (kind 1) of in[r] over p's window. A max window
// that reads no input element gives -infinity.
template <class T> class PoolForward : public MultiVertex {
public:
  Vector<Input<Vector<T>>> in;
  Vector<Output<Vector<T>>> out;
  Input<Vector<int>> offsets;
  Input<Vector<int>> origins;
  Input<Vector<int>> deltas;
  Input<Vector<float>> scales;
  unsigned taps;
  unsigned kind;

  bool compute(unsigned wid) {
    const auto rows = [&](unsigned r, unsigned long long lo, unsigned long long hi) {
      const auto source = in[r];
      const auto result = out[r];
      const unsigned long long outputs = result.size();
      for (unsigned long long p = lo; p < hi; ++p) {
        float acc = kind == 0 ? detail::poolLowest() : 0.0f;
        if (kind == 0)
          detail::poolWindow(origins, deltas, offsets, taps, outputs, p, [&](unsigned, int o) {
            acc = detail::poolMax(acc, float(source[o]));
          });
        else
          detail::poolWindow(origins, deltas, offsets, taps, outputs, p,
                             [&](unsigned, int o) { acc += float(source[o]); });
        result[p] = T(kind == 0 ? acc : acc * scales[p]);
      }
    };
    ::aspen::detail::forWorkerShareOfRegions(out, wid, numWorkers(), rows);
    return true;
  }
};

// inGrad[r][f] = the sum over the windows reading f (through position t) of pooledGrad[r][p]
// where in[r][f] equals the window's maximum pooled[r][p]:
//   rule 0: to every tied position; rule 1: divided by the window's number of ties (popnn's
//   useScaledGradient); rule 2: to the window's first tied position only (PyTorch, cuDNN).
template <class T> class MaxPoolGrad : public MultiVertex {
public:
  Vector<Input<Vector<T>>> in;
  Vector<Input<Vector<T>>> pooled;
  Vector<Input<Vector<T>>> pooledGrad;
  Vector<Output<Vector<T>>> inGrad;
  Input<Vector<int>> offsets;
  Input<Vector<int>> readers;
  unsigned taps;
  unsigned rule;

  bool compute(unsigned wid) {
    const auto rows = [&](unsigned r, unsigned long long lo, unsigned long long hi) {
      const auto x = in[r];
      const auto y = pooled[r];
      const auto dy = pooledGrad[r];
      const auto dx = inGrad[r];
      const unsigned long long field = dx.size(), outputs = y.size();
      for (unsigned long long f = lo; f < hi; ++f) {
        const float v = float(x[f]);
        float sum = 0.0f;
        for (unsigned t = 0; t < taps; ++t) {
          const int p = readers[t * field + f];
          if (p < 0 || v != float(y[p]))
            continue;
          if (rule == 0) {
            sum += float(dy[p]);
            continue;
          }
          // The window's ties: their count (rule 1), or whether one comes before t (rule 2).
          // Rule 2 needs only the positions before t, and stops at the first tie among them.
          unsigned ties = 0;
          bool earlier = false;
          for (unsigned s = 0; s < (rule == 1 ? taps : t) && !earlier; ++s) {
            const int o = offsets[s * outputs + p];
            if (o >= 0 && float(x[o]) == float(y[p])) {
              ++ties;
              earlier = rule == 2;
            }
          }
          if (rule == 1)
            sum += float(dy[p]) / float(ties);
          else if (!earlier)
            sum += float(dy[p]);
        }
        dx[f] = T(sum);
      }
    };
    ::aspen::detail::forWorkerShareOfRegions(inGrad, wid, numWorkers(), rows);
    return true;
  }
};

// The same gradient as MaxPoolGrad, window by window: each window's maximal positions (rule 0:
// every tie, 1: every tie with 1 / their count, 2: the first) receive its gradient, and a worker
// owns whole rows, so no two workers write one element. The host executors' form (Pooling.cpp
// chooses it for FLOAT off the GPU, where rows outnumber workers): a window costs a scan to its
// first maximum, where the gather costs every input element a lookup a kernel position. Sums
// are float, window by window in output order.
template <class T> class MaxPoolGradRows : public MultiVertex {
  // Rule 2 over a run of windows from p inside the field whose origins step evenly (along an
  // output row): for each kernel position, each window of the run, so that the windows' scans
  // are independent (one window's scan is a chain of selects). Returns the windows done.
  template <class X, class Y, class DY, class DX>
  unsigned long long firstMaxima(const X &x, const Y &y, const DY &dy, const DX &dx,
                                 unsigned long long outputs, unsigned long long p) const {
    constexpr unsigned kRun = 16;
    const int origin = origins[p], step = origins[p + 1] - origin;
    unsigned n = 2;
    while (n < kRun && p + n < outputs && origins[p + n] == origin + int(n) * step)
      ++n;
    float m[kRun];
    int first[kRun];
    for (unsigned i = 0; i < n; ++i)
      m[i] = float(y[p + i]), first[i] = -1;
    for (unsigned t = 0; t < taps; ++t) {
      const int base = origin + deltas[t];
      for (unsigned i = 0; i < n; ++i) {
        const int o = base + int(i) * step;
        const bool take = (first[i] < 0) & (float(x[o]) == m[i]);
        first[i] = take ? o : first[i];
      }
    }
    for (unsigned i = 0; i < n; ++i)
      if (first[i] >= 0)
        dx[first[i]] = T(float(dx[first[i]]) + float(dy[p + i]));
    return n;
  }

public:
  Vector<Input<Vector<T>>> in;
  Vector<Input<Vector<T>>> pooled;
  Vector<Input<Vector<T>>> pooledGrad;
  Vector<Output<Vector<T>>> inGrad;
  Input<Vector<int>> offsets;
  Input<Vector<int>> origins;
  Input<Vector<int>> deltas;
  unsigned taps;
  unsigned rule;

  bool compute(unsigned wid) {
    nnForWorkerRows(unsigned(inGrad.size()), wid, numWorkers(), [&](unsigned r) {
      const auto x = in[r];
      const auto y = pooled[r];
      const auto dy = pooledGrad[r];
      const auto dx = inGrad[r];
      const unsigned long long field = dx.size(), outputs = y.size();
      for (unsigned long long f = 0; f < field; ++f)
        dx[f] = T(0.0f);
      for (unsigned long long p = 0; p < outputs; ++p) {
        const float m = float(y[p]), g = float(dy[p]);
        float share = g;
        if (rule == 1) {
          unsigned ties = 0;
          detail::poolWindow(origins, deltas, offsets, taps, outputs, p,
                             [&](unsigned, int o) { ties += float(x[o]) == m; });
          share = ties ? g / float(ties) : g;
        }
        // Where a window's maximum sits is a coin toss on real data, so the scans select rather
        // than branch on it (a branch mispredicted about once a window and took two thirds of
        // the time), and a run of windows is scanned together (firstMaxima).
        if (rule == 2 && p + 1 < outputs && origins[p] >= 0 && origins[p + 1] > origins[p]) {
          p += firstMaxima(x, y, dy, dx, outputs, p) - 1;
          continue;
        }
        if (rule == 2) {
          int first = -1;
          detail::poolWindow(origins, deltas, offsets, taps, outputs, p, [&](unsigned, int o) {
            const bool take = (first < 0) & (float(x[o]) == m);
            first = take ? o : first;
          });
          if (first >= 0)
            dx[first] = T(float(dx[first]) + share);
          continue;
        }
        detail::poolWindow(origins, deltas, offsets, taps, outputs, p, [&](unsigned, int o) {
          const float d = float(dx[o]);
          dx[o] = T(float(x[o]) == m ? d + share : d);
        });
      }
    });
    return true;
  }
};

// inGrad[r][f] = the sum over the windows reading f of scales[p] * pooledGrad[r][p] (AVG, SUM).
template <class T> class SumPoolGrad : public MultiVertex {
public:
  Vector<Input<Vector<T>>> pooledGrad;
  Vector<Output<Vector<T>>> inGrad;
  Input<Vector<int>> readers;
  Input<Vector<float>> scales;
  unsigned taps;

  bool compute(unsigned wid) {
    const auto rows = [&](unsigned r, unsigned long long lo, unsigned long long hi) {
      const auto dy = pooledGrad[r];
      const auto dx = inGrad[r];
      const unsigned long long field = dx.size();
      for (unsigned long long f = lo; f < hi; ++f) {
        float sum = 0.0f;
        for (unsigned t = 0; t < taps; ++t) {
          const int p = readers[t * field + f];
          if (p >= 0)
            sum += scales[p] * float(dy[p]);
        }
        dx[f] = T(sum);
      }
    };
    ::aspen::detail::forWorkerShareOfRegions(inGrad, wid, numWorkers(), rows);
    return true;
  }
};

template class PoolForward<float>;
template class PoolForward<half>;
template class MaxPoolGrad<float>;
template class MaxPoolGrad<half>;
template class MaxPoolGradRows<float>;
template class SumPoolGrad<float>;
template class SumPoolGrad<half>;

} // namespace aspen::nn
