// Tensor: a view of elements of one or more graph variables.
//
// Views compose without copying data: indexing, slicing, reshaping, shuffling, broadcasting and
// concatenation produce new Tensors that describe which variable element each of their elements
// is. The description is a set of strided boxes, so a view costs time proportional to the number
// of distinct regions it has, not to its number of elements.
#pragma once

#include <aspen/ArrayRef.hpp>
#include <aspen/Export.hpp>
#include <aspen/Interval.hpp>
#include <aspen/Type.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace aspen {

namespace detail {
struct TensorImpl;
}

enum class UpsampleMethod { REPEAT };

struct VariableRef {
  unsigned id = 0;
  friend bool operator==(const VariableRef &a, const VariableRef &b) { return a.id == b.id; }
  friend bool operator!=(const VariableRef &a, const VariableRef &b) { return a.id != b.id; }
};

// A run of elements [interval) of variable `var`, in elements of the variable.
struct VariableInterval {
  VariableRef var;
  Interval interval;
};

// `count` elements of a tensor that lie in variable `var`: the first at byte `byteOffset` of the
// variable, then one every `byteStride` bytes (0 for broadcast elements, negative for reversed
// ones). Each element is the tensor's element type's size.
struct StridedVarRegion {
  VariableRef var;
  std::int64_t byteOffset = 0;
  std::int64_t byteStride = 0;
  std::size_t count = 0;
  friend bool operator==(const StridedVarRegion &a, const StridedVarRegion &b) {
    return a.var == b.var && a.byteOffset == b.byteOffset && a.byteStride == b.byteStride &&
           a.count == b.count;
  }
  friend bool operator!=(const StridedVarRegion &a, const StridedVarRegion &b) { return !(a == b); }
};

class ASPEN_API Tensor {
public:
  Tensor(); // an invalid tensor: valid() is false and every other query raises an error

  bool valid() const { return impl_ != nullptr; }
  Type elementType() const;
  std::vector<std::size_t> shape() const;
  std::size_t dim(unsigned i) const;
  unsigned rank() const;
  std::size_t numElements() const;
  std::string shapeToString() const;

  // Element i of dimension 0 (drops that dimension).
  Tensor operator[](std::size_t i) const;
  Tensor index(ArrayRef<std::size_t> indices) const;
  // Elements [begin, end) of dimension `dim` (0 when omitted).
  Tensor slice(std::size_t begin, std::size_t end, unsigned dim) const;
  Tensor slice(std::size_t begin, std::size_t end) const { return slice(begin, end, 0); }
  Tensor slice(const Interval &region, unsigned dim = 0) const {
    return slice(region.begin(), region.end(), dim);
  }
  // One [begin, end) range per dimension.
  Tensor slice(ArrayRef<std::size_t> begin, ArrayRef<std::size_t> end) const;
  std::vector<Tensor> slices(ArrayRef<Interval> intervals, unsigned dim = 0) const;
  std::vector<Tensor> slices(const std::vector<std::vector<Interval>> &intervals,
                             unsigned dim = 0) const;

  Tensor reshape(ArrayRef<std::size_t> shape) const;
  // Replaces dimensions [beginIndex, endIndex) by `newDims` of the same element count.
  Tensor reshapePartial(unsigned beginIndex, unsigned endIndex,
                        ArrayRef<std::size_t> newDims) const;
  Tensor flatten() const;
  // Merges dimensions [startDim, endDim) into one.
  Tensor flatten(unsigned startDim, unsigned endDim) const;
  // Result dimension i is this tensor's dimension permutation[i].
  Tensor dimShuffle(ArrayRef<unsigned> permutation) const;
  // Moves dimensions `source[i]` to positions `destination[i]`, the others keep their order.
  Tensor dimShufflePartial(ArrayRef<unsigned> source, ArrayRef<unsigned> destination) const;
  // Moves dimension dimIdx to position newIdx.
  Tensor dimRoll(unsigned dimIdx, unsigned newIdx = 0) const;
  // A rank-2 tensor's transpose.
  Tensor transpose() const;
  // Inserts a dimension of size 1 before dimension i of this tensor for each i in `indices`
  // (i == rank() appends); an index listed k times inserts k dimensions (Poplar's rule).
  Tensor expand(ArrayRef<std::size_t> indices) const;
  // Removes the listed dimensions, each of which must have size 1.
  Tensor squeeze(ArrayRef<std::size_t> dims) const;
  // The tensor repeated N times along `dim` (like concatenating N copies).
  Tensor broadcast(unsigned N, unsigned dim) const;
  Tensor reverse(unsigned dim) const;
  // Every stride-th element of `dim`, starting with the first.
  Tensor subSample(unsigned stride, unsigned dim) const;
  // Every element of `dim` repeated `scale` times.
  Tensor upsample(unsigned scale, unsigned dim, UpsampleMethod method = UpsampleMethod::REPEAT) const;
  // The same bytes seen as another type; the innermost dimension scales with the size ratio.
  Tensor reinterpret(Type type) const;

  // True when the elements are consecutive elements of one variable, in order.
  bool isContiguous() const;
  // True when two elements of this tensor are the same variable element.
  bool containsAliases() const;
  bool containsConstant() const;
  // True when writing every element in parallel is well defined: no aliases and no constants.
  bool isParallelWriteable() const;
  bool intersectsWith(const Tensor &other) const;
  // The variable element runs of this tensor in element order. An element of a reinterpreted
  // view that covers part of a variable element counts as that whole variable element.
  std::vector<VariableInterval> getVarRegions() const;
  // The tensor's elements in flattened (row-major) order as strided runs of variable bytes,
  // adjacent runs merged wherever one run can describe them: exact for every view, and as many
  // entries as numRegions().
  std::vector<StridedVarRegion> getStridedVarRegions() const;
  // Number of strided regions of variables this tensor is made of (a measure of view cost).
  std::size_t numRegions() const;

  std::string getDebugStr() const;
  std::string getVarStr() const;

  // QUARTER tensors: the QUARTER_METADATA tensor (one element) that gives their values' format
  // and scale. Raises type_error for other types, and tensor_creation_error when the tensor has
  // no elements or joins QUARTER variables with different metadata tensors.
  Tensor getMetadata() const;
  // True for a QUARTER tensor (each QUARTER variable has metadata).
  bool hasMetadata() const;

  // Identity of two views: same shape, type and elements.
  friend ASPEN_API bool operator==(const Tensor &a, const Tensor &b);
  friend bool operator!=(const Tensor &a, const Tensor &b) { return !(a == b); }

  const detail::TensorImpl &impl() const;
  explicit Tensor(std::shared_ptr<const detail::TensorImpl> impl);

private:
  std::shared_ptr<const detail::TensorImpl> impl_;
};

ASPEN_API Tensor concat(ArrayRef<Tensor> tensors, unsigned dim = 0);
inline Tensor concat(const Tensor &a, const Tensor &b, unsigned dim = 0) {
  return concat({a, b}, dim);
}
// a with b added as one more element of dimension `dim` (b has a's shape without `dim`);
// Poplar's form without a dimension appends along the first.
inline Tensor append(const Tensor &a, const Tensor &b, unsigned dim) {
  return concat({a, b.expand({dim})}, dim);
}
inline Tensor append(const Tensor &a, const Tensor &b) { return append(a, b, 0); }

ASPEN_API std::ostream &operator<<(std::ostream &os, const Tensor &t);

} // namespace aspen

// VariableRefs as keys of unordered containers (Poplar declares this in <poplar/VariableRef.hpp>).
namespace std {
template <> struct hash<aspen::VariableRef> {
  size_t operator()(const aspen::VariableRef &v) const noexcept { return hash<unsigned>()(v.id); }
};
} // namespace std
