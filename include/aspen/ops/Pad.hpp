// Padding (popops/Pad.hpp). Every result is a view: t's elements are not copied; constant
// padding adds constant tensors, edge and reflect padding reuse t's own elements.
//
// paddingLower/paddingUpper: one amount per dimension of t (aspen::shape_error for another
// count); a negative amount removes that many elements (truncation), and removing more than
// the dimension holds raises aspen::index_error.
//
//   pad(graph, t, paddingLower, paddingUpper, val = 0.0f | int val, mappingMethod = ZERO)
//     constant padding: new constants of t's type holding val (aspen::type_error when t's
//     type cannot hold it), mapped by mappingMethod: NONE (left unmapped), ZERO (tile 0) or
//     EDGE (each pad element on the tile of its nearest element of t; t must be non-empty and
//     completely mapped, invalid_tile_mapping otherwise).
//   pad(graph, t, paddingLower, paddingUpper, const Tensor &val, mappingMethod)
//     val: one element of t's type (shape_error/type_error otherwise), broadcast; no new
//     tensors, so mappingMethod has no effect.
//   pad(t, paddingLower, paddingUpper, padding::Type)
//     EDGE: pad elements repeat the nearest edge element (t must be non-empty where padded).
//     REFLECT: mirrored about the edge element, without repeating it (numpy's "reflect"); the
//     amount must be < the dimension (index_error otherwise).
//   Single-dimension forms take (paddingLower, paddingUpper, dim) instead of the two lists.
// Dimensions are padded in order 0, 1, ..., so corners come from the already padded tensor.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>

#include <cstddef>
#include <vector>

namespace aspen::ops {

namespace padding {
enum class Type { EDGE, REFLECT };
enum class MappingMethod { NONE, ZERO, EDGE };
} // namespace padding

ASPEN_API Tensor pad(Graph &graph, const Tensor &t, const std::vector<std::ptrdiff_t> &paddingLower,
                     const std::vector<std::ptrdiff_t> &paddingUpper, float val = 0.0f,
                     padding::MappingMethod mappingMethod = padding::MappingMethod::ZERO);
ASPEN_API Tensor pad(Graph &graph, const Tensor &t, const std::vector<std::ptrdiff_t> &paddingLower,
                     const std::vector<std::ptrdiff_t> &paddingUpper, int val,
                     padding::MappingMethod mappingMethod = padding::MappingMethod::ZERO);
ASPEN_API Tensor pad(Graph &graph, const Tensor &t, const std::vector<std::ptrdiff_t> &paddingLower,
                     const std::vector<std::ptrdiff_t> &paddingUpper, const Tensor &val,
                     padding::MappingMethod mappingMethod = padding::MappingMethod::ZERO);

ASPEN_API Tensor pad(Graph &graph, const Tensor &t, std::ptrdiff_t paddingLower,
                     std::ptrdiff_t paddingUpper, unsigned dim, float val = 0.0f,
                     padding::MappingMethod mappingMethod = padding::MappingMethod::ZERO);
ASPEN_API Tensor pad(Graph &graph, const Tensor &t, std::ptrdiff_t paddingLower,
                     std::ptrdiff_t paddingUpper, unsigned dim, int val,
                     padding::MappingMethod mappingMethod = padding::MappingMethod::ZERO);
ASPEN_API Tensor pad(Graph &graph, const Tensor &t, std::ptrdiff_t paddingLower,
                     std::ptrdiff_t paddingUpper, unsigned dim, const Tensor &val,
                     padding::MappingMethod mappingMethod = padding::MappingMethod::ZERO);

ASPEN_API Tensor pad(const Tensor &t, const std::vector<std::ptrdiff_t> &paddingLower,
                     const std::vector<std::ptrdiff_t> &paddingUpper, padding::Type type);
ASPEN_API Tensor pad(const Tensor &t, std::ptrdiff_t paddingLower, std::ptrdiff_t paddingUpper,
                     unsigned dim, padding::Type type);

} // namespace aspen::ops
