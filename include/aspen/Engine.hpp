// Engine: compiles a graph and its programs, loads them onto a device and runs them.
#pragma once

#include <aspen/ArrayRef.hpp>
#include <aspen/Device.hpp>
#include <aspen/Executable.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/ProgressFunc.hpp>

#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace aspen {

namespace detail {
class EngineImpl;
} // namespace detail

// A parallel loop of the caller's runtime: calls task(i) once for every i in [0, n) and returns
// when every call has returned (Engine::setHostParallelFor, an Aspen extension).
using HostParallelFor =
    std::function<void(std::size_t n, const std::function<void(std::size_t)> &task)>;

// A host callback for a stream, instead of a buffer.
//  - host-to-device: prefetch(p) may fill p ahead of time for the next transfer and return
//    Success; when it returned NotAvailable, fetch(p) is called when the data is needed.
//  - device-to-host: fetch(p) receives the data.
// complete() follows each transfer.
class ASPEN_API StreamCallback {
public:
  enum class Result { Success, NotAvailable };
  virtual ~StreamCallback() = default;
  virtual Result prefetch(void *p) noexcept = 0;
  virtual void fetch(void *p) noexcept = 0;
  virtual void complete() noexcept = 0;
  // Called when a prefetched buffer is dropped unused (for example when the engine is reset).
  virtual void invalidatePrefetched() noexcept {}
};

// A callback from a plain function: no prefetch, fetch calls f.
class ASPEN_API LegacyStreamCallback : public StreamCallback {
public:
  explicit LegacyStreamCallback(std::function<void(void *)> f) : f_(std::move(f)) {}
  Result prefetch(void *) noexcept override { return Result::NotAvailable; }
  void fetch(void *p) noexcept override { f_(p); }
  void complete() noexcept override {}

private:
  std::function<void(void *)> f_;
};

// Threads: an Engine may be called from several threads; its calls are serialised (each waits
// for the one in progress, so run() from two threads runs the programs one after the other).
// Different engines run in parallel, on one device too, and different Graphs may be built in
// parallel (one Graph by one thread at a time). A stream callback runs on the thread that called
// run() and may call its own engine.
class ASPEN_API Engine {
public:
  // Engine options: keys "aspen.*" are Aspen's own and must be known; Poplar's engine options
  // are accepted (those Aspen does not use have no effect, docs/porting.md lists them); any
  // other key raises invalid_option.
  Engine(const Graph &graph, const program::Program &program, const OptionFlags &options = {},
         ProgressFunc progress = {});
  Engine(const Graph &graph, ArrayRef<program::Program> programs, const OptionFlags &options = {},
         ProgressFunc progress = {});
  Engine(const Graph &graph, const std::vector<program::Program> &programs,
         const OptionFlags &options = {}, ProgressFunc progress = {})
      : Engine(graph, ArrayRef<program::Program>(programs), options, std::move(progress)) {}
  // A braced list of programs ({p0, p1}) would otherwise match both overloads above.
  Engine(const Graph &graph, std::initializer_list<program::Program> programs,
         const OptionFlags &options = {}, ProgressFunc progress = {})
      : Engine(graph, ArrayRef<program::Program>(programs), options, std::move(progress)) {}
  explicit Engine(Executable &&executable, const OptionFlags &options = {});
  Engine(Engine &&) noexcept;
  Engine &operator=(Engine &&) noexcept;
  ~Engine();

  void load(const Device &device);
  void run(unsigned programIndex = 0, const std::string &debugName = "");
  void loadAndRun(const Device &device, unsigned programIndex = 0);

  // Copies between host memory [begin, end) and the tensor of a handle made by
  // createHostWrite/createHostRead; the byte count must equal the tensor's. On a GPU device
  // [begin, end) may also be device memory (cudaMalloc'd or managed): the copy then stays on the
  // device (an Aspen extension; the layer backend passes a framework's buffers this way).
  //
  // A replicated graph (Graph(target, replication_factor(r))) has a copy of the tensor in each
  // replica the engine runs: writeTensor writes them all, and the forms with `replica` (an
  // Aspen extension; the replica's index in [0, r)) write or read one. readTensor without a
  // replica raises stream_connection_error when the engine runs more than one.
  void writeTensor(StringRef handle, const void *begin, const void *end);
  void readTensor(StringRef handle, void *begin, void *end);
  void writeTensor(StringRef handle, unsigned replica, const void *begin, const void *end);
  void readTensor(StringRef handle, unsigned replica, void *begin, void *end);
  // QUARTER tensors: the codes and, in the same call, the tensor's metadata (Tensor::getMetadata).
  // Writing to a tensor whose metadata is a constant requires the same metadata. Raises
  // stream_connection_error for a handle of another type, or one whose QUARTER variables have
  // different metadata tensors.
  void writeTensor(StringRef handle, const QuarterMetadata &metadata, const void *begin,
                   const void *end);
  void readTensor(StringRef handle, QuarterMetadata &metadata, void *begin, void *end);

  // An Aspen extension: the tensor of a createHostWrite or createHostRead handle lives in the
  // caller's memory [begin, end) instead of the device's until unbindTensor or the next load, so
  // runs read and write it in place with no copy in or out. Binding a const buffer promises the
  // caller that the engine never writes it. Returns false, binding nothing, where it cannot (the
  // caller then copies with writeTensor and readTensor): the device's memory is not the host's
  // (a GPU), the handle's tensor is not one whole variable in element order, begin is not
  // 16-byte aligned (malloc's alignment), the tensor is QUARTER or a Cached step depends on it, or, for a const
  // buffer, a program writes the tensor. While bound, the tensor's value is the buffer's
  // contents; writeTensor and readTensor through any of its handles use the buffer, and
  // writeTensor is refused while the buffer is const. After unbindTensor the tensor holds what it
  // held before binding. An unknown handle or a size other than the tensor's raises
  // stream_connection_error, as writeTensor does.
  bool bindTensor(StringRef handle, void *begin, void *end);
  bool bindTensor(StringRef handle, const void *begin, const void *end);
  void unbindTensor(StringRef handle);

  // An Aspen extension for frameworks that embed Aspen: the CPU executor runs its parallel loops
  // (a compute set's tiles, products, convolutions, large host transfers) with parallelFor
  // instead of its own threads, from this call on and across loads; an empty function restores
  // its own threads. Where the framework keeps a team of threads busy-waiting between its
  // operations (PyTorch's OpenMP threads), running on that team avoids two sets of threads
  // competing for the cores. parallelFor(n, task) must call task(i) once for every i in
  // [0, n), on any threads and in any order, and return when every call has returned; it is
  // called from the thread that runs the engine. task does not throw: the executor keeps what an
  // iteration throws and raises it after parallelFor returns. Block launches, whose co-resident
  // blocks must run at once, and compute sets under aspen.timeLimit, which the watchdog stops
  // by signalling the executor's threads, keep the executor's threads. Results do not depend on
  // the threads. Other executors (a GPU's) ignore it.
  void setHostParallelFor(HostParallelFor parallelFor);

  // Each transfer uses the whole buffer at p (sized by the stream).
  void connectStream(StringRef handle, void *p);
  // A circular buffer: transfers take consecutive chunks, wrapping from end back to begin, and
  // the position carries over between runs. Its size must be a multiple of the stream's.
  void connectStream(StringRef handle, void *begin, void *end);
  void connectStreamToCallback(StringRef handle, std::unique_ptr<StreamCallback> callback);
  void connectStreamToCallback(StringRef handle, std::function<void(void *)> callback);
  // An engine that runs several replicas has a stream of each handle in each replica: connect
  // each with its replica's index (the forms above raise stream_connection_error there).
  // Replicas run at once, each on its own host thread, so a callback shared by several is
  // called from several threads.
  void connectStream(StringRef handle, unsigned replica, void *p);
  void connectStream(StringRef handle, unsigned replica, void *begin, void *end);
  void connectStreamToCallback(StringRef handle, unsigned replica,
                               std::unique_ptr<StreamCallback> callback);
  void connectStreamToCallback(StringRef handle, unsigned replica,
                               std::function<void(void *)> callback);

  void setPrintStream(std::ostream &stream);
  // Memory per tile and in total, compute sets and vertices, and the measured execution steps.
  void printProfileSummary(std::ostream &out, const OptionFlags &options = {}) const;
  void resetExecutionProfile();

private:
  std::unique_ptr<detail::EngineImpl> impl_;
};

} // namespace aspen
