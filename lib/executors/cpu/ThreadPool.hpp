// ThreadPool: runs the iterations of a parallel loop on a fixed set of threads (the caller
// being one of them). The CPU executor runs the tiles of a compute set with it.
//
// Waiting. Between loops an idle worker polls for the next one before it sleeps on a condition
// variable: programs run compute sets back to back, often only tens of microseconds long, and
// waking a sleeping thread costs about as much as such a compute set. Outside an engine run a
// worker polls for about 50 us; while a run is in progress (setRunning(true) to
// setRunning(false)) it polls for up to 2 ms, and the caller polls for the loop's last
// iteration instead of sleeping: a run's host work between compute sets (copies, control flow)
// often takes longer than 50 us, and on a virtual machine each sleep then costs a wake-up of an
// idle CPU, which made a whole run twice as slow (an H = 256, B = 16 LSTM inference: 5.5 ms run
// after run, 12-13 ms after 0.15 s idle). A run's start wakes the sleeping workers, so that the
// wake-up (tens of microseconds on a virtual machine) passes while the caller does the run's
// host work, not while it waits for a loop's last iteration. Polling yields the CPU every few hundred spins, so a
// pool sharing CPUs with other threads gives way to them.
//
// Order. Thread k of T (the caller is 0) takes iterations [k n / T, (k + 1) n / T) first, in
// order, and then the last iterations left in the others' blocks. A compute set's tiles are
// its tensors' tiles in order, so the same part of the data goes to the same thread call after
// call, still in that core's cache (batch norm inference at 8x64x112x112 alternating between
// two buffers: 720-790 us a call when each iteration went to whichever thread asked first);
// stealing from the far end leaves the owner's next iterations to it.
//
// Placement (Linux). The scheduler places a woken thread near its waker, and after a pause it
// may put a worker on the caller's CPU while another CPU idles: the two then take turns on one
// CPU for the rest of the run (seen on the 2-CPU CI machine after an idle spell: 760 of 1000
// worker iterations ran on the caller's CPU). So a worker that finds itself on the CPU of
// another thread of the pool moves to a CPU none of them is on, if its affinity mask has one:
// it narrows its mask to those CPUs, which moves it at once, and restores the mask, which
// leaves it there. A loop only notifies when a worker is asleep.
//
// Another runtime's threads (Engine::setHostParallelFor, an Aspen extension). A framework that
// embeds Aspen can hand the pool its own parallel loop (PyTorch's OpenMP team): parallelFor then
// runs there, so that the process has one set of busy threads, not the framework's spinning
// beside the pool's. parallelForOnPool always uses the pool's threads: block launches, whose
// co-resident blocks must run at once, and codelets under a time limit, which the watchdog
// stops by signalling the pool's threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
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
  // calls returned. The first exception a call throws is rethrown here, and the iterations not
  // yet started are skipped.
  void parallelFor(std::size_t n, const std::function<void(std::size_t)> &task);
  // The same on the pool's own threads, whatever setExternal gave.
  void parallelForOnPool(std::size_t n, const std::function<void(std::size_t)> &task);

  // The loop parallelFor runs on from now (see the header); null: the pool's threads. Not
  // while a loop runs.
  using External =
      std::function<void(std::size_t, const std::function<void(std::size_t)> &)>;
  void setExternal(std::shared_ptr<const External> external) { external_ = std::move(external); }

  // Whether an engine run is in progress: idle threads then poll longer, and a start wakes the
  // sleeping ones (see the header). Called by the thread that calls parallelFor.
  void setRunning(bool running);

  // Workers asleep on the condition variable now, and how many times a worker leaving the
  // condition variable found a run started since it last looked (a start wakes every sleeper,
  // so each counts it once) (for tests).
  unsigned sleepingWorkers() {
    std::lock_guard lock(mutex_);
    return sleepers_;
  }
  std::uint64_t runWakeups() {
    std::lock_guard lock(mutex_);
    return runWakeups_;
  }

private:
  void workerLoop(unsigned index);
  void runIterations(unsigned self);
  bool claim(unsigned self, std::size_t &i);
  // Polls until done() or the poll time has passed; true when done() held.
  template <class Done> bool poll(Done done, unsigned self);
  // Records that pool thread `self` is on `cpu` (-1: asleep).
  void noteCpu(unsigned self, int cpu);
  // Records the CPU of pool thread `self` (a worker) and moves it off a CPU that another pool
  // thread is on, to one none is on, when its affinity mask has one (see the header).
  void leaveSharedCpu(unsigned self);

  std::vector<std::thread> workers_;
  std::shared_ptr<const External> external_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::uint64_t generation_ = 0;
  // Runs started (setRunning(true)): a start wakes sleeping workers.
  std::uint64_t runs_ = 0, runWakeups_ = 0;
  // generation_ (and stopping_), readable without the lock by polling workers.
  std::atomic<std::uint64_t> published_{0};
  std::atomic<bool> stoppingFlag_{false};
  std::atomic<bool> running_{false};
  unsigned sleepers_ = 0;
  bool stopping_ = false;
  // The loop in progress.
  const std::function<void(std::size_t)> *task_ = nullptr;
  // Its iterations in one contiguous block a thread (the caller's first): [next, end) not yet
  // started. Under mutex_.
  struct Block {
    std::size_t next = 0, end = 0;
  };
  std::vector<Block> blocks_;
  // Iterations of the loop not yet finished (or skipped after an error): 0 ends the loop.
  std::atomic<std::size_t> unfinished_{0};
  bool callerWaiting_ = false;
  std::exception_ptr error_;
  // The CPU each pool thread is on (0: the caller of the loop in progress; -1: asleep or not
  // known) and how many pool threads each CPU has (kMaxCpus of them; CPUs past those are not
  // tracked).
  static constexpr int kMaxCpus = 1024;
  std::unique_ptr<std::atomic<int>[]> cpus_;
  std::unique_ptr<std::atomic<int>[]> occupants_;
};

} // namespace aspen::detail
