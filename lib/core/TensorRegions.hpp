// What the rest of libaspen needs to know about a Tensor view: which variable bytes its elements
// are (support/TensorRegions.hpp, which the layer libraries use too), and the graph behind it.
// Implemented with the Tensor view machinery (Tensor.cpp).
#pragma once

#include "support/TensorRegions.hpp"

#include <aspen/Tensor.hpp>

#include <cstddef>
#include <vector>

namespace aspen::detail {

struct GraphState;

// A tensor view of the whole of variable `var`, with the given shape (element count must match).
Tensor makeVariableTensor(const GraphState *graph, unsigned var, Type type,
                          std::vector<std::size_t> shape);

// The graph whose variables the tensor views (nullptr for an invalid tensor).
const GraphState *graphOf(const Tensor &t);

} // namespace aspen::detail
