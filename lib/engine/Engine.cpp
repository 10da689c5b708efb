// Engine: the public API over EngineImpl, and EngineImpl's host-facing operations.
#include "EngineImpl.hpp"

#include "DeviceSubtrees.hpp"
#include "ProfileReport.hpp"

#include "compiler/Compiler.hpp"
#include "engine/mpi/MpiTransport.hpp"
#include "support/Logging.hpp"
#include "executors/ExecutorRegistry.hpp"

#include <aspen/Distributed.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>

#include <algorithm>
#include <cstring>

namespace aspen {

namespace detail {

EngineImpl::EngineImpl(std::unique_ptr<CompiledGraph> compiled, const EngineOptions &options,
                       std::unique_ptr<CompileReport> compileReport, RunClock::time_point epoch)
    : compiled_(std::move(compiled)), options_(options), compileReport_(std::move(compileReport)),
      epoch_(epoch) {
  if (!compiled_)
    throw error("Engine: the Executable is empty (it was moved from or released)");
  profile_ = ExecutionProfile(*compiled_);
  // The replicas this engine runs: target.firstRuntimeReplica on, target.numberRuntimeReplica of
  // them (by default: this rank's share over MPI, else all).
  const unsigned r = compiled_->replicationFactor;
  const dist::World world = dist::World::fromEnvironment();
  overMpi_ = spreadOverRanks(world);
  if (overMpi_)
    startMpi();
  unsigned first = options_.firstRuntimeReplica.value_or(0);
  std::optional<unsigned> number = options_.numberRuntimeReplica;
  if (overMpi_ && !options_.firstRuntimeReplica && !number) {
    first = world.firstReplica(r);
    number = world.localReplicas(r);
  }
  if (first >= r || (number && *number > r - first))
    throw invalid_option(
        "Engine: target.firstRuntimeReplica " + std::to_string(first) +
        (number ? " and target.numberRuntimeReplica " + std::to_string(*number)
                : std::string()) +
        " name replicas past the graph's " + std::to_string(r) +
        " (Graph(target, replication_factor(" + std::to_string(r) + ")))");
  replicas_.resize(number.value_or(r - first));
  for (std::size_t i = 0; i < replicas_.size(); ++i) {
    Replica &replica = replicas_[i];
    replica.index = first + unsigned(i);
    replica.streams.reserve(compiled_->streams.size());
    for (const StreamInfo &s : compiled_->streams)
      replica.streams.emplace_back(s.handle, s.bytes(), s.hostToDevice);
    if (i > 0)
      replica.ownProfile = std::make_unique<ExecutionProfile>(*compiled_);
  }
  // Only a program with collectives has its replicas meet: the others' runs skip it.
  if (std::any_of(compiled_->kernels.begin(), compiled_->kernels.end(),
                  [](const CompiledKernel &k) { return runsOnHost(k.kind); })) {
    std::vector<unsigned> indices;
    for (const Replica &replica : replicas_)
      indices.push_back(replica.index);
    meeting_ = std::make_unique<ReplicaMeeting>(std::move(indices));
    together_.assign(replicas_.size(), {});
    if (!overMpi_)
      transport_ = std::make_unique<InProcessTransport>();
  }
  // The graph's reports now, so that they exist even if the program never runs; an execution
  // profile rewrites them when the engine goes.
  if (options_.outputGraphProfile)
    writeReportFiles(profileReport(profileSources()), options_.reportDirectory);
}

EngineImpl::~EngineImpl() {
  if (!options_.outputExecutionProfile)
    return;
  try {
    writeReportFiles(profileReport(profileSources()), options_.reportDirectory);
  } catch (const std::exception &e) {
    logger().error("Engine: the execution profile reports were not written: {}", e.what());
  }
}

ProfileSources EngineImpl::profileSources() const {
  return {*compiled_, profile_, compileReport_.get(), load_};
}

void EngineImpl::load(const Device &device) {
  if (device.getKind() == DeviceKind::None)
    throw error("Engine::load: no device (a default-constructed Device); make one with "
                "Device::createCPUDevice or Device::createModelDevice");
  const auto start = RunClock::now();
  const RegisteredExecutor &entry = registeredExecutorFor(device.getKind());
  if (!entry.built)
    throw error("Engine::load: device " + device.describe() + " needs the " + entry.name +
                " executor, but " + entry.missing);
  const Target &target = device.getTarget();
  if (target.getNumTiles() != compiled_->target.numTiles)
    logger().warn("Engine::load: the graph was compiled for target '{}' with {} tiles but device "
                  "'{}' has {} tiles; running it as compiled",
                  compiled_->target.name, compiled_->target.numTiles, target.getName(),
                  target.getNumTiles());
  if (replicas_.size() > 1 && device.getKind() == DeviceKind::Gpu)
    throw error("Engine::load: this engine runs " + std::to_string(replicas_.size()) +
                " replicas of the graph, and on device " + device.describe() +
                " it runs one only (one process a GPU, target.numberRuntimeReplica 1)");
  if (!overMpi_)
    requireAllReplicasForCollectives();
  loadReplicas(device, entry);
  try {
    if (overMpi_)
      transport_ = joinMpi({fingerprint(*compiled_), collectiveSchedule(),
                            compiled_->replicationFactor, replicas_.front().index,
                            unsigned(replicas_.size()), options_.collectivesTimeout});
    connectDeviceCollectives();
  } catch (...) {
    if (overMpi_)
      transport_.reset();
    for (Replica &replica : replicas_)
      replica.executor.reset();
    throw;
  }
  load_ = {std::chrono::duration<double>(start - epoch_).count(),
           std::chrono::duration<double>(RunClock::now() - start).count()};
}

bool EngineImpl::spreadOverRanks(const dist::World &world) const {
  const unsigned r = compiled_->replicationFactor;
  using Transport = EngineOptions::Transport;
  if (options_.transport == Transport::Threads ||
      (options_.transport == Transport::Auto && (r == 1 || world.size() == 1)))
    return false;
  if (world.hasMpi() || (options_.transport == Transport::Mpi && dist::mpiBuilt()))
    return true;
  const std::string launch =
      world.size() > 1 ? "this process is rank " + std::to_string(world.rank()) + " of " +
                             std::to_string(world.size()) + " launched by " + world.launcher()
                       : "this process was not launched by mpirun";
  throw error("Engine: the graph's " + std::to_string(r) +
              " replicas would be spread over the ranks of the launch, and " + launch +
              (dist::mpiBuilt() ? ", and replicas in different processes meet over MPI only "
                                  "(launch with mpiexec)"
                                : ", and this Aspen was built without MPI (ASPEN_MPI=OFF, or "
                                  "libopenmpi-dev was missing when it was configured)") +
              "; engine option aspen.collectives.transport=threads runs all " +
              std::to_string(r) + " replicas in this process");
}

void EngineImpl::connectDeviceCollectives() {
  collectivesOnDevice_ = false;
  firstCollective_.clear();
  if (!meeting_) // the same on every rank: the ranks' executables are the same
    return;
  const auto deadline = RunClock::now() + std::chrono::duration_cast<RunClock::duration>(
                                              std::chrono::duration<double>(
                                                  options_.collectivesTimeout));
  Executor &executor = *replicas_.front().executor;
  using OnDevice = EngineOptions::OnDevice;
  std::vector<std::uint8_t> id;
  if (transport_->rank() == 0 && replicas_.size() == 1 &&
      options_.collectivesOnDevice != OnDevice::False)
    id = executor.newCollectiveId();
  id = transport_->shareFromFirst(std::move(id), deadline);
  if (id.empty() && options_.collectivesOnDevice == OnDevice::True)
    throw error("Engine::load: aspen.collectives.onDevice is true, and " +
                (transport_->rank() == 0
                     ? std::string("this engine's executor cannot run its collectives itself "
                                   "(only the CUDA executor with NCCL can; its log says why not)")
                     : std::string("rank 0's executor cannot run them")));
  if (id.empty())
    return; // through the host
  if (replicas_.size() != 1) // only a GPU makes an id, and a GPU engine runs one replica
    throw error("Engine::load: rank 0 runs its collectives on its device, and this rank runs " +
                std::to_string(replicas_.size()) + " replicas, which cannot");
  // The launch's engines each run one replica and tile [0, r) (checked when they joined).
  executor.connectCollectives(replicas_.front().index, compiled_->replicationFactor, id, deadline,
                              options_.collectivesTimeout);
  collectivesOnDevice_ = true;
  if (executor.runsDeviceSubtrees()) { // the collectives may now be in its graphs
    deviceOnly_ = deviceOnlySteps(*compiled_, true);
    firstCollective_ = firstCollectives(*compiled_);
  }
}

std::vector<std::string> EngineImpl::collectiveSchedule() const {
  std::vector<std::string> lines;
  for (const CompiledKernel &k : compiled_->kernels)
    if (runsOnHost(k.kind))
      lines.push_back(collective::describe(k));
  return lines;
}

void EngineImpl::loadReplicas(const Device &device, const RegisteredExecutor &entry) {
  // Made and loaded first, so that a failed load leaves the engine as it was.
  std::vector<std::unique_ptr<Executor>> executors;
  for (const Replica &r : replicas_) {
    std::unique_ptr<Executor> executor =
        entry.make(device, options_.executorOptions.at(entry.name).get());
    executor->setHostParallelFor(hostParallelFor_);
    try {
      executor->load(*compiled_);
    } catch (const std::bad_alloc &) {
      throw graph_memory_allocation_error(
          "Engine::load on " + device.describe() + ": out of host memory while loading " +
          (replicas_.size() > 1 ? "replica " + std::to_string(r.index) + " of " : "") +
          "the graph (" + std::to_string(compiled_->arenaBytes) + " bytes of tensors)");
    }
    for (std::uint32_t b : compiled_->replicationIndexBuffers) {
      RegionList index;
      index.elementBytes = 4;
      index.numElements = 1;
      index.runs.push_back({b, 0, 4, 1});
      const std::uint32_t value = r.index;
      executor->write(index, &value);
    }
    executors.push_back(std::move(executor));
  }
  // Only an executor that runs device subtrees itself is offered them.
  deviceOnly_ = executors.front()->runsDeviceSubtrees()
                    ? deviceOnlySteps(*compiled_)
                    : std::vector<bool>(compiled_->steps.size());
  for (std::size_t i = 0; i < replicas_.size(); ++i) {
    replicas_[i].executor = std::move(executors[i]);
    replicas_[i].bound.clear();
    replicas_[i].cacheFresh.assign(compiled_->caches.size(), 0);
  }
}

void EngineImpl::requireLoaded(const char *what) const {
  if (!replicas_.front().executor)
    throw runtime_error(std::string("Engine::") + what +
                        ": the engine is not loaded; call Engine::load(device) first");
}

const HostHandle &EngineImpl::hostHandle(StringRef handle, bool write, std::size_t bytes) const {
  const auto &handles = write ? compiled_->hostWrites : compiled_->hostReads;
  const char *what = write ? "writeTensor" : "readTensor";
  const auto it = handles.find(handle);
  if (it == handles.end()) {
    std::string known;
    for (const auto &[name, h] : handles)
      known += (known.empty() ? "'" : ", '") + name + "'";
    throw stream_connection_error(std::string("Engine::") + what + ": unknown handle '" +
                                  std::string(handle) + "'; the " +
                                  (write ? "createHostWrite" : "createHostRead") +
                                  " handles are: " + (known.empty() ? "(none)" : known));
  }
  if (bytes != it->second.regions.bytes())
    throw stream_connection_error(std::string("Engine::") + what + "('" + std::string(handle) +
                                  "'): the host buffer has " + std::to_string(bytes) +
                                  " bytes but the tensor has " +
                                  std::to_string(it->second.regions.bytes()));
  requireLoaded(what);
  return it->second;
}

const HostHandle &EngineImpl::eitherHandle(StringRef handle, const char *what) const {
  for (const auto *handles : {&compiled_->hostWrites, &compiled_->hostReads})
    if (const auto it = handles->find(handle); it != handles->end())
      return it->second;
  throw stream_connection_error(std::string("Engine::") + what + ": unknown handle '" +
                                std::string(handle) +
                                "'; it binds the tensor of a createHostWrite or createHostRead "
                                "handle");
}

void EngineImpl::requireWritable(const Replica &replica, const RegionList &regions,
                                 StringRef handle) const {
  if (replica.bound.empty())
    return;
  for (const ByteRun &r : regions.runs)
    if (const auto it = replica.bound.find(r.buffer); it != replica.bound.end() && it->second)
      throw stream_connection_error(
          "Engine::writeTensor('" + std::string(handle) + "'): variable '" +
          compiled_->buffers[r.buffer].name +
          "' is bound to a const buffer (bindTensor), which the engine must not write; unbind "
          "it first");
}

// What bindTensor asks of a caller's buffer: malloc's alignment. Codelets assume no more than
// their elements' own (Poplar's Vector alignments are ignored, Vertex.hpp), nor do BLAS and
// oneDNN; the arena's 64-byte buffers are for cache lines, not correctness.
constexpr std::uintptr_t kBindAlignment = 16;

bool EngineImpl::bindTensor(StringRef handle, void *begin, std::size_t bytes, bool readOnly) {
  const char *what = readOnly ? "bindTensor (const)" : "bindTensor";
  const HostHandle &h = eitherHandle(handle, what);
  if (bytes != h.regions.bytes())
    throw stream_connection_error(std::string("Engine::") + what + "('" + std::string(handle) +
                                  "'): the host buffer has " + std::to_string(bytes) +
                                  " bytes but the tensor has " +
                                  std::to_string(h.regions.bytes()));
  requireLoaded(what);
  if (h.type == QUARTER || h.regions.runs.size() != 1 || bytes == 0 ||
      reinterpret_cast<std::uintptr_t>(begin) % kBindAlignment != 0)
    return false;
  const ByteRun &run = h.regions.runs[0];
  const Buffer &buffer = compiled_->buffers[run.buffer];
  if (run.offset != 0 || run.stride != std::int64_t(h.regions.elementBytes) ||
      buffer.bytes != bytes || buffer.kind != BufferKind::Variable || !buffer.alwaysLive ||
      (readOnly && buffer.written))
    return false;
  for (const CachedStep &cache : compiled_->caches)
    for (const auto *buffers : {&cache.reads, &cache.writes})
      if (std::find(buffers->begin(), buffers->end(), run.buffer) != buffers->end())
        return false;
  // Several replicas have several copies of the tensor, and one buffer cannot be all of them.
  if (replicas_.size() > 1)
    return false;
  Replica &r = replicas_.front();
  if (!r.executor->bindBuffer(run.buffer, begin))
    return false;
  r.bound[run.buffer] = readOnly;
  return true;
}

void EngineImpl::unbindTensor(StringRef handle) {
  const HostHandle &h = eitherHandle(handle, "unbindTensor");
  for (const ByteRun &run : h.regions.runs)
    for (Replica &r : replicas_)
      if (const auto it = r.bound.find(run.buffer); it != r.bound.end()) {
        r.executor->bindBuffer(run.buffer, nullptr);
        r.bound.erase(it);
      }
}

std::vector<EngineImpl::Replica *> EngineImpl::replicasOf(unsigned replica,
                                                         const std::string &what) {
  std::vector<Replica *> out;
  for (Replica &r : replicas_)
    if (replica == kAll || r.index == replica)
      out.push_back(&r);
  if (out.empty())
    throw stream_connection_error(
        what + ": replica " + std::to_string(replica) + " is not one this engine runs (" +
        (replicas_.size() == 1 ? "replica " + std::to_string(replicas_.front().index)
                               : "replicas " + std::to_string(replicas_.front().index) + " to " +
                                     std::to_string(replicas_.back().index)) +
        " of " + std::to_string(compiled_->replicationFactor) + ")");
  return out;
}

void EngineImpl::writeTensor(StringRef handle, const void *begin, const void *end,
                             unsigned replica) {
  const std::size_t bytes = static_cast<const char *>(end) - static_cast<const char *>(begin);
  const HostHandle &h = hostHandle(handle, true, bytes); // checks that the engine is loaded
  for (Replica *r : replicasOf(replica, "Engine::writeTensor('" + std::string(handle) + "')")) {
    requireWritable(*r, h.regions, handle);
    if (!h.invalidates.empty()) {
      // What a Cached step depends on: the same bytes again leave it fresh, so a caller that
      // writes unchanged weights before every run (the C backend does) has them packed once.
      r->staging.resize(bytes);
      r->executor->read(h.regions, r->staging.data());
      if (std::memcmp(r->staging.data(), begin, bytes) == 0)
        continue;
      invalidate(*r, h.invalidates);
    }
    r->executor->write(h.regions, begin);
  }
}

void EngineImpl::readTensor(StringRef handle, void *begin, void *end, unsigned replica) {
  const std::size_t bytes = static_cast<char *>(end) - static_cast<char *>(begin);
  const HostHandle &h = hostHandle(handle, false, bytes); // checks that the engine is loaded
  const std::string what = "Engine::readTensor('" + std::string(handle) + "')";
  if (replica == kAll && replicas_.size() > 1)
    throw stream_connection_error(
        what + ": this engine runs " + std::to_string(replicas_.size()) +
        " replicas, each with its own copy of the tensor; read one with readTensor(handle, "
        "replica, begin, end)");
  replicasOf(replica, what).front()->executor->read(h.regions, begin);
}

unsigned EngineImpl::singleReplica(const char *what, StringRef handle) const {
  if (replicas_.size() > 1)
    throw stream_connection_error(std::string("Engine::") + what + "('" + std::string(handle) +
                                  "') with a QuarterMetadata: this engine runs " +
                                  std::to_string(replicas_.size()) +
                                  " replicas; QUARTER tensors are written and read in engines "
                                  "of one replica only");
  return replicas_.front().index;
}

namespace {
const RegionList &metadataRegions(const HostHandle &h, StringRef handle, const char *what) {
  if (h.type != QUARTER)
    throw stream_connection_error(std::string("Engine::") + what + "('" + std::string(handle) +
                                  "') with a QuarterMetadata: the tensor is " +
                                  h.type.toString() + ", not QUARTER");
  if (h.metadata.bytes() != 1)
    throw stream_connection_error(std::string("Engine::") + what + "('" + std::string(handle) +
                                  "') with a QuarterMetadata: the tensor joins QUARTER variables "
                                  "with different metadata tensors, so it has no one metadata");
  return h.metadata;
}
} // namespace

void EngineImpl::writeTensor(StringRef handle, const QuarterMetadata &metadata, const void *begin,
                             const void *end) {
  const std::size_t bytes = static_cast<const char *>(end) - static_cast<const char *>(begin);
  const HostHandle &h = hostHandle(handle, true, bytes);
  const RegionList &m = metadataRegions(h, handle, "writeTensor");
  Replica &r = *replicasOf(singleReplica("writeTensor", handle), "Engine::writeTensor").front();
  requireWritable(r, h.regions, handle);
  requireWritable(r, m, handle);
  invalidate(r, h.invalidates);
  if (h.metadataIsConstant) {
    unsigned char current = 0;
    r.executor->read(m, &current);
    if (current != metadata.getBinary())
      throw stream_connection_error(
          "Engine::writeTensor('" + std::string(handle) + "'): the tensor's metadata is a constant, " +
          QuarterMetadata(static_cast<unsigned char>(current & 0xbf)).toString() +
          ", and cannot become " + metadata.toString());
  } else {
    r.executor->write(m, metadata.data());
  }
  r.executor->write(h.regions, begin);
}

void EngineImpl::readTensor(StringRef handle, QuarterMetadata &metadata, void *begin, void *end) {
  const std::size_t bytes = static_cast<char *>(end) - static_cast<char *>(begin);
  const HostHandle &h = hostHandle(handle, false, bytes);
  const RegionList &m = metadataRegions(h, handle, "readTensor");
  Replica &r = *replicasOf(singleReplica("readTensor", handle), "Engine::readTensor").front();
  unsigned char value = 0;
  r.executor->read(m, &value);
  r.executor->read(h.regions, begin);
  if (value & 0x40u) // written by a vertex from bad input: refuse rather than guess
    throw runtime_error("Engine::readTensor('" + std::string(handle) +
                        "'): the metadata byte " + std::to_string(unsigned(value)) +
                        " on the device is not a valid QuarterMetadata");
  metadata = QuarterMetadata(value);
}

StreamConnection &EngineImpl::stream(StringRef handle, unsigned replica) {
  std::string known;
  for (std::size_t i = 0; i < compiled_->streams.size(); ++i) {
    if (compiled_->streams[i].handle == handle) {
      const std::string what = "Engine::connectStream('" + std::string(handle) + "')";
      if (compiled_->streams[i].broadcast) { // one host source every replica reads
        replicasOf(replica, what);            // a replica named must be one this engine runs
        std::vector<StreamConnection *> readers;
        for (Replica &r : replicas_)
          readers.push_back(&r.streams[i]);
        return broadcastSource(readers);
      }
      if (replica == kAll && replicas_.size() > 1)
        throw stream_connection_error(
            what + ": this engine runs " + std::to_string(replicas_.size()) +
            " replicas, each with its own stream (ReplicatedStreamMode::REPLICATE); connect "
            "each with the replica's index "
            "(connectStream(handle, replica, ...), connectStreamToCallback(handle, replica, "
            "...))");
      return replicasOf(replica, what).front()->streams[i];
    }
    known += (known.empty() ? "'" : ", '") + compiled_->streams[i].handle + "'";
  }
  throw stream_connection_error("unknown stream '" + std::string(handle) +
                                "'; the streams are: " + (known.empty() ? "(none)" : known));
}

void EngineImpl::printProfileSummary(std::ostream &out, const ProfileOptions &options) const {
  detail::printProfileSummary(out, profileSources(), options);
}

} // namespace detail

namespace {
std::unique_ptr<detail::EngineImpl> compileEngine(const Graph &graph,
                                                  ArrayRef<program::Program> programs,
                                                  const OptionFlags &options,
                                                  const ProgressFunc &progress) {
  const auto start = detail::RunClock::now();
  const detail::EngineOptions parsed = detail::parseEngineOptions(options);
  auto report = std::make_unique<detail::CompileReport>();
  auto compiled =
      detail::compile(graph.state(), programs, {parsed.allowOutOfMemory}, progress, report.get());
  return std::make_unique<detail::EngineImpl>(std::move(compiled), parsed, std::move(report),
                                              start);
}
} // namespace

Engine::Engine(const Graph &graph, const program::Program &program, const OptionFlags &options,
               ProgressFunc progress)
    : impl_(compileEngine(graph, ArrayRef<program::Program>(&program, 1), options, progress)) {}

Engine::Engine(const Graph &graph, ArrayRef<program::Program> programs, const OptionFlags &options,
               ProgressFunc progress)
    : impl_(compileEngine(graph, programs, options, progress)) {}

Engine::Engine(Executable &&executable, const OptionFlags &options)
    : impl_(std::make_unique<detail::EngineImpl>(executable.release(),
                                                 detail::parseEngineOptions(options))) {}

Engine::Engine(Engine &&) noexcept = default;
Engine &Engine::operator=(Engine &&) noexcept = default;
Engine::~Engine() = default;

namespace {
// Every call holds the engine's lock: calls from several threads are serialised.
std::unique_lock<std::recursive_mutex> locked(const detail::EngineImpl &impl) {
  return std::unique_lock<std::recursive_mutex>(impl.mutex());
}
} // namespace

void Engine::load(const Device &device) {
  const auto lock = locked(*impl_);
  impl_->load(device);
}
void Engine::run(unsigned programIndex, const std::string &debugName) {
  const auto lock = locked(*impl_);
  impl_->run(programIndex, debugName);
}
void Engine::loadAndRun(const Device &device, unsigned programIndex) {
  const auto lock = locked(*impl_); // one call: no other thread's between the two
  load(device);
  run(programIndex);
}

void Engine::writeTensor(StringRef handle, const void *begin, const void *end) {
  const auto lock = locked(*impl_);
  impl_->writeTensor(handle, begin, end);
}
void Engine::writeTensor(StringRef handle, const QuarterMetadata &metadata, const void *begin,
                         const void *end) {
  const auto lock = locked(*impl_);
  impl_->writeTensor(handle, metadata, begin, end);
}
void Engine::readTensor(StringRef handle, QuarterMetadata &metadata, void *begin, void *end) {
  const auto lock = locked(*impl_);
  impl_->readTensor(handle, metadata, begin, end);
}
void Engine::readTensor(StringRef handle, void *begin, void *end) {
  const auto lock = locked(*impl_);
  impl_->readTensor(handle, begin, end);
}
void Engine::writeTensor(StringRef handle, unsigned replica, const void *begin, const void *end) {
  const auto lock = locked(*impl_);
  impl_->writeTensor(handle, begin, end, replica);
}
void Engine::readTensor(StringRef handle, unsigned replica, void *begin, void *end) {
  const auto lock = locked(*impl_);
  impl_->readTensor(handle, begin, end, replica);
}

bool Engine::bindTensor(StringRef handle, void *begin, void *end) {
  const auto lock = locked(*impl_);
  return impl_->bindTensor(handle, begin, std::size_t(static_cast<char *>(end) - static_cast<char *>(begin)), false);
}
bool Engine::bindTensor(StringRef handle, const void *begin, const void *end) {
  const auto lock = locked(*impl_);
  return impl_->bindTensor(handle, const_cast<void *>(begin),
                           std::size_t(static_cast<const char *>(end) -
                                       static_cast<const char *>(begin)),
                           true);
}
void Engine::unbindTensor(StringRef handle) {
  const auto lock = locked(*impl_);
  impl_->unbindTensor(handle);
}

void Engine::setHostParallelFor(HostParallelFor parallelFor) {
  const auto lock = locked(*impl_);
  impl_->setHostParallelFor(std::move(parallelFor));
}

void Engine::connectStream(StringRef handle, void *p) {
  const auto lock = locked(*impl_);
  impl_->stream(handle).connectBuffer(p);
}
void Engine::connectStream(StringRef handle, void *begin, void *end) {
  const auto lock = locked(*impl_);
  impl_->stream(handle).connectCircular(begin, end);
}
void Engine::connectStreamToCallback(StringRef handle, std::unique_ptr<StreamCallback> callback) {
  const auto lock = locked(*impl_);
  impl_->stream(handle).connectCallback(std::move(callback));
}
void Engine::connectStreamToCallback(StringRef handle, std::function<void(void *)> callback) {
  connectStreamToCallback(handle, std::make_unique<LegacyStreamCallback>(std::move(callback)));
}
void Engine::connectStream(StringRef handle, unsigned replica, void *p) {
  const auto lock = locked(*impl_);
  impl_->stream(handle, replica).connectBuffer(p);
}
void Engine::connectStream(StringRef handle, unsigned replica, void *begin, void *end) {
  const auto lock = locked(*impl_);
  impl_->stream(handle, replica).connectCircular(begin, end);
}
void Engine::connectStreamToCallback(StringRef handle, unsigned replica,
                                     std::unique_ptr<StreamCallback> callback) {
  const auto lock = locked(*impl_);
  impl_->stream(handle, replica).connectCallback(std::move(callback));
}
void Engine::connectStreamToCallback(StringRef handle, unsigned replica,
                                     std::function<void(void *)> callback) {
  connectStreamToCallback(handle, replica,
                          std::make_unique<LegacyStreamCallback>(std::move(callback)));
}

void Engine::setPrintStream(std::ostream &stream) {
  const auto lock = locked(*impl_);
  impl_->setPrintStream(stream);
}
void Engine::printProfileSummary(std::ostream &out, const OptionFlags &options) const {
  const auto lock = locked(*impl_);
  impl_->printProfileSummary(out, detail::parseProfileOptions(options));
}
void Engine::resetExecutionProfile() {
  const auto lock = locked(*impl_);
  impl_->resetExecutionProfile();
}

} // namespace aspen
