#include "Caches.hpp"

#include "StepWalk.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace aspen::detail {

namespace {

// The variables one step reads and writes (WriteUndef's undefining counts as a write), sorted,
// each once; a compound step's own (its predicate) only, not its children's.
struct Touched {
  std::vector<std::uint32_t> reads, writes;
};

Touched touchedBy(const LoweringState &state, const CompiledGraph &g, std::uint32_t index) {
  const Step &step = g.steps[index];
  const StepKindInfo &info = stepKindInfo(step.kind);
  Touched t;
  const auto addRegions = [&](const RegionList &regions, std::vector<std::uint32_t> &to) {
    for (const ByteRun &run : regions.runs)
      to.push_back(run.buffer);
  };
  const auto addList = [&](const AccessList &list) {
    for (const AccessRun &a : list.runs)
      (a.kind == AccessKind::Read ? t.reads : t.writes).push_back(a.run.buffer);
  };
  if (info.readsScalar)
    t.reads.push_back(step.scalar.buffer);
  switch (info.payload) {
  case StepPayload::ComputeSet:
    addList(state.computeSetAccesses[step.index]);
    break;
  case StepPayload::Kernel: {
    const CompiledKernel &k = g.kernels[step.index];
    addList(k.kind == KernelKind::Block ? state.computeSetAccesses[k.launch.computeSet]
                                        : state.kernelAccesses[step.index]);
    break;
  }
  case StepPayload::Copy:
    addRegions(g.copies[step.index].src, t.reads);
    addRegions(g.copies[step.index].dst, t.writes);
    break;
  case StepPayload::StreamCopy:
    addRegions(g.streamCopies[step.index].tensor,
               step.kind == StepKind::StreamToTensor ? t.writes : t.reads);
    break;
  case StepPayload::Print:
    addRegions(g.prints[step.index].regions, t.reads);
    break;
  case StepPayload::None:
    if (const auto it = state.stepAccesses.find(index); it != state.stepAccesses.end())
      addList(it->second);
    break;
  case StepPayload::Cache:
    break;
  }
  for (auto *list : {&t.reads, &t.writes}) {
    list->erase(std::remove_if(list->begin(), list->end(),
                               [&](std::uint32_t b) {
                                 return b >= g.buffers.size() ||
                                        g.buffers[b].kind != BufferKind::Variable;
                               }),
                list->end());
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  return t;
}

} // namespace

void analyseCaches(const LoweringState &state, CompiledGraph &out) {
  if (out.caches.empty())
    return;
  // Copies of one Cached program are several steps of one cache: their bodies are the same.
  std::vector<bool> analysed(out.caches.size());
  forEachStep(out, out.programs, [&](std::uint32_t, const Step &cachedStep) {
    if (cachedStep.kind != StepKind::Cached || analysed[cachedStep.index])
      return;
    analysed[cachedStep.index] = true;
    CachedStep &cache = out.caches[cachedStep.index];
    std::set<std::uint32_t> reads, writes;
    forEachStep(out, ArrayRef<std::uint32_t>(&cachedStep.children[0], 1),
                [&](std::uint32_t index, const Step &step) {
                  if (!stepKindInfo(step.kind).onDevice && step.kind != StepKind::Cached)
                    throw control_program_error(fmt::format(
                        "Cached '{}': its body holds {}{}, which needs the host; a cached body "
                        "must be device work only (compute sets, copies, kernels and control "
                        "flow over them)",
                        cache.name, stepKindName(step.kind),
                        step.name.empty() ? "" : " '" + step.name + "'"));
                  const Touched t = touchedBy(state, out, index);
                  reads.insert(t.reads.begin(), t.reads.end());
                  writes.insert(t.writes.begin(), t.writes.end());
                });
    for (std::uint32_t b : reads)
      if (writes.count(b))
        throw control_program_error(fmt::format(
            "Cached '{}': its body writes variable '{}', which it also reads; a cached body "
            "must not read a variable it writes (its result would depend on its own earlier "
            "runs)",
            cache.name, out.buffers[b].name));
    cache.reads.assign(reads.begin(), reads.end());
    cache.writes.assign(writes.begin(), writes.end());
  });
}

// Buffer::written: whether any step writes the buffer.
static void markWrittenBuffers(const LoweringState &state, CompiledGraph &out) {
  for (std::uint32_t s = 0; s < out.steps.size(); ++s)
    for (std::uint32_t b : touchedBy(state, out, s).writes)
      if (b < out.buffers.size())
        out.buffers[b].written = true;
}

void markCacheInvalidations(const LoweringState &state, CompiledGraph &out) {
  if (out.caches.empty()) {
    markWrittenBuffers(state, out);
    return;
  }
  // The caches each variable belongs to.
  std::vector<std::vector<std::uint32_t>> cachesOf(out.buffers.size());
  for (std::uint32_t c = 0; c < out.caches.size(); ++c)
    for (const auto *buffers : {&out.caches[c].reads, &out.caches[c].writes})
      for (std::uint32_t b : *buffers)
        if (cachesOf[b].empty() || cachesOf[b].back() != c)
          cachesOf[b].push_back(c);
  const auto staleAfter = [&](const std::vector<std::uint32_t> &writes) {
    std::set<std::uint32_t> stale;
    for (std::uint32_t b : writes)
      stale.insert(cachesOf[b].begin(), cachesOf[b].end());
    return std::vector<std::uint32_t>(stale.begin(), stale.end());
  };
  std::vector<std::uint32_t> all(out.caches.size());
  for (std::uint32_t c = 0; c < all.size(); ++c)
    all[c] = c;

  // Leaves from their writes; a device-only compound step (one the engine may hand to an
  // executor whole, which holds no Cached step) the union of its children's. A function
  // calling itself is conservatively stale for every cache.
  enum State : std::uint8_t { Unknown, Open, Device, Host };
  std::vector<State> states(out.steps.size(), Unknown);
  const auto visit = [&](auto &self, std::uint32_t index) -> bool {
    Step &step = out.steps[index];
    if (states[index] == Open) {
      step.invalidates = all;
      return true;
    }
    if (states[index] != Unknown)
      return states[index] == Device;
    states[index] = Open;
    bool device = stepKindInfo(step.kind).onDevice;
    std::set<std::uint32_t> stale;
    for (std::uint32_t child : step.children) {
      device = self(self, child) && device;
      stale.insert(out.steps[child].invalidates.begin(), out.steps[child].invalidates.end());
    }
    if (step.children.empty())
      step.invalidates = staleAfter(touchedBy(state, out, index).writes);
    else if (device && step.invalidates.empty())
      step.invalidates.assign(stale.begin(), stale.end());
    states[index] = device ? Device : Host;
    return device;
  };
  for (std::uint32_t root : out.programs)
    visit(visit, root);
  // Only the steps the engine applies lists of: leaves and device-only subtrees.
  for (std::uint32_t s = 0; s < out.steps.size(); ++s)
    if (states[s] == Host && !out.steps[s].children.empty())
      out.steps[s].invalidates.clear();

  markWrittenBuffers(state, out);
  for (auto &[name, handle] : out.hostWrites) {
    std::vector<std::uint32_t> written;
    for (const RegionList *regions : {&handle.regions, &handle.metadata})
      for (const ByteRun &run : regions->runs)
        if (run.buffer < out.buffers.size())
          written.push_back(run.buffer);
    handle.invalidates = staleAfter(written);
  }
}

} // namespace aspen::detail
