#include "BlockRunner.hpp"

#include <aspen/Error.hpp>

#include <ucontext.h>

#include <cstring>
#include <memory>
#include <vector>

namespace aspen::detail {

namespace {

struct Fiber {
  ucontext_t context{};
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
    for (unsigned t = 0; t < threads; ++t) {
      Fiber &f = fibers_[t];
      f = Fiber{};
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
        swapcontext(&scheduler_, &f.context);
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

private:
  struct alignas(16) Aligned {
    unsigned char bytes[16];
  };

  static BlockFibers *&active() {
    static thread_local BlockFibers *fibers = nullptr;
    return fibers;
  }

  // The first frame of every fiber: runs its thread, then returns to the scheduler (uc_link).
  static void start() {
    BlockFibers &self = *active();
    Fiber &f = self.fibers_[self.current_];
    f.result = self.entry_(self.fields_, &f.state);
    f.done = true;
  }

  static void barrier(void *runner) {
    auto &self = *static_cast<BlockFibers *>(runner);
    Fiber &f = self.fibers_[self.current_];
    f.waiting = true;
    swapcontext(&f.context, &self.scheduler_);
  }

  BlockEntry entry_ = nullptr;
  const FieldDesc *fields_ = nullptr;
  ucontext_t scheduler_{};
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
