#include "Regions.hpp"

#include "core/TensorRegions.hpp"

#include <algorithm>

namespace aspen::detail {

RegionList regionsOf(const Tensor &t) {
  RegionList list;
  list.elementBytes = static_cast<std::uint32_t>(t.elementType().size());
  list.numElements = t.numElements();
  for (const VarRegion &r : flatRegions(t))
    list.runs.push_back({r.var, r.byteOffset, r.byteStride, r.count});
  return list;
}

bool isContiguous(const RegionList &regions) {
  if (regions.runs.size() != 1)
    return regions.runs.empty();
  const ByteRun &run = regions.runs.front();
  return run.count <= 1 || run.stride == static_cast<std::int64_t>(regions.elementBytes);
}

std::uint64_t hashMix(std::uint64_t h, std::uint64_t value) {
  // splitmix64's finaliser over the running hash and the next value.
  std::uint64_t x = h ^ (value + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool sameElements(const RegionList &a, const RegionList &b) {
  auto same = [](const ByteRun &x, const ByteRun &y) {
    return x.buffer == y.buffer && x.offset == y.offset && x.stride == y.stride &&
           x.count == y.count;
  };
  return a.elementBytes == b.elementBytes && a.numElements == b.numElements &&
         std::equal(a.runs.begin(), a.runs.end(), b.runs.begin(), b.runs.end(), same);
}

std::uint64_t hashElements(const RegionList &regions) {
  std::uint64_t h = hashMix(regions.elementBytes, regions.numElements);
  for (const ByteRun &r : regions.runs) {
    h = hashMix(h, r.buffer);
    h = hashMix(h, std::uint64_t(r.offset));
    h = hashMix(h, std::uint64_t(r.stride));
    h = hashMix(h, r.count);
  }
  return h;
}

} // namespace aspen::detail
