// ReplicaMeeting: the in-process transport of the cross-replica collectives. The replicas of
// one run (each on its own host thread, EngineImpl::run) meet at each collective step: each
// hands in its data, the last to arrive combines every replica's in replica order, and each
// takes the same result. A collective that cannot complete fails every replica waiting at it,
// never hangs: a replica that ended its run (or failed) without reaching it, replicas at
// different collectives, or a wait past the deadline.
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace aspen::detail {

class ReplicaMeeting {
public:
  using Bytes = std::vector<std::uint8_t>;
  using Combine = std::function<Bytes(const std::vector<Bytes> &contributions)>;

  // The replicas that meet, by their index in the replicated graph, in order.
  explicit ReplicaMeeting(std::vector<unsigned> replicas);

  // Before each run: nobody waits, nobody has left.
  void reset();
  // Replica `local`'s (position in the list) contribution to collective `kernel` (`name` in
  // messages). Returns the result when every replica has contributed; `combine` runs once, on
  // the last to arrive. Raises runtime_error when the collective cannot complete.
  Bytes meet(unsigned local, std::uint32_t kernel, const std::string &name, Bytes data,
             const Combine &combine, std::chrono::steady_clock::time_point deadline,
             double timeoutSeconds);
  // Replica `local`'s run ended (`why`: "finished its run", "failed: ..."): a collective still
  // waiting for it fails.
  void leave(unsigned local, const std::string &why);

private:
  std::string replicaName(unsigned local) const;
  // Fails the collective in progress (every replica waiting at it, and the ones to come).
  void fail(std::string message);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<unsigned> replicas_;
  std::vector<Bytes> contributions_;
  std::vector<std::int64_t> at_; // the collective each replica waits at, -1: none
  std::vector<std::string> atName_, left_;
  unsigned arrived_ = 0;
  // Completed collectives; written with the lock held, read without it by a replica spinning
  // briefly before it sleeps (meet()).
  std::atomic<std::uint64_t> round_{0};
  std::atomic<bool> failed_{false}; // failure_ is set
  Bytes result_;
  std::string failure_;
};

} // namespace aspen::detail
