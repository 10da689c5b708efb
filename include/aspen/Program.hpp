// Control programs (aspen::program), with Poplar's names and semantics.
//
// Program is a value type: default-constructible (an empty program), copyable, and able to hold
// any derived program without slicing. Copying a Sequence copies its list of children (the
// children themselves are shared, immutable programs).
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/GraphElements.hpp>
#include <aspen/Tensor.hpp>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace aspen {

namespace detail {
struct ProgramNode;
}

namespace program {

class ASPEN_API Program {
public:
  Program(); // does nothing
  Program(const Program &other);
  Program &operator=(const Program &other);
  Program(Program &&) noexcept = default;
  Program &operator=(Program &&) noexcept = default;
  ~Program();

  bool isEmpty() const;
  const detail::ProgramNode &node() const { return *node_; }

protected:
  explicit Program(std::shared_ptr<detail::ProgramNode> node);
  detail::ProgramNode &mutableNode() { return *node_; }

private:
  std::shared_ptr<detail::ProgramNode> node_;
};

// Runs its programs in order.
class ASPEN_API Sequence : public Program {
  template <class... Ps>
  static constexpr bool arePrograms =
      (std::is_base_of_v<Program, Ps> && ...) &&
      !(sizeof...(Ps) == 1 && (std::is_same_v<Ps, Sequence> && ...)); // not the copy

public:
  Sequence(const DebugContext &debug = {});
  Sequence(std::initializer_list<Program> programs, const DebugContext &debug = {});
  // Poplar's Sequence(p1, p2, ...): one or more programs, in order, without braces (PopLibs'
  // tools build Sequence(Copy(stream, t)) and Sequence(Copy(a, b), Execute(cs), ...)).
  template <class First, class... Rest,
            std::enable_if_t<arePrograms<First, Rest...>, int> = 0>
  explicit Sequence(const First &first, const Rest &...rest) : Sequence() {
    add(first);
    (add(rest), ...);
  }
  void add(const Program &p);
};

// Runs every vertex of a compute set.
class ASPEN_API Execute : public Program {
public:
  explicit Execute(ComputeSet cs, const DebugContext &debug = {});
};

// Copies src to dst as if through a temporary: overlapping or aliased views are correct.
// A stream source or destination moves the stream's next numElements elements.
class ASPEN_API Copy : public Program {
public:
  Copy(const Tensor &src, const Tensor &dst, bool dontOutline = false,
       const DebugContext &debug = {});
  Copy(const DataStream &stream, const Tensor &dst, bool optimiseMemory = false,
       const DebugContext &debug = {});
  Copy(const Tensor &src, const DataStream &stream, bool optimiseMemory = false,
       const DebugContext &debug = {});
};

// Runs body `count` times.
class ASPEN_API Repeat : public Program {
public:
  Repeat(unsigned count, const Program &body, const DebugContext &debug = {});
};

// Runs cond, then body while the scalar `predicate` is non-zero (true) after running cond.
class ASPEN_API RepeatWhileTrue : public Program {
public:
  RepeatWhileTrue(const Program &cond, const Tensor &predicate, const Program &body,
                  const DebugContext &debug = {});
};

// Runs cond, then body while the scalar `predicate` is zero (false) after running cond.
class ASPEN_API RepeatWhileFalse : public Program {
public:
  RepeatWhileFalse(const Program &cond, const Tensor &predicate, const Program &body,
                   const DebugContext &debug = {});
};

// Runs trueBody when the scalar predicate is non-zero, falseBody otherwise.
class ASPEN_API If : public Program {
public:
  If(const Tensor &predicate, const Program &trueBody, const Program &falseBody,
     const DebugContext &debug = {});
};

// Runs the body whose value equals the integral scalar `control`, else the default body.
class ASPEN_API Switch : public Program {
public:
  using CaseBody = std::pair<std::int32_t, Program>;
  Switch(const Tensor &control, const DebugContext &debug = {});
  Switch(const Tensor &control, const Program &defaultBody, const DebugContext &debug = {});
  Switch(const Tensor &control, const std::vector<CaseBody> &cases,
         const DebugContext &debug = {});
  Switch(const Tensor &control, const std::vector<CaseBody> &cases, const Program &defaultBody,
         const DebugContext &debug = {});
  // Raises control_program_error when `value` already has a body.
  Switch &add(std::int32_t value, const Program &body);
};

// Runs a Function made by Graph::addFunction.
class ASPEN_API Call : public Program {
public:
  explicit Call(Function f, const DebugContext &debug = {});
};

// Marks the tensor's contents as undefined (its memory may be reused until written).
class ASPEN_API WriteUndef : public Program {
public:
  explicit WriteUndef(const Tensor &t, const DebugContext &debug = {});
};

// Prints "title: [v0 v1 ...]" to the engine's print stream (nested rows for rank >= 2).
class ASPEN_API PrintTensor : public Program {
public:
  explicit PrintTensor(const Tensor &t, const DebugContext &debug = {});
  PrintTensor(StringRef title, const Tensor &t, const DebugContext &debug = {});
};

// Waits for outstanding work; a no-op on the CPU executor.
enum class SyncType { INTERNAL, EXTERNAL, GLOBAL };
class ASPEN_API Sync : public Program {
public:
  explicit Sync(SyncType type = SyncType::INTERNAL, const DebugContext &debug = {});
};

// Stops the run with aspen::runtime_error when the scalar predicate is non-zero.
class ASPEN_API AbortOnCondition : public Program {
public:
  explicit AbortOnCondition(const Tensor &predicate, const DebugContext &debug = {});
};

// Poplar's copy between the replicas of a replicated graph (Graph(target,
// replication_factor(r))): for each entry {source, destination} of replicaMap, replica
// destination's dst becomes replica source's src (src and dst of one type and element count).
// As Poplar documents it, each replica sends to exactly one other and receives from exactly
// one other, and none copies to itself: the map must be a permutation of 0..r-1 without fixed
// points, e.g. the ring {{0, 2}, {2, 3}, {3, 1}, {1, 0}}; any other map is refused when the
// step is made (index_error for a replica past r, control_program_error otherwise). The engine
// runs it like the collectives (aspen/Collectives.hpp: every replica meets at it) and takes
// every type but QUARTER.
class ASPEN_API CrossReplicaCopy : public Program {
public:
  CrossReplicaCopy(const Tensor &src, const Tensor &dst,
                   const std::map<unsigned, unsigned> &replicaMap,
                   const DebugContext &debug = {});
};

// An Aspen extension (Poplar has none): runs `body` the first time it is reached after
// Engine::load, then again only when a variable the body reads or writes has been written since
// its last run by anything else: a step of any program, Engine::writeTensor, a stream copy. A
// whole variable counts as written when any of its elements is; Engine::writeTensor of such a
// variable compares first, and the bytes it already holds leave the body fresh. Work whose
// result depends only on its inputs, such as a layout change of weights that stay the same
// from run to run, then costs nothing after the first run.
// - The body must be device work only (no stream copies, prints or aborts) and must not write
//   a variable it reads; compiling raises control_program_error naming the program and the
//   variable otherwise.
// - The variables it reads and writes keep their own memory for the engine's lifetime.
// - Copies of a Cached program are one cache wherever they are used.
// - Skipped runs show in the execution profile as runs of the Cached step without runs of its
//   body. The engine option aspen.cachedSteps = false runs the body every time (to time what
//   caching saves, or to rule it out).
class ASPEN_API Cached : public Program {
public:
  explicit Cached(const Program &body, const DebugContext &debug = {});
};

} // namespace program
} // namespace aspen
