// The CUDA executor (see CudaExecutor.hpp).
#include "CudaExecutor.hpp"

#include "CudaCheck.hpp"
#include "CudaDevice.hpp"
#include "CudaExecutorKernels.hpp"
#include "CudaConv.hpp"
#include "CudaGemm.hpp"
#include "CudaGraph.hpp"
#include "CudaNccl.hpp"
#include "GpuLaunchTables.hpp"
#include "compiler/StepWalk.hpp"
#include "support/Logging.hpp"
#include "targets/cuda/GpuCodelets.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <optional>
#include <thread>
#include <utility>

namespace aspen::detail {

namespace {

class NvtxRange {
public:
  explicit NvtxRange(const std::string &name) { nvtxRangePushA(name.c_str()); }
  NvtxRange(const NvtxRange &) = delete;
  NvtxRange &operator=(const NvtxRange &) = delete;
  ~NvtxRange() { nvtxRangePop(); }
};

// A loaded GPU image and its one kernel of interest; unloaded with the executor.
class LoadedLibrary {
public:
  explicit LoadedLibrary(const std::vector<std::uint8_t> &image) {
    ASPEN_CUDA_CHECK(
        cudaLibraryLoadData(&library_, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  }
  LoadedLibrary(const LoadedLibrary &) = delete;
  LoadedLibrary &operator=(const LoadedLibrary &) = delete;
  ~LoadedLibrary() { cudaLibraryUnload(library_); }
  cudaKernel_t kernel(const char *name) const {
    cudaKernel_t kernel = nullptr;
    ASPEN_CUDA_CHECK(cudaLibraryGetKernel(&kernel, library_, name));
    return kernel;
  }

private:
  cudaLibrary_t library_ = nullptr;
};

// Makes the driver load `kernel` into the current context now. With lazy loading (CUDA's
// default) a kernel is otherwise loaded at its first launch, which for the copy and control
// kernels can be inside a CUDA graph capture, where loading is not allowed on every driver.
// Returns its attributes (registers, the largest block it can run).
cudaFuncAttributes loadNow(cudaKernel_t kernel) {
  cudaFuncAttributes attributes{};
  ASPEN_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void *>(kernel)));
  return attributes;
}

void launch(cudaKernel_t kernel, unsigned blocks, unsigned threads, void **args,
            cudaStream_t stream) {
  ASPEN_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void *>(kernel), dim3(blocks),
                                    dim3(threads), args, 0, stream));
}

void *devicePointer(std::uint64_t address) {
  return reinterpret_cast<void *>(static_cast<std::uintptr_t>(address));
}

std::uint64_t align16(std::uint64_t n) { return (n + 15) / 16 * 16; }

constexpr unsigned kCopyThreads = 256;

// A copy plan with its segments on the device.
struct LoadedCopy {
  GpuCopyPlan plan;
  DeviceBuffer segments;                  // every stage's segments, stage after stage
  std::vector<std::uint64_t> stageAddress; // of each stage's first segment
};

LoadedCopy loadCopy(GpuCopyPlan plan) {
  LoadedCopy loaded;
  std::vector<GpuCopySegment> all;
  for (const GpuCopyStage &stage : plan.stages) {
    loaded.stageAddress.push_back(all.size() * sizeof(GpuCopySegment));
    all.insert(all.end(), stage.segments.begin(), stage.segments.end());
  }
  loaded.segments = DeviceBuffer(all.size() * sizeof(GpuCopySegment));
  if (!all.empty())
    ASPEN_CUDA_CHECK(cudaMemcpy(loaded.segments.get(), all.data(),
                                all.size() * sizeof(GpuCopySegment), cudaMemcpyHostToDevice));
  for (std::uint64_t &address : loaded.stageAddress)
    address += loaded.segments.address();
  loaded.plan = std::move(plan);
  return loaded;
}

struct LoadedLaunch {
  cudaKernel_t kernel = nullptr;
  std::uint64_t tiles = 0, vertices = 0, fields = 0; // device addresses
  unsigned numTiles = 0;
  std::uint32_t failureSlot = 0; // index into the executor's failure words
};

struct LoadedComputeSet {
  DeviceBuffer table;
  std::vector<GpuLaunch> launches; // for failure messages
  std::vector<LoadedLaunch> loaded;
  std::uint32_t firstFailureSlot = 0;
};

// A kernel step: a block codelet's kernel (a library kernel's is CudaGemmKernels').
struct LoadedKernel {
  cudaKernel_t block = nullptr;               // a block codelet's kernel
  std::uint64_t blockFields = 0;              // its vertex's descriptors (device address)
  std::uint32_t blockFailureSlot = 0;
  bool coResident = false; // launched cooperatively
};

class CudaExecutor final : public Executor, private CudaStepWork {
public:
  explicit CudaExecutor(const CudaExecutorOptions &options) : options_(options) {}

  ~CudaExecutor() override {
    if (abandoned_) {
      // A kernel of a stopped run may still be running: freeing its memory or its modules would
      // wait for it, perhaps for ever. They are left to the process's end.
      for (DeviceBuffer *b : {&arena_, &temporary_, &staging_, &failures_})
        b->leak();
      (void)graphs_.release();
      for (auto &library : loadedLibraries_)
        (void)library.release();
      (void)gemm_.release();
      (void)conv_.release();
      (void)collectives_.release();
      return;
    }
    if (collectives_ && !collectives_->aborted().empty())
      (void)graphs_.release(); // their captured NCCL work names the aborted communicators
    if (stream_)
      cudaSetDevice(int(options_.ordinal)); // what is freed below lives on this executor's GPU
    graphs_.reset();
    if (start_)
      cudaEventDestroy(start_);
    if (stop_)
      cudaEventDestroy(stop_);
    if (stream_)
      cudaStreamDestroy(stream_);
  }

  void load(const CompiledGraph &graph) override {
    graph_ = &graph;
    useDevice();
    ASPEN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ASPEN_CUDA_CHECK(cudaEventCreate(&start_));
    ASPEN_CUDA_CHECK(cudaEventCreate(&stop_));
    const unsigned cc = computeCapability();
    checkWorkers();

    const LoadedLibrary &copyKernels = *loadedLibraries_.emplace_back(
        std::make_unique<LoadedLibrary>(cudaExecutorKernelImage(ExecutorModule::Copy, cc)));
    copyKernel_ = copyKernels.kernel("aspen_copy_segments");
    loadNow(copyKernel_);

    arena_ = DeviceBuffer(std::max<std::uint64_t>(graph.arenaBytes, 64));
    writeInitialValues();

    std::uint64_t temporaryBytes = 0;
    auto needTemporary = [&](const CopyPlan &plan) {
      if (plan.throughTemporary)
        temporaryBytes = std::max(temporaryBytes, plan.src.bytes());
    };
    for (const CopyPlan &plan : graph.copies)
      needTemporary(plan);
    temporary_ = DeviceBuffer(temporaryBytes);

    loadComputeSets(cc);
    for (const CopyPlan &plan : graph.copies)
      copies_.push_back(
          loadCopy(gpuCopyPlan(plan, graph.buffers, arena_.address(), temporary_.address())));
    loadKernels(cc);

    if (options_.graphControlFlow) {
      if (cudaDriverVersion() < kCudaGraphControlFlowDriverVersion)
        logger().warn("CUDA executor: driver version {} has no IF/ELSE and SWITCH graph nodes "
                      "(needs {}); control flow is driven from the host",
                      cudaDriverVersion(), kCudaGraphControlFlowDriverVersion);
      else if (const std::optional<CudaControlKernels> control = loadControlKernels(cc))
        graphs_ = std::make_unique<CudaGraphCache>(graph, static_cast<CudaStepWork &>(*this),
                                                   *control);
    }
    // The tables, segments and control words went up with cudaMemcpy from pageable memory, which
    // may return before the copy lands, on the default stream, which does not order stream_.
    ASPEN_CUDA_CHECK(cudaDeviceSynchronize());
  }

  void write(const RegionList &regions, const void *host) override {
    useDevice();
    transfer(regions, const_cast<void *>(host), true);
  }
  void read(const RegionList &regions, void *host) override {
    useDevice();
    transfer(regions, host, false);
  }

  void readScalar(const ScalarRef &scalar, void *host) override {
    useDevice();
    ASPEN_CUDA_CHECK(cudaMemcpyAsync(host, scalarAddress(scalar), scalar.type.size(),
                                     cudaMemcpyDeviceToHost, stream_));
    waitForStream("a control-flow predicate");
  }

  void setDeadline(std::optional<RunClock::time_point> deadline) override { deadline_ = deadline; }

  void copy(std::uint32_t index) override {
    useDevice();
    if (index >= copies_.size())
      throw internal_error("CUDA executor: copy " + std::to_string(index) + " of a graph with " +
                           std::to_string(copies_.size()));
    const NvtxRange range("copy " + std::to_string(index) + " (" +
                          std::to_string(graph_->copies[index].src.bytes()) + " bytes)");
    enqueueCopy(stream_, index);
    ASPEN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  double execute(std::uint32_t index) override {
    const double seconds = timedOnStream("compute set " + graph_->computeSets[index].name,
                                         [&] { enqueueComputeSet(stream_, index); });
    const LoadedComputeSet &cs = computeSets_[index];
    checkFailures(cs.firstFailureSlot, std::uint32_t(cs.loaded.size()));
    return seconds;
  }

  double runKernel(std::uint32_t index) override {
    const bool collective = runsOnHost(graph_->kernels[index].kind);
    const CollectivesWait wait(*this, collective);
    const double seconds = timedOnStream(
        (collective ? "collective '" : "kernel '") + graph_->kernels[index].name + "'",
        [&] { enqueueKernel(stream_, index); });
    if (graph_->kernels[index].kind == KernelKind::Block) {
      checkGridWaits(index, 1);
      checkFailures(kernels_[index].blockFailureSlot, 1);
    }
    return seconds;
  }

  bool runsDeviceSubtrees() const override { return graphs_ != nullptr; }
  bool runDeviceSubtree(std::uint32_t step) override {
    if (!graphs_)
      return false;
    useDevice();
    const NvtxRange range("CUDA graph of step '" + graph_->steps[step].name + "'");
    const bool collectives = !firstCollective_.empty() && firstCollective_[step] != kNoCollective;
    if (collectives && !collectives_->aborted().empty())
      throw runtime_error("the CUDA graph of step '" + graph_->steps[step].name +
                          "' holds collectives, and the engine's NCCL communicators were "
                          "aborted when " + collectives_->aborted() +
                          "; this engine refuses further runs (make a new engine on every rank)");
    const CollectivesWait wait(*this, collectives);
    graphs_->launch(step, stream_);
    waitForStream("the CUDA graph of step '" + graph_->steps[step].name + "'");
    checkGridWaits(0, std::uint32_t(graph_->kernels.size()));
    checkFailures(0, std::uint32_t(failureOwners_.size()));
    return true;
  }

private:
  void useDevice() const {
    if (abandoned_)
      throw runtime_error("CUDA executor: this engine's GPU work was abandoned when a run passed "
                          "its time limit (aspen.timeLimit); destroy the engine and make another");
    ASPEN_CUDA_CHECK(cudaSetDevice(int(options_.ordinal)));
  }

  // While one exists, the work on the stream holds collectives (NCCL), which must complete by
  // the collectives' deadline (connectCollectives' timeout after it starts).
  class CollectivesWait {
  public:
    CollectivesWait(CudaExecutor &executor, bool collectives) : executor_(executor) {
      if (collectives && executor_.collectives_)
        executor_.collectivesDeadline_ =
            RunClock::now() + std::chrono::duration_cast<RunClock::duration>(
                                  std::chrono::duration<double>(executor_.collectivesTimeout_));
    }
    ~CollectivesWait() { executor_.collectivesDeadline_.reset(); }
    CollectivesWait(const CollectivesWait &) = delete;
    CollectivesWait &operator=(const CollectivesWait &) = delete;

  private:
    CudaExecutor &executor_;
  };

  // Waits for `ready` (cudaEventQuery or cudaStreamQuery of the work `what` names) to succeed.
  // Under a time limit it polls, and past the deadline abandons the work: CUDA cannot stop a
  // running kernel, so the GPU stays busy until it ends, and the engine refuses further calls.
  // Work holding collectives that passes theirs aborts the NCCL communicators instead, which
  // ends NCCL's kernels; the engine then refuses further runs.
  template <class Query> void waitUntilReady(Query &&ready, const std::string &what) {
    for (unsigned polls = 0;; ++polls) {
      const cudaError_t status = ready();
      if (status != cudaErrorNotReady) {
        ASPEN_CUDA_CHECK(status);
        return;
      }
      const auto now = RunClock::now();
      if (collectivesDeadline_ && now >= *collectivesDeadline_)
        abortCollectives(ready, what);
      if (deadline_ && now >= *deadline_) {
        abandoned_ = true;
        throw runtime_error(what + " had not finished on the GPU and was abandoned: CUDA cannot "
                            "stop a running kernel, so it keeps the GPU busy until it ends, and "
                            "this engine refuses further calls (destroy it)");
      }
      if (polls > 100)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  template <class Query> [[noreturn]] void abortCollectives(Query &&ready, const std::string &what) {
    const std::string why = what + " had not completed on the GPU " +
                            fmt::format("{:g} s", collectivesTimeout_) +
                            " after it started (aspen.collectives.timeout)";
    collectivesDeadline_.reset();
    collectives_->abort(why);
    // Aborted, NCCL's kernels return; the rest of the work then drains.
    const auto drained = RunClock::now() + std::chrono::seconds(10);
    cudaError_t status = ready();
    while (status == cudaErrorNotReady && RunClock::now() < drained) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      status = ready();
    }
    if (status == cudaErrorNotReady)
      abandoned_ = true;
    throw runtime_error(why + ": a replica's process did not take part (stopped, or in another "
                        "collective); the engine's NCCL communicators were aborted and it "
                        "refuses further runs (make a new engine on every rank)");
  }
  void waitForStream(const std::string &what) {
    if (!deadline_ && !collectivesDeadline_) {
      ASPEN_CUDA_CHECK(cudaStreamSynchronize(stream_));
      return;
    }
    waitUntilReady([&] { return cudaStreamQuery(stream_); }, what);
  }

  // Runs what `enqueue` puts on the stream, in an NVTX range named `name`, and returns the
  // seconds between events recorded around it.
  template <class Enqueue> double timedOnStream(const std::string &name, Enqueue &&enqueue) {
    useDevice();
    const NvtxRange range(name);
    ASPEN_CUDA_CHECK(cudaEventRecord(start_, stream_));
    enqueue();
    ASPEN_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    if (deadline_ || collectivesDeadline_)
      waitUntilReady([&] { return cudaEventQuery(stop_); }, name);
    else
      ASPEN_CUDA_CHECK(cudaEventSynchronize(stop_));
    float milliseconds = 0;
    ASPEN_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start_, stop_));
    return milliseconds * 1e-3;
  }

  unsigned computeCapability() const {
    int major = 0, minor = 0;
    ASPEN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                            int(options_.ordinal)));
    ASPEN_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor,
                                            int(options_.ordinal)));
    return unsigned(major * 10 + minor);
  }

  // The control kernels of CUDA graph conditional nodes, loaded now; none, with a warning, when
  // NVRTC, the driver or the GPU refuses them: the executor then drives control flow from the
  // host, which needs only the copy and codelet kernels.
  std::optional<CudaControlKernels> loadControlKernels(unsigned cc) {
    try {
      const LoadedLibrary &library = *loadedLibraries_.emplace_back(
          std::make_unique<LoadedLibrary>(cudaExecutorKernelImage(ExecutorModule::Control, cc)));
      CudaControlKernels control;
      for (auto [kernel, name] : {std::pair{&control.setCondition, "aspen_set_condition"},
                                  std::pair{&control.setSwitch, "aspen_set_switch"},
                                  std::pair{&control.repeatStart, "aspen_repeat_start"},
                                  std::pair{&control.repeatNext, "aspen_repeat_next"}}) {
        *kernel = library.kernel(name);
        loadNow(*kernel);
      }
      return control;
    } catch (const error &e) {
      logger().warn("CUDA executor: the control kernels of CUDA graph conditional nodes do not "
                    "load on GPU {} ({}); control flow is driven from the host",
                    options_.ordinal, e.what());
      return std::nullopt;
    }
  }

  // A tile's workers are the threads of its block.
  void checkWorkers() const {
    int maxThreads = 0;
    ASPEN_CUDA_CHECK(cudaDeviceGetAttribute(&maxThreads, cudaDevAttrMaxThreadsPerBlock,
                                            int(options_.ordinal)));
    if (graph_->target.numWorkerContexts > unsigned(maxThreads))
      throw error("Engine::load: the graph was compiled for target '" + graph_->target.name +
                  "' with " + std::to_string(graph_->target.numWorkerContexts) +
                  " workers a tile, but a thread block of GPU " +
                  std::to_string(options_.ordinal) + " has at most " +
                  std::to_string(maxThreads) + " threads");
  }

  // The registers a codelet kernel uses can limit its blocks below the device's maximum. Also
  // loads the kernel now (see loadNow).
  void checkBlockSize(cudaKernel_t kernel, const std::string &library) const {
    const cudaFuncAttributes attributes = loadNow(kernel);
    const unsigned workers = graph_->target.numWorkerContexts;
    if (unsigned(attributes.maxThreadsPerBlock) < workers)
      throw error("Engine::load: codelets " + library + " use " +
                  std::to_string(attributes.numRegs) + " registers a thread, so a block on GPU " +
                  std::to_string(options_.ordinal) + " has at most " +
                  std::to_string(attributes.maxThreadsPerBlock) +
                  " threads, but the graph was compiled for target '" + graph_->target.name +
                  "' with " + std::to_string(workers) +
                  " workers a tile; create the device with a smaller \"threadsPerBlock\"");
  }

  // Initial values (constants, vertex state) as one transfer of bytes into their places.
  void writeInitialValues() {
    RegionList regions;
    regions.elementBytes = 1;
    std::vector<std::uint8_t> packed;
    for (const InitialValue &init : graph_->initialValues) {
      if (init.bytes.empty())
        continue;
      regions.runs.push_back({init.buffer, std::int64_t(init.offset), 1, init.bytes.size()});
      packed.insert(packed.end(), init.bytes.begin(), init.bytes.end());
    }
    regions.numElements = packed.size();
    if (!packed.empty())
      transfer(regions, packed.data(), true);
  }

  void loadComputeSets(unsigned cc) {
    const std::vector<std::uint32_t> typeIndices = gpuVertexTypeIndices(*graph_);
    std::map<std::uint32_t, cudaKernel_t> libraryKernels;
    auto libraryKernel = [&](std::uint32_t library) {
      auto it = libraryKernels.find(library);
      if (it == libraryKernels.end()) {
        const GpuCodeletImage image = gpuCodeletImage(*graph_->libraries.at(library), cc);
        logger().debug("CUDA executor: codelets {} from {}",
                       graph_->libraries[library]->sourceName(), image.origin);
        const LoadedLibrary &loaded =
            *loadedLibraries_.emplace_back(std::make_unique<LoadedLibrary>(image.bytes));
        librariesByIndex_[library] = &loaded;
        const cudaKernel_t kernel = loaded.kernel(ASPEN_GPU_KERNEL_NAME);
        checkBlockSize(kernel, graph_->libraries[library]->sourceName());
        it = libraryKernels.emplace(library, kernel).first;
      }
      return it->second;
    };
    for (std::uint32_t c = 0; c < graph_->computeSets.size(); ++c) {
      // The table's size does not depend on where it lives: build once to size it, then again
      // with its address.
      const std::size_t tableBytes =
          gpuLaunchTables(*graph_, c, typeIndices, 0, 0).image.size();
      LoadedComputeSet cs;
      cs.table = DeviceBuffer(tableBytes);
      GpuComputeSetTables tables =
          gpuLaunchTables(*graph_, c, typeIndices, arena_.address(), cs.table.address());
      if (!tables.image.empty())
        ASPEN_CUDA_CHECK(cudaMemcpy(cs.table.get(), tables.image.data(), tables.image.size(),
                                    cudaMemcpyHostToDevice));
      cs.firstFailureSlot = std::uint32_t(failureOwners_.size());
      for (std::uint32_t l = 0; l < tables.launches.size(); ++l) {
        const GpuLaunch &launch = tables.launches[l];
        cs.loaded.push_back({libraryKernel(launch.library),
                             cs.table.address() + launch.tilesOffset,
                             cs.table.address() + launch.verticesOffset,
                             cs.table.address() + tables.fieldsOffset,
                             unsigned(launch.tiles.size()),
                             std::uint32_t(failureOwners_.size())});
        failureOwners_.push_back({c, l});
      }
      cs.launches = std::move(tables.launches);
      computeSets_.push_back(std::move(cs));
    }
    failures_ = DeviceBuffer(std::max<std::size_t>(failureOwners_.size(), 1) * sizeof(unsigned));
  }

  // The kernel steps: block codelets' kernels and the library kernels' cuBLASLt plans.
  void loadKernels(unsigned cc) {
    const std::vector<std::uint32_t> typeIndices = gpuVertexTypeIndices(*graph_);
    for (const CompiledKernel &kernel : graph_->kernels) {
      LoadedKernel loaded;
      if (kernel.kind == KernelKind::Block)
        loadBlockKernel(kernel, typeIndices, loaded);
      kernels_.push_back(std::move(loaded));
    }
    gemm_ = std::make_unique<CudaGemmKernels>(*graph_, arena_.address());
    conv_ = std::make_unique<CudaConvKernels>(
        *graph_, arena_.address(), options_.convolutions, [this, cc](const char *name) {
          if (!convKernels_)
            convKernels_ = loadedLibraries_
                               .emplace_back(std::make_unique<LoadedLibrary>(
                                   cudaExecutorKernelImage(ExecutorModule::Conv, cc)))
                               .get();
          return convKernels_->kernel(name);
        });
    // One GridState a kernel (block kernels use theirs), with the wait timeout set.
    std::vector<GridState> grids(std::max<std::size_t>(graph_->kernels.size(), 1), GridState{});
    for (GridState &g : grids)
      g.timeoutNs = static_cast<unsigned long long>(options_.waitTimeoutSeconds * 1e9);
    gridStates_ = DeviceBuffer(grids.size() * sizeof(GridState));
    ASPEN_CUDA_CHECK(cudaMemcpy(gridStates_.get(), grids.data(), grids.size() * sizeof(GridState),
                                cudaMemcpyHostToDevice));
  }

  // A co-resident launch must fit on the device at once: the blocks a multiprocessor holds with
  // this kernel's registers and shared memory, times the multiprocessors.
  void checkCoResident(const CompiledKernel &kernel, cudaKernel_t block,
                       const cudaFuncAttributes &attributes, const std::string &what) const {
    const BlockLaunch &launch = kernel.launch;
    int cooperative = 0, sms = 0, perSm = 0;
    ASPEN_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch,
                                            int(options_.ordinal)));
    ASPEN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
                                            int(options_.ordinal)));
    if (!cooperative)
      throw error(what + ": a co-resident launch needs cooperative launches, which this GPU "
                         "does not support");
    ASPEN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &perSm, reinterpret_cast<const void *>(block), int(launch.threadsPerBlock),
        launch.sharedBytes));
    const std::uint64_t fit = std::uint64_t(perSm) * std::uint64_t(sms);
    if (launch.blocks > fit)
      throw error(what + ": " + std::to_string(launch.blocks) +
                  " blocks cannot all be resident at once: with " +
                  std::to_string(attributes.numRegs) + " registers a thread, " +
                  std::to_string(launch.threadsPerBlock) + " threads and " +
                  std::to_string(launch.sharedBytes + attributes.sharedSizeBytes) +
                  " bytes of shared memory a block, each of the " + std::to_string(sms) +
                  " multiprocessors holds " + std::to_string(perSm) + " (" +
                  std::to_string(fit) + " in all)");
  }

  // A block codelet's kernel (GpuAbi.hpp): from its library's image, allowed the dynamic
  // shared memory it asks for, checked against the block size its registers allow.
  void loadBlockKernel(const CompiledKernel &kernel, const std::vector<std::uint32_t> &typeIndices,
                       LoadedKernel &loaded) {
    const BlockLaunch &launch = kernel.launch;
    const CompiledComputeSet &cs = graph_->computeSets[launch.computeSet];
    const CompiledVertex &vertex = cs.vertices.at(0);
    const CompiledVertexType &type = graph_->vertexTypes[vertex.type];
    const LoadedLibrary &library = *librariesByIndex_.at(type.library);
    loaded.block = library.kernel(
        (ASPEN_GPU_BLOCK_KERNEL_PREFIX + std::to_string(typeIndices[vertex.type])).c_str());
    const cudaFuncAttributes attributes = loadNow(loaded.block);
    const std::string what = "Engine::load: Launch '" + kernel.name + "' of block codelet " +
                             type.name + " on GPU " + std::to_string(options_.ordinal);
    if (unsigned(attributes.maxThreadsPerBlock) < launch.threadsPerBlock)
      throw error(what + ": its kernel uses " + std::to_string(attributes.numRegs) +
                  " registers a thread, so a block has at most " +
                  std::to_string(attributes.maxThreadsPerBlock) + " threads, not " +
                  std::to_string(launch.threadsPerBlock));
    int optin = 0;
    ASPEN_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                            int(options_.ordinal)));
    if (launch.sharedBytes + attributes.sharedSizeBytes > std::uint64_t(optin))
      throw error(what + ": " + std::to_string(launch.sharedBytes) +
                  " bytes of dynamic shared memory a block (plus " +
                  std::to_string(attributes.sharedSizeBytes) + " static) is more than the " +
                  std::to_string(optin) + " the GPU allows");
    ASPEN_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void *>(loaded.block),
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          int(launch.sharedBytes)));
    const LoadedComputeSet &lcs = computeSets_[launch.computeSet];
    loaded.blockFields = lcs.loaded.at(0).fields + vertex.firstField * sizeof(FieldDesc);
    loaded.blockFailureSlot = lcs.loaded.at(0).failureSlot;
    loaded.coResident = launch.coResident;
    if (launch.coResident)
      checkCoResident(kernel, loaded.block, attributes, what);
  }

  // CudaStepWork: the stream work of compute sets and copies (also captured into graphs).
  void enqueueKernel(cudaStream_t stream, std::uint32_t index) override {
    const LoadedKernel &kernel = kernels_[index];
    const CompiledKernel &compiled = graph_->kernels[index];
    if (compiled.kind == KernelKind::Block) {
      const BlockLaunch &launch = compiled.launch;
      void *fields = devicePointer(kernel.blockFields);
      unsigned long long sharedBytes = launch.sharedBytes;
      void *failed = failures_.get() + kernel.blockFailureSlot * sizeof(unsigned);
      void *grid = gridStates_.get() + index * sizeof(GridState);
      // The barrier and the wait record start at zero; the timeout stays.
      ASPEN_CUDA_CHECK(cudaMemsetAsync(grid, 0, offsetof(GridState, timeoutNs), stream));
      void *args[] = {&fields, &sharedBytes, &failed, &grid};
      cudaLaunchConfig_t config{};
      config.gridDim = dim3(launch.blocks);
      config.blockDim = dim3(launch.threadsPerBlock);
      config.dynamicSmemBytes = launch.sharedBytes;
      config.stream = stream;
      cudaLaunchAttribute cooperative{};
      cooperative.id = cudaLaunchAttributeCooperative;
      cooperative.val.cooperative = 1;
      if (kernel.coResident) {
        config.attrs = &cooperative;
        config.numAttrs = 1;
      }
      ASPEN_CUDA_CHECK(
          cudaLaunchKernelExC(&config, reinterpret_cast<const void *>(kernel.block), args));
      return;
    }
    if (runsOnHost(compiled.kind)) {
      if (!collectives_)
        throw internal_error("CUDA executor: collective '" + compiled.name +
                             "' without a communicator (connectCollectives)");
      collectives_->enqueue(stream, index);
    } else if (compiled.isConv()) {
      conv_->enqueue(stream, index);
    } else {
      gemm_->enqueue(stream, index);
    }
  }

  std::vector<std::uint8_t> newCollectiveId() override {
    const std::string why = CudaCollectives::unsupported(*graph_);
    if (!why.empty()) {
      logger().info("CUDA executor: the collectives go through the host, not NCCL: {}", why);
      return {};
    }
    useDevice();
    try {
      return CudaCollectives::newId();
    } catch (const error &e) {
      logger().warn("CUDA executor: the collectives go through the host: {}", e.what());
      return {};
    }
  }

  void connectCollectives(unsigned replica, unsigned replicas,
                          const std::vector<std::uint8_t> &id, RunClock::time_point deadline,
                          double timeout) override {
    useDevice();
    collectives_ = std::make_unique<CudaCollectives>(*graph_, arena_.get(), replica, replicas, id,
                                                     deadline);
    collectivesTimeout_ = timeout;
    firstCollective_ = firstCollectives(*graph_);
  }

  void enqueueComputeSet(cudaStream_t stream, std::uint32_t index) override {
    const LoadedComputeSet &cs = computeSets_[index];
    unsigned workers = graph_->target.numWorkerContexts;
    for (const LoadedLaunch &l : cs.loaded) {
      if (l.numTiles == 0)
        continue;
      void *tiles = devicePointer(l.tiles), *vertices = devicePointer(l.vertices),
           *fields = devicePointer(l.fields);
      void *failed = failures_.get() + l.failureSlot * sizeof(unsigned);
      void *args[] = {&tiles, &vertices, &fields, &failed};
      launch(l.kernel, l.numTiles, workers, args, stream);
    }
  }

  void enqueueCopy(cudaStream_t stream, std::uint32_t index) override {
    enqueueCopy(stream, copies_[index]);
  }

  const void *scalarAddress(const ScalarRef &scalar) const override {
    return arena_.get() + graph_->buffers[scalar.buffer].offset + scalar.offset;
  }

  void enqueueCopy(cudaStream_t stream, const LoadedCopy &copy) {
    for (std::size_t s = 0; s < copy.plan.stages.size(); ++s)
      enqueueStage(stream, copy.plan.stages[s], copy.stageAddress[s], copy.plan.elementBytes);
  }

  void enqueueStage(cudaStream_t stream, const GpuCopyStage &stage, std::uint64_t segments,
                    unsigned elementBytes) {
    for (const GpuMemcpy &m : stage.memcpys)
      ASPEN_CUDA_CHECK(cudaMemcpyAsync(devicePointer(m.dst), devicePointer(m.src), m.bytes,
                                       cudaMemcpyDeviceToDevice, stream));
    if (stage.segments.empty())
      return;
    void *segmentsPointer = devicePointer(segments);
    void *args[] = {&segmentsPointer, &elementBytes};
    launch(copyKernel_, unsigned(stage.segments.size()), kCopyThreads, args, stream);
  }

  // Host <-> arena through the staging buffer: [data, 16-byte aligned][segments]. Contiguous
  // stretches go straight between host and arena; the rest is one memcpy of the packed data and
  // the copy kernel. `host` may also be device memory (Engine::writeTensor and readTensor take
  // it on a GPU device: the layer backend passes a framework's buffers): the copies are then
  // device to device (cudaMemcpyDefault, unified addressing) and the packed data never visits
  // the host.
  void transfer(const RegionList &regions, void *host, bool toArena) {
    const bool onDevice = isDeviceMemory(host);
    const std::uint64_t dataBytes = align16(regions.bytes());
    GpuCopyPlan plan;
    for (;;) {
      plan = gpuTransferPlan(regions, graph_->buffers, arena_.address(), staging_.address(),
                             toArena);
      const std::uint64_t needed =
          dataBytes + plan.stages[0].segments.size() * sizeof(GpuCopySegment);
      if (plan.stages[0].segments.empty() || staging_.bytes() >= needed)
        break; // memcpys alone use the staging address only as an offset into `host`
      staging_ = DeviceBuffer(std::max<std::uint64_t>(needed, 2 * staging_.bytes()));
    }
    const GpuCopyStage &stage = plan.stages[0];
    auto *bytes = static_cast<std::uint8_t *>(host);
    const std::uint64_t stagingBase = staging_.address();
    if (stage.segments.empty()) {
      const cudaMemcpyKind in = onDevice ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
      const cudaMemcpyKind out = onDevice ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
      for (const GpuMemcpy &m : stage.memcpys) {
        if (toArena)
          ASPEN_CUDA_CHECK(cudaMemcpyAsync(devicePointer(m.dst), bytes + (m.src - stagingBase),
                                           m.bytes, in, stream_));
        else
          ASPEN_CUDA_CHECK(cudaMemcpyAsync(bytes + (m.dst - stagingBase), devicePointer(m.src),
                                           m.bytes, out, stream_));
      }
      ASPEN_CUDA_CHECK(cudaStreamSynchronize(stream_));
      return;
    }
    const std::size_t segmentBytes = stage.segments.size() * sizeof(GpuCopySegment);
    // Host data travels with the segments in one upload; device data goes device to device.
    const bool dataWithSegments = toArena && !onDevice;
    hostStaging_.resize(dataBytes + segmentBytes);
    if (dataWithSegments)
      std::memcpy(hostStaging_.data(), host, regions.bytes());
    else if (toArena)
      ASPEN_CUDA_CHECK(cudaMemcpyAsync(staging_.get(), host, regions.bytes(),
                                       cudaMemcpyDeviceToDevice, stream_));
    std::memcpy(hostStaging_.data() + dataBytes, stage.segments.data(), segmentBytes);
    const std::size_t uploadOffset = dataWithSegments ? 0 : dataBytes;
    ASPEN_CUDA_CHECK(cudaMemcpyAsync(staging_.get() + uploadOffset,
                                     hostStaging_.data() + uploadOffset,
                                     hostStaging_.size() - uploadOffset, cudaMemcpyHostToDevice,
                                     stream_));
    enqueueStage(stream_, stage, stagingBase + dataBytes, regions.elementBytes);
    if (!toArena)
      ASPEN_CUDA_CHECK(cudaMemcpyAsync(host, staging_.get(), regions.bytes(),
                                       onDevice ? cudaMemcpyDeviceToDevice
                                                : cudaMemcpyDeviceToHost,
                                       stream_));
    ASPEN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  // Whether p is memory the device reaches directly (cudaMalloc'd, managed, or on another GPU):
  // unregistered host memory reports cudaMemoryTypeUnregistered.
  static bool isDeviceMemory(const void *p) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      (void)cudaGetLastError(); // an unknown pointer is host memory; clear the sticky error
      return false;
    }
    return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  }

  // Raises a wait of block kernels [first, first + count) that gave up (Vertex.hpp: it ran out
  // of time, aspen.cuda.waitTimeout), naming the Launch, the block and where it waited.
  void checkGridWaits(std::uint32_t first, std::uint32_t count) {
    if (count == 0)
      return;
    std::vector<GridState> grids(count);
    ASPEN_CUDA_CHECK(cudaMemcpyAsync(grids.data(), gridStates_.get() + first * sizeof(GridState),
                                     count * sizeof(GridState), cudaMemcpyDeviceToHost, stream_));
    ASPEN_CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (std::uint32_t i = 0; i < count; ++i) {
      const CompiledKernel &kernel = graph_->kernels[first + i];
      if (kernel.kind != KernelKind::Block || grids[i].gaveUp == 0)
        continue;
      const unsigned where = grids[i].gaveUp >> 28, block = (grids[i].gaveUp & 0x0fffffffu) - 1;
      throw runtime_error(
          "Launch '" + kernel.name + "': block " + std::to_string(block) + " waited at " +
          (where == kWaitAtGridSync ? "gridSync" : "waitUntil") + " for more than " +
          fmt::format("{:g}", options_.waitTimeoutSeconds) +
          " s (aspen.cuda.waitTimeout) and gave up: " +
          (kernel.launch.coResident
               ? "the value it waits for was never published"
               : "the launch is not co-resident, so the block it waits for may not have been "
                 "running (LaunchShape::coResident)"));
    }
  }

  // Raises the failure recorded by launches [first, first + count), clearing the record: the
  // lowest failing vertex of the first compute set with one, as the CPU executor reports it.
  void checkFailures(std::uint32_t first, std::uint32_t count) {
    if (count == 0)
      return;
    std::vector<unsigned> words(count);
    ASPEN_CUDA_CHECK(cudaMemcpyAsync(words.data(), failures_.get() + first * sizeof(unsigned),
                                     count * sizeof(unsigned), cudaMemcpyDeviceToHost, stream_));
    ASPEN_CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::optional<std::pair<std::uint32_t, std::uint32_t>> failed; // compute set, its vertex
    for (std::uint32_t i = 0; i < count; ++i) {
      if (words[i] == 0)
        continue;
      const auto [c, l] = failureOwners_[first + i];
      const std::vector<std::uint32_t> &vertices = computeSets_[c].launches[l].computeSetVertex;
      const unsigned v = ~words[i];
      if (v >= vertices.size())
        throw internal_error("CUDA executor: launch " + std::to_string(l) + " of compute set '" +
                             graph_->computeSets[c].name + "' reports failed vertex " +
                             std::to_string(v) + " of " + std::to_string(vertices.size()));
      failed = std::min(failed.value_or(std::pair{c, vertices[v]}), std::pair{c, vertices[v]});
    }
    if (!failed)
      return;
    ASPEN_CUDA_CHECK(cudaMemsetAsync(failures_.get() + first * sizeof(unsigned), 0,
                                     count * sizeof(unsigned), stream_));
    ASPEN_CUDA_CHECK(cudaStreamSynchronize(stream_));
    throw runtime_error(
        vertexFailureMessage(*graph_, graph_->computeSets[failed->first], failed->second));
  }

  CudaExecutorOptions options_;
  const CompiledGraph *graph_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::vector<std::unique_ptr<LoadedLibrary>> loadedLibraries_;
  std::map<std::uint32_t, const LoadedLibrary *> librariesByIndex_; // by graph library index
  cudaKernel_t copyKernel_ = nullptr;
  DeviceBuffer arena_, temporary_, staging_, failures_, gridStates_;
  std::vector<std::uint8_t> hostStaging_;
  std::vector<LoadedComputeSet> computeSets_;
  std::vector<LoadedCopy> copies_;
  std::vector<LoadedKernel> kernels_;
  std::unique_ptr<CudaGemmKernels> gemm_;
  std::unique_ptr<CudaConvKernels> conv_;
  std::unique_ptr<CudaCollectives> collectives_; // NCCL's, when connectCollectives made it
  double collectivesTimeout_ = 0;                 // seconds (aspen.collectives.timeout)
  std::vector<std::uint32_t> firstCollective_;    // firstCollectives(*graph_) once connected
  std::optional<RunClock::time_point> collectivesDeadline_; // of the work on the stream now
  const LoadedLibrary *convKernels_ = nullptr; // the Conv module, loaded when a call needs it
  struct FailureOwner {
    std::uint32_t computeSet, launch;
  };
  std::vector<FailureOwner> failureOwners_; // by failure word
  std::unique_ptr<CudaGraphCache> graphs_;  // destroyed first
  std::optional<RunClock::time_point> deadline_;
  bool abandoned_ = false;
};

} // namespace

std::unique_ptr<Executor> makeCudaExecutor(const CudaExecutorOptions &options) {
  return std::make_unique<CudaExecutor>(options);
}

} // namespace aspen::detail
