#include "Liveness.hpp"

#include "StepWalk.hpp"
#include "support/Logging.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

namespace aspen::detail {

namespace {

constexpr std::uint64_t kMaxSteps = std::uint64_t(1) << 20;
constexpr std::size_t kMaxStridedKill = 4096;

// Sorted, disjoint, non-adjacent byte ranges [begin, end) of one variable. Built and united in
// linear time (after one sort): inserting range by range into the sorted vector was quadratic
// in the runs of a shuffled view (issue 34).
class ByteSet {
public:
  using Range = std::pair<std::uint64_t, std::uint64_t>;

  // Sorts `ranges` and merges those that overlap or touch, dropping empty ones: a ByteSet's form.
  static void normalize(std::vector<Range> &ranges) {
    std::sort(ranges.begin(), ranges.end());
    std::size_t n = 0;
    for (const Range &r : ranges) {
      if (r.first >= r.second)
        continue;
      if (n > 0 && r.first <= ranges[n - 1].second)
        ranges[n - 1].second = std::max(ranges[n - 1].second, r.second);
      else
        ranges[n++] = r;
    }
    ranges.resize(n);
  }

  // The union of `ranges`, given in any order.
  static ByteSet unionOf(std::vector<Range> ranges) {
    normalize(ranges);
    ByteSet set;
    set.ranges_ = std::move(ranges);
    return set;
  }

  bool empty() const { return ranges_.empty(); }

  void add(const ByteSet &other) {
    if (other.empty() || &other == this)
      return;
    const std::vector<Range> mine = std::move(ranges_);
    ranges_.clear();
    ranges_.reserve(mine.size() + other.ranges_.size());
    auto a = mine.begin(), b = other.ranges_.begin();
    while (a != mine.end() || b != other.ranges_.end())
      if (b == other.ranges_.end() || (a != mine.end() && a->first <= b->first))
        append(*a++);
      else
        append(*b++);
  }

  void remove(const ByteSet &other) {
    if (other.empty() || empty())
      return;
    std::vector<Range> left;
    auto cut = other.ranges_.begin();
    for (Range r : ranges_) {
      while (cut != other.ranges_.end() && cut->second <= r.first)
        ++cut;
      for (auto c = cut; c != other.ranges_.end() && c->first < r.second; ++c) {
        if (c->first > r.first)
          left.push_back({r.first, c->first});
        r.first = std::max(r.first, c->second);
      }
      if (r.first < r.second)
        left.push_back(r);
    }
    ranges_ = std::move(left);
  }

  friend bool operator==(const ByteSet &, const ByteSet &) = default;

private:
  // Adds a range that starts at or after the start of every range held.
  void append(const Range &r) {
    if (r.first >= r.second)
      return;
    if (!ranges_.empty() && r.first <= ranges_.back().second)
      ranges_.back().second = std::max(ranges_.back().second, r.second);
    else
      ranges_.push_back(r);
  }

  std::vector<Range> ranges_;
};

// What one step does to one variable. Reads happen before kills.
struct Effect {
  ByteSet reads, kills;
  bool touches = false; // reads or writes its bytes (WriteUndef does not)
};
using Effects = std::map<unsigned, Effect>;

// The bytes of a strided run of `size`-byte elements, calling f(first byte, last byte + 1) for
// the run's whole span (reads) or only for bytes it certainly covers (kills).
template <class F> void forEachSpan(const ByteRun &r, std::int64_t size, bool exact, F &&f) {
  if (r.count == 0)
    return;
  const std::int64_t last = r.offset + r.stride * std::int64_t(r.count - 1);
  const std::int64_t lo = std::min(r.offset, last), hi = std::max(r.offset, last);
  const bool dense = r.count == 1 || r.stride == 0 || r.stride == size || r.stride == -size;
  if (!exact || dense) {
    f(std::uint64_t(lo), std::uint64_t(hi + size));
  } else if (r.count <= kMaxStridedKill) {
    for (std::size_t i = 0; i < r.count; ++i) {
      const std::int64_t at = r.offset + r.stride * std::int64_t(i);
      f(std::uint64_t(at), std::uint64_t(at + size));
    }
  }
}

// Byte ranges gathered in any order, brought to ByteSet form whenever they have doubled since
// the last time, so that they never take much more memory than their union.
class RangeCollector {
public:
  void add(std::uint64_t begin, std::uint64_t end) {
    ranges_.emplace_back(begin, end);
    if (ranges_.size() >= limit_) {
      ByteSet::normalize(ranges_);
      limit_ = std::max(kMinLimit, 2 * ranges_.size());
    }
  }
  ByteSet take() { return ByteSet::unionOf(std::move(ranges_)); }

private:
  static constexpr std::size_t kMinLimit = 1024;
  std::vector<ByteSet::Range> ranges_;
  std::size_t limit_ = kMinLimit;
};

// One step's effects, collected span by span and united per variable once, in effects(). Only
// variables' buffers (buffer v is variable v, v < numVariables) are tracked.
class EffectsBuilder {
public:
  explicit EffectsBuilder(std::size_t numVariables) : numVariables_(numVariables) {}

  void add(const AccessRun &a) {
    if (a.run.buffer >= numVariables_ || a.run.count == 0)
      return;
    Pending &p = pending_[a.run.buffer];
    const std::int64_t size = a.elementBytes;
    switch (a.kind) {
    case AccessKind::Read:
      p.touches = true;
      forEachSpan(a.run, size, false, [&](std::uint64_t b, std::uint64_t e) { p.reads.add(b, e); });
      break;
    case AccessKind::Write:
      p.touches = true;
      [[fallthrough]];
    case AccessKind::Undefine:
      forEachSpan(a.run, size, true, [&](std::uint64_t b, std::uint64_t e) { p.kills.add(b, e); });
      break;
    }
  }
  void add(const AccessList &list) {
    for (const AccessRun &a : list.runs)
      add(a);
  }
  void add(AccessKind kind, const RegionList &regions) {
    for (const ByteRun &r : regions.runs)
      add(AccessRun{r, regions.elementBytes, kind});
  }

  Effects effects() {
    Effects effects;
    for (auto &[var, p] : pending_)
      effects[var] = {p.reads.take(), p.kills.take(), p.touches};
    return effects;
  }

private:
  struct Pending {
    RangeCollector reads, kills;
    bool touches = false;
  };
  std::size_t numVariables_;
  std::map<unsigned, Pending> pending_;
};

// The effects of the steps that move data between variables: compute sets (executed or
// launched), kernels, copies (the programs' and the gathers and scatters), WriteUndef;
// everything else a step touches is pinned (always live) and needs no tracking. Made once per
// compute set, kernel and copy, however many steps run it.
class StepEffects {
public:
  StepEffects(const CompiledGraph &graph, const LoweringState &state, std::size_t numVariables)
      : graph_(graph), state_(state), numVariables_(numVariables),
        computeSets_(graph.computeSets.size()), kernels_(graph.kernels.size()),
        copies_(graph.copies.size()), steps_(graph.steps.size()) {}

  // nullptr: the step has no effects on variables.
  const Effects *of(std::uint32_t index) {
    const Step &step = graph_.steps[index];
    switch (stepKindInfo(step.kind).payload) {
    case StepPayload::ComputeSet:
      return computeSet(step.index);
    case StepPayload::Kernel: {
      const CompiledKernel &k = graph_.kernels[step.index];
      if (k.kind == KernelKind::Block)
        return computeSet(k.launch.computeSet);
      return made(kernels_[step.index], [&](EffectsBuilder &b) {
        b.add(state_.kernelAccesses[step.index]);
      });
    }
    case StepPayload::Copy:
      return made(copies_[step.index], [&](EffectsBuilder &b) {
        const CopyPlan &plan = graph_.copies[step.index];
        b.add(AccessKind::Read, plan.src);
        b.add(AccessKind::Write, plan.dst);
      });
    case StepPayload::None:
      if (const auto it = state_.stepAccesses.find(index); it != state_.stepAccesses.end())
        return made(steps_[index], [&](EffectsBuilder &b) { b.add(it->second); });
      return nullptr;
    case StepPayload::StreamCopy:
    case StepPayload::Print:
    case StepPayload::Cache: // its body's steps carry the effects
      return nullptr;
    }
    return nullptr;
  }

private:
  const Effects *computeSet(std::uint32_t cs) {
    return made(computeSets_[cs], [&](EffectsBuilder &b) { b.add(state_.computeSetAccesses[cs]); });
  }
  template <class F> const Effects *made(std::optional<Effects> &slot, F &&build) {
    if (!slot) {
      EffectsBuilder builder(numVariables_);
      build(builder);
      slot = builder.effects();
    }
    return &*slot;
  }

  const CompiledGraph &graph_;
  const LoweringState &state_;
  std::size_t numVariables_;
  std::vector<std::optional<Effects>> computeSets_, kernels_, copies_, steps_;
};

// Variables that executors touch outside the steps naming them, used by `step`: predicates and
// Switch controls, printed tensors, streamed tensors.
void addPinned(const CompiledGraph &graph, const Step &step, std::size_t numVariables,
               std::set<unsigned> &pinned) {
  auto pin = [&](const RegionList &regions) {
    for (const ByteRun &r : regions.runs)
      if (r.buffer < numVariables)
        pinned.insert(r.buffer);
  };
  const StepKindInfo &info = stepKindInfo(step.kind);
  if (info.readsScalar && step.scalar.buffer < numVariables)
    pinned.insert(step.scalar.buffer);
  if (info.payload == StepPayload::Print)
    pin(graph.prints[step.index].regions);
  if (info.payload == StepPayload::StreamCopy)
    pin(graph.streamCopies[step.index].tensor);
}

// One program with calls inlined: steps numbered in run order, control flow kept as a tree.
struct Node {
  enum class Kind : std::uint8_t { Step, Sequence, Branches, Repeat, While };
  Kind kind = Kind::Step;
  std::uint64_t begin = 0, end = 0; // numbers of its first and last step
  bool mayRunZeroTimes = false;     // Repeat with count 0
  const Effects *effects = nullptr; // Step
  std::vector<std::uint32_t> children; // While: [cond, body]
};

struct Span {
  std::uint64_t begin = std::numeric_limits<std::uint64_t>::max(), end = 0;
  void cover(std::uint64_t b, std::uint64_t e) {
    begin = std::min(begin, b);
    end = std::max(end, e);
  }
};

// One program's steps with calls inlined, numbered in the order they run.
class Unroller {
public:
  Unroller(const CompiledGraph &graph, const std::vector<const Effects *> &effects)
      : graph_(graph), effects_(effects), open_(graph.steps.size(), false) {}

  // The root node, or nothing when the program calls itself or is too long.
  std::optional<std::uint32_t> unroll(std::uint32_t root) {
    const std::uint32_t node = add(root);
    if (failed_)
      return std::nullopt;
    return node;
  }
  const std::vector<Node> &nodes() const { return nodes_; }
  const std::map<unsigned, Span> &accesses() const { return accesses_; }

private:
  std::uint32_t leaf(const Effects *effects) {
    Node n;
    n.begin = n.end = next_++;
    n.effects = effects;
    if (effects)
      for (const auto &[var, e] : *effects)
        if (e.touches)
          accesses_[var].cover(n.begin, n.begin);
    failed_ |= next_ > kMaxSteps;
    nodes_.push_back(std::move(n));
    return std::uint32_t(nodes_.size() - 1);
  }

  std::uint32_t add(std::uint32_t index) {
    if (failed_)
      return leaf(nullptr);
    // A step inside itself: a function that calls itself.
    if (open_[index]) {
      failed_ = true;
      return leaf(nullptr);
    }
    open_[index] = true;
    const std::uint32_t node = addOpen(index);
    open_[index] = false;
    return node;
  }

  std::uint32_t addOpen(std::uint32_t index) {
    const Step &step = graph_.steps[index];
    Node n;
    switch (step.kind) {
    case StepKind::Sequence:
      // A Sequence of one child (a Call, a compute set's own Copy steps around it) is the child.
      if (step.children.size() == 1)
        return add(step.children[0]);
      n.kind = Node::Kind::Sequence;
      break;
    case StepKind::If:
    case StepKind::Switch: n.kind = Node::Kind::Branches; break;
    case StepKind::Repeat:
      n.kind = Node::Kind::Repeat;
      n.mayRunZeroTimes = step.count == 0;
      break;
    case StepKind::RepeatWhileTrue:
    case StepKind::RepeatWhileFalse: n.kind = Node::Kind::While; break;
    case StepKind::Cached: // its body once or not at all (what it touches is pinned anyway)
      n.kind = Node::Kind::Repeat;
      n.mayRunZeroTimes = true;
      break;
    case StepKind::Execute:
    case StepKind::Copy:
    case StepKind::StreamToTensor:
    case StepKind::TensorToStream:
    case StepKind::PrintTensor:
    case StepKind::Abort:
    case StepKind::Kernel:
    case StepKind::Nop: return leaf(effects_[index]);
    }
    if (step.children.empty())
      return leaf(nullptr);
    n.begin = next_;
    for (std::uint32_t child : step.children)
      n.children.push_back(add(child));
    n.end = next_ - 1;
    nodes_.push_back(std::move(n));
    return std::uint32_t(nodes_.size() - 1);
  }

  const CompiledGraph &graph_;
  const std::vector<const Effects *> &effects_;
  std::vector<Node> nodes_;
  std::map<unsigned, Span> accesses_;
  std::vector<bool> open_; // the steps being unrolled: their ancestors and themselves
  std::uint64_t next_ = 0;
  bool failed_ = false;
};

using LiveSet = std::map<unsigned, ByteSet>; // only variables with live bytes

LiveSet unite(LiveSet a, const LiveSet &b) {
  for (const auto &[var, bytes] : b)
    a[var].add(bytes);
  return a;
}

// Backward liveness over an unrolled program; records the loops whose head each variable is
// live at.
class BackwardLiveness {
public:
  explicit BackwardLiveness(const std::vector<Node> &nodes) : nodes_(nodes) {}

  LiveSet before(std::uint32_t index, LiveSet after) {
    const Node &n = nodes_[index];
    switch (n.kind) {
    case Node::Kind::Step:
      if (n.effects)
        for (const auto &[var, e] : *n.effects) {
          ByteSet &bytes = after[var];
          bytes.remove(e.kills);
          bytes.add(e.reads);
          if (bytes.empty())
            after.erase(var);
        }
      return after;
    case Node::Kind::Sequence:
      for (auto it = n.children.rbegin(); it != n.children.rend(); ++it)
        after = before(*it, std::move(after));
      return after;
    case Node::Kind::Branches: {
      LiveSet live;
      for (std::uint32_t child : n.children)
        live = unite(std::move(live), before(child, after));
      return live;
    }
    case Node::Kind::Repeat: {
      // head = body(after ∪ head)
      LiveSet atEnd = after, head;
      for (;;) {
        head = before(n.children[0], atEnd);
        LiveSet next = unite(after, head);
        if (next == atEnd)
          break;
        atEnd = std::move(next);
      }
      widen(head, n);
      return n.mayRunZeroTimes ? unite(std::move(head), after) : head;
    }
    case Node::Kind::While: {
      // head = cond(after ∪ body(head))
      LiveSet afterCond = after, head;
      for (;;) {
        head = before(n.children[0], afterCond);
        LiveSet next = unite(after, before(n.children[1], head));
        if (next == afterCond)
          break;
        afterCond = std::move(next);
      }
      widen(head, n);
      return head;
    }
    }
    return after;
  }

  const std::map<unsigned, Span> &loops() const { return loops_; }

private:
  void widen(const LiveSet &head, const Node &loop) {
    for (const auto &[var, bytes] : head)
      loops_[var].cover(loop.begin, loop.end);
  }

  const std::vector<Node> &nodes_;
  std::map<unsigned, Span> loops_;
};

} // namespace

void analyseLiveness(const GraphState &graph, const LoweringState &state, CompiledGraph &out) {
  const std::size_t numVariables = graph.variables.size();
  std::vector<bool> pinned(numVariables, false);
  for (std::size_t v = 0; v < numVariables; ++v)
    pinned[v] = graph.variables[v].isConstant || !graph.variables[v].initialData.empty();
  for (const auto *handles : {&out.hostWrites, &out.hostReads})
    for (const auto &[name, handle] : *handles)
      for (const RegionList *regions : {&handle.regions, &handle.metadata})
        for (const ByteRun &r : regions->runs)
          if (r.buffer < numVariables)
            pinned[r.buffer] = true;
  // A Cached step's variables hold its result, or what it was computed from, across runs.
  for (const CachedStep &cache : out.caches)
    for (const auto *buffers : {&cache.reads, &cache.writes})
      for (std::uint32_t b : *buffers)
        if (b < numVariables)
          pinned[b] = true;

  // Effects of every step, the programs using each variable, and variables executors pin.
  StepEffects stepEffects(out, state, numVariables);
  std::vector<const Effects *> effects(out.steps.size(), nullptr);
  std::vector<std::set<std::uint32_t>> users(numVariables);
  for (std::uint32_t p = 0; p < out.programs.size(); ++p) {
    std::set<unsigned> pinnedHere;
    forEachStep(out, ArrayRef<std::uint32_t>(&out.programs[p], 1),
                [&](std::uint32_t s, const Step &step) {
                  addPinned(out, step, numVariables, pinnedHere);
                  effects[s] = stepEffects.of(s);
                  if (effects[s])
                    for (const auto &[var, e] : *effects[s])
                      users[var].insert(p);
                });
    for (unsigned var : pinnedHere)
      pinned[var] = true;
  }

  std::vector<std::optional<Span>> ranges(numVariables);
  for (std::uint32_t p = 0; p < out.programs.size(); ++p) {
    Unroller unroller(out, effects);
    const std::optional<std::uint32_t> root = unroller.unroll(out.programs[p]);
    if (!root) {
      logger().debug("liveness: program {} calls itself or has over {} steps unrolled; its "
                     "variables stay always live", p, kMaxSteps);
      for (std::size_t var = 0; var < numVariables; ++var)
        if (users[var].count(p))
          pinned[var] = true;
      continue;
    }
    BackwardLiveness liveness(unroller.nodes());
    for (const auto &[var, bytes] : liveness.before(*root, {}))
      pinned[var] = true; // read before this run wrote it
    for (const auto &[var, span] : unroller.accesses()) {
      Span range = span;
      if (auto it = liveness.loops().find(var); it != liveness.loops().end())
        range.cover(it->second.begin, it->second.end);
      ranges[var] = range;
    }
  }

  for (std::uint32_t var = 0; var < numVariables; ++var) {
    Buffer &b = out.buffers[var];
    b.alwaysLive = pinned[var] || users[var].size() > 1;
    if (b.alwaysLive)
      continue;
    if (users[var].empty() || !ranges[var]) {
      b.liveBegin = 1, b.liveEnd = 0; // never holds a value
      continue;
    }
    b.liveProgram = *users[var].begin();
    b.liveBegin = ranges[var]->begin;
    b.liveEnd = ranges[var]->end;
  }
}

} // namespace aspen::detail
