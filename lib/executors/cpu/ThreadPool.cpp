#include "ThreadPool.hpp"

#include <utility>

namespace aspen::detail {

ThreadPool::ThreadPool(unsigned numThreads) {
  for (unsigned i = 1; i < numThreads; ++i)
    workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
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
  std::uint64_t seen = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
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
  {
    std::lock_guard lock(mutex_);
    task_ = &task;
    count_ = n;
    next_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  runIterations();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0 && next_ >= count_; });
  task_ = nullptr;
  if (error_)
    std::rethrow_exception(std::exchange(error_, nullptr));
}

} // namespace aspen::detail
