// Size arithmetic that cannot wrap: element counts, byte sizes and offsets of shapes, views,
// streams and library parameters. Every function raises Error with `what()` and the numbers
// when the exact result does not fit; byte sizes must also fit the signed 64-bit byte offsets
// that tensor views use. Part of the support layer.
#pragma once

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace aspen::detail {

// The largest byte size (and so byte offset) of a tensor: views address bytes as int64.
inline constexpr std::uint64_t kMaxTensorBytes =
    static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

template <class Error, class What>
std::size_t checkedMul(std::size_t a, std::size_t b, const What &what) {
  std::size_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(fmt::format("{}: {} x {} overflows 64 bits", what(), a, b));
  return r;
}

template <class Error, class What>
std::size_t checkedAdd(std::size_t a, std::size_t b, const What &what) {
  std::size_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(fmt::format("{}: {} + {} overflows 64 bits", what(), a, b));
  return r;
}

// The element count of `dims` (any container of sizes), with that many elements of
// elementBytes each at most kMaxTensorBytes bytes.
template <class Error, class Dims, class What>
std::size_t checkedElements(const Dims &dims, std::size_t elementBytes, const What &what) {
  std::size_t n = 1;
  bool overflow = false;
  for (std::size_t d : dims)
    overflow = overflow || __builtin_mul_overflow(n, d, &n);
  if (!overflow) {
    // A zero dimension makes any product 0, whatever the others were.
    std::size_t bytes;
    if (!__builtin_mul_overflow(n, elementBytes, &bytes) && bytes <= kMaxTensorBytes)
      return n;
  }
  for (std::size_t d : dims)
    if (d == 0)
      return 0;
  std::string shape;
  for (std::size_t d : dims)
    shape += (shape.empty() ? "" : ",") + std::to_string(d);
  if (overflow)
    throw Error(fmt::format("{}: shape {{{}}} has more than 2^64 elements", what(), shape));
  throw Error(fmt::format("{}: shape {{{}}} has {} elements of {} bytes, more than the 2^63 - 1 "
                          "bytes a tensor can address",
                          what(), shape, n, elementBytes));
}

} // namespace aspen::detail
