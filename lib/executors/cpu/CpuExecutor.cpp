#include "CpuExecutor.hpp"

#include "BlockRunner.hpp"
#include "CodeletInterrupt.hpp"
#include "CpuConv.hpp"
#include "CpuOneDnn.hpp"
#include "CpuGemm.hpp"
#include "RegionCopy.hpp"
#include "ThreadPool.hpp"
#include "executors/FieldResolution.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>

namespace aspen::detail {

namespace {

struct LoadedVertex {
  VertexEntry entry;
  const FieldDesc *fields;
  bool isMultiVertex;
};

// A compute set with every field descriptor resolved to an address, made once at load.
struct LoadedComputeSet {
  std::vector<FieldDesc> fields, nested;
  std::vector<LoadedVertex> vertices;
  bool small = false; // runs on the calling thread (inlineElements)
  // The buffers its fields point into, and their offsets when the fields were last resolved:
  // binding a buffer marks its compute sets stale, and one whose buffers are back where they
  // were (a caller's buffers bound at the same addresses call after call) needs no work.
  std::vector<std::uint32_t> buffers;
  std::vector<std::uint64_t> resolvedOffsets;
  bool stale = false;
};

// A compute set whose vertices' fields hold CpuExecutorOptions::inlineElements elements in all
// or fewer (aspen.cpu.inlineElements, 16384 by default) runs on the calling thread: handing its
// tiles to other threads and waiting for them costs more than the work (a 1x64x4x4 batch norm
// inference, 2 threads: 12.9 us a backend call, 4.5 on one thread). 16384 float elements are
// 64 KiB, a few microseconds of element-wise work; torch's loops split nothing under 32768
// elements. Vertices doing much more than touch their data (a loop of their own) are rare on
// small fields, and products large enough to matter have large ones.

struct FreeDeleter {
  void operator()(std::uint8_t *p) const { std::free(p); }
};

class CpuExecutor final : public Executor {
public:
  explicit CpuExecutor(const CpuExecutorOptions &options)
      : options_(options), pool_(options.threads == 0 ? 1 : options.threads) {}

  void load(const CompiledGraph &graph) override {
    graph_ = &graph;
    const std::size_t bytes = std::max<std::uint64_t>(graph.arenaBytes, 64);
    arena_.reset(static_cast<std::uint8_t *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
    if (!arena_)
      throw graph_memory_allocation_error("cannot allocate " + std::to_string(bytes) +
                                          " bytes of device memory on the host");
    std::memset(arena_.get(), 0, bytes);
    buffers_ = graph.buffers;
    view_ = ArenaView(arena_.get(), buffers_);
    for (const InitialValue &init : graph.initialValues)
      if (!init.bytes.empty())
        std::memcpy(view_.address(init.buffer, std::int64_t(init.offset)), init.bytes.data(),
                    init.bytes.size());
    resolveComputeSets(graph);
    for (const CompiledKernel &kernel : graph.kernels)
      if (kernel.kind == KernelKind::Gemm)
        checkCpuGemm(kernel);
    // Each convolution call through oneDNN where it applies, else with its BLAS layout.
    oneDnn_.clear();
    convLayouts_.clear();
    for (const CompiledKernel &kernel : graph.kernels) {
      oneDnn_.push_back(options_.oneDnnConvolutions && kernel.isConv()
                            ? makeOneDnnConvolution(kernel)
                            : nullptr);
      convLayouts_.push_back(kernel.isConv() && !oneDnn_.back() ? prepareCpuConv(kernel)
                                                                : nullptr);
    }
  }

  void write(const RegionList &regions, const void *host) override {
    inParts(regions, [&](std::uint64_t first, std::uint64_t last) {
      scatterRegions(view_, regions, host, first, last);
    });
  }
  void read(const RegionList &regions, void *host) override {
    inParts(regions, [&](std::uint64_t first, std::uint64_t last) {
      gatherRegions(view_, regions, host, first, last);
    });
  }
  void readScalar(const ScalarRef &scalar, void *host) override {
    std::memcpy(host, view_.address(scalar.buffer, std::int64_t(scalar.offset)),
                scalar.type.size());
  }
  std::uint8_t *hostAddress(std::uint32_t buffer, std::uint64_t offset) override {
    return view_.address(buffer, std::int64_t(offset));
  }
  bool bindBuffer(std::uint32_t buffer, void *memory) override {
    const auto arena = reinterpret_cast<std::uintptr_t>(arena_.get());
    const std::uint64_t offset = memory ? reinterpret_cast<std::uintptr_t>(memory) - arena
                                        : graph_->buffers[buffer].offset;
    if (buffers_[buffer].offset != offset) {
      buffers_[buffer].offset = offset;
      for (std::uint32_t c : computeSetsOf_[buffer])
        computeSets_[c].stale = true; // resolved when it next runs (fresh)
    }
    return true;
  }

  void copy(std::uint32_t index) override {
    copyRegions(view_, graph_->copies[index], temporary_);
  }

  void setDeadline(std::optional<RunClock::time_point> deadline) override {
    if (!deadline) {
      watchdog_.stop();
      return;
    }
    std::vector<pthread_t> threads = pool_.workerHandles();
    threads.push_back(pthread_self()); // the engine's thread runs loop iterations too
    generation_ = watchdog_.start(*deadline, std::move(threads));
  }

  void setHostParallelFor(std::shared_ptr<const HostParallelFor> parallelFor) override {
    pool_.setExternal(std::move(parallelFor));
  }
  void runStarting() override { pool_.setRunning(true); }
  void runEnded() override { pool_.setRunning(false); }

  double execute(std::uint32_t index) override {
    const auto start = std::chrono::steady_clock::now();
    const CompiledComputeSet &cs = graph_->computeSets[index];
    const LoadedComputeSet &loaded = fresh(index);
    failed_ = stopped_ = kNone;
    const bool watched = watchdog_.watching();
    std::atomic<bool> skipped{false}; // a tile group not started: the run was stopped
    // A small compute set on this thread (inlineElements); under a time limit on the pool's own
    // threads, which the watchdog signals (ThreadPool.hpp).
    const auto runGroups = [&](const std::function<void(std::size_t)> &task) {
      const std::size_t groups = cs.tiles.size();
      if (watched)
        pool_.parallelForOnPool(groups, task);
      else if (loaded.small)
        for (std::size_t t = 0; t < groups; ++t)
          task(t);
      else
        pool_.parallelFor(groups, task);
    };
    runGroups([&](std::size_t t) {
      const TileGroup &group = cs.tiles[t];
      if (!watched) {
        for (std::uint32_t v = group.begin; v < group.end; ++v)
          if (!runVertex(loaded.vertices[v])) {
            noteFailure(v);
            return;
          }
        return;
      }
      // Under a time limit (CodeletInterrupt.hpp): the watchdog's signal lands here.
      if (watchdog_.fired()) {
        skipped = true;
        return;
      }
      InterruptPoint &point = interruptPoint();
      volatile std::uint32_t current = group.begin;
      if (sigsetjmp(point.env, 0)) {
        noteStopped(current);
        return;
      }
      arm(point);
      for (std::uint32_t v = group.begin; v < group.end; ++v) {
        current = v;
        if (!runVertex(loaded.vertices[v])) {
          point.armed = 0;
          noteFailure(v);
          return;
        }
      }
      point.armed = 0;
    });
    if (stopped_ != kNone)
      throw runtime_error(vertexStoppedMessage(cs, stopped_));
    if (skipped)
      throw runtime_error("compute set '" + cs.name + "' was stopped before all its vertices ran");
    if (failed_ != kNone)
      throw runtime_error(vertexFailureMessage(*graph_, cs, failed_));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  double runKernel(std::uint32_t index) override {
    const auto start = std::chrono::steady_clock::now();
    const CompiledKernel &kernel = graph_->kernels[index];
    if (kernel.kind == KernelKind::Block) {
      launchBlocks(kernel);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    auto address = [&](const DescTemplate &d) -> void * {
      return d.base == DescTemplate::Arena ? view_.address(d.buffer, std::int64_t(d.offset))
                                           : nullptr;
    };
    const auto &ops = kernel.operands;
    if (kernel.isConv()) {
      std::vector<void *> pointers;
      for (const DescTemplate &d : ops)
        pointers.push_back(address(d));
      if (oneDnn_[index])
        oneDnn_[index]->run(pointers.data());
      else
        cpuConv(kernel, *convLayouts_[index], pointers.data(), pool_);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    float alpha = 1.0f;
    if (const void *scale = address(ops[GemmOperand::scale]))
      std::memcpy(&alpha, scale, sizeof alpha);
    cpuGemm(kernel.gemm, address(ops[GemmOperand::a]), address(ops[GemmOperand::b]),
            address(ops[GemmOperand::c]), alpha, pool_, kernelWorkspace_);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

private:
  // A host transfer of 1 MiB or more moves in one part a pool thread (one core's copy bandwidth
  // is well short of the memory's); smaller ones in one part on the caller's thread.
  template <class F> void inParts(const RegionList &regions, F &&part) {
    constexpr std::uint64_t kParallelBytes = 1u << 20;
    const std::uint64_t n = regions.numElements, parts = pool_.numThreads();
    if (regions.bytes() < kParallelBytes || parts < 2) {
      part(0, n);
      return;
    }
    pool_.parallelFor(parts, [&](std::size_t p) { part(n * p / parts, n * (p + 1) / parts); });
  }

  // A block codelet (BlockRunner.hpp): blocks in parallel on the pool, a block's threads as
  // fibers; a co-resident launch has all its blocks' fibers at once.
  void launchBlocks(const CompiledKernel &kernel) {
    const BlockLaunch &launch = kernel.launch;
    const CompiledComputeSet &cs = graph_->computeSets[launch.computeSet];
    const CompiledVertex &vertex = cs.vertices.at(0);
    BlockLaunchRun run;
    run.entry = blockEntries_.at(vertex.type);
    run.fields = fresh(launch.computeSet).vertices.at(0).fields;
    run.blocks = launch.blocks;
    run.threads = launch.threadsPerBlock;
    run.sharedBytes = launch.sharedBytes;
    run.coResident = launch.coResident;
    run.reverseThreads = options_.reverseWorkers;
    run.name = kernel.name;
    if (watchdog_.watching()) {
      if (watchdog_.fired())
        throw runtime_error(vertexStoppedMessage(cs, 0) + " in Launch '" + kernel.name + "'");
      run.watchdog = &watchdog_;
      run.generation = generation_;
    }
    const BlockLaunchOutcome outcome = runBlockLaunch(run, pool_);
    if (outcome.stopped)
      throw runtime_error(vertexStoppedMessage(cs, 0) + " in Launch '" + kernel.name + "'");
    if (outcome.failed)
      throw runtime_error(vertexFailureMessage(*graph_, cs, 0) + " in Launch '" + kernel.name +
                          "'");
  }

  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

  bool runVertex(const LoadedVertex &v) const {
    if (!v.isMultiVertex)
      return v.entry(v.fields, 0, 1) != 0;
    const unsigned n = graph_->target.numWorkerContexts;
    bool ok = true;
    for (unsigned i = 0; i < n; ++i)
      ok &= v.entry(v.fields, options_.reverseWorkers ? n - 1 - i : i, n) != 0;
    return ok;
  }

  void arm(InterruptPoint &point) {
    point.generation = generation_;
    point.stopped = &watchdog_.stoppedGeneration();
    point.armed = 1;
  }

  void noteStopped(std::uint32_t v) {
    std::lock_guard lock(failureMutex_);
    if (stopped_ == kNone || v < stopped_)
      stopped_ = v;
  }

  std::string vertexStoppedMessage(const CompiledComputeSet &cs, std::uint32_t v) const {
    const CompiledVertex &vertex = cs.vertices[v];
    return "vertex " + std::to_string(vertex.id) + " (" + graph_->vertexTypes[vertex.type].name +
           ") on tile " + std::to_string(vertex.tile) + " in compute set '" + cs.name +
           "' had not returned and was stopped";
  }

  // The lowest failing vertex is reported, so that the message does not depend on threads.
  void noteFailure(std::uint32_t v) {
    std::lock_guard lock(failureMutex_);
    if (failed_ == kNone || v < failed_)
      failed_ = v;
  }

  // Compute set c with its fields pointing where its buffers are now.
  const LoadedComputeSet &fresh(std::size_t c) {
    LoadedComputeSet &loaded = computeSets_[c];
    if (loaded.stale) {
      loaded.stale = false;
      for (std::size_t b = 0; b < loaded.buffers.size(); ++b)
        if (buffers_[loaded.buffers[b]].offset != loaded.resolvedOffsets[b]) {
          resolveComputeSet(c);
          break;
        }
    }
    return loaded;
  }

  // Compute set c's descriptors from the buffers' current places, into its tables.
  void resolveComputeSet(std::size_t c) {
    LoadedComputeSet &loaded = computeSets_[c];
    for (std::size_t b = 0; b < loaded.buffers.size(); ++b)
      loaded.resolvedOffsets[b] = buffers_[loaded.buffers[b]].offset;
    const ResolvedFields resolved =
        resolveFields(graph_->computeSets[c], buffers_, reinterpret_cast<std::uintptr_t>(arena_.get()),
                      reinterpret_cast<std::uintptr_t>(loaded.nested.data()));
    std::copy(resolved.nested.begin(), resolved.nested.end(), loaded.nested.begin());
    std::copy(resolved.fields.begin(), resolved.fields.end(), loaded.fields.begin());
  }

  void resolveComputeSets(const CompiledGraph &graph) {
    std::vector<VertexEntry> entries;
    blockEntries_.clear();
    for (const CompiledVertexType &type : graph.vertexTypes) {
      const VertexTypeInfo *found = nullptr;
      for (const VertexTypeInfo &info : graph.libraries.at(type.library)->vertexTypes())
        if (info.name == type.name)
          found = &info;
      if (!found || !found->entry || !found->blockEntry)
        throw internal_error("vertex type " + type.name + " has no host entry point in " +
                             graph.libraries[type.library]->sourceName());
      entries.push_back(found->entry);
      blockEntries_.push_back(found->blockEntry);
    }
    computeSets_.assign(graph.computeSets.size(), {});
    computeSetsOf_.assign(graph.buffers.size(), {});
    for (std::size_t c = 0; c < graph.computeSets.size(); ++c) {
      const CompiledComputeSet &cs = graph.computeSets[c];
      LoadedComputeSet &loaded = computeSets_[c];
      // The tables' final storage exists first: nested descriptors point into theirs, vertices
      // into the fields, and binding a buffer rewrites both in place.
      loaded.nested.resize(cs.nested.size());
      loaded.fields.resize(cs.fields.size());
      std::uint64_t elements = 0;
      for (const std::vector<DescTemplate> *list : {&cs.fields, &cs.nested})
        for (const DescTemplate &d : *list) {
          if (d.base != DescTemplate::Arena)
            continue;
          elements += d.size;
          if (computeSetsOf_[d.buffer].empty() || computeSetsOf_[d.buffer].back() != c) {
            computeSetsOf_[d.buffer].push_back(std::uint32_t(c));
            loaded.buffers.push_back(d.buffer);
          }
        }
      loaded.resolvedOffsets.resize(loaded.buffers.size());
      loaded.small = elements <= options_.inlineElements;
      resolveComputeSet(c);
      loaded.vertices.reserve(cs.vertices.size());
      for (const CompiledVertex &v : cs.vertices)
        loaded.vertices.push_back({entries[v.type], loaded.fields.data() + v.firstField,
                                   graph.vertexTypes[v.type].isMultiVertex});
    }
  }

  CpuExecutorOptions options_;
  ThreadPool pool_;
  const CompiledGraph *graph_ = nullptr;
  std::unique_ptr<std::uint8_t, FreeDeleter> arena_;
  std::vector<Buffer> buffers_; // graph_->buffers, bound ones at their memory (bindBuffer)
  ArenaView view_;
  std::vector<LoadedComputeSet> computeSets_;
  std::vector<std::vector<std::uint32_t>> computeSetsOf_; // by buffer: the compute sets using it
  std::vector<BlockEntry> blockEntries_; // by CompiledGraph::vertexTypes index
  std::vector<std::uint8_t> temporary_;
  std::vector<float> kernelWorkspace_;
  std::vector<std::unique_ptr<OneDnnConvolution>> oneDnn_; // by kernel; null: cpuConv
  std::vector<std::shared_ptr<const CpuConvLayout>> convLayouts_; // cpuConv's, by kernel
  std::mutex failureMutex_;
  std::uint32_t failed_ = kNone;
  std::uint32_t stopped_ = kNone;
  // Declared last: destroyed first, so it never signals a thread of a destroyed pool.
  Watchdog watchdog_;
  std::uint64_t generation_ = 0;
};

} // namespace

std::unique_ptr<Executor> makeCpuExecutor(const CpuExecutorOptions &options) {
  return std::make_unique<CpuExecutor>(options);
}

} // namespace aspen::detail
