// Tensor views: each view checks its arguments (raising an aspen::error that names the tensor,
// the rule and the values) and maps the boxes of TensorImpl to new boxes.
#include "TensorImpl.hpp"
#include "TensorRegions.hpp"
#include "support/CheckedSize.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <numeric>
#include <utility>

namespace aspen {

using detail::BoxDim;
using detail::Piece;
using detail::SliceIndex;
using detail::TensorImpl;

namespace {

using Shape = std::vector<std::size_t>;

std::string describe(const Tensor &t) { return "tensor " + t.getDebugStr(); }

template <class T> std::string listString(ArrayRef<T> values) {
  std::string s = "{";
  for (std::size_t i = 0; i < values.size(); ++i)
    s += (i ? "," : "") + std::to_string(values[i]);
  return s + "}";
}

Tensor makeView(const TensorImpl &from, Shape shape, std::vector<Piece> pieces,
                Type type = Type()) {
  auto impl = std::make_shared<TensorImpl>();
  impl->graph = from.graph;
  impl->type = type.valid() ? type : from.type;
  // Views that grow (broadcast, concat) check their dimension first; this is the total.
  detail::checkedElements<shape_error>(shape, impl->type.size(), [&] {
    return "a view of a " + from.type.toString() + " tensor of shape " +
           detail::shapeString(from.shape);
  });
  impl->shape = std::move(shape);
  impl->pieces = std::move(pieces);
  return Tensor(std::move(impl));
}

void checkDim(const Tensor &t, unsigned dim, const char *operation) {
  if (dim >= t.rank())
    throw index_error(std::string(operation) + " of dimension " + std::to_string(dim) + " of " +
                      describe(t) + ": the tensor has rank " + std::to_string(t.rank()));
}

// Tensors with at least this many pieces are sliced through their SliceIndex; fewer are
// scanned (cheaper than building the index).
constexpr std::size_t kIndexedSliceMinPieces = 32;

Piece slicedPiece(const Piece &p, std::size_t begin, std::size_t end, unsigned dim) {
  const BoxDim &d = p.dims[dim];
  const std::size_t lo = std::max(d.begin, begin), hi = std::min(d.begin + d.size, end);
  Piece q = p;
  q.offset += static_cast<std::int64_t>(lo - d.begin) * d.stride;
  q.dims[dim] = {lo - begin, hi - lo, d.stride};
  return q;
}

bool meets(const Piece &p, std::size_t begin, std::size_t end, unsigned dim) {
  const BoxDim &d = p.dims[dim];
  return std::max(d.begin, begin) < std::min(d.begin + d.size, end);
}

// The pieces of [begin, end) of dimension `dim`, in the tensor's piece order: O(log pieces +
// pieces met) through the index when the pieces do not overlap in `dim` (a flattened or
// concatenated tensor), plus the pieces passed over otherwise.
std::vector<Piece> slicePieces(const TensorImpl &impl, std::size_t begin, std::size_t end,
                               unsigned dim) {
  const std::vector<Piece> &pieces = impl.pieces;
  std::vector<Piece> result;
  if (pieces.size() < kIndexedSliceMinPieces) {
    for (const Piece &p : pieces)
      if (meets(p, begin, end, dim))
        result.push_back(slicedPiece(p, begin, end, dim));
    return result;
  }
  const SliceIndex &index = impl.sliceIndex(dim);
  // The first piece (in begin order) that begins at or after `end` meets nothing; walk back from
  // it while some piece so far could still reach past `begin`.
  const auto firstAfter = std::partition_point(
      index.order.begin(), index.order.end(),
      [&](std::uint32_t i) { return pieces[i].dims[dim].begin < end; });
  std::vector<std::uint32_t> met;
  for (auto i = static_cast<std::size_t>(firstAfter - index.order.begin()); i-- > 0;) {
    if (index.maxEnd[i] <= begin)
      break;
    if (meets(pieces[index.order[i]], begin, end, dim))
      met.push_back(index.order[i]);
  }
  std::sort(met.begin(), met.end());
  result.reserve(met.size());
  for (std::uint32_t i : met)
    result.push_back(slicedPiece(pieces[i], begin, end, dim));
  return result;
}

// Removes dimensions marked in `drop` (each of size 1).
Tensor dropDims(const TensorImpl &impl, const std::vector<bool> &drop) {
  Shape shape;
  for (unsigned d = 0; d < impl.shape.size(); ++d)
    if (!drop[d])
      shape.push_back(impl.shape[d]);
  std::vector<Piece> pieces = impl.pieces;
  for (Piece &p : pieces) {
    std::vector<BoxDim> dims;
    for (unsigned d = 0; d < p.dims.size(); ++d)
      if (!drop[d])
        dims.push_back(p.dims[d]);
    p.dims = std::move(dims);
  }
  return makeView(impl, std::move(shape), std::move(pieces));
}

// Result dimension i is dimension perm[i]; perm is known to be a permutation.
Tensor permute(const TensorImpl &impl, const std::vector<unsigned> &perm) {
  Shape shape(perm.size());
  for (unsigned i = 0; i < perm.size(); ++i)
    shape[i] = impl.shape[perm[i]];
  std::vector<Piece> pieces = impl.pieces;
  for (Piece &p : pieces) {
    std::vector<BoxDim> dims(perm.size());
    for (unsigned i = 0; i < perm.size(); ++i)
      dims[i] = p.dims[perm[i]];
    p.dims = std::move(dims);
  }
  return makeView(impl, std::move(shape), std::move(pieces));
}

Tensor reshapeTo(const TensorImpl &impl, const Shape &shape) {
  return makeView(impl, shape, detail::reshapePieces(impl.pieces, impl.shape, shape));
}

// Every element of the innermost dimension becomes `k` consecutive elements of a type k times
// smaller. A box whose innermost elements are not consecutive is cut into columns first.
Tensor reinterpretSmaller(const TensorImpl &impl, Type type, std::int64_t k) {
  std::vector<Piece> pieces;
  auto scaled = [k](Piece p, BoxDim inner) {
    p.offset *= k;
    for (BoxDim &d : p.dims)
      d.stride *= k;
    p.dims.back() = inner;
    return p;
  };
  const auto uk = static_cast<std::size_t>(k);
  for (const Piece &p : impl.pieces) {
    const BoxDim &in = p.dims.back();
    if (in.size == 1 || in.stride == 1) {
      pieces.push_back(scaled(p, {in.begin * uk, in.size * uk, 1}));
      continue;
    }
    for (std::size_t i = 0; i < in.size; ++i) {
      Piece column = p;
      column.offset += static_cast<std::int64_t>(i) * in.stride;
      pieces.push_back(scaled(std::move(column), {(in.begin + i) * uk, uk, 1}));
    }
  }
  Shape shape = impl.shape;
  shape.back() *= uk;
  return makeView(impl, std::move(shape), std::move(pieces), type);
}

// Each box maps to boxes of a type k times larger when its innermost runs are whole aligned
// groups of k consecutive elements.
bool boxesGroupInto(const std::vector<Piece> &pieces, std::int64_t k) {
  const auto uk = static_cast<std::size_t>(k);
  return std::all_of(pieces.begin(), pieces.end(), [&](const Piece &p) {
    const BoxDim &in = p.dims.back();
    const bool outerStridesScale =
        std::all_of(p.dims.begin(), p.dims.end() - 1,
                    [k](const BoxDim &d) { return d.size == 1 || d.stride % k == 0; });
    return in.stride == 1 && in.begin % uk == 0 && in.size % uk == 0 && p.offset % k == 0 &&
           outerStridesScale;
  });
}

std::vector<Piece> groupBoxes(std::vector<Piece> pieces, std::int64_t k) {
  const auto uk = static_cast<std::size_t>(k);
  for (Piece &p : pieces) {
    p.offset /= k;
    for (BoxDim &d : p.dims)
      d.stride = d.size == 1 ? 0 : d.stride / k;
    BoxDim &in = p.dims.back();
    in = {in.begin / uk, in.size / uk, 1};
  }
  return pieces;
}

// The same grouping checked on the flattened runs, where boxes were cut in ways that hide it;
// the result is built from those runs. Empty when some group is not k consecutive elements.
std::vector<Piece> groupFlatRuns(const Tensor &t, std::int64_t k) {
  const auto fromSize = static_cast<std::int64_t>(t.elementType().size());
  const std::int64_t toSize = fromSize * k;
  std::vector<Piece> pieces;
  std::size_t flatPos = 0;
  for (const detail::VarRegion &r : detail::flatRegions(t)) {
    const bool whole = flatPos % k == 0 && r.count % k == 0 && r.byteOffset % toSize == 0 &&
                       r.byteStride == fromSize;
    if (!whole)
      return {};
    const std::size_t n = r.count / k;
    pieces.push_back({r.var, r.byteOffset / toSize, {{flatPos / k, n, 1}}});
    flatPos += r.count;
  }
  return pieces;
}

Tensor reinterpretLarger(const Tensor &t, Type type, std::int64_t k) {
  const TensorImpl &impl = t.impl();
  const std::string what = "reinterpret of " + describe(t) + " from " + t.elementType().toString() +
                           " to " + type.toString();
  if (impl.shape.back() % k != 0)
    throw type_error(what + ": the innermost dimension " + std::to_string(impl.shape.back()) +
                     " is not a multiple of " + std::to_string(k));
  Shape shape = impl.shape;
  shape.back() /= k;
  if (boxesGroupInto(impl.pieces, k))
    return makeView(impl, std::move(shape), groupBoxes(impl.pieces, k), type);
  std::vector<Piece> flat = groupFlatRuns(t, k);
  if (flat.empty())
    throw type_error(what + ": every " + std::to_string(k) +
                     " innermost elements must be consecutive elements of one variable, aligned "
                     "to " + std::to_string(type.size()) + " bytes");
  const Shape flatShape{t.numElements() / k};
  return makeView(impl, shape, detail::reshapePieces(std::move(flat), flatShape, shape), type);
}

std::vector<unsigned> partialPermutation(const Tensor &t, ArrayRef<unsigned> source,
                                         ArrayRef<unsigned> destination) {
  const unsigned rank = t.rank();
  const std::string what =
      "dimShufflePartial " + listString(source) + " -> " + listString(destination) + " of " +
      describe(t);
  if (source.size() != destination.size())
    throw shape_error(what + ": " + std::to_string(source.size()) + " sources but " +
                      std::to_string(destination.size()) + " destinations");
  std::vector<unsigned> perm(rank, rank);
  std::vector<bool> moved(rank, false);
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] >= rank || destination[i] >= rank)
      throw index_error(what + ": dimension " +
                        std::to_string(std::max(source[i], destination[i])) +
                        " is out of range for rank " + std::to_string(rank));
    if (moved[source[i]] || perm[destination[i]] != rank)
      throw shape_error(what + ": a dimension is listed twice");
    moved[source[i]] = true;
    perm[destination[i]] = source[i];
  }
  unsigned next = 0;
  for (unsigned &p : perm) {
    if (p != rank)
      continue;
    while (moved[next])
      ++next;
    p = next++;
  }
  return perm;
}

} // namespace

// --- Construction and basic queries ------------------------------------------------------------

Tensor::Tensor() = default;

Tensor::Tensor(std::shared_ptr<const detail::TensorImpl> impl) : impl_(std::move(impl)) {}

const detail::TensorImpl &Tensor::impl() const {
  if (!impl_)
    throw error("invalid tensor: this Tensor was default-constructed and views no variable");
  return *impl_;
}

Type Tensor::elementType() const { return impl().type; }
std::vector<std::size_t> Tensor::shape() const { return impl().shape; }
unsigned Tensor::rank() const { return static_cast<unsigned>(impl().shape.size()); }
std::size_t Tensor::numElements() const { return detail::product(impl().shape); }
std::string Tensor::shapeToString() const { return detail::shapeString(impl().shape); }

std::size_t Tensor::dim(unsigned i) const {
  checkDim(*this, i, "size");
  return impl().shape[i];
}

// --- Indexing and slicing ----------------------------------------------------------------------

Tensor Tensor::operator[](std::size_t i) const { return index({i}); }

Tensor Tensor::index(ArrayRef<std::size_t> indices) const {
  if (indices.size() > rank())
    throw index_error("index " + listString(indices) + " of " + describe(*this) + ": " +
                      std::to_string(indices.size()) + " indices for a tensor of rank " +
                      std::to_string(rank()));
  Tensor t = *this;
  for (unsigned d = 0; d < indices.size(); ++d) {
    if (indices[d] >= impl().shape[d])
      throw index_error("index " + std::to_string(indices[d]) + " of dimension " +
                        std::to_string(d) + " of " + describe(*this) +
                        ": it is not below the dimension size " + std::to_string(impl().shape[d]));
    t = t.slice(indices[d], indices[d] + 1, d);
  }
  std::vector<bool> drop(rank(), false);
  std::fill(drop.begin(), drop.begin() + indices.size(), true);
  return dropDims(t.impl(), drop);
}

Tensor Tensor::slice(std::size_t begin, std::size_t end, unsigned dim) const {
  // The messages are built only when they are needed: describing a tensor costs O(pieces).
  const auto what = [&] {
    return "slice [" + std::to_string(begin) + ", " + std::to_string(end) + ")";
  };
  if (dim >= rank())
    checkDim(*this, dim, what().c_str());
  const std::size_t size = impl().shape[dim];
  const auto where = [&] {
    return what() + " of dimension " + std::to_string(dim) + " of " + describe(*this);
  };
  if (begin > end)
    throw index_error(where() + ": begin " + std::to_string(begin) + " exceeds end " +
                      std::to_string(end));
  if (end > size)
    throw index_error(where() + ": end " + std::to_string(end) + " exceeds the dimension size " +
                      std::to_string(size));
  Shape shape = impl().shape;
  shape[dim] = end - begin;
  return makeView(impl(), std::move(shape), slicePieces(impl(), begin, end, dim));
}

Tensor Tensor::slice(ArrayRef<std::size_t> begin, ArrayRef<std::size_t> end) const {
  if (begin.size() != rank() || end.size() != rank())
    throw index_error("slice " + listString(begin) + " to " + listString(end) + " of " +
                      describe(*this) + ": needs one begin and one end for each of its " +
                      std::to_string(rank()) + " dimensions");
  Tensor t = *this;
  for (unsigned d = 0; d < rank(); ++d)
    t = t.slice(begin[d], end[d], d);
  return t;
}

std::vector<Tensor> Tensor::slices(ArrayRef<Interval> intervals, unsigned dim) const {
  std::vector<Tensor> result;
  result.reserve(intervals.size());
  for (const Interval &i : intervals)
    result.push_back(slice(i, dim));
  return result;
}

std::vector<Tensor> Tensor::slices(const std::vector<std::vector<Interval>> &intervals,
                                   unsigned dim) const {
  std::vector<Tensor> result;
  result.reserve(intervals.size());
  for (const std::vector<Interval> &sequence : intervals) {
    if (sequence.empty()) {
      result.push_back(slice(0, 0, dim));
      continue;
    }
    result.push_back(concat(slices(sequence, dim), dim));
  }
  return result;
}

// --- Reshaping ---------------------------------------------------------------------------------

Tensor Tensor::reshape(ArrayRef<std::size_t> newShape) const {
  const Shape target = newShape.vec();
  detail::checkedElements<shape_error>(target, elementType().size(), [&] {
    return "reshape of " + describe(*this) + " to " + detail::shapeString(target);
  });
  if (detail::product(target) != numElements())
    throw shape_error("reshape of " + describe(*this) + " to " + detail::shapeString(target) +
                      ": the tensor has " + std::to_string(numElements()) +
                      " elements, the new shape " + std::to_string(detail::product(target)));
  return reshapeTo(impl(), target);
}

Tensor Tensor::reshapePartial(unsigned beginIndex, unsigned endIndex,
                              ArrayRef<std::size_t> newDims) const {
  const std::string what = "reshapePartial of dimensions [" + std::to_string(beginIndex) + ", " +
                           std::to_string(endIndex) + ") of " + describe(*this);
  if (beginIndex > endIndex || endIndex > rank())
    throw index_error(what + ": not a range of dimensions of a tensor of rank " +
                      std::to_string(rank()));
  const Shape &shape = impl().shape;
  const Shape replaced(shape.begin() + beginIndex, shape.begin() + endIndex);
  if (detail::product(replaced) != detail::product(newDims.vec()))
    throw shape_error(what + ": they hold " + std::to_string(detail::product(replaced)) +
                      " elements, the new dimensions " + listString(newDims) + " hold " +
                      std::to_string(detail::product(newDims.vec())));
  Shape target(shape.begin(), shape.begin() + beginIndex);
  target.insert(target.end(), newDims.begin(), newDims.end());
  target.insert(target.end(), shape.begin() + endIndex, shape.end());
  return reshapeTo(impl(), target);
}

Tensor Tensor::flatten() const { return reshapeTo(impl(), {numElements()}); }

Tensor Tensor::flatten(unsigned startDim, unsigned endDim) const {
  if (startDim >= endDim || endDim > rank())
    throw index_error("flatten of dimensions [" + std::to_string(startDim) + ", " +
                      std::to_string(endDim) + ") of " + describe(*this) +
                      ": not a non-empty range of dimensions of a tensor of rank " +
                      std::to_string(rank()));
  const Shape &shape = impl().shape;
  const Shape merged(shape.begin() + startDim, shape.begin() + endDim);
  return reshapePartial(startDim, endDim, {detail::product(merged)});
}

// --- Reordering dimensions ---------------------------------------------------------------------

Tensor Tensor::dimShuffle(ArrayRef<unsigned> permutation) const {
  std::vector<bool> seen(rank(), false);
  bool valid = permutation.size() == rank();
  for (unsigned p : permutation) {
    valid = valid && p < rank() && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid)
    throw shape_error("dimShuffle " + listString(permutation) + " of " + describe(*this) +
                      ": not a permutation of its " + std::to_string(rank()) + " dimensions");
  return permute(impl(), permutation.vec());
}

Tensor Tensor::dimShufflePartial(ArrayRef<unsigned> source, ArrayRef<unsigned> destination) const {
  return permute(impl(), partialPermutation(*this, source, destination));
}

Tensor Tensor::dimRoll(unsigned dimIdx, unsigned newIdx) const {
  return dimShufflePartial({dimIdx}, {newIdx});
}

Tensor Tensor::transpose() const {
  if (rank() != 2)
    throw shape_error("transpose of " + describe(*this) + ": needs rank 2, the tensor has rank " +
                      std::to_string(rank()));
  return permute(impl(), {1, 0});
}

// --- Adding and removing dimensions -----------------------------------------------------------

Tensor Tensor::expand(ArrayRef<std::size_t> indices) const {
  // Poplar's rule: each index is a position in this tensor (0..rank) before which a dimension
  // of size 1 is inserted; an index listed k times inserts k dimensions there.
  std::vector<std::size_t> positions = indices.vec();
  std::sort(positions.begin(), positions.end());
  const std::string what = "expand " + listString(indices) + " of " + describe(*this);
  if (!positions.empty() && positions.back() > rank())
    throw index_error(what + ": position " + std::to_string(positions.back()) +
                      " is beyond the rank " + std::to_string(rank()));
  Shape shape = impl().shape;
  std::vector<Piece> pieces = impl().pieces;
  // Insert from the back so earlier positions still refer to this tensor's dimensions.
  for (auto it = positions.rbegin(); it != positions.rend(); ++it) {
    shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(*it), 1);
    for (Piece &p : pieces)
      p.dims.insert(p.dims.begin() + static_cast<std::ptrdiff_t>(*it), BoxDim{0, 1, 0});
  }
  return makeView(impl(), std::move(shape), std::move(pieces));
}

Tensor Tensor::squeeze(ArrayRef<std::size_t> dims) const {
  std::vector<bool> drop(rank(), false);
  const std::string what = "squeeze " + listString(dims) + " of " + describe(*this);
  for (std::size_t d : dims) {
    if (d >= rank())
      throw index_error(what + ": dimension " + std::to_string(d) + " is out of range for rank " +
                        std::to_string(rank()));
    if (impl().shape[d] != 1)
      throw shape_error(what + ": dimension " + std::to_string(d) + " has size " +
                        std::to_string(impl().shape[d]) + ", not 1");
    if (drop[d])
      throw index_error(what + ": dimension " + std::to_string(d) + " is listed twice");
    drop[d] = true;
  }
  return dropDims(impl(), drop);
}

// --- Repeating, reversing and sampling ---------------------------------------------------------

Tensor Tensor::broadcast(unsigned N, unsigned dim) const {
  checkDim(*this, dim, ("broadcast by " + std::to_string(N)).c_str());
  const std::size_t size = impl().shape[dim];
  Shape shape = impl().shape;
  const auto what = [&] { return "broadcast of " + describe(*this) + " by " + std::to_string(N); };
  shape[dim] = detail::checkedMul<shape_error>(size, N, what);
  detail::checkedElements<shape_error>(shape, elementType().size(), what); // before any piece
  std::vector<Piece> pieces;
  if (size == 1 && N > 0) {
    pieces = impl().pieces;
    for (Piece &p : pieces)
      p.dims[dim] = {0, N, 0};
  } else {
    pieces.reserve(impl().pieces.size() * N);
    for (unsigned copy = 0; copy < N; ++copy)
      for (Piece p : impl().pieces) {
        p.dims[dim].begin += copy * size;
        pieces.push_back(std::move(p));
      }
  }
  return makeView(impl(), std::move(shape), std::move(pieces));
}

Tensor Tensor::reverse(unsigned dim) const {
  checkDim(*this, dim, "reverse");
  const std::size_t size = impl().shape[dim];
  std::vector<Piece> pieces = impl().pieces;
  for (Piece &p : pieces) {
    BoxDim &d = p.dims[dim];
    p.offset += static_cast<std::int64_t>(d.size - 1) * d.stride;
    d = {size - (d.begin + d.size), d.size, -d.stride};
  }
  return makeView(impl(), impl().shape, std::move(pieces));
}

Tensor Tensor::subSample(unsigned stride, unsigned dim) const {
  checkDim(*this, dim, ("subSample by " + std::to_string(stride)).c_str());
  if (stride == 0)
    throw shape_error("subSample of dimension " + std::to_string(dim) + " of " + describe(*this) +
                      ": the stride must be at least 1, not 0");
  Shape shape = impl().shape;
  shape[dim] = (shape[dim] + stride - 1) / stride;
  std::vector<Piece> pieces;
  for (Piece p : impl().pieces) {
    BoxDim &d = p.dims[dim];
    const std::size_t first = (d.begin + stride - 1) / stride * stride; // first kept index
    const std::size_t end = d.begin + d.size;
    if (first >= end)
      continue;
    p.offset += static_cast<std::int64_t>(first - d.begin) * d.stride;
    d = {first / stride, (end - 1 - first) / stride + 1, d.stride * stride};
    pieces.push_back(std::move(p));
  }
  return makeView(impl(), std::move(shape), std::move(pieces));
}

Tensor Tensor::upsample(unsigned scale, unsigned dim, UpsampleMethod) const {
  checkDim(*this, dim, ("upsample by " + std::to_string(scale)).c_str());
  const Tensor repeated = expand({dim + 1}).broadcast(scale, dim + 1);
  std::vector<Piece> pieces = repeated.impl().pieces;
  Shape shape = repeated.impl().shape;
  detail::mergeDims(pieces, shape, dim, dim + 2);
  return makeView(impl(), std::move(shape), std::move(pieces));
}

Tensor Tensor::reinterpret(Type type) const {
  const std::size_t from = elementType().size(), to = type.size();
  if (from == to && type.valid())
    return makeView(impl(), impl().shape, impl().pieces, type);
  const std::string what = "reinterpret of " + describe(*this) + " from " +
                           elementType().toString() + " to " + type.toString();
  if (!type.valid())
    throw type_error(what + ": not a valid element type");
  if (rank() == 0)
    throw type_error(what + ": a scalar cannot change its element size (" + std::to_string(from) +
                     " to " + std::to_string(to) + " bytes)");
  if (from % to != 0 && to % from != 0)
    throw type_error(what + ": element sizes " + std::to_string(from) + " and " +
                     std::to_string(to) + " bytes do not divide each other");
  if (from > to)
    return reinterpretSmaller(impl(), type, static_cast<std::int64_t>(from / to));
  return reinterpretLarger(*this, type, static_cast<std::int64_t>(to / from));
}

// --- Concatenation ----------------------------------------------------------------------------

Tensor concat(ArrayRef<Tensor> tensors, unsigned dim) {
  if (tensors.empty())
    throw shape_error("concat of no tensors: there must be at least one");
  const Tensor &first = tensors[0];
  checkDim(first, dim, "concat");
  const TensorImpl &base = first.impl();
  Shape shape = base.shape;
  shape[dim] = 0;
  std::vector<Piece> pieces;
  for (const Tensor &t : tensors) {
    const TensorImpl &impl = t.impl();
    const std::string what = "concat along dimension " + std::to_string(dim) + " of " +
                             describe(first) + " and " + describe(t);
    if (impl.graph != base.graph)
      throw graph_connection_error(what + ": they belong to different graphs");
    if (impl.type != base.type)
      throw type_error(what + ": element types " + base.type.toString() + " and " +
                       impl.type.toString() + " differ");
    Shape expected = base.shape;
    expected[dim] = impl.shape.size() == expected.size() ? impl.shape[dim] : 0;
    if (impl.shape != expected)
      throw shape_error(what + ": shapes must match outside dimension " + std::to_string(dim));
    for (Piece p : impl.pieces) {
      p.dims[dim].begin += shape[dim];
      pieces.push_back(std::move(p));
    }
    shape[dim] = detail::checkedAdd<shape_error>(shape[dim], impl.shape[dim],
                                                 [&] { return what; });
  }
  detail::coalesceAlong(pieces, dim);
  return makeView(base, std::move(shape), std::move(pieces));
}

// --- Descriptions ------------------------------------------------------------------------------

std::ostream &operator<<(std::ostream &os, const Tensor &t) {
  if (!t.valid())
    return os << "<invalid tensor>";
  return os << t.getDebugStr() << ' ' << t.elementType();
}

namespace detail {

Tensor makeVariableTensor(const GraphState *graph, unsigned var, Type type,
                          std::vector<std::size_t> shape) {
  auto impl = std::make_shared<TensorImpl>();
  impl->graph = graph;
  impl->type = type;
  if (product(shape) > 0) {
    Piece whole{var, 0, std::vector<BoxDim>(shape.size())};
    std::int64_t stride = 1;
    for (std::size_t d = shape.size(); d-- > 0;) {
      whole.dims[d] = {0, shape[d], stride};
      stride *= static_cast<std::int64_t>(shape[d]);
    }
    impl->pieces.push_back(std::move(whole));
  }
  impl->shape = std::move(shape);
  return Tensor(std::move(impl));
}

const GraphState *graphOf(const Tensor &t) { return t.valid() ? t.impl().graph : nullptr; }

const SliceIndex &TensorImpl::sliceIndex(unsigned dim) const {
  const std::lock_guard<std::mutex> lock(indexMutex_);
  if (sliceIndexes_.size() <= dim)
    sliceIndexes_.resize(shape.size());
  if (!sliceIndexes_[dim]) {
    auto index = std::make_unique<SliceIndex>();
    index->order.resize(pieces.size());
    std::iota(index->order.begin(), index->order.end(), 0u);
    std::stable_sort(index->order.begin(), index->order.end(),
                     [&](std::uint32_t a, std::uint32_t b) {
                       return pieces[a].dims[dim].begin < pieces[b].dims[dim].begin;
                     });
    index->maxEnd.reserve(pieces.size());
    std::size_t furthest = 0;
    for (std::uint32_t i : index->order) {
      furthest = std::max(furthest, pieces[i].dims[dim].begin + pieces[i].dims[dim].size);
      index->maxEnd.push_back(furthest);
    }
    sliceIndexes_[dim] = std::move(index);
  }
  return *sliceIndexes_[dim];
}

} // namespace detail

} // namespace aspen
