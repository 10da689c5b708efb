// MPI for the whole process, as Aspen uses it (built with ASPEN_MPI only; the one header that
// includes mpi.h). MPI starts on first use (MPI_THREAD_SERIALIZED: the replicas' threads call
// it, one at a time) unless the program started it, and Aspen then ends it when the process
// exits. Every MPI call Aspen makes holds lock(); no call blocks while holding it: Aspen starts
// non-blocking operations and polls them against a deadline (wait()), so a rank that never
// comes is an error, never a hang.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace aspen::detail::mpi {

using Clock = std::chrono::steady_clock;

class Runtime {
public:
  // Starts MPI if nobody has. Raises aspen::error when it cannot (naming why).
  static Runtime &get();

  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }
  // Aspen's own copy of MPI_COMM_WORLD (its messages never meet the program's).
  MPI_Comm world() const { return world_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The thread level MPI runs at (MPI_THREAD_*).
  int threadLevel() const { return threadLevel_; }
  // The number of the next engine on this rank to join its peers (engines join in the same
  // order on every rank).
  unsigned nextEngine() { return engines_++; }
  // A non-blocking operation was left unfinished (a deadline passed during a data exchange):
  // MPI cannot finish cleanly, so the process aborts the job at exit instead.
  void leftUnfinished() { unfinished_ = true; }

  // Polls `done` (called with the lock held) until it returns true: spinning first, then
  // (unless `spin`: a data exchange every rank has joined) sleeping a little longer each time.
  // Returns false if `deadline` passes first.
  bool wait(const std::function<bool()> &done, Clock::time_point deadline, bool spin = false);
  // Sends `bytes` to `dest` without waiting (MPI_Isend): the runtime keeps them until sent.
  // Call with the lock held.
  void post(std::vector<char> bytes, int dest, int tag, MPI_Comm comm);
  // Waits (at most until `deadline`) for what post() sent to be sent: before a communicator is
  // freed or MPI ends, so that a last message (LEAVE, ABORT) is not lost. Without the lock.
  void flush(Clock::time_point deadline);
  // The engine-join messages (MpiTransport.cpp) that arrived for an engine this rank has not
  // joined yet, by (engine · 4 + kind, rank). Use with the lock held.
  std::map<std::pair<unsigned, int>, std::vector<char>> &earlyJoins() { return earlyJoins_; }

  ~Runtime();

private:
  Runtime();
  std::mutex mutex_;
  MPI_Comm world_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, threadLevel_ = MPI_THREAD_SINGLE;
  unsigned engines_ = 0;
  bool startedByAspen_ = false, unfinished_ = false;
  struct Posted {
    MPI_Request request;
    std::vector<char> bytes;
  };
  std::list<Posted> posted_;
  std::map<std::pair<unsigned, int>, std::vector<char>> earlyJoins_;
};

// "MPI_ERR_...: text" for an MPI error code, for messages.
std::string errorText(int code);
// Raises aspen::runtime_error "what: <MPI's text>" unless code is MPI_SUCCESS.
void check(int code, const char *what);

} // namespace aspen::detail::mpi
