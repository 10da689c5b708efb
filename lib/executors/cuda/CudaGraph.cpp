// Building, caching and launching CUDA graphs of device-only subtrees (see CudaGraph.hpp).
#include "CudaGraph.hpp"

#include "CudaCheck.hpp"

#include <aspen/Error.hpp>

namespace aspen::detail {

CudaGraphCache::CudaGraphCache(const CompiledGraph &graph, CudaStepWork &work,
                               const CudaControlKernels &kernels)
    : graph_(graph), work_(work), kernels_(kernels) {
  // Device words: the cases of every Switch (8 bytes each), then a counter per Repeat.
  std::vector<std::int64_t> cases;
  std::size_t counters = 0;
  for (std::uint32_t i = 0; i < graph.steps.size(); ++i) {
    const Step &step = graph.steps[i];
    if (step.kind == StepKind::Switch) {
      casesAddress_[i] = cases.size() * sizeof(std::int64_t);
      cases.insert(cases.end(), step.cases.begin(), step.cases.end());
    } else if (step.kind == StepKind::Repeat) {
      counterAddress_[i] = counters++ * sizeof(std::uint32_t);
    }
  }
  const std::size_t casesBytes = cases.size() * sizeof(std::int64_t);
  controlWords_ = DeviceBuffer(casesBytes + counters * sizeof(std::uint32_t));
  if (casesBytes)
    ASPEN_CUDA_CHECK(cudaMemcpy(controlWords_.get(), cases.data(), casesBytes,
                                cudaMemcpyHostToDevice));
  for (auto &[step, address] : casesAddress_)
    address += controlWords_.address();
  for (auto &[step, address] : counterAddress_)
    address += controlWords_.address() + casesBytes;
}

// Destruction cannot report errors; each handle is released once.
CudaGraphCache::~CudaGraphCache() {
  for (auto &[step, built] : built_) {
    if (built.exec)
      cudaGraphExecDestroy(built.exec);
    if (built.graph)
      cudaGraphDestroy(built.graph);
  }
  for (cudaStream_t stream : captureStreams_)
    cudaStreamDestroy(stream);
}

void CudaGraphCache::launch(std::uint32_t step, cudaStream_t stream) {
  auto it = built_.find(step);
  if (it == built_.end()) {
    Built built;
    ASPEN_CUDA_CHECK(cudaGraphCreate(&built.graph, 0));
    try {
      captureInto(built.graph, 0, [&](cudaStream_t s) { enqueueStep(s, step, 0); });
      ASPEN_CUDA_CHECK(cudaGraphInstantiate(&built.exec, built.graph, 0));
    } catch (...) {
      cudaGraphDestroy(built.graph);
      throw;
    }
    it = built_.emplace(step, built).first;
  }
  ASPEN_CUDA_CHECK(cudaGraphLaunch(it->second.exec, stream));
}

cudaStream_t CudaGraphCache::streamAt(unsigned depth) {
  while (captureStreams_.size() <= depth) {
    cudaStream_t stream = nullptr;
    ASPEN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    captureStreams_.push_back(stream);
  }
  return captureStreams_[depth];
}

void CudaGraphCache::captureInto(cudaGraph_t body, unsigned depth,
                                 const std::function<void(cudaStream_t)> &enqueue) {
  cudaStream_t stream = streamAt(depth);
  ASPEN_CUDA_CHECK(cudaStreamBeginCaptureToGraph(stream, body, nullptr, nullptr, 0,
                                                 cudaStreamCaptureModeRelaxed));
  try {
    enqueue(stream);
  } catch (...) {
    cudaGraph_t abandoned = nullptr;
    cudaStreamEndCapture(stream, &abandoned);
    throw;
  }
  cudaGraph_t captured = nullptr;
  ASPEN_CUDA_CHECK(cudaStreamEndCapture(stream, &captured));
  // An empty body (an If without else, an empty loop body) gets an empty node, so that no
  // conditional node has a graph without nodes.
  std::size_t numNodes = 0;
  ASPEN_CUDA_CHECK(cudaGraphGetNodes(body, nullptr, &numNodes));
  if (numNodes == 0) {
    cudaGraphNode_t empty = nullptr;
    ASPEN_CUDA_CHECK(cudaGraphAddEmptyNode(&empty, body, nullptr, 0));
  }
}

cudaGraphConditionalHandle CudaGraphCache::newHandle(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  ASPEN_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph));
  if (status != cudaStreamCaptureStatusActive)
    throw internal_error("CUDA graph: a conditional handle is needed outside a capture");
  cudaGraphConditionalHandle handle = 0;
  ASPEN_CUDA_CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 0, 0));
  return handle;
}

cudaGraph_t *CudaGraphCache::addConditional(cudaStream_t stream,
                                            cudaGraphConditionalHandle handle,
                                            cudaGraphConditionalNodeType type, unsigned size) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t *dependencies = nullptr;
  const cudaGraphEdgeData *edges = nullptr;
  std::size_t numDependencies = 0;
  ASPEN_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &dependencies,
                                            &edges, &numDependencies));
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = size;
  cudaGraphNode_t node = nullptr;
  ASPEN_CUDA_CHECK(cudaGraphAddNode(&node, graph, dependencies, edges, numDependencies, &params));
  ASPEN_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(stream, &node, nullptr, 1,
                                                       cudaStreamSetCaptureDependencies));
  return params.conditional.phGraph_out;
}

void CudaGraphCache::launchControl(cudaStream_t stream, cudaKernel_t kernel, void **args) {
  ASPEN_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void *>(kernel), dim3(1), dim3(1),
                                    args, 0, stream));
}

void CudaGraphCache::launchSetCondition(cudaStream_t stream, cudaGraphConditionalHandle handle,
                                        const Step &step, bool whenTrue) {
  const void *scalar = work_.scalarAddress(step.scalar);
  unsigned bytes = unsigned(step.scalar.type.size());
  unsigned isFloat = step.scalar.type.isFloatingPoint() ? 1 : 0;
  unsigned wanted = whenTrue ? 1 : 0;
  void *args[] = {&handle, &scalar, &bytes, &isFloat, &wanted};
  launchControl(stream, kernels_.setCondition, args);
}

void CudaGraphCache::enqueueStep(cudaStream_t stream, std::uint32_t index, unsigned depth) {
  const Step &step = graph_.steps[index];
  const unsigned inner = depth + 1;
  switch (step.kind) {
  case StepKind::Sequence:
    for (std::uint32_t child : step.children)
      enqueueStep(stream, child, depth);
    return;
  case StepKind::Execute:
    work_.enqueueComputeSet(stream, step.index);
    return;
  case StepKind::Copy:
    work_.enqueueCopy(stream, step.index);
    return;
  case StepKind::Kernel:
    work_.enqueueKernel(stream, step.index);
    return;
  case StepKind::Nop:
    return;
  case StepKind::If: {
    const cudaGraphConditionalHandle handle = newHandle(stream);
    launchSetCondition(stream, handle, step, true);
    cudaGraph_t *bodies = addConditional(stream, handle, cudaGraphCondTypeIf, 2);
    for (unsigned i = 0; i < 2; ++i)
      captureInto(bodies[i], inner,
                  [&](cudaStream_t s) { enqueueStep(s, step.children[i], inner); });
    return;
  }
  case StepKind::Switch: {
    cudaGraphConditionalHandle handle = newHandle(stream);
    const void *scalar = work_.scalarAddress(step.scalar);
    unsigned bytes = unsigned(step.scalar.type.size());
    unsigned isSigned = step.scalar.type.isSigned() ? 1 : 0;
    const void *cases = reinterpret_cast<const void *>(casesAddress_.at(index));
    unsigned numCases = unsigned(step.cases.size());
    void *args[] = {&handle, &scalar, &bytes, &isSigned, &cases, &numCases};
    launchControl(stream, kernels_.setSwitch, args);
    cudaGraph_t *bodies =
        addConditional(stream, handle, cudaGraphCondTypeSwitch, unsigned(step.children.size()));
    for (std::size_t i = 0; i < step.children.size(); ++i)
      captureInto(bodies[i], inner,
                  [&](cudaStream_t s) { enqueueStep(s, step.children[i], inner); });
    return;
  }
  case StepKind::RepeatWhileTrue:
  case StepKind::RepeatWhileFalse: {
    // children: [condition, body]; loop { condition; stop unless predicate == whenTrue; body }.
    const bool whenTrue = step.kind == StepKind::RepeatWhileTrue;
    enqueueStep(stream, step.children[0], depth);
    const cudaGraphConditionalHandle handle = newHandle(stream);
    launchSetCondition(stream, handle, step, whenTrue);
    cudaGraph_t *bodies = addConditional(stream, handle, cudaGraphCondTypeWhile, 1);
    captureInto(bodies[0], inner, [&](cudaStream_t s) {
      enqueueStep(s, step.children[1], inner);
      enqueueStep(s, step.children[0], inner);
      launchSetCondition(s, handle, step, whenTrue);
    });
    return;
  }
  case StepKind::Repeat: {
    if (step.count == 0)
      return;
    cudaGraphConditionalHandle handle = newHandle(stream);
    void *counter = reinterpret_cast<void *>(counterAddress_.at(index));
    unsigned count = step.count;
    void *startArgs[] = {&handle, &counter, &count};
    launchControl(stream, kernels_.repeatStart, startArgs);
    cudaGraph_t *bodies = addConditional(stream, handle, cudaGraphCondTypeWhile, 1);
    captureInto(bodies[0], inner, [&](cudaStream_t s) {
      enqueueStep(s, step.children[0], inner);
      void *nextArgs[] = {&handle, &counter};
      launchControl(s, kernels_.repeatNext, nextArgs);
    });
    return;
  }
  case StepKind::StreamToTensor:
  case StepKind::TensorToStream:
  case StepKind::PrintTensor:
  case StepKind::Abort:
  case StepKind::Cached:
    break;
  }
  throw internal_error(std::string("CUDA graph: step '") + step.name + "' (" +
                       stepKindName(step.kind) + ") needs the host and cannot be in a graph");
}

} // namespace aspen::detail
