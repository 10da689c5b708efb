// CUDA graphs of device-only program subtrees (engine/DeviceSubtrees.hpp), built once per
// subtree and cached.
//
// A subtree is captured from the stream work the executor enqueues for its compute sets,
// kernels (cuBLASLt matmuls are capturable: their workspace is allocated at load) and
// copies; control flow becomes conditional nodes whose condition a one-thread control kernel
// (CudaExecutorKernels.hpp) sets on the device just before the node runs:
//   If           IF node with two bodies (then, else); condition = predicate is true
//   Switch       SWITCH node, body 0 = default, body i = case i-1; condition = matching body
//   RepeatWhile  condition steps, then WHILE node whose body is body + condition steps, the
//                condition set after each evaluation
//   Repeat(n)    WHILE node over a device counter set to n before it, decremented by its body
// Bodies are captured into the conditional node's body graphs with cudaStreamBeginCaptureToGraph
// on a stream per nesting depth. Needs a driver with IF/ELSE and SWITCH nodes (12.8).
#pragma once

#include "CudaDevice.hpp"
#include "compiler/CompiledGraph.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace aspen::detail {

// The stream work the executor does for one step of device work.
class CudaStepWork {
public:
  virtual ~CudaStepWork() = default;
  virtual void enqueueComputeSet(cudaStream_t stream, std::uint32_t computeSet) = 0;
  virtual void enqueueCopy(cudaStream_t stream, std::uint32_t copy) = 0;
  virtual void enqueueKernel(cudaStream_t stream, std::uint32_t kernel) = 0;
  virtual const void *scalarAddress(const ScalarRef &scalar) const = 0;
};

struct CudaControlKernels {
  cudaKernel_t setCondition = nullptr, setSwitch = nullptr, repeatStart = nullptr,
               repeatNext = nullptr;
};

// The driver version from which graph control flow is used (IF with an else body, SWITCH).
inline constexpr int kCudaGraphControlFlowDriverVersion = 12080;

class CudaGraphCache {
public:
  CudaGraphCache(const CompiledGraph &graph, CudaStepWork &work, const CudaControlKernels &kernels);
  CudaGraphCache(const CudaGraphCache &) = delete;
  CudaGraphCache &operator=(const CudaGraphCache &) = delete;
  ~CudaGraphCache();

  // Launches the graph of subtree `step` on `stream` (building it the first time).
  void launch(std::uint32_t step, cudaStream_t stream);

private:
  void enqueueStep(cudaStream_t stream, std::uint32_t step, unsigned depth);
  // Captures what `enqueue` puts on a stream into `body`.
  void captureInto(cudaGraph_t body, unsigned depth,
                   const std::function<void(cudaStream_t)> &enqueue);
  cudaGraphConditionalHandle newHandle(cudaStream_t stream);
  // Adds a conditional node after the work captured so far; returns its body graphs.
  cudaGraph_t *addConditional(cudaStream_t stream, cudaGraphConditionalHandle handle,
                              cudaGraphConditionalNodeType type, unsigned size);
  void launchSetCondition(cudaStream_t stream, cudaGraphConditionalHandle handle,
                          const Step &step, bool whenTrue);
  void launchControl(cudaStream_t stream, cudaKernel_t kernel, void **args);
  cudaStream_t streamAt(unsigned depth);

  const CompiledGraph &graph_;
  CudaStepWork &work_;
  CudaControlKernels kernels_;
  // Device words for control flow: a counter per Repeat step, the cases of each Switch step.
  DeviceBuffer controlWords_;
  std::map<std::uint32_t, std::uint64_t> counterAddress_, casesAddress_;
  std::vector<cudaStream_t> captureStreams_; // by nesting depth
  struct Built {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
  };
  std::map<std::uint32_t, Built> built_;
};

} // namespace aspen::detail
