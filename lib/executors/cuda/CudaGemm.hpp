// The CUDA executor's Gemm library kernel (Kernels.hpp): one cuBLASLt matmul per library
// call. Everything the call needs is made at Engine::load: the handle, one workspace shared by
// all calls (they run one after another on the executor's stream), each call's descriptors and
// the algorithm cuBLASLt's heuristic picks for its shapes, types and operand alignment. alpha and
// beta are read from device memory (the scale tensor, or constants), so an enqueued call has no
// host state and can be captured into a CUDA graph.
//
// Row-major operands are handed to column-major cuBLASLt as their transposes: C^T = B^T . A^T,
// which needs no data movement. Products accumulate in float (CUBLAS_COMPUTE_32F, or
// CUBLAS_COMPUTE_32F_FAST_TF32 for float with allowTF32); half inputs use the tensor cores.
#pragma once

#include "CudaDevice.hpp"
#include "compiler/CompiledGraph.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace aspen::detail {

class CudaGemmKernels {
public:
  // Plans every Gemm kernel of `graph` (other kernel kinds are not its business) whose operands live at `arenaBase` (buffer offsets added).
  // Raises aspen::error naming the kernel when cuBLASLt has no algorithm for it.
  CudaGemmKernels(const CompiledGraph &graph, std::uint64_t arenaBase);
  CudaGemmKernels(const CudaGemmKernels &) = delete;
  CudaGemmKernels &operator=(const CudaGemmKernels &) = delete;
  ~CudaGemmKernels();

  // Enqueues kernel `index`'s matmul (not its gathers or scatters) on `stream`.
  void enqueue(cudaStream_t stream, std::uint32_t index) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace aspen::detail
