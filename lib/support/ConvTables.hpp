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

// A valid geometry as an ordinary convolution, per field dimension: output o reads input
// o * stride + tap * dilation - padLower when that is in [0, F), nothing otherwise; padUpper is
// how far the last output's last tap reaches past the field (the padding a library needs there).
// nullopt when the tables are anything else (input dilation, truncation, flips, a padding or a
// field of 0 outputs or taps), which only index tables describe.
struct ConvStandardForm {
  std::vector<std::int64_t> stride, dilation, padLower, padUpper;
};
std::optional<ConvStandardForm> convStandardForm(const program::ConvGeometry &geometry);

// Whether a library with one padding a dimension, both sides (cuDNN), computes the same outputs:
// with padUpper taken as padLower each dimension still has exactly outputField[d] outputs.
bool convSymmetricPaddingFits(const ConvStandardForm &form, const program::ConvGeometry &geometry);

// The tables read backwards, for a gather instead of a scatter-add: readers[t * F + f] is the
// output that reads element f of an image channel through tap t, or -1 (F elements, as
// flatInputOffsets counts them). nullopt when an element is read twice through one tap, which
// tables made from ConvParams never do (a stride of at least 1 separates outputs).
std::optional<std::vector<std::int64_t>> convInputReaders(const program::ConvGeometry &geometry);

} // namespace aspen::detail
