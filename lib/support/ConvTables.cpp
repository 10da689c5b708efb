#include "support/ConvTables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

namespace aspen::detail {

std::optional<ConvGeometryProblem> convGeometryProblem(const program::ConvGeometry &g) {
  const std::size_t dims = g.inputField.size();
  if (g.outputField.size() != dims || g.taps.size() != dims || g.inputIndex.size() != dims)
    return ConvGeometryProblem{false, fmt::format("the geometry has {} input, {} output, {} tap "
                                                  "and {} index dimensions; they must agree",
                                                  dims, g.outputField.size(), g.taps.size(),
                                                  g.inputIndex.size())};
  std::uint64_t field = 1, outputs = 1, taps = 1;
  for (std::size_t d = 0; d < dims; ++d) {
    std::uint64_t entries = 0;
    if (__builtin_mul_overflow(g.outputField[d], g.taps[d], &entries) ||
        __builtin_mul_overflow(field, g.inputField[d], &field) ||
        __builtin_mul_overflow(outputs, g.outputField[d], &outputs) ||
        __builtin_mul_overflow(taps, g.taps[d], &taps))
      return ConvGeometryProblem{false, fmt::format("dimension {}: sizes overflow 64 bits", d)};
    if (g.inputIndex[d].size() != entries)
      return ConvGeometryProblem{
          false, fmt::format("dimension {} has {} index entries for {} outputs x {} taps", d,
                             g.inputIndex[d].size(), g.outputField[d], g.taps[d])};
    for (std::int64_t i : g.inputIndex[d])
      if (i < -1 || (i >= 0 && std::uint64_t(i) >= g.inputField[d]))
        return ConvGeometryProblem{true, fmt::format("dimension {} reads input index {} of {}",
                                                     d, i, g.inputField[d])};
  }
  // The operands' and the flattened table's element counts.
  const auto fits = [](std::initializer_list<std::uint64_t> factors) {
    std::uint64_t n = 1;
    for (std::uint64_t f : factors)
      if (__builtin_mul_overflow(n, f, &n))
        return false;
    return true;
  };
  if (!fits({g.batch, g.groups, g.inChans, field}) ||
      !fits({g.batch, g.groups, g.outChans, outputs}) ||
      !fits({g.groups, g.outChans, g.inChans, taps}) || !fits({taps, outputs}))
    return ConvGeometryProblem{false, "the operands' sizes overflow 64 bits"};
  return std::nullopt;
}

std::vector<std::int64_t> flatInputOffsets(const program::ConvGeometry &g) {
  const std::size_t dims = g.inputField.size();
  std::uint64_t P = 1, T = 1;
  std::vector<std::uint64_t> stride(dims, 1); // of each input dimension in a channel
  for (std::size_t d = dims; d-- > 0;) {
    if (d + 1 < dims)
      stride[d] = stride[d + 1] * g.inputField[d + 1];
    P *= g.outputField[d];
    T *= g.taps[d];
  }
  std::vector<std::int64_t> offsets(T * P);
  std::vector<std::uint64_t> tap(dims, 0), out(dims, 0);
  // The next position of a row-major counter over `sizes`.
  const auto advance = [dims](std::vector<std::uint64_t> &at,
                              const std::vector<std::uint64_t> &sizes) {
    for (std::size_t d = dims; d-- > 0;) {
      if (++at[d] < sizes[d])
        return;
      at[d] = 0;
    }
  };
  for (std::uint64_t t = 0; t < T; ++t, advance(tap, g.taps)) {
    std::fill(out.begin(), out.end(), 0);
    for (std::uint64_t p = 0; p < P; ++p, advance(out, g.outputField)) {
      std::int64_t offset = 0;
      for (std::size_t d = 0; d < dims && offset >= 0; ++d) {
        const std::int64_t i = g.inputIndex[d][out[d] * g.taps[d] + tap[d]];
        offset = i < 0 ? -1 : offset + i * std::int64_t(stride[d]);
      }
      offsets[t * P + p] = offset;
    }
  }
  return offsets;
}

} // namespace aspen::detail
