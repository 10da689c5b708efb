#include "ThreadPool.hpp"

#include <chrono>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ASPEN_CPU_RELAX() _mm_pause()
#else
#define ASPEN_CPU_RELAX() std::this_thread::yield()
#endif

namespace aspen::detail {

ThreadPool::ThreadPool(unsigned numThreads) {
  for (unsigned i = 1; i < numThreads; ++i)
    workers_.emplace_back([this] { workerLoop(); });
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

// Iterations are handed out one at a time under the lock: an iteration is a whole tile's
// vertices, which costs far more than taking a mutex.
void ThreadPool::runIterations() {
  std::unique_lock lock(mutex_);
  while (next_ < count_) {
    const std::size_t i = next_++;
    lock.unlock();
    try {
      (*task_)(i);
    } catch (...) {
      lock.lock();
      if (!error_)
        error_ = std::current_exception();
      next_ = count_;
      continue;
    }
    lock.lock();
  }
}

void ThreadPool::workerLoop() {
  constexpr auto kPoll = std::chrono::microseconds(50);
  std::uint64_t seen = 0;
  for (;;) {
    // Poll for the next loop before sleeping (see the header).
    const auto until = std::chrono::steady_clock::now() + kPoll;
    unsigned spins = 0;
    while (published_.load(std::memory_order_acquire) == seen &&
           !stoppingFlag_.load(std::memory_order_acquire)) {
      ASPEN_CPU_RELAX();
      if (++spins % 64 == 0 && std::chrono::steady_clock::now() >= until)
        break;
    }
    std::unique_lock lock(mutex_);
    ++sleepers_;
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    --sleepers_;
    if (stopping_)
      return;
    seen = generation_;
    ++busy_;
    lock.unlock();
    runIterations();
    lock.lock();
    if (--busy_ == 0)
      done_.notify_all();
  }
}

void ThreadPool::parallelFor(std::size_t n, const std::function<void(std::size_t)> &task) {
  if (workers_.empty() || n <= 1) {
    for (std::size_t i = 0; i < n; ++i)
      task(i);
    return;
  }
  bool anyAsleep;
  {
    std::lock_guard lock(mutex_);
    task_ = &task;
    count_ = n;
    next_ = 0;
    error_ = nullptr;
    ++generation_;
    published_.store(generation_, std::memory_order_release);
    anyAsleep = sleepers_ != 0;
  }
  if (anyAsleep)
    wake_.notify_all();
  runIterations();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0 && next_ >= count_; });
  task_ = nullptr;
  if (error_)
    std::rethrow_exception(std::exchange(error_, nullptr));
}

} // namespace aspen::detail
