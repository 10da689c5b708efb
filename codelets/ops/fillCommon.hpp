// Helpers shared by the data-movement codelet families (fill, scaledadd, dynamicslice).
// Codelet code: no standard library (NVRTC compiles it too).
#pragma once

#include <aspen/Vertex.hpp>

// Every element type of aspen::Type, spelled as codelet instantiations are named.
// clang-format off
#define ASPEN_DATAMOVE_ALL_TYPES(X)                                                                \
  X(float) X(half) X(int) X(unsigned) X(short) X(unsigned short) X(char) X(unsigned char)          \
  X(signed char) X(bool) X(long long) X(unsigned long long)
// clang-format on

namespace aspen::ops::datamove {

// The part [begin, end) of a run of `size` elements that worker `wid` of `numWorkers` handles:
// consecutive equal chunks, so every element belongs to exactly one worker.
ASPEN_HD inline void workerChunk(unsigned size, unsigned wid, unsigned numWorkers, unsigned &begin,
                                 unsigned &end) {
  const unsigned chunk = (size + numWorkers - 1) / numWorkers;
  begin = wid * chunk < size ? wid * chunk : size;
  end = begin + chunk < size ? begin + chunk : size;
}

// The arithmetic of a scaled add: float for floating-point data (half is widened), unsigned
// (wrapping) for integers, so that overflow is defined and the same on every device.
template <class T> struct ScaledAddArithmetic { typedef float type; };
template <> struct ScaledAddArithmetic<int> { typedef unsigned type; };
template <> struct ScaledAddArithmetic<unsigned> { typedef unsigned type; };

} // namespace aspen::ops::datamove
