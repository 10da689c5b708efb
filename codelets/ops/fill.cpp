// Codelets of fill, zero and iota: every element of the connected regions is written.
#include "fillCommon.hpp"

namespace aspen::ops {

// out[r][i] = value for every region r; workers split each region.
template <class T> class Fill : public MultiVertex {
public:
  Vector<Output<Vector<T>>> out;
  T value;

  bool compute(unsigned wid) {
    for (unsigned r = 0; r < out.size(); ++r) {
      unsigned begin, end;
      ::aspen::detail::workerShare(out[r].size(), wid, numWorkers(), begin, end);
      for (unsigned i = begin; i < end; ++i)
        out[r][i] = value;
    }
    return true;
  }
};

// out[r][i] = start + regionBegin[r] + i: region r holds the flattened elements from
// regionBegin[r] on. Integer arithmetic wraps (unsigned arithmetic, converted back).
template <class T> class Iota : public MultiVertex {
public:
  Vector<Output<Vector<T>>> out;
  Vector<unsigned> regionBegin;
  T start;

  bool compute(unsigned wid) {
    for (unsigned r = 0; r < out.size(); ++r) {
      unsigned begin, end;
      ::aspen::detail::workerShare(out[r].size(), wid, numWorkers(), begin, end);
      for (unsigned i = begin; i < end; ++i)
        out[r][i] = T(unsigned(start) + regionBegin[r] + i);
    }
    return true;
  }
};

#define ASPEN_FILL_INSTANCE(T) template class Fill<T>;
ASPEN_DATAMOVE_ALL_TYPES(ASPEN_FILL_INSTANCE)
#undef ASPEN_FILL_INSTANCE
template class Iota<int>;
template class Iota<unsigned>;

} // namespace aspen::ops
