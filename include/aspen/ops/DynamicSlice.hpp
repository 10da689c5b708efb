// Slicing at offsets known only at run time (popops/DynamicSlice.hpp). The offsets live in
// device tensors of UNSIGNED_INT and are read by the codelets when the program runs.
//
// Common arguments: `dims` lists k distinct dimensions of t (each < t.rank()) and `sizes` the
// slice size in each (sizes[i] <= t.dim(dims[i])); the other dimensions are taken whole.
// Violations raise aspen::index_error (a dimension out of range or repeated, a size too big)
// or aspen::shape_error (lists of different lengths, offsets or updates of the wrong shape);
// offsets of another type raise aspen::type_error. Every tensor must be completely mapped.
//
//   dynamicSlice(graph, t, offset, dims, sizes, prog, debug) -> Tensor
//     offset: UNSIGNED_INT, shape {k}. Result: t's shape with dims[i] of size sizes[i], a new
//     variable mapped like the first rows of t. Out-of-range offsets follow popops' codelets:
//     an offset >= t.dim(dims[i]) counts as 0, and a slice that runs past the end of the
//     dimension wraps around to its start (element j is at (offset + j) mod dim).
//   dynamicUpdate(graph, t, s, offset, dims, sizes, prog, debug)
//     s: the shape dynamicSlice returns; written into t at the same positions dynamicSlice
//     would read (the same out-of-range rule). t must be writable.
//
//   multiSlice(graph, t, offsets, dims, sizes, prog, plan, options, debug) -> Tensor
//     offsets: UNSIGNED_INT, shape {N, k}; slice n starts at offsets[n][i] in dims[i].
//     Result: {N, t's shape with dims[i] of size sizes[i]}. A slice with an offset where
//     offset + size > dim is out of range: popops leaves its output undefined; Aspen writes
//     zeros there.
//   multiUpdate(graph, t, sMulti, offsets, dims, sizes, prog, plan, options, debug)
//     sMulti: the shape multiSlice returns. Slices are written in order n = 0..N-1, so for
//     equal offsets the last one wins; out-of-range slices are ignored (popops: undefined).
//   multiUpdateAdd(graph, t, sMulti, offsets, scale, dims, sizes, prog, plan, options, debug)
//     t += scale * slice for every slice, equal offsets accumulating in order n; out-of-range
//     slices ignored. t: FLOAT, HALF, INT or UNSIGNED_INT; scale: one element of t's type.
//     Arithmetic as scaledAddTo's (float for half, wrapping for integers).
//   plan: an empty SlicePlan (Aspen does not plan slices); options: none are known, any key
//   raises aspen::invalid_option.
//
// Work: one vertex per tile that owns columns of the first slice position of t (the
// non-sliced elements), reading or writing every slice position of those columns.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>

#include <cstddef>
#include <vector>

namespace aspen::ops {

// popops plans multi-slices for embedding lookups; Aspen has a single strategy.
class SlicePlan {};

ASPEN_API Tensor dynamicSlice(Graph &graph, const Tensor &t, const Tensor &offset,
                              const std::vector<std::size_t> &dims,
                              const std::vector<std::size_t> &sizes, program::Sequence &prog,
                              const DebugContext &debug = {});

ASPEN_API void dynamicUpdate(Graph &graph, const Tensor &t, const Tensor &s, const Tensor &offset,
                             const std::vector<std::size_t> &dims,
                             const std::vector<std::size_t> &sizes, program::Sequence &prog,
                             const DebugContext &debug = {});

ASPEN_API Tensor multiSlice(Graph &graph, const Tensor &t, const Tensor &offsets,
                            const std::vector<std::size_t> &dims,
                            const std::vector<std::size_t> &sizes, program::Sequence &prog,
                            const SlicePlan &plan = {}, const OptionFlags &options = {},
                            const DebugContext &debug = {});

ASPEN_API void multiUpdate(Graph &graph, const Tensor &t, const Tensor &sMulti,
                           const Tensor &offsets, const std::vector<std::size_t> &dims,
                           const std::vector<std::size_t> &sizes, program::Sequence &prog,
                           const SlicePlan &plan = {}, const OptionFlags &options = {},
                           const DebugContext &debug = {});

ASPEN_API void multiUpdateAdd(Graph &graph, const Tensor &t, const Tensor &sMulti,
                              const Tensor &offsets, const Tensor &scale,
                              const std::vector<std::size_t> &dims,
                              const std::vector<std::size_t> &sizes, program::Sequence &prog,
                              const SlicePlan &plan = {}, const OptionFlags &options = {},
                              const DebugContext &debug = {});

} // namespace aspen::ops
