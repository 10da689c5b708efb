#include "Regions.hpp"

#include "core/TensorRegions.hpp"

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

} // namespace aspen::detail
