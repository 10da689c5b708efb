// CollectiveTransport: how the replicas' contributions to a collective reach each other. The
// engine's replicas meet in process first (ReplicaMeeting); the last to arrive hands their
// contributions to the transport, which returns the whole (CollectiveMath.hpp) every replica
// takes its result from. In process (every replica in this engine) that is the arithmetic
// alone; the MPI transport (MpiTransport.cpp) also exchanges the bytes with the other ranks'
// engines. Every transport gives the same bytes: the contributions are combined in replica
// order wherever they are.
#pragma once

#include "CollectiveMath.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace aspen::detail {

class CollectiveTransport {
public:
  using Clock = std::chrono::steady_clock;
  virtual ~CollectiveTransport() = default;

  // "in process", "MPI": for messages.
  virtual const char *name() const = 0;
  // The whole of collective kernel `index` (k), from this engine's replicas' contributions in
  // replica order. Runs on the thread of the last of them to arrive, one collective at a time.
  // Raises runtime_error when the collective cannot complete by `deadline`.
  virtual collective::Bytes exchange(const CompiledKernel &k, std::uint32_t index,
                                     const std::vector<collective::Bytes> &local,
                                     Clock::time_point deadline) = 0;
  // Whether runDirect can run an engine of one replica's collectives that collective::direct
  // allows.
  virtual bool runsDirectly() const { return false; }
  // Collective kernel `index` of this engine's one replica, from its data in host memory
  // straight into its result there (`data` and `result` the same bytes or apart): no copies on
  // the way.
  virtual void runDirect(const CompiledKernel & /*k*/, std::uint32_t /*index*/,
                         const std::uint8_t * /*data*/, std::uint8_t * /*result*/,
                         Clock::time_point /*deadline*/) {}
  // This process's rank among the transport's, and how many (1 in process).
  virtual unsigned rank() const { return 0; }
  virtual unsigned ranks() const { return 1; }
  // At load: rank 0's `bytes`, on every rank (an executor's communicator id).
  virtual std::vector<std::uint8_t> shareFromFirst(std::vector<std::uint8_t> bytes,
                                                   Clock::time_point /*deadline*/) {
    return bytes;
  }
  // Waits until every rank has reached collective kernel `index` (k), for an executor that
  // runs it itself: the same failures as exchange's, without moving data.
  virtual void arrive(const CompiledKernel & /*k*/, std::uint32_t /*index*/,
                      Clock::time_point /*deadline*/) {}
  // Around each run of the engine: `failure` is null for a run that succeeded.
  virtual void runStarting(unsigned /*program*/) {}
  virtual void runEnded(const std::string * /*failure*/) {}
};

// Every replica in this engine: the whole from the contributions, nothing moved.
class InProcessTransport final : public CollectiveTransport {
public:
  const char *name() const override { return "in process"; }
  collective::Bytes exchange(const CompiledKernel &k, std::uint32_t,
                             const std::vector<collective::Bytes> &local,
                             Clock::time_point) override {
    return collective::whole(k, local);
  }
};

} // namespace aspen::detail
