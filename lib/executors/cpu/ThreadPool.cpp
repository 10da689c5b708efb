#include "ThreadPool.hpp"

#include <chrono>
#include <utility>

#ifdef __linux__
#include <sched.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ASPEN_CPU_RELAX() _mm_pause()
#else
#define ASPEN_CPU_RELAX() std::this_thread::yield()
#endif

namespace aspen::detail {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kIdlePoll = std::chrono::microseconds(50);
constexpr auto kRunPoll = std::chrono::milliseconds(2);

int currentCpu() {
#ifdef __linux__
  return sched_getcpu();
#else
  return -1;
#endif
}

} // namespace

ThreadPool::ThreadPool(unsigned numThreads)
    : blocks_(numThreads == 0 ? 1 : numThreads),
      cpus_(new std::atomic<int>[numThreads == 0 ? 1 : numThreads]),
      occupants_(new std::atomic<int>[kMaxCpus]) {
  for (unsigned t = 0; t < (numThreads == 0 ? 1 : numThreads); ++t)
    cpus_[t].store(-1, std::memory_order_relaxed);
  for (int c = 0; c < kMaxCpus; ++c)
    occupants_[c].store(0, std::memory_order_relaxed);
  for (unsigned i = 1; i < numThreads; ++i)
    workers_.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    stoppingFlag_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

void ThreadPool::noteCpu(unsigned self, int cpu) {
  if (cpu >= kMaxCpus)
    cpu = -1;
  const int before = cpus_[self].exchange(cpu, std::memory_order_relaxed);
  if (before == cpu)
    return;
  if (before >= 0)
    occupants_[before].fetch_sub(1, std::memory_order_relaxed);
  if (cpu >= 0)
    occupants_[cpu].fetch_add(1, std::memory_order_relaxed);
}

void ThreadPool::leaveSharedCpu(unsigned self) {
  const int mine = currentCpu();
  noteCpu(self, mine);
#ifdef __linux__
  if (mine < 0 || mine >= kMaxCpus || occupants_[mine].load(std::memory_order_relaxed) < 2)
    return;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return;
  cpu_set_t vacant;
  CPU_ZERO(&vacant);
  for (int c = 0; c < kMaxCpus && c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed) && occupants_[c].load(std::memory_order_relaxed) == 0)
      CPU_SET(c, &vacant);
  // Narrowing the mask moves the thread now; restoring it lets the scheduler move it again
  // later, as it would have.
  if (CPU_COUNT(&vacant) == 0 || sched_setaffinity(0, sizeof vacant, &vacant) != 0)
    return;
  sched_setaffinity(0, sizeof allowed, &allowed);
  noteCpu(self, currentCpu());
#endif
}

void ThreadPool::setRunning(bool running) {
  running_.store(running, std::memory_order_relaxed);
  if (!running) {
    noteCpu(0, -1); // the caller goes back to its own work
    return;
  }
  if (external_)
    return; // the run's loops go to the other runtime: the workers may sleep
  // Wake the sleeping workers now, so that their wake-up overlaps the run's host work before
  // its first loop instead of delaying that loop (see the header). A worker woken onto the
  // caller's CPU moves off it.
  noteCpu(0, currentCpu());
  bool anyAsleep;
  {
    std::lock_guard lock(mutex_);
    ++runs_;
    anyAsleep = sleepers_ != 0;
  }
  if (anyAsleep)
    wake_.notify_all();
}

template <class Done> bool ThreadPool::poll(Done done, unsigned self) {
  const auto start = Clock::now();
  for (unsigned spins = 1;; ++spins) {
    if (done())
      return true;
    if (spins % 64 == 0) {
      const auto limit = running_.load(std::memory_order_relaxed)
                             ? std::chrono::duration_cast<Clock::duration>(kRunPoll)
                             : std::chrono::duration_cast<Clock::duration>(kIdlePoll);
      if (Clock::now() - start >= limit)
        return false;
      if (self == 0)
        noteCpu(0, currentCpu());
      else
        leaveSharedCpu(self);
      if (spins % 512 == 0)
        std::this_thread::yield(); // gives way to other threads on this CPU
    }
    ASPEN_CPU_RELAX();
  }
}

// Iterations are handed out one at a time under the lock: an iteration is a whole tile's
// vertices, which costs far more than taking a mutex. Thread `self` takes its own block's
// iterations first, in order, then the last ones left in the other blocks (see the header).
bool ThreadPool::claim(unsigned self, std::size_t &i) {
  const unsigned threads = numThreads();
  for (unsigned k = 0; k < threads; ++k) {
    Block &block = blocks_[(self + k) % threads];
    if (block.next == block.end)
      continue;
    i = k == 0 ? block.next++ : --block.end;
    return true;
  }
  return false;
}

void ThreadPool::runIterations(unsigned self) {
  std::unique_lock lock(mutex_);
  std::size_t i;
  while (claim(self, i)) {
    const std::function<void(std::size_t)> &task = *task_;
    lock.unlock();
    std::size_t finished = 1;
    try {
      task(i);
    } catch (...) {
      lock.lock();
      if (!error_)
        error_ = std::current_exception();
      for (Block &block : blocks_) { // the iterations skipped
        finished += block.end - block.next;
        block.next = block.end;
      }
      lock.unlock();
    }
    const bool last = unfinished_.fetch_sub(finished, std::memory_order_acq_rel) == finished;
    lock.lock();
    if (last && callerWaiting_)
      done_.notify_all();
  }
}

void ThreadPool::workerLoop(unsigned index) {
  std::uint64_t seen = 0, runSeen = 0;
  for (;;) {
    // Poll for the next loop before sleeping (see the header).
    poll(
        [&] {
          return published_.load(std::memory_order_acquire) != seen ||
                 stoppingFlag_.load(std::memory_order_acquire);
        },
        index);
    std::unique_lock lock(mutex_);
    if (!stopping_ && generation_ == seen) {
      ++sleepers_;
      noteCpu(index, -1);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen || runs_ != runSeen; });
      --sleepers_;
    }
    if (stopping_)
      return;
    if (runs_ != runSeen) { // a run started since this worker last looked
      runSeen = runs_;
      ++runWakeups_;
    }
    if (generation_ == seen)
      continue; // woken by a run's start: poll for its first loop
    seen = generation_;
    lock.unlock();
    leaveSharedCpu(index);
    runIterations(index);
  }
}

void ThreadPool::parallelFor(std::size_t n, const std::function<void(std::size_t)> &task) {
  if (!external_ || n <= 1) {
    parallelForOnPool(n, task);
    return;
  }
  // The other runtime's loop does not carry exceptions (it may be C, or OpenMP): the first is
  // kept here, the iterations after it are skipped, and it is rethrown once the loop returns.
  std::atomic<bool> failed{false};
  std::mutex errorMutex;
  std::exception_ptr error;
  (*external_)(n, [&](std::size_t i) {
    if (failed.load(std::memory_order_relaxed))
      return;
    try {
      task(i);
    } catch (...) {
      std::lock_guard lock(errorMutex);
      if (!error)
        error = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  });
  if (error)
    std::rethrow_exception(error);
}

void ThreadPool::parallelForOnPool(std::size_t n, const std::function<void(std::size_t)> &task) {
  if (workers_.empty() || n <= 1) {
    for (std::size_t i = 0; i < n; ++i)
      task(i);
    return;
  }
  noteCpu(0, currentCpu());
  bool anyAsleep;
  {
    std::lock_guard lock(mutex_);
    task_ = &task;
    for (unsigned b = 0, threads = numThreads(); b < threads; ++b)
      blocks_[b] = {n * b / threads, n * (b + 1) / threads};
    unfinished_.store(n, std::memory_order_relaxed);
    error_ = nullptr;
    ++generation_;
    published_.store(generation_, std::memory_order_release);
    anyAsleep = sleepers_ != 0;
  }
  if (anyAsleep)
    wake_.notify_all();
  runIterations(0);
  const auto finished = [&] { return unfinished_.load(std::memory_order_acquire) == 0; };
  if (!finished() && running_.load(std::memory_order_relaxed))
    poll(finished, 0);
  std::unique_lock lock(mutex_);
  if (!finished()) {
    callerWaiting_ = true;
    noteCpu(0, -1);
    done_.wait(lock, finished);
    callerWaiting_ = false;
  }
  task_ = nullptr;
  if (!running_.load(std::memory_order_relaxed))
    noteCpu(0, -1);
  if (error_)
    std::rethrow_exception(std::exchange(error_, nullptr));
}

} // namespace aspen::detail
