// Stopping a codelet that runs past the deadline of its run (the engine option aspen.timeLimit)
// on the CPU executor. A codelet is plain native code in this process, and native code cannot
// be cancelled, only interrupted: a watchdog thread signals the threads that run codelets
// (signal SIGRTMIN + 3), and the signal handler of a thread that is inside a codelet jumps back
// to the loop that called it (siglongjmp), which reports the vertex as stopped.
//
// The codelet's frames are abandoned, not unwound: what it allocated is not freed, and a codelet
// stopped while holding a lock of its own leaves it held. Aspen's codelets hold no locks; the
// run's outputs are undefined after a stop, and the engine can be run again.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <optional>
#include <pthread.h>
#include <thread>
#include <vector>

namespace aspen::detail {

using RunDeadline = std::chrono::steady_clock::time_point;

// Where the handler of this thread jumps to. Armed around calls into codelets.
struct InterruptPoint {
  sigjmp_buf env;
  volatile std::sig_atomic_t armed = 0;
  // The run this point is armed for, and the watchdog's word saying which run it stopped: the
  // handler jumps only when they agree, so a late signal of an earlier run is ignored.
  std::uint64_t generation = 0;
  const std::atomic<std::uint64_t> *stopped = nullptr;
};

InterruptPoint &interruptPoint(); // this thread's

class Watchdog {
public:
  Watchdog() = default;
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  // Starts watching a run: at `deadline` the watchdog signals `threads` (again every few
  // milliseconds) until stop() is called. Returns the run's generation, for InterruptPoint.
  std::uint64_t start(RunDeadline deadline, std::vector<pthread_t> threads);
  // Ends the watch (the run returned or was stopped); no signal of it is sent afterwards.
  void stop();
  // Whether the run being watched passed its deadline (a cheap check for loops).
  bool fired() const { return fired_.load(std::memory_order_acquire); }
  bool watching() const { return watching_; }
  const std::atomic<std::uint64_t> &stoppedGeneration() const { return stoppedGeneration_; }

private:
  void loop();

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool exiting_ = false;
  bool watching_ = false;
  RunDeadline deadline_{};
  std::vector<pthread_t> threads_;
  std::uint64_t generation_ = 0;
  std::atomic<bool> fired_{false};
  std::atomic<std::uint64_t> stoppedGeneration_{0};
};

} // namespace aspen::detail
