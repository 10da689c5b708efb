// ThreadPool: runs the iterations of a parallel loop on a fixed set of threads (the caller
// being one of them). The CPU executor runs the tiles of a compute set with it.
#pragma once

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
  bool stopping_ = false;
  // The loop in progress.
  const std::function<void(std::size_t)> *task_ = nullptr;
  std::size_t count_ = 0;
  std::size_t next_ = 0;
  unsigned busy_ = 0;
  std::exception_ptr error_;
};

} // namespace aspen::detail
