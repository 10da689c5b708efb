// How an element-wise MultiVertex shares its tile's regions between workers; used by the
// library family (codelets/ops/elementwise.cpp) and by generated expression codelets.
//
// The vertex's output field is a list of regions (Vector<Output<Vector<T>>>); every input field
// that is a list has the same region sizes. forEachWorkerRange(regions, workerId, numWorkers, f)
// calls f(region, begin, end) for this worker's part:
//   host: the concatenated elements are cut into numWorkers contiguous ranges of about equal
//         size (cache friendly, one cut per worker; aspen/detail/WorkerShare.hpp);
//   GPU:  worker w takes elements w, w + numWorkers, ... of each region (coalesced accesses).
// No standard library (NVRTC).
#pragma once

#include <aspen/Vertex.hpp>

namespace aspen::ops::ew {

template <class Regions, class F>
ASPEN_HD inline void forEachWorkerRange(const Regions &regions, unsigned workerId,
                                        unsigned numWorkers, F &&f) {
  const unsigned numRegions = static_cast<unsigned>(regions.size());
#if defined(__CUDA_ARCH__)
  for (unsigned r = 0; r < numRegions; ++r) {
    const unsigned long long n = regions[r].size();
    for (unsigned long long i = workerId; i < n; i += numWorkers)
      f(r, i, i + 1);
  }
#else
  ::aspen::detail::forWorkerShareOfRegions(regions, workerId, numWorkers, f);
#endif
}

} // namespace aspen::ops::ew
