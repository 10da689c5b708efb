// Host-side conversion between host values and the bytes of device element types (Poplar's
// <poplar/TypeConversion.hpp>), for buffers handed to Engine::writeTensor/readTensor and streams.
//
// convertToDeviceType(dstType, src, dst)
//   Each value of src becomes one element of dstType at dst (src.size() * dstType.size() bytes).
//   The rules of constants apply: floating point rounds to nearest even, and a value the type
//   cannot hold (out of range, a fraction or NaN into an integer type) raises type_error naming
//   the value, and nothing is written.
// convertFromDeviceType(srcType, src, dst)
//   Each element at src becomes one value of dst's type, by the same rules (nothing is written
//   when one fails). dst views the caller's buffer (as in Poplar, an ArrayRef written through).
// QUARTER takes a QuarterMetadata (<aspen/Quarter.hpp>): encoding rounds to nearest even once
// (double values are rounded to float first), and out-of-range values, infinities and NaN give
// NaN; decoding is exact into float and double and rounds once into half. The overloads
// without metadata raise type_error for QUARTER, and those with metadata for any other type.
// Host types: float, double, half and the integer types of aspen::Type.
#pragma once

#include <aspen/ArrayRef.hpp>
#include <aspen/Export.hpp>
#include <aspen/Quarter.hpp>
#include <aspen/Type.hpp>

#include <cstddef>

namespace aspen {

// What the templates below call: `count` values of hostType (metadata null unless QUARTER).
ASPEN_API void convertToDeviceTypeFromHost(Type dstType, const QuarterMetadata *metadata,
                                           detail::HostType hostType, const void *src,
                                           std::size_t count, void *dst);
ASPEN_API void convertFromDeviceTypeToHost(Type srcType, const QuarterMetadata *metadata,
                                           const void *src, detail::HostType hostType, void *dst,
                                           std::size_t count);

template <class T> void convertToDeviceType(Type dstType, ArrayRef<T> src, void *dst) {
  convertToDeviceTypeFromHost(dstType, nullptr, detail::hostTypeOf<T>(), src.data(), src.size(),
                              dst);
}
template <class T>
void convertToDeviceType(Type dstType, const QuarterMetadata &metadata, ArrayRef<T> src,
                         void *dst) {
  convertToDeviceTypeFromHost(dstType, &metadata, detail::hostTypeOf<T>(), src.data(), src.size(),
                              dst);
}
template <class T> void convertFromDeviceType(Type srcType, const void *src, ArrayRef<T> dst) {
  convertFromDeviceTypeToHost(srcType, nullptr, src, detail::hostTypeOf<T>(),
                              const_cast<T *>(dst.data()), dst.size());
}
template <class T>
void convertFromDeviceType(Type srcType, const QuarterMetadata &metadata, const void *src,
                           ArrayRef<T> dst) {
  convertFromDeviceTypeToHost(srcType, &metadata, src, detail::hostTypeOf<T>(),
                              const_cast<T *>(dst.data()), dst.size());
}

} // namespace aspen
