#include "Liveness.hpp"

#include "StepWalk.hpp"
#include "support/Logging.hpp"
#include "core/ProgramNode.hpp"
#include "core/TensorRegions.hpp"

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

// The bytes of each strided run of a tensor, calling f(var, first byte, last byte + 1) for a
// run's whole span (reads) or only for bytes it certainly covers (kills).
template <class F> void forEachSpan(const Tensor &t, bool exact, F &&f) {
  const std::int64_t size = static_cast<std::int64_t>(t.elementType().size());
  for (const VarRegion &r : flatRegions(t)) {
    if (r.count == 0)
      continue;
    const std::int64_t last = r.byteOffset + r.byteStride * std::int64_t(r.count - 1);
    const std::int64_t lo = std::min(r.byteOffset, last), hi = std::max(r.byteOffset, last);
    const bool dense = r.count == 1 || r.byteStride == 0 || r.byteStride == size ||
                       r.byteStride == -size;
    if (!exact || dense) {
      f(r.var, std::uint64_t(lo), std::uint64_t(hi + size));
    } else if (r.count <= kMaxStridedKill) {
      for (std::size_t i = 0; i < r.count; ++i) {
        const std::int64_t at = r.byteOffset + r.byteStride * std::int64_t(i);
        f(r.var, std::uint64_t(at), std::uint64_t(at + size));
      }
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

// One step's effects, collected span by span and united per variable once, in effects().
class EffectsBuilder {
public:
  void read(const Tensor &t) {
    forEachSpan(t, false, [&](unsigned var, std::uint64_t begin, std::uint64_t end) {
      Pending &p = pending_[var];
      p.reads.add(begin, end);
      p.touches = true;
    });
  }

  void write(const Tensor &t, bool touches) {
    for (unsigned var : variablesOf(t))
      pending_[var].touches |= touches;
    forEachSpan(t, true, [&](unsigned var, std::uint64_t begin, std::uint64_t end) {
      pending_[var].kills.add(begin, end);
    });
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
  std::map<unsigned, Pending> pending_;
};

// The effects of the steps that move data between variables: compute sets (executed or
// launched), library calls, copies, WriteUndef.
// Everything else a step touches is always live and needs no tracking.
Effects effectsOf(const GraphState &graph, const ProgramNode &node) {
  EffectsBuilder effects;
  switch (node.kind) {
  case ProgramKind::Execute:
  case ProgramKind::Launch:
    for (unsigned v : graph.computeSets[node.id].vertices) {
      const VertexRecord &vertex = graph.vertices[v];
      for (std::size_t f = 0; f < vertex.fields.size(); ++f) {
        const FieldInfo &field = vertex.type->fields[f];
        if (!field.isEdge())
          continue;
        const FieldBinding &binding = vertex.fields[f];
        auto access = [&](const Tensor &t) {
          if (!t.valid())
            return;
          if (field.reads())
            effects.read(t);
          if (field.writes())
            effects.write(t, true);
        };
        access(binding.tensor);
        for (const Tensor &edge : binding.edges)
          access(edge);
      }
    }
    break;
  case ProgramKind::Copy:
    effects.read(node.tensor);
    effects.write(node.dst, true);
    break;
  case ProgramKind::WriteUndef:
    effects.write(node.tensor, false);
    break;
  case ProgramKind::LibraryCall: // Gemm: reads a, b, scale (and c when accumulating), writes c
    for (std::size_t i : {0, 1, 3})
      if (node.operands.at(i).valid())
        effects.read(node.operands[i]);
    if (node.flags & kGemmAccumulate)
      effects.read(node.operands.at(2));
    effects.write(node.operands.at(2), true);
    break;
  default:
    break;
  }
  return effects.effects();
}

// Variables that executors touch outside the steps naming them, used by `node`.
void addPinned(const ProgramNode &node, std::set<unsigned> &pinned) {
  auto pin = [&](const Tensor &t) {
    for (unsigned var : variablesOf(t))
      pinned.insert(var);
  };
  switch (node.kind) {
  case ProgramKind::RepeatWhileTrue:
  case ProgramKind::RepeatWhileFalse:
  case ProgramKind::If:
  case ProgramKind::Switch:
  case ProgramKind::AbortOnCondition:
  case ProgramKind::PrintTensor:
  case ProgramKind::TensorToStream:
    pin(node.tensor);
    break;
  case ProgramKind::StreamToTensor:
    pin(node.dst);
    break;
  default:
    break;
  }
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
  Unroller(const CompiledGraph &graph, const StepOrigins &origins,
           const std::vector<const Effects *> &effects)
      : graph_(graph), origins_(origins), effects_(effects) {}

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
    const Step &step = graph_.steps[index];
    const ProgramNode *origin = origins_[index];
    if (origin && origin->kind == ProgramKind::Call) { // a Sequence of the function's body
      const std::uint32_t body = step.children.at(0);
      if (std::find(calls_.begin(), calls_.end(), body) != calls_.end()) {
        failed_ = true;
        return leaf(nullptr);
      }
      calls_.push_back(body);
      const std::uint32_t node = add(body);
      calls_.pop_back();
      return node;
    }
    Node n;
    switch (step.kind) {
    case StepKind::Sequence: n.kind = Node::Kind::Sequence; break;
    case StepKind::If:
    case StepKind::Switch: n.kind = Node::Kind::Branches; break;
    case StepKind::Repeat:
      n.kind = Node::Kind::Repeat;
      n.mayRunZeroTimes = step.count == 0;
      break;
    case StepKind::RepeatWhileTrue:
    case StepKind::RepeatWhileFalse: n.kind = Node::Kind::While; break;
    default: return leaf(effects_[index]);
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
  const StepOrigins &origins_;
  const std::vector<const Effects *> &effects_;
  std::vector<Node> nodes_;
  std::map<unsigned, Span> accesses_;
  std::vector<std::uint32_t> calls_; // the function bodies being inlined
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

void analyseLiveness(const GraphState &graph, const StepOrigins &origins, CompiledGraph &out) {
  const std::size_t numVariables = graph.variables.size();
  std::vector<bool> pinned(numVariables, false);
  for (std::size_t v = 0; v < numVariables; ++v)
    pinned[v] = graph.variables[v].isConstant || !graph.variables[v].initialData.empty();
  for (const auto *handles : {&graph.hostWrites, &graph.hostReads})
    for (const auto &[name, t] : *handles) {
      for (unsigned var : variablesOf(t))
        pinned[var] = true;
      if (const Tensor m = uniqueMetadata(t); m.valid())
        for (unsigned var : variablesOf(m))
          pinned[var] = true;
    }

  // Effects of every step, the programs using each variable, and variables executors pin.
  std::vector<Effects> effectsByStep(out.steps.size());
  std::vector<const Effects *> effects(out.steps.size(), nullptr);
  for (std::uint32_t s = 0; s < out.steps.size(); ++s)
    if (origins[s]) {
      effectsByStep[s] = effectsOf(graph, *origins[s]);
      effects[s] = &effectsByStep[s];
    }
  std::vector<std::set<std::uint32_t>> users(numVariables);
  for (std::uint32_t p = 0; p < out.programs.size(); ++p) {
    std::set<unsigned> pinnedHere;
    forEachStep(out, ArrayRef<std::uint32_t>(&out.programs[p], 1),
                [&](std::uint32_t s, const Step &) {
                  if (!origins[s])
                    return;
                  addPinned(*origins[s], pinnedHere);
                  for (const auto &[var, e] : effectsByStep[s])
                    users[var].insert(p);
                });
    for (unsigned var : pinnedHere)
      pinned[var] = true;
  }

  std::vector<std::optional<Span>> ranges(numVariables);
  for (std::uint32_t p = 0; p < out.programs.size(); ++p) {
    Unroller unroller(out, origins, effects);
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
