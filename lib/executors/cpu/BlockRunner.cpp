#include "BlockRunner.hpp"

#include <aspen/Error.hpp>

#include "CodeletInterrupt.hpp"
#include "ThreadPool.hpp"

#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

// The sanitizers follow a stack switch only when told of it (swapcontext alone confuses
// AddressSanitizer's stack bookkeeping and ThreadSanitizer's shadow stack).
#if defined(__SANITIZE_ADDRESS__)
#define ASPEN_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASPEN_ASAN_FIBERS 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define ASPEN_TSAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ASPEN_TSAN_FIBERS 1
#endif
#endif
#ifdef ASPEN_ASAN_FIBERS
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef ASPEN_TSAN_FIBERS
#include <sanitizer/tsan_interface.h>
#endif

namespace aspen::detail {

namespace {

// One side of a stack switch, as the sanitizers need to hear of it. Without sanitizers every
// member is empty and every call does nothing.
struct SanitizerStack {
#ifdef ASPEN_ASAN_FIBERS
  void *fakeStack = nullptr;
  const void *bottom = nullptr;
  std::size_t size = 0;
#endif
#ifdef ASPEN_TSAN_FIBERS
  void *tsanFiber = nullptr;
#endif
};

// Called just before swapcontext from `from` to `to`; `leaving` is true when `from` never runs
// again (a fiber's last switch).
inline void beginSwitch(SanitizerStack &from, SanitizerStack &to, bool leaving) {
#ifdef ASPEN_ASAN_FIBERS
  __sanitizer_start_switch_fiber(leaving ? nullptr : &from.fakeStack, to.bottom, to.size);
#endif
#ifdef ASPEN_TSAN_FIBERS
  __tsan_switch_to_fiber(to.tsanFiber, 0);
#endif
  (void)from, (void)to, (void)leaving;
}

// Called first thing after a switch lands on `self`; `previous` learns the stack it came from.
inline void endSwitch(SanitizerStack &self, SanitizerStack &previous) {
#ifdef ASPEN_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(self.fakeStack, &previous.bottom, &previous.size);
#endif
  (void)self, (void)previous;
}

enum class FiberStatus : std::uint8_t { Ready, AtBarrier, Polling, Done };

struct Fiber {
  ucontext_t context{};
  SanitizerStack sanitizer{};
  BlockState state{};
  FiberStatus status = FiberStatus::Ready;
  bool idle = false;  // its last poll found the predicate false again and did nothing else
  unsigned where = 0; // a polling fiber's kWaitAt...
  unsigned block = 0; // index into the group's blocks
  int result = 1;
};

struct alignas(16) Aligned {
  unsigned char bytes[16];
};

struct GroupBlock {
  unsigned id = 0;
  unsigned live = 0, atBarrier = 0;
  std::size_t firstFiber = 0;
};

// What a host thread reports of its blocks when the launch cannot go on: per block, where its
// unfinished threads wait.
struct BlockWaits {
  unsigned block;
  std::string waits;
};

// What the host threads of one launch (or of one block of a launch that is not co-resident)
// share: a progress count, and who is idle since which count (BlockRunner.hpp).
class LaunchProgress {
public:
  explicit LaunchProgress(unsigned groups) : active_(groups) {}

  std::uint64_t count() {
    std::lock_guard lock(mutex_);
    return count_;
  }
  void progressed() {
    {
      std::lock_guard lock(mutex_);
      ++count_;
      idleSinceCount_ = 0; // every sleeper's count is stale now
    }
    changed_.notify_all();
  }
  // After a pass that changed nothing, begun at progress count `seen`: waits until another host
  // thread makes progress (true), or until nothing can change or the launch is stopped (false).
  template <class Stop> bool waitForProgress(std::uint64_t seen, Stop stop) {
    std::unique_lock lock(mutex_);
    if (count_ != seen)
      return !ended();
    if (++idleSinceCount_ == active_)
      stuck_ = true;
    while (count_ == seen && !ended()) {
      changed_.wait_for(lock, std::chrono::milliseconds(5));
      if (count_ == seen && !ended() && stop())
        stopped_ = true;
    }
    changed_.notify_all();
    return !ended();
  }
  // This host thread's blocks are finished (or abandoned).
  void finish() {
    {
      std::lock_guard lock(mutex_);
      if (--active_ > 0 && idleSinceCount_ == active_)
        stuck_ = true; // every other host thread sleeps, and this one changed nothing since
    }
    changed_.notify_all();
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
    }
    changed_.notify_all();
  }
  bool stuck() {
    std::lock_guard lock(mutex_);
    return stuck_;
  }
  void report(std::vector<BlockWaits> waits) {
    std::lock_guard lock(mutex_);
    for (BlockWaits &w : waits)
      waits_.push_back(std::move(w));
  }
  // Where the blocks wait, lowest block first, at most `limit` of them.
  std::string describe(std::size_t limit) {
    std::lock_guard lock(mutex_);
    std::sort(waits_.begin(), waits_.end(),
              [](const BlockWaits &a, const BlockWaits &b) { return a.block < b.block; });
    std::string text;
    for (std::size_t i = 0; i < waits_.size() && i < limit; ++i)
      text += (i ? "; block " : "block ") + std::to_string(waits_[i].block) + ": " +
              waits_[i].waits;
    if (waits_.size() > limit)
      text += "; " + std::to_string(waits_.size() - limit) + " more blocks wait";
    return text;
  }

private:
  bool ended() const { return stuck_ || stopped_; }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t count_ = 0;
  unsigned active_;
  unsigned idleSinceCount_ = 0; // host threads asleep since the current count
  bool stuck_ = false, stopped_ = false;
  std::vector<BlockWaits> waits_;
};

// Address space for fiber stacks, reserved without committing memory and kept per host thread.
class StackArena {
public:
  StackArena() = default;
  StackArena(const StackArena &) = delete;
  StackArena &operator=(const StackArena &) = delete;
  ~StackArena() {
    if (base_)
      munmap(base_, bytes_);
  }
  unsigned char *reserve(std::size_t stacks) {
    const std::size_t bytes = stacks * kBlockThreadStackBytes;
    if (bytes > bytes_) {
      if (base_)
        munmap(base_, bytes_);
      base_ = nullptr;
      bytes_ = 0;
      void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED)
        throw runtime_error("block codelet: cannot reserve " + std::to_string(bytes) +
                            " bytes of address space for " + std::to_string(stacks) +
                            " fiber stacks: " + std::strerror(errno));
      base_ = p;
      bytes_ = bytes;
    }
    return static_cast<unsigned char *>(base_);
  }

private:
  void *base_ = nullptr;
  std::size_t bytes_ = 0;
};

const char *waitName(const Fiber &f) {
  switch (f.status) {
  case FiberStatus::AtBarrier:
    return "block.sync";
  case FiberStatus::Polling:
    return f.where == kWaitAtGridSync ? "gridSync" : "waitUntil";
  default:
    return "running";
  }
}

// Some blocks of a launch on this host thread: their fibers, stacks and shared memory.
class FiberGroup {
public:
  FiberGroup() = default;
  FiberGroup(const FiberGroup &) = delete;
  FiberGroup &operator=(const FiberGroup &) = delete;
  ~FiberGroup() { destroyTsanFibers(); }

  // Runs blocks `ids` of `run` until they finish or the launch cannot go on; `progress` is
  // shared with the launch's other host threads.
  void run(const BlockLaunchRun &run, const std::vector<unsigned> &ids, GridState *grid,
           LaunchProgress &progress, BlockLaunchOutcome &outcome) {
    entry_ = run.entry;
    fields_ = run.fields;
    setUp(run, ids, grid);
    InterruptPoint &point = interruptPoint();
    point_ = run.watchdog ? &point : nullptr;
    if (point_) {
      point.generation = run.generation;
      point.stopped = &run.watchdog->stoppedGeneration();
      if (sigsetjmp(point.env, 0)) { // the watchdog stopped a fiber of this thread
#ifdef ASPEN_TSAN_FIBERS
        __tsan_switch_to_fiber(schedulerStack_.tsanFiber, 0);
#endif
        outcome.stopped = true;
        progress.stop();
        progress.finish();
        return;
      }
    }
    auto stop = [&] { return run.watchdog && run.watchdog->fired(); };
    try {
      for (;;) {
        const std::uint64_t seen = progress.count();
        const bool changed = pass(run.reverseThreads);
        if (changed)
          progress.progressed();
        if (finished_ == fibers_.size())
          break;
        if (stop()) {
          outcome.stopped = true;
          progress.stop();
          break;
        }
        if (!changed && !progress.waitForProgress(seen, stop))
          break;
      }
    } catch (...) {
      progress.stop();
      progress.finish();
      throw;
    }
    progress.finish();
    if (finished_ != fibers_.size() && progress.stuck())
      progress.report(describeWaits());
    for (const Fiber &f : fibers_)
      if (f.status == FiberStatus::Done && f.result == 0)
        outcome.failed = true;
  }

private:
  void setUp(const BlockLaunchRun &run, const std::vector<unsigned> &ids, GridState *grid) {
    const std::size_t count = ids.size() * run.threads;
    const std::size_t sharedWords = (run.sharedBytes + 15) / 16;
    // Zeroed: a GPU's contents are undefined, so zero is as good as any.
    shared_.assign(ids.size() * sharedWords, Aligned{});
    warpScratch_.assign(count * 8, 0u); // Block::mmaF16's register exchange
    unsigned char *stacks = stacks_.reserve(count);
    blocks_.assign(ids.size(), GroupBlock{});
    fibers_.assign(count, Fiber{});
    finished_ = 0;
    threadsPerBlock_ = run.threads;
#ifdef ASPEN_TSAN_FIBERS
    schedulerStack_.tsanFiber = __tsan_get_current_fiber();
    destroyTsanFibers();
    while (tsanFibers_.size() < count)
      tsanFibers_.push_back(__tsan_create_fiber(0));
#endif
    for (std::size_t b = 0; b < ids.size(); ++b) {
      blocks_[b] = {ids[b], run.threads, 0, b * run.threads};
      for (unsigned t = 0; t < run.threads; ++t) {
        const std::size_t i = b * run.threads + t;
        Fiber &f = fibers_[i];
        unsigned char *stack = stacks + i * kBlockThreadStackBytes;
#ifdef ASPEN_ASAN_FIBERS
        f.sanitizer.bottom = stack;
        f.sanitizer.size = kBlockThreadStackBytes;
#endif
#ifdef ASPEN_TSAN_FIBERS
        f.sanitizer.tsanFiber = tsanFibers_[i];
#endif
        f.block = unsigned(b);
        f.state = {t,        run.threads, ids[b], run.blocks, shared_.data() + b * sharedWords,
                   run.sharedBytes, &barrier, this, grid, &poll,
                   warpScratch_.data() + b * run.threads * 8};
        if (getcontext(&f.context) != 0)
          throw runtime_error("block codelet: getcontext failed");
        f.context.uc_stack.ss_sp = stack;
        f.context.uc_stack.ss_size = kBlockThreadStackBytes;
        f.context.uc_link = &scheduler_;
        makecontext(&f.context, &start, 0);
      }
    }
  }

  // Resumes every fiber that can run once; true when anything changed.
  bool pass(bool reverse) {
    bool changed = false;
    const std::size_t n = fibers_.size();
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = reverse ? n - 1 - k : k;
      Fiber &f = fibers_[i];
      if (f.status == FiberStatus::AtBarrier || f.status == FiberStatus::Done)
        continue;
      resume(i);
      GroupBlock &block = blocks_[f.block];
      switch (f.status) {
      case FiberStatus::Done:
        changed = true;
        ++finished_;
        --block.live;
        releaseIfAllArrived(block);
        break;
      case FiberStatus::AtBarrier:
        changed = true;
        ++block.atBarrier;
        releaseIfAllArrived(block);
        break;
      case FiberStatus::Polling:
        changed |= !f.idle;
        break;
      case FiberStatus::Ready:
        throw internal_error("block codelet: a fiber came back without saying why");
      }
    }
    return changed;
  }

  void releaseIfAllArrived(GroupBlock &block) {
    if (block.live == 0 || block.atBarrier != block.live)
      return;
    for (std::size_t i = block.firstFiber; i < block.firstFiber + threadsPerBlock_; ++i)
      if (fibers_[i].status == FiberStatus::AtBarrier)
        fibers_[i].status = FiberStatus::Ready;
    block.atBarrier = 0;
  }

  void resume(std::size_t i) {
    Fiber &f = fibers_[i];
    f.status = FiberStatus::Ready;
    current_ = i;
    active() = this;
    if (point_)
      point_->armed = 1;
    beginSwitch(schedulerStack_, f.sanitizer, false);
    swapcontext(&scheduler_, &f.context);
    endSwitch(schedulerStack_, f.sanitizer);
    if (point_)
      point_->armed = 0;
  }

  // Per block, its unfinished threads by where they wait: "thread 0 at gridSync, threads 1-63
  // at block.sync".
  std::vector<BlockWaits> describeWaits() const {
    std::vector<BlockWaits> result;
    const std::size_t threads = threadsPerBlock_;
    for (const GroupBlock &block : blocks_) {
      std::string text;
      for (std::size_t t = 0; t < threads;) {
        const Fiber &f = fibers_[block.firstFiber + t];
        if (f.status == FiberStatus::Done) {
          ++t;
          continue;
        }
        std::size_t last = t;
        while (last + 1 < threads) {
          const Fiber &g = fibers_[block.firstFiber + last + 1];
          if (g.status != f.status || std::strcmp(waitName(g), waitName(f)) != 0)
            break;
          ++last;
        }
        text += (text.empty() ? "" : ", ") +
                (last == t ? "thread " + std::to_string(t)
                           : "threads " + std::to_string(t) + "-" + std::to_string(last)) +
                " at " + waitName(f);
        t = last + 1;
      }
      if (!text.empty())
        result.push_back({block.id, std::move(text)});
    }
    return result;
  }

  void destroyTsanFibers() {
#ifdef ASPEN_TSAN_FIBERS
    for (void *fiber : tsanFibers_)
      __tsan_destroy_fiber(fiber);
    tsanFibers_.clear();
#endif
  }

  static FiberGroup *&active() {
    static thread_local FiberGroup *group = nullptr;
    return group;
  }

  // Switches from the running fiber to the scheduler, and back when it is resumed.
  void yield() {
    Fiber &f = fibers_[current_];
    beginSwitch(f.sanitizer, schedulerStack_, false);
    swapcontext(&f.context, &scheduler_);
    endSwitch(f.sanitizer, schedulerStack_);
  }

  // The first frame of every fiber: runs its thread, then switches to the scheduler for good.
  // It never returns (through uc_link): the sanitizers must hear of the switch just before it
  // happens, with no frame left to unwind on the fiber.
  static void start() {
    FiberGroup &self = *active();
    Fiber &f = self.fibers_[self.current_];
    endSwitch(f.sanitizer, self.schedulerStack_);
    f.result = self.entry_(self.fields_, &f.state);
    f.status = FiberStatus::Done;
    beginSwitch(f.sanitizer, self.schedulerStack_, true);
    setcontext(&self.scheduler_);
  }

  static void barrier(void *runner) {
    auto &self = *static_cast<FiberGroup *>(runner);
    self.fibers_[self.current_].status = FiberStatus::AtBarrier;
    self.yield();
  }

  static void poll(void *runner, int fresh, unsigned where) {
    auto &self = *static_cast<FiberGroup *>(runner);
    Fiber &f = self.fibers_[self.current_];
    f.status = FiberStatus::Polling;
    f.idle = fresh == 0;
    f.where = where;
    self.yield();
  }

  BlockEntry entry_ = nullptr;
  const FieldDesc *fields_ = nullptr;
  InterruptPoint *point_ = nullptr;
  ucontext_t scheduler_{};
  SanitizerStack schedulerStack_{};
#ifdef ASPEN_TSAN_FIBERS
  std::vector<void *> tsanFibers_;
#endif
  std::size_t current_ = 0, finished_ = 0, threadsPerBlock_ = 0;
  std::vector<Fiber> fibers_;
  std::vector<GroupBlock> blocks_;
  std::vector<Aligned> shared_;
  std::vector<unsigned> warpScratch_;
  StackArena stacks_;
};

FiberGroup &threadGroup() {
  static thread_local FiberGroup group;
  return group;
}

} // namespace

BlockLaunchOutcome runBlockLaunch(const BlockLaunchRun &run, ThreadPool &pool) {
  BlockLaunchOutcome outcome;
  std::mutex outcomeMutex;
  auto merge = [&](const BlockLaunchOutcome &o) {
    std::lock_guard lock(outcomeMutex);
    outcome.failed |= o.failed;
    outcome.stopped |= o.stopped;
  };
  if (run.coResident) {
    const unsigned groups = std::min(pool.numThreads(), run.blocks);
    GridState grid{};
    LaunchProgress progress(groups);
    pool.parallelForOnPool(groups, [&](std::size_t g) {
      std::vector<unsigned> ids;
      for (unsigned b = unsigned(g); b < run.blocks; b += groups)
        ids.push_back(b);
      BlockLaunchOutcome o;
      threadGroup().run(run, ids, &grid, progress, o);
      merge(o);
    });
    if (progress.stuck() && !outcome.stopped)
      throw runtime_error("Launch '" + run.name + "': every thread of its " +
                          std::to_string(run.blocks) +
                          " blocks waits and nothing can change any more (" +
                          progress.describe(4) + ")");
    return outcome;
  }
  // Not co-resident: a block at a time on each host thread, each with its own grid words, so
  // that a gridSync over several blocks is always reported rather than completing by chance.
  std::string stuck;
  unsigned stuckBlock = run.blocks;
  pool.parallelForOnPool(run.blocks, [&](std::size_t b) {
    GridState grid{};
    LaunchProgress progress(1);
    BlockLaunchOutcome o;
    threadGroup().run(run, {unsigned(b)}, &grid, progress, o);
    merge(o);
    if (progress.stuck()) {
      std::lock_guard lock(outcomeMutex);
      if (unsigned(b) < stuckBlock) {
        stuckBlock = unsigned(b);
        stuck = progress.describe(1);
      }
    }
  });
  if (!stuck.empty() && !outcome.stopped)
    throw runtime_error("Launch '" + run.name + "' is not co-resident, and " + stuck +
                        ": it waits for something no thread of its own block provides; blocks "
                        "that wait for each other need a co-resident launch "
                        "(LaunchShape::coResident)");
  return outcome;
}

} // namespace aspen::detail
