// What the rest of Aspen needs to know about a Tensor view: which variable bytes its elements
// are. Implemented with the Tensor view machinery (Tensor.cpp).
#pragma once

#include <aspen/Tensor.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace aspen::detail {

struct GraphState;

// `count` elements of variable `var`, the first at byteOffset, then every byteStride bytes
// (byteStride may be 0 for broadcast elements, or negative for reversed ones).
struct VarRegion {
  unsigned var = 0;
  std::int64_t byteOffset = 0;
  std::int64_t byteStride = 0;
  std::size_t count = 0;
  friend bool operator==(const VarRegion &, const VarRegion &) = default;
};

// A tensor view of the whole of variable `var`, with the given shape (element count must match).
Tensor makeVariableTensor(const GraphState *graph, unsigned var, Type type,
                          std::vector<std::size_t> shape);

// The graph whose variables the tensor views (nullptr for an invalid tensor).
const GraphState *graphOf(const Tensor &t);

// The tensor's elements in flattened (row-major) order as strided runs, with adjacent runs
// merged wherever one strided run can describe them. Element size is t.elementType().size().
std::vector<VarRegion> flatRegions(const Tensor &t);

// Variables the tensor touches (sorted, unique).
std::vector<unsigned> variablesOf(const Tensor &t);

} // namespace aspen::detail
