// Codelets of dynamicSlice/dynamicUpdate and multiSlice/multiUpdate/multiUpdateAdd.
//
// The sliced dimensions of the base tensor are moved outermost and the others flattened into
// columns, so a base region is numBaseRows x width (rows in row-major order over baseDims) and
// a sub region is numSlices x numSubRows x width (rows over subDims). offsets holds numSlices x k
// offsets, k = baseDims.size(), read when the vertex runs.
#include "fillCommon.hpp"

namespace aspen::ops {

namespace datamove {

// The base row that row `subRow` of slice `slice` reads or writes; false when that slice is out
// of range. wrap: popops' dynamicSlice rule (an offset >= the dimension counts as 0 and the
// slice wraps around the end); otherwise a slice is in range when offset + size <= dimension.
template <class Offsets, class Dims>
ASPEN_HD inline bool baseRowOf(const Offsets &offsets, const Dims &baseDims, const Dims &subDims,
                               bool wrap, unsigned slice, unsigned subRow, unsigned &baseRow) {
  const unsigned k = baseDims.size();
  unsigned row = 0, stride = 1;
  for (unsigned j = k; j-- > 0;) {
    const unsigned size = subDims[j], dim = baseDims[j];
    const unsigned within = subRow % size;
    subRow /= size;
    unsigned offset = offsets[slice * k + j];
    unsigned position;
    if (wrap) {
      offset = offset >= dim ? 0 : offset;
      position = (offset + within) % dim;
    } else {
      if (offset > dim - size)
        return false;
      position = offset + within;
    }
    row += position * stride;
    stride *= dim;
  }
  baseRow = row;
  return true;
}

template <class Dims> ASPEN_HD inline unsigned numRows(const Dims &dims) {
  unsigned n = 1;
  for (unsigned j = 0; j < dims.size(); ++j)
    n *= dims[j];
  return n;
}

} // namespace datamove

// subT = the slices of baseT; rows of out-of-range slices are zero. Workers split each sub
// region's elements.
template <class T> class DynamicSlice : public MultiVertex {
public:
  Input<Vector<unsigned>> offsets;
  Vector<Input<Vector<T>>> baseT;
  Vector<Output<Vector<T>>> subT;
  Vector<unsigned> baseDims;
  Vector<unsigned> subDims;
  bool wrap;

  bool compute(unsigned wid) {
    const unsigned numSubRows = datamove::numRows(subDims);
    const unsigned numBaseRows = datamove::numRows(baseDims);
    for (unsigned r = 0; r < subT.size(); ++r) {
      const unsigned width = baseT[r].size() / numBaseRows;
      unsigned begin, end;
      ::aspen::detail::workerShare(subT[r].size(), wid, numWorkers(), begin, end);
      for (unsigned row = begin / width; begin < end; ++row) {
        const unsigned rowEnd = (row + 1) * width < end ? (row + 1) * width : end;
        unsigned baseRow;
        const bool valid = datamove::baseRowOf(offsets, baseDims, subDims, wrap, row / numSubRows,
                                               row % numSubRows, baseRow);
        for (unsigned i = begin; i < rowEnd; ++i)
          subT[r][i] = valid ? baseT[r][baseRow * width + (i - row * width)] : T{};
        begin = rowEnd;
      }
    }
    return true;
  }
};

// The slices of baseT = subT, slice by slice in order (the last of equal offsets wins);
// out-of-range slices are ignored. Workers split columns, so each element has one writer.
template <class T> class DynamicUpdate : public MultiVertex {
public:
  Input<Vector<unsigned>> offsets;
  Vector<InOut<Vector<T>>> baseT;
  Vector<Input<Vector<T>>> subT;
  Vector<unsigned> baseDims;
  Vector<unsigned> subDims;
  bool wrap;

  bool compute(unsigned wid) {
    const unsigned numSubRows = datamove::numRows(subDims);
    const unsigned numBaseRows = datamove::numRows(baseDims);
    for (unsigned r = 0; r < baseT.size(); ++r) {
      const unsigned width = baseT[r].size() / numBaseRows;
      const unsigned numSubTotal = subT[r].size() / width;
      unsigned begin, end;
      ::aspen::detail::workerShare(width, wid, numWorkers(), begin, end);
      for (unsigned row = 0; row < numSubTotal; ++row) {
        unsigned baseRow;
        if (!datamove::baseRowOf(offsets, baseDims, subDims, wrap, row / numSubRows,
                                 row % numSubRows, baseRow))
          continue;
        for (unsigned c = begin; c < end; ++c)
          baseT[r][baseRow * width + c] = subT[r][row * width + c];
      }
    }
    return true;
  }
};

// The slices of baseT += scale * subT, slice by slice in order (equal offsets accumulate);
// out-of-range slices are ignored. Arithmetic as scaledAddTo's.
template <class T> class DynamicUpdateAdd : public MultiVertex {
public:
  Input<Vector<unsigned>> offsets;
  Vector<InOut<Vector<T>>> baseT;
  Vector<Input<Vector<T>>> subT;
  Input<T> scale;
  Vector<unsigned> baseDims;
  Vector<unsigned> subDims;

  bool compute(unsigned wid) {
    typedef typename datamove::ScaledAddArithmetic<T>::type C;
    const C s = C(*scale);
    const unsigned numSubRows = datamove::numRows(subDims);
    const unsigned numBaseRows = datamove::numRows(baseDims);
    for (unsigned r = 0; r < baseT.size(); ++r) {
      const unsigned width = baseT[r].size() / numBaseRows;
      const unsigned numSubTotal = subT[r].size() / width;
      unsigned begin, end;
      ::aspen::detail::workerShare(width, wid, numWorkers(), begin, end);
      for (unsigned row = 0; row < numSubTotal; ++row) {
        unsigned baseRow;
        if (!datamove::baseRowOf(offsets, baseDims, subDims, false, row / numSubRows,
                                 row % numSubRows, baseRow))
          continue;
        for (unsigned c = begin; c < end; ++c) {
          T &x = baseT[r][baseRow * width + c];
          x = T(C(x) + s * C(subT[r][row * width + c]));
        }
      }
    }
    return true;
  }
};

#define ASPEN_DYNAMICSLICE_INSTANCE(T)                                                             \
  template class DynamicSlice<T>;                                                                  \
  template class DynamicUpdate<T>;
ASPEN_DATAMOVE_ALL_TYPES(ASPEN_DYNAMICSLICE_INSTANCE)
#undef ASPEN_DYNAMICSLICE_INSTANCE
template class DynamicUpdateAdd<float>;
template class DynamicUpdateAdd<half>;
template class DynamicUpdateAdd<int>;
template class DynamicUpdateAdd<unsigned>;

} // namespace aspen::ops
