// What the rest of libaspen needs to know about a Tensor view: which variable bytes its elements
// are, and the graph behind it. Implemented with the Tensor view machinery (Tensor.cpp,
// TensorRegions.cpp). Private to libaspen: the layers ask the Tensor's public queries
// (getVarRegions, intersectsWith, isParallelWriteable).
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

// The tensor's elements in flattened (row-major) order as strided runs, with adjacent runs
// merged wherever one strided run can describe them. Element size is t.elementType().size().
std::vector<VarRegion> flatRegions(const Tensor &t);

// Variables the tensor touches (sorted, unique).
std::vector<unsigned> variablesOf(const Tensor &t);

// t.getMetadata() for a QUARTER tensor with one metadata tensor; an invalid tensor otherwise
// (another type, no elements, or QUARTER variables with different metadata).
Tensor uniqueMetadata(const Tensor &t);

// A tensor view of the whole of variable `var`, with the given shape (element count must match).
Tensor makeVariableTensor(const GraphState *graph, unsigned var, Type type,
                          std::vector<std::size_t> shape);

// The graph whose variables the tensor views (nullptr for an invalid tensor).
const GraphState *graphOf(const Tensor &t);

} // namespace aspen::detail
