// Arg-max/arg-min and top-k per row (aspen::nn::argMax, argMin, maxAndArgMax, minAndArgMin,
// topK). One MultiVertex per tile holding whole rows; worker w takes rows w, w + n, ...
// Ordering: NaN ranks above every number (the first NaN of a row is its max and its min, as
// NumPy's argmax/argmin); among equal values the lower index comes first.
#include "NnCodeletMath.hpp"

namespace aspen::nn {

// values[r], indices[r] = the best element of rows[r] and its index (rows are non-empty).
template <class T, bool Max> class ArgBest : public MultiVertex {
public:
  Vector<Input<Vector<T>>> rows;
  Output<Vector<T>> values;
  Output<Vector<unsigned>> indices;
  bool compute(unsigned workerId) {
    for (unsigned r = workerId; r < rows.size(); r += numWorkers()) {
      const unsigned best = nnArgBest<Max, T>(rows[r]);
      indices[r] = best;
      values[r] = rows[r][best];
    }
    return true;
  }
};

// values[r] and indices[r] (k each) = the k highest-ranking elements of rows[r], in descending
// order, equal values by ascending index.
template <class T> class TopK : public MultiVertex {
public:
  Vector<Input<Vector<T>>> rows;
  Vector<Output<Vector<T>>> values;
  Vector<Output<Vector<unsigned>>> indices;
  bool compute(unsigned workerId) {
    typedef typename NnOrdered<T>::type V;
    for (unsigned r = workerId; r < rows.size(); r += numWorkers()) {
      const auto row = rows[r];
      const auto outValues = values[r];
      const auto outIndices = indices[r];
      const unsigned k = outValues.size();
      unsigned filled = 0;
      for (unsigned i = 0; i < row.size(); ++i) {
        const V v = V(row[i]);
        // Elements seen later never pass an equal one, so ties keep ascending indices.
        if (filled == k && !nnRanksAbove(v, V(outValues[k - 1])))
          continue;
        unsigned at = filled < k ? filled++ : k - 1;
        for (; at > 0 && nnRanksAbove(v, V(outValues[at - 1])); --at) {
          outValues[at] = outValues[at - 1];
          outIndices[at] = outIndices[at - 1];
        }
        outValues[at] = row[i];
        outIndices[at] = i;
      }
    }
    return true;
  }
};

template class ArgBest<float, true>;
template class ArgBest<float, false>;
template class ArgBest<half, true>;
template class ArgBest<half, false>;
template class ArgBest<int, true>;
template class ArgBest<int, false>;
template class ArgBest<unsigned, true>;
template class ArgBest<unsigned, false>;
template class TopK<float>;
template class TopK<half>;
template class TopK<int>;
template class TopK<unsigned>;

} // namespace aspen::nn
