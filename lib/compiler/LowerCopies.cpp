#include "LowerCopies.hpp"

#include "ProgramWalk.hpp"
#include "Regions.hpp"

#include <algorithm>

namespace aspen::detail {

namespace {

struct Extent {
  std::uint32_t buffer;
  std::int64_t begin, end;
};

std::vector<Extent> extentsOf(const RegionList &regions) {
  std::vector<Extent> extents;
  const std::int64_t eb = regions.elementBytes;
  for (const ByteRun &r : regions.runs) {
    if (r.count == 0)
      continue;
    const std::int64_t last = r.offset + r.stride * std::int64_t(r.count - 1);
    extents.push_back({r.buffer, std::min(r.offset, last), std::max(r.offset, last) + eb});
  }
  std::sort(extents.begin(), extents.end(), [](const Extent &a, const Extent &b) {
    return a.buffer != b.buffer ? a.buffer < b.buffer : a.begin < b.begin;
  });
  return extents;
}

} // namespace

bool mayOverlap(const RegionList &a, const RegionList &b) {
  const std::vector<Extent> ea = extentsOf(a), eb = extentsOf(b);
  auto before = [](const Extent &x, const Extent &y) {
    return x.buffer < y.buffer || (x.buffer == y.buffer && x.end <= y.begin);
  };
  for (std::size_t i = 0, j = 0; i < ea.size() && j < eb.size();) {
    if (before(ea[i], eb[j]))
      ++i;
    else if (before(eb[j], ea[i]))
      ++j;
    else
      return true;
  }
  return false;
}

CopyPlan makeCopyPlan(RegionList src, RegionList dst) {
  CopyPlan plan;
  plan.throughTemporary = mayOverlap(src, dst);
  plan.src = std::move(src);
  plan.dst = std::move(dst);
  return plan;
}

CopyIndex lowerCopies(const GraphState &graph, ArrayRef<program::Program> programs,
                      CompiledGraph &out) {
  CopyIndex index;
  forEachProgramNode(graph, programs, [&](const ProgramNode &node) {
    switch (node.kind) {
    case ProgramKind::Copy:
      index[&node] = static_cast<std::uint32_t>(out.copies.size());
      out.copies.push_back(makeCopyPlan(regionsOf(node.tensor), regionsOf(node.dst)));
      break;
    case ProgramKind::StreamToTensor:
    case ProgramKind::TensorToStream:
      index[&node] = static_cast<std::uint32_t>(out.streamCopies.size());
      out.streamCopies.push_back(
          {node.id, regionsOf(node.kind == ProgramKind::StreamToTensor ? node.dst : node.tensor)});
      break;
    default:
      break;
    }
  });
  return index;
}

} // namespace aspen::detail
