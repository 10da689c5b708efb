// EngineImpl: a loaded CompiledGraph, its executor (one per replica it runs), host connections
// and execution profile. Control flow is interpreted here (Run.cpp); the executors do memory
// and compute. The replicas of a run run at once, each on its own host thread.
#pragma once

#include "EngineOptions.hpp"
#include "Profile.hpp"
#include "ReplicaMeeting.hpp"
#include "Streams.hpp"
#include "Transport.hpp"
#include "compiler/CompiledGraph.hpp"
#include "executors/Executor.hpp"

#include <aspen/Device.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <mutex>

namespace aspen::dist {
class World;
}

namespace aspen::detail {

struct RegisteredExecutor;

class EngineImpl {
public:
  // `compileReport` is null for an engine made from an executable; `epoch` is time 0 of the
  // profile's timeline (when compiling began).
  EngineImpl(std::unique_ptr<CompiledGraph> compiled, const EngineOptions &options,
             std::unique_ptr<CompileReport> compileReport = nullptr,
             RunClock::time_point epoch = RunClock::now());
  // Writes the reports autoReport.outputExecutionProfile asks for (a failure is logged).
  ~EngineImpl();
  EngineImpl(const EngineImpl &) = delete;
  EngineImpl &operator=(const EngineImpl &) = delete;

  void load(const Device &device);
  void run(unsigned programIndex, const std::string &debugName);
  // `replica`: a replica of the graph this engine runs (checkReplica), or all of them (kAll;
  // reads refuse it when there are several).
  static constexpr unsigned kAll = ~0u;
  void writeTensor(StringRef handle, const void *begin, const void *end, unsigned replica = kAll);
  void readTensor(StringRef handle, void *begin, void *end, unsigned replica = kAll);
  void writeTensor(StringRef handle, const QuarterMetadata &metadata, const void *begin,
                   const void *end);
  void readTensor(StringRef handle, QuarterMetadata &metadata, void *begin, void *end);
  bool bindTensor(StringRef handle, void *begin, std::size_t bytes, bool readOnly);
  void unbindTensor(StringRef handle);
  void setHostParallelFor(HostParallelFor parallelFor) {
    hostParallelFor_ =
        parallelFor ? std::make_shared<const HostParallelFor>(std::move(parallelFor)) : nullptr;
    for (Replica &r : replicas_)
      if (r.executor)
        r.executor->setHostParallelFor(hostParallelFor_);
  }
  // Stream `handle`'s connection in `replica` (kAll: the only replica this engine runs).
  StreamConnection &stream(StringRef handle, unsigned replica = kAll);
  void setPrintStream(std::ostream &stream) { printStream_ = &stream; }
  void printProfileSummary(std::ostream &out, const ProfileOptions &options) const;
  void resetExecutionProfile() { profile_ = ExecutionProfile(*compiled_); }
  ProfileSources profileSources() const;
  // Held by every Engine call, so that calls from several threads run one at a time; recursive
  // so that a stream callback may call back into its engine (on the thread running it).
  std::recursive_mutex &mutex() const { return mutex_; }

private:
  // One replica this engine runs: its executor (its own memory), its stream connections and
  // what its runs keep. Replicas after the first count their steps in `ownProfile`, which no
  // report shows: the execution profile is the first replica's.
  struct Replica {
    unsigned index = 0; // in the replicated graph
    std::unique_ptr<Executor> executor;
    std::vector<StreamConnection> streams;
    std::vector<std::uint8_t> staging;
    // Buffers bound to the caller's memory (bindTensor): whether that memory is const.
    std::map<std::uint32_t, bool> bound;
    // Per Cached step: its body ran and nothing it depends on was written since. Cleared at
    // load.
    std::vector<std::uint8_t> cacheFresh;
    std::unique_ptr<ExecutionProfile> ownProfile;
  };

  void requireLoaded(const char *what) const;
  // The replicas of a call's `replica` (kAll: every one); stream_connection_error naming `what`
  // for a replica this engine does not run.
  std::vector<Replica *> replicasOf(unsigned replica, const std::string &what);
  // The one replica a QUARTER host access goes to (stream_connection_error with several).
  unsigned singleReplica(const char *what, StringRef handle) const;
  const HostHandle &hostHandle(StringRef handle, bool write, std::size_t bytes) const;
  // A write or read handle's, for bindTensor and unbindTensor (`what`).
  const HostHandle &eitherHandle(StringRef handle, const char *what) const;
  // Raises stream_connection_error when `regions` touch a buffer bound to const memory.
  void requireWritable(const Replica &r, const RegionList &regions, StringRef handle) const;
  // The replicas' executors, made and loaded (each with its replication index written).
  void loadReplicas(const Device &device, const RegisteredExecutor &entry);
  // One replica's run of program step `index` (Run.cpp).
  void runReplica(Replica &r, std::uint32_t programStep);
  void runStep(Replica &r, std::uint32_t index);
  void runLeaf(Replica &r, const Step &step, RunClock::time_point start);
  ExecutionProfile &profileOf(Replica &r) { return r.ownProfile ? *r.ownProfile : profile_; }
  unsigned long long scalarBits(Replica &r, const ScalarRef &scalar);
  bool isTrue(Replica &r, const ScalarRef &scalar);
  std::int64_t integerValue(Replica &r, const ScalarRef &scalar);
  void transfer(Replica &r, const StreamCopy &copy, bool toDevice);
  // Runs collective kernel `index` for replica r (Collectives.cpp): the seconds it took.
  double runCollective(Replica &r, std::uint32_t index);
  // Before device subtree `step` runs as one graph: when it holds collectives, waits for every
  // rank to arrive at its first (the others follow in a fixed order: no control flow is around
  // them, DeviceSubtrees.hpp).
  void arriveAtSubtree(std::uint32_t step);
  // When a collective started at `start` must have met the other replicas.
  RunClock::time_point collectiveDeadline(RunClock::time_point start) const;
  // Runs collective `index` (k) of an engine of one replica straight on the executor's host
  // memory, when the transport can (CollectiveTransport::allReduceDirect); false otherwise.
  // In process, for every replica of this engine at once (transport of one rank): a collective
  // that collective::direct allows, or an ungrouped reduce-scatter or broadcast, of 64 KB or
  // more, run straight on the replicas' executors' host memory, each replica reducing its chunk
  // of every replica's data in replica order and then copying the others' chunks (all-reduce),
  // reducing its own piece (reduce-scatter), or copying every replica's data (all-gather) or the
  // root's (broadcast), between barriers of the meeting. The same bytes as the meeting's path, without its copies. False (on every
  // replica alike) when some replica's memory is not the host's or its data and result overlap
  // where that cannot work.
  bool runTogether(Replica &r, const CompiledKernel &k, std::uint32_t index,
                   RunClock::time_point deadline);
  struct TogetherSlot { // a replica's operands for runTogether, in its executor's host memory
    const std::uint8_t *data = nullptr;
    std::uint8_t *result = nullptr;
    bool usable = false;
  };
  std::vector<TogetherSlot> together_; // by local replica
  bool runDirectly(Replica &r, const CompiledKernel &k, std::uint32_t index,
                   RunClock::time_point deadline);
  // Raises at load when the graph has collectives and this engine runs only some replicas.
  void requireAllReplicasForCollectives() const;
  // Whether the graph's replicas are spread over the ranks of an MPI launch (options_.transport
  // and the launch); raises when they would be but cannot.
  bool spreadOverRanks(const dist::World &world) const;
  // At load, for an engine of one replica with collectives: whether its executor runs them
  // itself (NCCL on a GPU: Executor::newCollectiveId), its communicator made over the ranks.
  void connectDeviceCollectives();
  // The graph's collectives, one line each (collective::describe), for the ranks to compare.
  std::vector<std::string> collectiveSchedule() const;
  // Marks the Cached steps in `caches` stale (CompiledGraph::caches, Caches.hpp).
  static void invalidate(Replica &r, const std::vector<std::uint32_t> &caches) {
    for (std::uint32_t c : caches)
      r.cacheFresh[c] = 0;
  }
  // Adds an event that began at `start` and ends now to the timeline, while it records (the
  // first replica's events only).
  void recordEvent(const Replica &r, ExecutionProfile::Event::Kind kind, std::uint32_t index,
                   RunClock::time_point start);

  std::unique_ptr<CompiledGraph> compiled_;
  EngineOptions options_;
  std::vector<Replica> replicas_;
  // Where the replicas' collectives meet; null for a program without collectives.
  std::unique_ptr<ReplicaMeeting> meeting_;
  // How the meeting's contributions reach the other replicas: set with meeting_ in process,
  // at load over MPI (also for a program without collectives: the ranks check each other).
  std::unique_ptr<CollectiveTransport> transport_;
  bool overMpi_ = false; // the replicas are spread over the ranks of an MPI launch
  bool collectivesOnDevice_ = false; // the executor runs the collectives (NCCL)
  std::ostream *printStream_ = &std::cout;
  std::mutex printMutex_; // replicas print one at a time
  ExecutionProfile profile_;
  std::unique_ptr<CompileReport> compileReport_;
  RunClock::time_point epoch_;
  std::optional<std::pair<double, double>> load_; // {start, seconds} since epoch_
  bool recording_ = false; // this run's events go to profile_.timeline
  // Engine::setHostParallelFor's loop (null: the executor's own threads), kept across loads.
  std::shared_ptr<const HostParallelFor> hostParallelFor_;
  std::vector<bool> deviceOnly_; // deviceOnlySteps(*compiled_) when the executor takes them
  // firstCollectives(*compiled_) when the executor runs the collectives: a device subtree that
  // holds one waits for every rank to arrive at it first.
  std::vector<std::uint32_t> firstCollective_;
  // The run in progress's deadline (options_.timeLimit), checked at every step.
  std::optional<RunClock::time_point> deadline_;
  mutable std::recursive_mutex mutex_;
};

} // namespace aspen::detail
