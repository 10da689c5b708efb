// The CUDA executor's convolution calls (ConvForward, ConvBackwardData, ConvBackwardFilter;
// Kernels.hpp). Each call is planned at Engine::load, one of two ways:
//  - cuDNN, opened at load as cuBLASLt is (libcudnn.so.9 from ASPEN_CUDNN_LIBRARY, a file or
//    its folder, else the loader's path, $CUDNN_HOME, $CUDA_HOME/lib64 or the build's toolkit).
//    Taken when the tables are an ordinary convolution (stride, kernel dilation, padding) whose
//    padding cuDNN's one-value-a-dimension form reproduces, every operand has one element type
//    and the sizes fit cuDNN's int dimensions. The algorithm is the first of cuDNN's heuristic
//    ranking that is deterministic and whose workspace fits the call's bound
//    (geometry.workspaceBytes, from availableMemoryProportion, and at most half the device
//    memory free at load), else the first that fits. Float runs FMA maths unless the call allows TF32; half runs
//    with float accumulation on the tensor cores.
//  - Otherwise im2col + cuBLASLt: as many images as the bound allows (at least one) are lowered
//    into columns by one kernel, then one cuBLASLt product an image, batched over the groups;
//    backward data multiplies first and gathers the columns back (col2im reading each element's
//    taps in order, so no atomics); the weight update accumulates one product an image.
// With a scale tensor (ConvBackwardFilter), or half weights on the im2col path, the deltas go
// to scratch first and one kernel applies them. Every call reads only device memory and
// constants fixed at load, so it can be captured into a CUDA graph.
//
// Engine option aspen.cuda.convolutions: auto (cuDNN where it applies, else im2col + cuBLASLt),
// cudnn (cuDNN or a load error saying why not), gemm (im2col + cuBLASLt always).
#pragma once

#include "CudaExecutorOptions.hpp"
#include "compiler/CompiledGraph.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace aspen::detail {

class CudaConvKernels {
public:
  // Plans every convolution call of `graph` whose operands live at `arenaBase`. `convKernel`
  // gives a kernel of the Conv executor module (CudaExecutorKernels.hpp) by name; it is called
  // only when some call takes the im2col path. Raises aspen::error naming the call when it
  // cannot run as `path` asks.
  CudaConvKernels(const CompiledGraph &graph, std::uint64_t arenaBase, CudaConvPath path,
                  const std::function<cudaKernel_t(const char *)> &convKernel);
  CudaConvKernels(const CudaConvKernels &) = delete;
  CudaConvKernels &operator=(const CudaConvKernels &) = delete;
  ~CudaConvKernels();

  // Enqueues convolution kernel `index` on `stream`.
  void enqueue(cudaStream_t stream, std::uint32_t index) const;
  // How kernel `index` runs, e.g. "cuDNN algorithm 1 (deterministic), 0 bytes of workspace".
  std::string describe(std::uint32_t index) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace aspen::detail
