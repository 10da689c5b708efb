// The matmul planner's internal interface: parameter checks, the options struct, the search
// without a cache, and the block geometry of a plan that the builders (MatMul.cpp) lay tensors
// and vertices out by.
//
// Block geometry. Each dimension D of M, K, N is cut into `parts * serial` chunks of
// b = ceil(D / (parts * serial)) rows (the last chunk may be smaller, none is empty); serial
// step s of that dimension handles chunks [s * parts, (s + 1) * parts), and part p of the step
// is chunk s * parts + p. Groups are cut into partition.groups chunks the same way (serial
// groups are always 1). With serial = 1 this is the plain ceil-division split.
//
// fullyConnectedPass is validated and stored but does not change the plan: the three training
// passes are planned from their own shapes.
#pragma once

#include "linalg/MatMulOptions.hpp"

#include <aspen/Interval.hpp>
#include <aspen/Target.hpp>
#include <aspen/linalg/MatMulPlan.hpp>

#include <cstddef>
#include <cstdint>

namespace aspen::linalg::detail {

// G, M, K, N of params; raises shape_error (rank not 2 or 3, ranks that differ, inner
// dimensions or group counts that differ, an empty dimension) or type_error (input type not
// FLOAT/HALF, output type not FLOAT/HALF), naming both shapes.
struct MatMulShape {
  std::size_t G = 1, M = 1, K = 1, N = 1;
};
MatMulShape checkMatMulParams(const MatMulParams &params);

// Rows of dimension `size` that part `part` of serial step `step` handles (see above).
Interval matMulBlock(std::size_t size, std::size_t parts, std::size_t serial, std::size_t step,
                     std::size_t part);
// Whether `chunks` ceil-division chunks of `size` rows are all non-empty.
bool isValidChunkCount(std::size_t size, std::size_t chunks);

// The working set in bytes of one tile in one serial step with blocks of these sizes: the A
// and B blocks in the input type, the partials block, and the output block when the partials
// type differs from the output type.
std::uint64_t matMulTileBytes(const MatMulPlan &plan, std::size_t groups, std::size_t m,
                              std::size_t k, std::size_t n);

// The bytes a plan's working set may use on one tile of `target`.
std::uint64_t matMulTileBudget(const Target &target, const MatMulOptions &options);

// Plans without a cache. Raises invalid_option for constraints that cannot hold on `target`
// and graph_memory_allocation_error when no split fits.
MatMulPlan planMatMul(const Target &target, const MatMulParams &params,
                      const MatMulOptions &options);

// The plan from `cache`, planned and stored on a miss. The key is the target's numbers the cost
// model reads, the parameters, and the options that change plans (partialsType,
// availableMemoryProportion, constraints).
MatMulPlan cachedPlan(PlanningCache &cache, const Target &target, const MatMulParams &params,
                      const MatMulOptions &options);

} // namespace aspen::linalg::detail
