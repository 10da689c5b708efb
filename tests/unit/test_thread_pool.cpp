// The CPU executor's thread pool: every iteration of every loop runs exactly once, in and out of
// an engine run (where waiting threads poll instead of sleeping), an exception reaches the
// caller and leaves the pool usable, and a worker that the scheduler put on the caller's CPU
// moves to an idle one. A run's start wakes the workers that sleep.
#include "executors/cpu/ThreadPool.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

using aspen::detail::ThreadPool;

namespace {

void spinFor(std::chrono::microseconds time) {
  const auto until = std::chrono::steady_clock::now() + time;
  while (std::chrono::steady_clock::now() < until) {
  }
}

} // namespace

TEST_CASE("ThreadPool runs each iteration of each loop once", "[unit][threadpool]") {
  for (unsigned threads : {1u, 2u, 3u, 5u}) {
    for (bool running : {false, true}) {
      CAPTURE(threads, running);
      ThreadPool pool(threads);
      pool.setRunning(running);
      for (std::size_t n : {0u, 1u, 2u, 3u, 7u, 64u}) {
        for (int round = 0; round < 50; ++round) {
          std::vector<std::atomic<int>> hits(n);
          for (auto &h : hits)
            h.store(0);
          pool.parallelFor(n, [&](std::size_t i) {
            if (i % 3 == 0)
              spinFor(std::chrono::microseconds(round % 7 * 10));
            hits[i].fetch_add(1);
          });
          for (std::size_t i = 0; i < n; ++i)
            REQUIRE(hits[i].load() == 1);
        }
      }
      pool.setRunning(false);
    }
  }
}

TEST_CASE("ThreadPool gives each thread its own block first and steals from the far end",
          "[unit][threadpool]") {
  // Two threads, four iterations: the caller's block is [0, 2), the worker's [2, 4). The
  // caller holds iteration 0 until the worker has run both of its own, so the worker runs 2
  // and 3 in order and then takes 1 from the end of the caller's block (the caller, busy in 0,
  // takes nothing else). Handing iterations to whichever thread asks first gives the worker 1,
  // 2 and 3. A caller descheduled before it starts (a loaded machine) finds its block taken:
  // the worker then runs 2, 3, 1 and 0, still stealing from the far end first.
  ThreadPool pool(2);
  pool.setRunning(true);
  for (int round = 0; round < 20; ++round) {
    CAPTURE(round);
    const std::thread::id caller = std::this_thread::get_id();
    std::mutex mutex;
    std::vector<std::size_t> callerRan, workerRan;
    std::atomic<int> workerDone{0};
    bool waited = true;
    pool.parallelFor(4, [&](std::size_t i) {
      if (i == 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (workerDone.load() < 2 && std::chrono::steady_clock::now() < until)
          std::this_thread::yield();
        waited = workerDone.load() >= 2;
      }
      const bool onCaller = std::this_thread::get_id() == caller;
      {
        std::lock_guard lock(mutex);
        (onCaller ? callerRan : workerRan).push_back(i);
      }
      if (!onCaller && i >= 2)
        workerDone.fetch_add(1);
    });
    REQUIRE(waited);
    if (callerRan.empty()) {
      CHECK(workerRan == std::vector<std::size_t>{2, 3, 1, 0});
    } else {
      CHECK(callerRan == std::vector<std::size_t>{0});
      CHECK(workerRan == std::vector<std::size_t>{2, 3, 1});
    }
  }
  pool.setRunning(false);
}

TEST_CASE("ThreadPool rethrows an iteration's exception and stays usable",
          "[unit][threadpool][error]") {
  for (bool running : {false, true}) {
    CAPTURE(running);
    ThreadPool pool(3);
    pool.setRunning(running);
    for (int round = 0; round < 30; ++round) {
      const std::size_t n = 16;
      std::vector<std::atomic<int>> hits(n);
      for (auto &h : hits)
        h.store(0);
      const std::size_t bad = std::size_t(round) % n;
      REQUIRE_THROWS_WITH(pool.parallelFor(n,
                                           [&](std::size_t i) {
                                             hits[i].fetch_add(1);
                                             spinFor(std::chrono::microseconds(5));
                                             if (i == bad)
                                               throw std::runtime_error("iteration failed");
                                           }),
                          "iteration failed");
      REQUIRE(hits[bad].load() == 1);
      for (std::size_t i = 0; i < n; ++i)
        REQUIRE(hits[i].load() <= 1); // later iterations may be skipped, none runs twice
      // The next loop runs in full.
      std::atomic<std::size_t> sum{0};
      pool.parallelFor(n, [&](std::size_t i) { sum.fetch_add(i + 1); });
      REQUIRE(sum.load() == n * (n + 1) / 2);
    }
    pool.setRunning(false);
  }
}

#ifdef __linux__
namespace {

cpu_set_t oneCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return set;
}

} // namespace

// With another runtime's loop (setExternal), parallelFor runs there: every iteration once, the
// first exception rethrown after the loop returns and the iterations after it skipped, and the
// pool usable afterwards; parallelForOnPool keeps the pool's threads.
TEST_CASE("ThreadPool runs loops on another runtime's loop and carries its exceptions",
          "[unit][threadpool]") {
  ThreadPool pool(2);
  std::size_t externalLoops = 0;
  pool.setExternal(std::make_shared<const ThreadPool::External>(
      [&](std::size_t n, const std::function<void(std::size_t)> &task) {
        ++externalLoops;
        for (std::size_t i = 0; i < n; ++i)
          task(i); // in order, on this thread
      }));
  std::vector<int> counts(10, 0);
  pool.parallelFor(counts.size(), [&](std::size_t i) { ++counts[i]; });
  CHECK(externalLoops == 1);
  CHECK(counts == std::vector<int>(10, 1));

  std::vector<int> ran(10, 0);
  CHECK_THROWS_WITH(pool.parallelFor(ran.size(),
                                     [&](std::size_t i) {
                                       ran[i] = 1;
                                       if (i == 3)
                                         throw std::runtime_error("iteration 3");
                                     }),
                    "iteration 3");
  CHECK(ran == std::vector<int>{1, 1, 1, 1, 0, 0, 0, 0, 0, 0});

  std::vector<std::atomic<int>> onPool(16);
  pool.parallelForOnPool(onPool.size(), [&](std::size_t i) { onPool[i].fetch_add(1); });
  CHECK(externalLoops == 2);
  for (const std::atomic<int> &c : onPool)
    CHECK(c.load() == 1);

  pool.setExternal(nullptr);
  pool.parallelFor(counts.size(), [&](std::size_t i) { ++counts[i]; });
  CHECK(externalLoops == 2);
  CHECK(counts == std::vector<int>(10, 2));
}

// Waits, up to 10 s, until value() is `want`; false if it never is.
template <class F> bool becomes(F value, std::uint64_t want) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (value() != want)
    if (std::chrono::steady_clock::now() > until)
      return false;
  return true;
}

// Idle, the workers poll about 50 us and then sleep; a run's start wakes them (they poll while
// the run goes on), its end lets them sleep again, and loops still run every iteration once.
TEST_CASE("ThreadPool wakes its sleeping workers when a run starts", "[unit][threadpool]") {
  ThreadPool pool(3);
  pool.parallelFor(4, [](std::size_t) {}); // a loop before the first wait, as in an engine
  const auto sleepers = [&] { return std::uint64_t(pool.sleepingWorkers()); };
  const auto wakeups = [&] { return pool.runWakeups(); };
  for (std::uint64_t run = 0; run < 3; ++run) {
    CAPTURE(run);
    REQUIRE(becomes(sleepers, 2));
    pool.setRunning(true);
    CHECK(becomes(wakeups, 2 * (run + 1)));
    std::vector<std::atomic<int>> counts(64);
    pool.parallelFor(counts.size(), [&](std::size_t i) { counts[i].fetch_add(1); });
    for (const std::atomic<int> &c : counts)
      CHECK(c.load() == 1);
    pool.setRunning(false);
  }
  CHECK(becomes(sleepers, 2));
}

// Before each loop the worker is put on the caller's CPU (its mask narrowed to that CPU, then
// widened again, which leaves it there), the caller is held there, and the loop's two iterations
// spin 10 ms each, long enough for the worker to get a turn on that CPU. A pool that leaves its
// worker there ran both iterations on one CPU in 9-10 of 20 loops on the 2-CPU CI machine; one
// that moves it, in 0-1.
TEST_CASE("ThreadPool moves a worker off the caller's CPU", "[unit][threadpool]") {
  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  if (CPU_COUNT(&allowed) < 2) {
    WARN("skipped: this process may run on one CPU only");
    return;
  }
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &allowed))
      first = c;
  const cpu_set_t callerCpu = oneCpu(first);
  REQUIRE(sched_setaffinity(0, sizeof callerCpu, &callerCpu) == 0);
  struct Restore {
    cpu_set_t mask;
    ~Restore() { sched_setaffinity(0, sizeof mask, &mask); }
  } restore{allowed};

  ThreadPool pool(2);
  const pthread_t worker = pool.workerHandles().at(0);
  pool.setRunning(true);
  int shared = 0;
  const int loops = 20;
  for (int loop = 0; loop < loops; ++loop) {
    REQUIRE(pthread_setaffinity_np(worker, sizeof callerCpu, &callerCpu) == 0);
    REQUIRE(pthread_setaffinity_np(worker, sizeof allowed, &allowed) == 0);
    std::atomic<int> cpus[2] = {-1, -1};
    pool.parallelFor(2, [&](std::size_t i) {
      spinFor(std::chrono::milliseconds(10));
      cpus[i].store(sched_getcpu());
    });
    shared += cpus[0].load() == cpus[1].load() ? 1 : 0;
  }
  pool.setRunning(false);
  CAPTURE(shared, loops);
  // Both iterations on one CPU: the caller took both (the worker came late) or the worker
  // shared the caller's CPU. A pool that leaves the worker there shares it nearly every time.
  CHECK(shared <= loops / 4);
}
#endif
