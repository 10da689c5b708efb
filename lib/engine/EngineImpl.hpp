// EngineImpl: a loaded CompiledGraph, its executor, host connections and execution profile.
// Control flow is interpreted here (Run.cpp); the executor does memory and compute.
#pragma once

#include "EngineOptions.hpp"
#include "Profile.hpp"
#include "Streams.hpp"
#include "compiler/CompiledGraph.hpp"
#include "executors/Executor.hpp"

#include <aspen/Device.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <mutex>

namespace aspen::detail {

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
  void writeTensor(StringRef handle, const void *begin, const void *end);
  void readTensor(StringRef handle, void *begin, void *end);
  void writeTensor(StringRef handle, const QuarterMetadata &metadata, const void *begin,
                   const void *end);
  void readTensor(StringRef handle, QuarterMetadata &metadata, void *begin, void *end);
  bool bindTensor(StringRef handle, void *begin, std::size_t bytes, bool readOnly);
  void unbindTensor(StringRef handle);
  void setHostParallelFor(HostParallelFor parallelFor) {
    hostParallelFor_ =
        parallelFor ? std::make_shared<const HostParallelFor>(std::move(parallelFor)) : nullptr;
    if (executor_)
      executor_->setHostParallelFor(hostParallelFor_);
  }
  StreamConnection &stream(StringRef handle);
  void setPrintStream(std::ostream &stream) { printStream_ = &stream; }
  void printProfileSummary(std::ostream &out, const ProfileOptions &options) const;
  void resetExecutionProfile() { profile_ = ExecutionProfile(*compiled_); }
  ProfileSources profileSources() const;
  // Held by every Engine call, so that calls from several threads run one at a time; recursive
  // so that a stream callback may call back into its engine (on the thread running it).
  std::recursive_mutex &mutex() const { return mutex_; }

private:
  void requireLoaded(const char *what) const;
  const HostHandle &hostHandle(StringRef handle, bool write, std::size_t bytes) const;
  // A write or read handle's, for bindTensor and unbindTensor (`what`).
  const HostHandle &eitherHandle(StringRef handle, const char *what) const;
  // Raises stream_connection_error when `regions` touch a buffer bound to const memory.
  void requireWritable(const RegionList &regions, StringRef handle) const;
  void runStep(std::uint32_t index);
  unsigned long long scalarBits(const ScalarRef &scalar);
  bool isTrue(const ScalarRef &scalar);
  std::int64_t integerValue(const ScalarRef &scalar);
  void transfer(const StreamCopy &copy, bool toDevice);
  // Marks the Cached steps in `caches` stale (CompiledGraph::caches, Caches.hpp).
  void invalidate(const std::vector<std::uint32_t> &caches) {
    for (std::uint32_t c : caches)
      cacheFresh_[c] = 0;
  }
  // Adds an event that began at `start` and ends now to the timeline, while it records.
  void recordEvent(ExecutionProfile::Event::Kind kind, std::uint32_t index,
                   RunClock::time_point start);

  std::unique_ptr<CompiledGraph> compiled_;
  EngineOptions options_;
  std::unique_ptr<Executor> executor_;
  std::vector<StreamConnection> streams_;
  std::ostream *printStream_ = &std::cout;
  ExecutionProfile profile_;
  std::unique_ptr<CompileReport> compileReport_;
  RunClock::time_point epoch_;
  std::optional<std::pair<double, double>> load_; // {start, seconds} since epoch_
  bool recording_ = false; // this run's events go to profile_.timeline
  std::vector<std::uint8_t> staging_;
  // Buffers bound to the caller's memory (bindTensor): whether that memory is const.
  std::map<std::uint32_t, bool> bound_;
  // Engine::setHostParallelFor's loop (null: the executor's own threads), kept across loads.
  std::shared_ptr<const HostParallelFor> hostParallelFor_;
  std::vector<bool> deviceOnly_; // deviceOnlySteps(*compiled_) when the executor takes them
  // Per Cached step: its body ran and nothing it depends on was written since. Cleared at load.
  std::vector<std::uint8_t> cacheFresh_;
  // The run in progress's deadline (options_.timeLimit), checked at every step.
  std::optional<RunClock::time_point> deadline_;
  mutable std::recursive_mutex mutex_;
};

} // namespace aspen::detail
