// Helpers shared by the data-movement codelet families (fill, scaledadd, dynamicslice).
// Codelet code: no standard library (NVRTC compiles it too).
#pragma once

#include <aspen/Vertex.hpp>

// Every element type of aspen::Type, spelled as codelet instantiations are named.
// clang-format off
#define ASPEN_DATAMOVE_ALL_TYPES(X)                                                                \
  X(float) X(half) X(int) X(unsigned) X(short) X(unsigned short) X(char) X(unsigned char)          \
  X(signed char) X(bool) X(long long) X(unsigned long long) X(quarter)
// clang-format on

namespace aspen::ops::datamove {

// The arithmetic of a scaled add: float for floating-point data (half is widened), unsigned
// (wrapping) for integers, so that overflow is defined and the same on every device.
template <class T> struct ScaledAddArithmetic { typedef float type; };
template <> struct ScaledAddArithmetic<int> { typedef unsigned type; };
template <> struct ScaledAddArithmetic<unsigned> { typedef unsigned type; };

} // namespace aspen::ops::datamove
