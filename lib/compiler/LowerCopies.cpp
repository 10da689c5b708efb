#include "LowerCopies.hpp"

#include "Regions.hpp"

#include <algorithm>
#include <string>
#include <utility>

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

namespace {

// The copies of one compute set's or kernel's rearrangement, made on first use.
struct MadeCopies {
  bool made = false;
  std::vector<std::uint32_t> gathers, scatters;
};

// `plans` as one copy per element size (in order of first appearance; a plan's elements keep
// their order), added to out.copies.
std::vector<std::uint32_t> addMerged(const std::vector<CopyPlan> &plans, CompiledGraph &out) {
  std::vector<CopyPlan> merged;
  for (const CopyPlan &p : plans) {
    auto it = std::find_if(merged.begin(), merged.end(), [&](const CopyPlan &m) {
      return m.src.elementBytes == p.src.elementBytes && m.dst.elementBytes == p.dst.elementBytes;
    });
    if (it == merged.end()) {
      merged.push_back(p);
      merged.back().rearranges = true;
      continue;
    }
    for (const auto &[to, from] : {std::pair{&it->src, &p.src}, std::pair{&it->dst, &p.dst}}) {
      to->runs.insert(to->runs.end(), from->runs.begin(), from->runs.end());
      to->numElements += from->numElements;
    }
    it->throughTemporary |= p.throughTemporary;
  }
  std::vector<std::uint32_t> indices;
  for (CopyPlan &m : merged) {
    indices.push_back(static_cast<std::uint32_t>(out.copies.size()));
    out.copies.push_back(std::move(m));
  }
  return indices;
}

} // namespace

void lowerCopies(CompiledGraph &out, const LoweringState &state) {
  std::vector<MadeCopies> computeSets(out.computeSets.size()), kernels(out.kernels.size());
  const std::size_t numSteps = out.steps.size(); // the steps program lowering made
  for (std::uint32_t s = 0; s < numSteps; ++s) {
    const Step &step = out.steps[s];
    if (step.kind != StepKind::Execute && step.kind != StepKind::Kernel)
      continue;
    // A kernel rearranges its operands; a compute set (executed, or launched as a block
    // codelet) its edges.
    const bool call = step.kind == StepKind::Kernel &&
                      out.kernels[step.index].kind != KernelKind::Block;
    const std::uint32_t cs = step.kind == StepKind::Execute ? step.index
                             : call ? 0 : out.kernels[step.index].launch.computeSet;
    const Rearrangement &r = call ? state.kernelCopies[step.index] : state.computeSetCopies[cs];
    if (r.gathers.empty() && r.scatters.empty())
      continue;
    MadeCopies &made = call ? kernels[step.index] : computeSets[cs];
    if (!made.made)
      made = {true, addMerged(r.gathers, out), addMerged(r.scatters, out)};
    const std::string what = call ? "kernel '" + out.kernels[step.index].name + "'"
                                  : "compute set '" + out.computeSets[cs].name + "'";
    Step runner = std::move(out.steps[s]);
    Step sequence;
    sequence.kind = StepKind::Sequence;
    auto add = [&](Step child) {
      sequence.children.push_back(static_cast<std::uint32_t>(out.steps.size()));
      out.steps.push_back(std::move(child));
    };
    for (std::uint32_t copy : made.gathers)
      add(Step{StepKind::Copy, "gather for " + what, copy, 0, {}, {}, {}});
    add(std::move(runner));
    for (std::uint32_t copy : made.scatters)
      add(Step{StepKind::Copy, "scatter for " + what, copy, 0, {}, {}, {}});
    out.steps[s] = std::move(sequence);
  }
}

} // namespace aspen::detail
