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

std::optional<ConvStandardForm> convStandardForm(const program::ConvGeometry &g) {
  ConvStandardForm s;
  for (std::size_t d = 0; d < g.inputField.size(); ++d) {
    const std::int64_t O = std::int64_t(g.outputField[d]), T = std::int64_t(g.taps[d]),
                       F = std::int64_t(g.inputField[d]);
    const std::vector<std::int64_t> &index = g.inputIndex[d];
    const auto at = [&](std::int64_t o, std::int64_t t) { return index[o * T + t]; };
    if (O < 1 || T < 1 || F < 1)
      return std::nullopt;
    // Stride and dilation from neighbouring real entries, the lower padding from any.
    std::optional<std::int64_t> stride = O == 1 ? std::optional<std::int64_t>(1) : std::nullopt,
                                dilation = T == 1 ? std::optional<std::int64_t>(1) : std::nullopt,
                                pad;
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t t = 0; t < T; ++t) {
        if (at(o, t) < 0)
          continue;
        if (!dilation && t + 1 < T && at(o, t + 1) >= 0)
          dilation = at(o, t + 1) - at(o, t);
        if (!stride && o + 1 < O && at(o + 1, t) >= 0)
          stride = at(o + 1, t) - at(o, t);
      }
    if (!stride || !dilation || *stride < 1 || *dilation < 1)
      return std::nullopt;
    for (std::int64_t o = 0; o < O && !pad; ++o)
      for (std::int64_t t = 0; t < T && !pad; ++t)
        if (at(o, t) >= 0)
          pad = o * *stride + t * *dilation - at(o, t);
    if (!pad || *pad < 0)
      return std::nullopt;
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t i = o * *stride + t * *dilation - *pad;
        if (at(o, t) != (i >= 0 && i < F ? i : -1))
          return std::nullopt;
      }
    const std::int64_t padUpper = (O - 1) * *stride + (T - 1) * *dilation + 1 - F - *pad;
    if (padUpper < 0)
      return std::nullopt;
    s.stride.push_back(*stride), s.dilation.push_back(*dilation), s.padLower.push_back(*pad),
        s.padUpper.push_back(padUpper);
  }
  return s;
}

bool convSymmetricPaddingFits(const ConvStandardForm &form, const program::ConvGeometry &g) {
  for (std::size_t d = 0; d < g.inputField.size(); ++d) {
    const std::int64_t reach = std::int64_t(g.inputField[d]) + 2 * form.padLower[d] -
                               form.dilation[d] * (std::int64_t(g.taps[d]) - 1) - 1;
    if (reach < 0 || reach / form.stride[d] + 1 != std::int64_t(g.outputField[d]))
      return false;
  }
  return true;
}

std::optional<std::vector<std::int64_t>> convInputReaders(const program::ConvGeometry &g) {
  std::uint64_t F = 1, P = 1, T = 1;
  for (std::size_t d = 0; d < g.inputField.size(); ++d)
    F *= g.inputField[d], P *= g.outputField[d], T *= g.taps[d];
  const std::vector<std::int64_t> offsets = flatInputOffsets(g);
  std::vector<std::int64_t> readers(T * F, -1);
  for (std::uint64_t t = 0; t < T; ++t)
    for (std::uint64_t p = 0; p < P; ++p) {
      const std::int64_t f = offsets[t * P + p];
      if (f < 0)
        continue;
      std::int64_t &reader = readers[t * F + std::uint64_t(f)];
      if (reader >= 0)
        return std::nullopt;
      reader = std::int64_t(p);
    }
  return readers;
}

} // namespace aspen::detail
