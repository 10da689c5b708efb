// Executor: what the engine needs from a machine that runs a CompiledGraph. The engine
// interprets control flow and host streams itself; an executor provides memory, copies,
// compute-set launches and the kernels (KernelKinds.hpp: library kernels and block codelets). The
// CPU executor is the reference; the CUDA one implements the same, plus the optional hook that
// runs a whole control-flow subtree on the device.
#pragma once

#include "compiler/CompiledGraph.hpp"

#include <aspen/Engine.hpp>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

namespace aspen::detail {

using RunClock = std::chrono::steady_clock;

class Executor {
public:
  virtual ~Executor() = default;

  // The deadline of the run that starts (the engine option aspen.timeLimit), or none; the engine
  // sets it before a run and clears it after. An executor that can stop a codelet running past
  // it does so and raises the error from execute() or runKernel() (timeLimitMessage); the
  // engine checks the deadline itself between steps.
  virtual void setDeadline(std::optional<RunClock::time_point> /*deadline*/) {}

  // The engine calls runStarting() before each run and runEnded() after it, also when the run
  // fails. The CPU executor's threads wait for the next compute set differently inside a run.
  virtual void runStarting() {}
  virtual void runEnded() {}

  // The host loop the executor's parallel loops run on (Engine::setHostParallelFor), or null
  // for its own threads. Executors whose loops run elsewhere (a GPU) ignore it.
  virtual void setHostParallelFor(std::shared_ptr<const HostParallelFor> /*parallelFor*/) {}

  // Allocates zeroed memory for `graph` (which must outlive the executor), writes constants and
  // vertex state, and resolves vertex entry points.
  virtual void load(const CompiledGraph &graph) = 0;

  // Host <-> device memory: `host` holds regions.bytes() bytes in element order.
  virtual void write(const RegionList &regions, const void *host) = 0;
  virtual void read(const RegionList &regions, void *host) = 0;
  // Optional: buffer `buffer` (a whole variable) lives at `memory` (the host's, 16-byte aligned,
  // buffer bytes long) instead of in the arena until bound elsewhere or back (memory null):
  // every step reads and writes it there. False when this executor cannot (its memory is not the
  // host's); the engine then copies.
  virtual bool bindBuffer(std::uint32_t /*buffer*/, void * /*memory*/) { return false; }
  // Optional: whether this executor runs the graph's collective kernels itself (runKernel, and
  // inside device subtrees), over a communicator of the launch's replicas, one an executor (NCCL
  // on a GPU). newCollectiveId: the communicator's id, which rank 0 makes and hands to the
  // others; empty when this executor cannot (the engine then moves the collectives' bytes
  // through the host). connectCollectives: joins it as replica `replica` of `replicas`, by
  // `deadline`; afterwards a collective (or a device subtree holding one) that has not completed
  // `timeout` seconds after it started fails the run, and the communicator is aborted (every
  // later run is refused).
  virtual std::vector<std::uint8_t> newCollectiveId() { return {}; }
  virtual void connectCollectives(unsigned /*replica*/, unsigned /*replicas*/,
                                  const std::vector<std::uint8_t> & /*id*/,
                                  RunClock::time_point /*deadline*/, double /*timeout*/) {}
  // Optional: where byte `offset` of buffer `buffer` is in host memory (a loaded executor's, for
  // the engine to read and write in place, as the executor's own steps would); null when this
  // executor's memory is not the host's.
  virtual std::uint8_t *hostAddress(std::uint32_t /*buffer*/, std::uint64_t /*offset*/) {
    return nullptr;
  }

  // The element type's bytes of one scalar, for control flow.
  virtual void readScalar(const ScalarRef &scalar, void *host) = 0;

  // Runs copy `index` of the loaded graph (CompiledGraph::copies: the programs' copies and the
  // compute sets' and kernels' gathers and scatters, which are Copy steps of their own).
  virtual void copy(std::uint32_t index) = 0;

  // Runs the vertices of compute set `index` and returns the seconds it took. Raises
  // aspen::runtime_error naming the vertex when one fails.
  virtual double execute(std::uint32_t index) = 0;

  // Runs kernel `index` (a library kernel, or a block codelet's launch) and returns the seconds
  // it took.
  virtual double runKernel(std::uint32_t index) = 0;

  // Optional, asked once after load: whether this executor runs whole subtrees of device work
  // (deviceOnlySteps in engine/DeviceSubtrees.hpp) itself. When it does, the engine hands it
  // each maximal such subtree through runDeviceSubtree, which runs it entirely on the device and
  // returns true (false: the engine interprets that subtree itself). The engine times such a
  // subtree as a whole: its compute sets are not timed one by one.
  virtual bool runsDeviceSubtrees() const { return false; }
  virtual bool runDeviceSubtree(std::uint32_t /*step*/) { return false; }
};

// The start of the runtime_error raised when a run passes its time limit.
inline std::string timeLimitMessage(double seconds) {
  char text[64];
  std::snprintf(text, sizeof text, "%g", seconds);
  return std::string("the run passed its time limit of ") + text + " s (engine option aspen.timeLimit)";
}

// The message of the runtime_error raised when vertex `v` of compute set `cs` returns false.
inline std::string vertexFailureMessage(const CompiledGraph &graph, const CompiledComputeSet &cs,
                                        std::uint32_t v) {
  const CompiledVertex &vertex = cs.vertices[v];
  return "vertex " + std::to_string(vertex.id) + " (" + graph.vertexTypes[vertex.type].name +
         ") on tile " + std::to_string(vertex.tile) + " in compute set '" + cs.name +
         "' returned false from compute()";
}

} // namespace aspen::detail
