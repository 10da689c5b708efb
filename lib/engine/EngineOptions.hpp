// Engine options: Aspen's own ("aspen.*", which must be known: each executor declares
// its keys under its prefix, see executors/ExecutorRegistry.hpp), the Poplar keys Aspen reads or
// accepts, and defaults from the environment (POPLAR_ENGINE_OPTIONS, then ASPEN_ENGINE_OPTIONS,
// each a JSON object of string values; explicit options win). Other keys are logged and ignored.
#pragma once

#include <aspen/OptionFlags.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace aspen::detail {

struct EngineOptions {
  bool allowOutOfMemory = false; // debug.allowOutOfMemory
  // aspen.timeLimit: seconds one Engine::run may take (0: no limit). A run past it stops with
  // a runtime_error, also from inside a codelet that never returns (see docs/reliability.md).
  double timeLimit = 0;
  // aspen.cachedSteps: false runs the body of every program::Cached step each time it is
  // reached, as if it were never fresh (to time what caching saves, or to rule it out).
  bool cachedSteps = true;
  // Poplar's autoReport options: which reports the engine writes into `reportDirectory`
  // (profile.json, trace.json and report.html; docs/profiling.md), and how many runs its
  // timeline records.
  bool outputGraphProfile = false, outputExecutionProfile = false;
  std::string reportDirectory = ".";
  unsigned timelineRuns = 2; // autoReport.executionProfileProgramRunCount
  // Poplar's target.firstRuntimeReplica and target.numberRuntimeReplica: the replicas of a
  // replicated graph this engine runs, [first, first + number) (number unset: to the last).
  // Unset: from the launch over MPI (dist::World), else all of them.
  std::optional<unsigned> firstRuntimeReplica, numberRuntimeReplica;
  // aspen.collectives.timeout: the seconds a replica waits at a collective for the others (and
  // at load, for the other ranks' engines).
  double collectivesTimeout = 600;
  // aspen.collectives.transport: where the replicas of a replicated graph are. Threads: all in
  // this engine; Mpi: spread over the ranks of an MPI launch; Auto: Mpi when this process is
  // one of several ranks (dist::World) and the graph is replicated, else Threads.
  enum class Transport { Auto, Threads, Mpi } transport = Transport::Auto;
  // aspen.collectives.onDevice: whether the executor runs the collectives itself (NCCL on a
  // GPU): Auto when it can, True: it must (a load error says why it cannot), False: never (the
  // bytes go through the host, combined in replica order: the CPU's bits).
  enum class OnDevice { Auto, True, False } collectivesOnDevice = OnDevice::Auto;
  // Each executor's options, by executor name, as its declareOptions read them.
  std::map<std::string, std::shared_ptr<void>> executorOptions;
  // The options of executor `name` as its type (CpuExecutorOptions, CudaExecutorOptions).
  template <class T> const T &executor(const std::string &name) const {
    return *static_cast<const T *>(executorOptions.at(name).get());
  }
};

EngineOptions parseEngineOptions(const OptionFlags &options);

// Options of printProfileSummary.
struct ProfileOptions {
  bool showExecutionSteps = false;
  enum class Format { Text, Json, Trace, Html } format = Format::Text; // aspen.format
  std::string context; // aspen.reportContext: a JSON object, or empty
};
ProfileOptions parseProfileOptions(const OptionFlags &options);

} // namespace aspen::detail
