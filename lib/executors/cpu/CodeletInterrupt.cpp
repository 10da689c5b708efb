#include "CodeletInterrupt.hpp"

#include <aspen/Error.hpp>

#include <cstring>

namespace aspen::detail {

namespace {

int interruptSignal() { return SIGRTMIN + 3; }

struct sigaction previousAction;

void onInterrupt(int signal, siginfo_t *info, void *context) {
  InterruptPoint &p = interruptPoint();
  if (p.armed && p.stopped && p.stopped->load(std::memory_order_relaxed) == p.generation) {
    p.armed = 0;
    siglongjmp(p.env, 1);
  }
  // Not ours (no codelet of a stopped run on this thread): the handler the process had before.
  if (previousAction.sa_flags & SA_SIGINFO) {
    if (previousAction.sa_sigaction)
      previousAction.sa_sigaction(signal, info, context);
  } else if (previousAction.sa_handler != SIG_DFL && previousAction.sa_handler != SIG_IGN) {
    previousAction.sa_handler(signal);
  }
}

void installHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = onInterrupt;
    // SA_NODEFER: the jump leaves the handler, so the signal must not stay blocked after it.
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(interruptSignal(), &action, &previousAction) != 0)
      throw runtime_error(std::string("aspen.timeLimit: cannot install the handler of signal "
                                      "SIGRTMIN+3: ") +
                          std::strerror(errno));
  });
}

} // namespace

InterruptPoint &interruptPoint() {
  // Initial-exec: the signal handler may be the first to read a thread's point (a pool thread
  // that has run no codelet yet), and this model reads it without calling into the dynamic
  // loader, which might allocate.
  [[gnu::tls_model("initial-exec")]] static thread_local InterruptPoint point;
  return point;
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    exiting_ = true;
    watching_ = false;
  }
  changed_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

std::uint64_t Watchdog::start(RunDeadline deadline, std::vector<pthread_t> threads) {
  installHandler();
  std::lock_guard lock(mutex_);
  if (!thread_.joinable())
    thread_ = std::thread([this] { loop(); });
  deadline_ = deadline;
  threads_ = std::move(threads);
  watching_ = true;
  fired_.store(false, std::memory_order_release);
  ++generation_;
  changed_.notify_all();
  return generation_;
}

void Watchdog::stop() {
  std::lock_guard lock(mutex_); // the loop holds it while it signals: none is sent after this
  watching_ = false;
  changed_.notify_all();
}

void Watchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!exiting_) {
    if (!watching_) {
      changed_.wait(lock);
      continue;
    }
    if (std::chrono::steady_clock::now() < deadline_) {
      changed_.wait_until(lock, deadline_);
      continue;
    }
    // Past the deadline: the run's codelets are to stop. Signal until the run ends (a thread
    // may enter a codelet after the first signal, before it sees fired()).
    fired_.store(true, std::memory_order_release);
    stoppedGeneration_.store(generation_, std::memory_order_release);
    for (pthread_t thread : threads_)
      pthread_kill(thread, interruptSignal());
    changed_.wait_for(lock, std::chrono::milliseconds(2));
  }
}

} // namespace aspen::detail
