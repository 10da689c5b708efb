// TensorImpl: how a Tensor view says which variable element each of its elements is.
//
// Representation. A tensor is its shape plus a list of pieces. Each piece is an axis-aligned box
// of the tensor's index space (begin and size per dimension) mapped affinely onto one variable:
// the element at index i of the tensor, inside the box, is element
//     offset + sum_d (i[d] - begin[d]) * stride[d]
// of the variable, counted in units of the tensor's element type. Strides may be 0 (broadcast)
// or negative (reversed). The boxes tile the shape exactly: every element is in one box.
//
// Why boxes rather than a per-element list or one global affine map: a view of a whole variable
// is one box whatever its size, and every view operation (slice, shuffle, reverse, broadcast,
// sub-sample, reshape, concat) maps each box to a few boxes, so a view costs O(pieces), never
// O(elements). Concatenation and non-affine reshapes simply produce more pieces.
//
// Units. Offsets and strides are in elements of the tensor's type, so reinterpret only rescales
// them; byte offsets (VarRegion) are these times elementType().size().
//
// Files: Tensor.cpp (the views and their argument checks), TensorReshape.cpp (merging and
// splitting boxes), TensorRegions.cpp (flattened regions, aliasing, descriptions).
//
// Canonical details. A dimension of size 1 in a box has a meaningless stride; code that compares
// strides ignores it (see stridesAgree). A tensor with no elements has no pieces.
#pragma once

#include <aspen/Tensor.hpp>
#include <aspen/Type.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace aspen::detail {

struct GraphState;

struct BoxDim {
  std::size_t begin = 0; // first index of the box in this dimension of the tensor
  std::size_t size = 0;  // number of indices the box covers
  std::int64_t stride = 0; // variable elements between neighbouring indices
};

struct Piece {
  unsigned var = 0;
  std::int64_t offset = 0; // variable element of the box's first (lowest-index) element
  std::vector<BoxDim> dims;
};

// The pieces of a tensor ordered for slicing along one dimension: `order` holds piece numbers
// by their begin in that dimension, and maxEnd[i] the furthest end (begin + size) among
// order[0..i]. The pieces a range [b, e) meets are then found by a binary search for the
// first begin >= e and a walk back that stops where maxEnd <= b.
struct SliceIndex {
  std::vector<std::uint32_t> order;
  std::vector<std::size_t> maxEnd;
};

struct TensorImpl {
  const GraphState *graph = nullptr;
  Type type;
  std::vector<std::size_t> shape;
  std::vector<Piece> pieces;

  // The index of dimension `dim`, built at its first use (a TensorImpl never changes once
  // made, and may be shared by threads, so building is locked).
  const SliceIndex &sliceIndex(unsigned dim) const;

private:
  mutable std::mutex indexMutex_;
  mutable std::vector<std::unique_ptr<const SliceIndex>> sliceIndexes_;
};

// Two strides agree when they are equal or when the box has one index there (stride unused).
inline bool stridesAgree(const BoxDim &a, const BoxDim &b) {
  return a.size == 1 || b.size == 1 || a.stride == b.stride;
}

std::size_t product(const std::vector<std::size_t> &dims);

// "{4,8}".
std::string shapeString(const std::vector<std::size_t> &shape);

// Reshape machinery (TensorReshape.cpp). `shape` is the tensor's shape before the call and is
// updated with it.
// Merges dimensions [first, last) into one (splitting pieces where their boxes do not merge).
void mergeDims(std::vector<Piece> &pieces, std::vector<std::size_t> &shape, unsigned first,
               unsigned last);
// Splits dimension `dim` into `newDims` (whose product is its size).
void splitDim(std::vector<Piece> &pieces, std::vector<std::size_t> &shape, unsigned dim,
              const std::vector<std::size_t> &newDims);
// The pieces of a tensor of `oldShape` viewed as `newShape` (same element count) in row-major
// order.
std::vector<Piece> reshapePieces(std::vector<Piece> pieces, const std::vector<std::size_t> &oldShape,
                                 const std::vector<std::size_t> &newShape);
// Joins pieces that are neighbours along `dim` and continue each other's affine map.
void coalesceAlong(std::vector<Piece> &pieces, unsigned dim);

} // namespace aspen::detail
