// What a library needs to know about a Tensor view: which variable bytes its elements are. Part
// of the support layer; implemented with the Tensor view machinery (core/TensorRegions.cpp).
#pragma once

#include <aspen/Tensor.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace aspen::detail {

// `count` elements of variable `var`, the first at byteOffset, then every byteStride bytes
// (byteStride may be 0 for broadcast elements, or negative for reversed ones).
struct VarRegion {
  unsigned var = 0;
  std::int64_t byteOffset = 0;
  std::int64_t byteStride = 0;
  std::size_t count = 0;
  friend bool operator==(const VarRegion &, const VarRegion &) = default;
};

// The tensor's elements in flattened (row-major) order as strided runs, with adjacent runs
// merged wherever one strided run can describe them. Element size is t.elementType().size().
std::vector<VarRegion> flatRegions(const Tensor &t);

// Variables the tensor touches (sorted, unique).
std::vector<unsigned> variablesOf(const Tensor &t);

} // namespace aspen::detail
