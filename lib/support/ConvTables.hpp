// The index tables of a convolution call (program::ConvGeometry, include/aspen/Kernels.hpp),
// read one way by everything that reads them: the call's constructor and the executable's
// loader check them, the CPU executor's BLAS path and the direct vertices flatten them.
#pragma once

#include <aspen/Kernels.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace aspen::detail {

// What is wrong with a geometry: dimensions that disagree, a table that is not outputs x taps,
// an index outside its input field (index = true), or sizes whose product overflows 64 bits.
struct ConvGeometryProblem {
  bool index = false;
  std::string what;
};
std::optional<ConvGeometryProblem> convGeometryProblem(const program::ConvGeometry &geometry);

// offsets[t * P + p] for a valid geometry: the element of one image channel ([F...],
// row-major) that output p reads through tap t (both row-major over the field dimensions),
// or -1 when it reads nothing. P outputs and T taps: the products of outputField and taps.
std::vector<std::int64_t> flatInputOffsets(const program::ConvGeometry &geometry);

} // namespace aspen::detail
