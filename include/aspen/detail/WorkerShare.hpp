// How a MultiVertex cuts its work between workers: worker w of n takes the w-th of n contiguous,
// nearly equal parts (sizes differ by at most one), so every element belongs to exactly one worker
// and the cut depends only on the size. Used by the library codelet families and by generated
// codelets; no standard library (NVRTC).
#pragma once

#include <aspen/HalfFloat.hpp>

namespace aspen {
namespace detail {

// [begin, end) of `size` elements for worker `wid` of `workers`.
template <class I>
ASPEN_HD inline void workerShare(unsigned long long size, unsigned wid, unsigned workers, I &begin,
                                 I &end) {
  begin = static_cast<I>(size * wid / workers);
  end = static_cast<I>(size * (wid + 1) / workers);
}

// Calls f(region, lo, hi) for the parts of `regions` (an edge list whose elements have size())
// in this worker's share of their concatenation.
template <class Regions, class F>
ASPEN_HD inline void forWorkerShareOfRegions(const Regions &regions, unsigned wid, unsigned workers,
                                             F &&f) {
  const unsigned numRegions = static_cast<unsigned>(regions.size());
  unsigned long long total = 0;
  for (unsigned r = 0; r < numRegions; ++r)
    total += regions[r].size();
  unsigned long long begin, end;
  workerShare(total, wid, workers, begin, end);
  unsigned long long at = 0;
  for (unsigned r = 0; r < numRegions && at < end; ++r) {
    const unsigned long long n = regions[r].size();
    const unsigned long long lo = begin > at ? begin - at : 0;
    const unsigned long long hi = end - at < n ? end - at : n;
    if (lo < hi)
      f(r, lo, hi);
    at += n;
  }
}

} // namespace detail
} // namespace aspen
