// ThreadPool: runs the iterations of a parallel loop on a fixed set of threads (the caller
// being one of them). The CPU executor runs the tiles of a compute set with it.
//
// An idle worker polls for the next loop for a short while (about 50 us) before it sleeps on the
// condition variable: programs run compute sets back to back, often only tens of microseconds
// long, and waking a sleeping thread costs about as much as such a compute set. A loop only
// notifies when a worker is asleep.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace aspen::detail {

class ThreadPool {
public:
  explicit ThreadPool(unsigned numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned numThreads() const { return static_cast<unsigned>(workers_.size()) + 1; }
  // The worker threads (the caller of parallelFor is the one more).
  std::vector<std::thread::native_handle_type> workerHandles() {
    std::vector<std::thread::native_handle_type> handles;
    for (std::thread &t : workers_)
      handles.push_back(t.native_handle());
    return handles;
  }

  // Calls task(i) for every i in [0, n), in any order and on any thread, and returns when all
  // calls returned. The first exception a call throws is rethrown here.
  void parallelFor(std::size_t n, const std::function<void(std::size_t)> &task);

private:
  void workerLoop();
  void runIterations();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::uint64_t generation_ = 0;
  // generation_ (and stopping_), readable without the lock by polling workers.
  std::atomic<std::uint64_t> published_{0};
  std::atomic<bool> stoppingFlag_{false};
  unsigned sleepers_ = 0;
  bool stopping_ = false;
  // The loop in progress.
  const std::function<void(std::size_t)> *task_ = nullptr;
  std::size_t count_ = 0;
  std::size_t next_ = 0;
  unsigned busy_ = 0;
  std::exception_ptr error_;
};

} // namespace aspen::detail
