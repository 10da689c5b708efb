#include "BlockRunner.hpp"

#include <aspen/Error.hpp>

#include <ucontext.h>

#include <cstring>
#include <memory>
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

struct Fiber {
  ucontext_t context{};
  SanitizerStack sanitizer{};
  BlockState state{};
  bool waiting = false, done = false;
  int result = 1;
};

// One block's threads on this host thread. Stacks and shared memory are reused by later blocks
// on the same host thread.
class BlockFibers {
public:
  bool run(BlockEntry entry, const FieldDesc *fields, unsigned blockId, unsigned numBlocks,
           unsigned threads, std::size_t sharedBytes) {
    entry_ = entry;
    fields_ = fields;
    // 16-byte aligned, zeroed: a GPU's contents are undefined, so zero is as good as any.
    shared_.assign((sharedBytes + 15) / 16, Aligned{});
    fibers_.resize(threads);
    while (stacks_.size() < threads)
      stacks_.push_back(std::make_unique<Aligned[]>(kBlockThreadStackBytes / sizeof(Aligned)));
#ifdef ASPEN_TSAN_FIBERS
    // Fresh fibers for each block: a finished fiber never returns from its first frame, so its
    // shadow stack is not reused.
    schedulerStack_.tsanFiber = __tsan_get_current_fiber();
    destroyTsanFibers();
    while (tsanFibers_.size() < threads)
      tsanFibers_.push_back(__tsan_create_fiber(0));
#endif
    for (unsigned t = 0; t < threads; ++t) {
      Fiber &f = fibers_[t];
      f = Fiber{};
#ifdef ASPEN_ASAN_FIBERS
      f.sanitizer.bottom = stacks_[t].get();
      f.sanitizer.size = kBlockThreadStackBytes;
#endif
#ifdef ASPEN_TSAN_FIBERS
      f.sanitizer.tsanFiber = tsanFibers_[t];
#endif
      f.state = {t, threads, blockId, numBlocks, shared_.data(), sharedBytes, &barrier, this};
      if (getcontext(&f.context) != 0)
        throw runtime_error("block codelet: getcontext failed");
      f.context.uc_stack.ss_sp = stacks_[t].get();
      f.context.uc_stack.ss_size = kBlockThreadStackBytes;
      f.context.uc_link = &scheduler_;
      makecontext(&f.context, &start, 0);
    }
    for (;;) {
      bool anyRunning = false;
      for (unsigned t = 0; t < threads; ++t) {
        Fiber &f = fibers_[t];
        if (f.done || f.waiting)
          continue;
        current_ = t;
        active() = this;
        beginSwitch(schedulerStack_, f.sanitizer, false);
        swapcontext(&scheduler_, &f.context);
        endSwitch(schedulerStack_, f.sanitizer);
        anyRunning |= !fibers_[t].done;
      }
      if (!anyRunning)
        break;
      for (Fiber &f : fibers_) // every live thread is at the barrier: release them all
        f.waiting = false;
    }
    bool ok = true;
    for (const Fiber &f : fibers_)
      ok &= f.result != 0;
    return ok;
  }

  BlockFibers() = default;
  BlockFibers(const BlockFibers &) = delete;
  BlockFibers &operator=(const BlockFibers &) = delete;
  ~BlockFibers() { destroyTsanFibers(); }

private:
  void destroyTsanFibers() {
#ifdef ASPEN_TSAN_FIBERS
    for (void *fiber : tsanFibers_)
      __tsan_destroy_fiber(fiber);
    tsanFibers_.clear();
#endif
  }

  struct alignas(16) Aligned {
    unsigned char bytes[16];
  };

  static BlockFibers *&active() {
    static thread_local BlockFibers *fibers = nullptr;
    return fibers;
  }

  // The first frame of every fiber: runs its thread, then switches to the scheduler for good.
  // It never returns (through uc_link): the sanitizers must hear of the switch just before it
  // happens, with no frame left to unwind on the fiber.
  static void start() {
    BlockFibers &self = *active();
    Fiber &f = self.fibers_[self.current_];
    endSwitch(f.sanitizer, self.schedulerStack_);
    f.result = self.entry_(self.fields_, &f.state);
    f.done = true;
    beginSwitch(f.sanitizer, self.schedulerStack_, true);
    setcontext(&self.scheduler_);
  }

  static void barrier(void *runner) {
    auto &self = *static_cast<BlockFibers *>(runner);
    Fiber &f = self.fibers_[self.current_];
    f.waiting = true;
    beginSwitch(f.sanitizer, self.schedulerStack_, false);
    swapcontext(&f.context, &self.scheduler_);
    endSwitch(f.sanitizer, self.schedulerStack_);
  }

  BlockEntry entry_ = nullptr;
  const FieldDesc *fields_ = nullptr;
  ucontext_t scheduler_{};
  SanitizerStack schedulerStack_{};
#ifdef ASPEN_TSAN_FIBERS
  std::vector<void *> tsanFibers_;
#endif
  unsigned current_ = 0;
  std::vector<Fiber> fibers_;
  std::vector<std::unique_ptr<Aligned[]>> stacks_;
  std::vector<Aligned> shared_;
};

} // namespace

bool runCodeletBlock(BlockEntry entry, const FieldDesc *fields, unsigned blockId,
                     unsigned numBlocks, unsigned threads, std::size_t sharedBytes) {
  static thread_local BlockFibers fibers;
  return fibers.run(entry, fields, blockId, numBlocks, threads, sharedBytes);
}

} // namespace aspen::detail
