// MPI for the whole process (MpiRuntime.hpp).
#include "MpiRuntime.hpp"

#include <aspen/Error.hpp>

#include <thread>

namespace aspen::detail::mpi {

std::string errorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, std::size_t(length));
}

void check(int code, const char *what) {
  if (code != MPI_SUCCESS)
    throw runtime_error(std::string(what) + ": " + errorText(code));
}

Runtime &Runtime::get() {
  static Runtime runtime;
  return runtime;
}

Runtime::Runtime() {
  int started = 0;
  MPI_Initialized(&started);
  if (!started) {
    int finished = 0;
    MPI_Finalized(&finished);
    if (finished)
      throw error("MPI: the program finalised MPI already, so Aspen's ranks cannot meet");
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &threadLevel_) != MPI_SUCCESS)
      throw error("MPI: MPI_Init_thread failed (is this process started by mpirun?)");
    startedByAspen_ = true;
  } else {
    MPI_Query_thread(&threadLevel_);
  }
  // Errors come back as codes, which Aspen turns into aspen::error, rather than ending the job.
  MPI_Comm_dup(MPI_COMM_WORLD, &world_);
  MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &size_);
}

Runtime::~Runtime() {
  int finished = 0;
  MPI_Finalized(&finished);
  if (finished)
    return;
  if (unfinished_) {
    // A data exchange never finished; MPI_Finalize would wait for it for ever.
    MPI_Abort(MPI_COMM_WORLD, 1);
    return;
  }
  // Messages to ranks that never took them (a peer that had left) are dropped.
  flush(Clock::now() + std::chrono::seconds(1));
  for (Posted &p : posted_) {
    int sent = 0;
    MPI_Test(&p.request, &sent, MPI_STATUS_IGNORE);
    if (!sent)
      MPI_Request_free(&p.request);
  }
  if (startedByAspen_) {
    MPI_Comm_free(&world_);
    MPI_Finalize();
  }
}

void Runtime::post(std::vector<char> bytes, int dest, int tag, MPI_Comm comm) {
  // Forget what has been sent.
  for (auto it = posted_.begin(); it != posted_.end();) {
    int sent = 0;
    MPI_Test(&it->request, &sent, MPI_STATUS_IGNORE);
    it = sent ? posted_.erase(it) : std::next(it);
  }
  Posted &p = posted_.emplace_back(Posted{MPI_REQUEST_NULL, std::move(bytes)});
  check(MPI_Isend(p.bytes.data(), int(p.bytes.size()), MPI_BYTE, dest, tag, comm, &p.request),
        "MPI_Isend");
}

void Runtime::flush(Clock::time_point deadline) {
  wait(
      [this] {
        for (auto it = posted_.begin(); it != posted_.end();) {
          int sent = 0;
          MPI_Test(&it->request, &sent, MPI_STATUS_IGNORE);
          it = sent ? posted_.erase(it) : std::next(it);
        }
        return posted_.empty();
      },
      deadline);
}

bool Runtime::wait(const std::function<bool()> &done, Clock::time_point deadline, bool spin) {
  auto pause = std::chrono::microseconds(0);
  for (int spins = 0;; ++spins) {
    {
      const std::lock_guard<std::mutex> hold(mutex_);
      if (done())
        return true;
    }
    if (Clock::now() >= deadline)
      return false;
    // Spin a little (the peers are usually there), then back off to at most a millisecond so
    // that ranks waiting on an oversubscribed machine leave the cores to the ones working.
    if (spin || spins < 64) {
      std::this_thread::yield();
      continue;
    }
    pause = std::min(std::chrono::microseconds(1000),
                     pause + std::chrono::microseconds(pause.count() / 4 + 5));
    std::this_thread::sleep_for(pause);
  }
}

} // namespace aspen::detail::mpi
