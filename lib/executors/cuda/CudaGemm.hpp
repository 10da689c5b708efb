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

#include <aspen/Type.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace aspen::detail {

// A cuBLASLt handle with the workspace its products share (they run one after another on the
// executor's stream) and the constants 0 and 1 in device memory, for alpha and beta.
class CudaBlasLt {
public:
  CudaBlasLt(); // opens cuBLASLt (raises aspen::error when it cannot)
  CudaBlasLt(const CudaBlasLt &) = delete;
  CudaBlasLt &operator=(const CudaBlasLt &) = delete;
  ~CudaBlasLt();
  const void *zero() const;
  const void *one() const;

private:
  friend class CudaGemmPlan;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A row-major product planned once: c[g] = alpha * op(a[g]) . op(b[g]) + beta * c[g] for g < G,
// op(a) [M,K] (a stored [K,M] with transA), op(b) [K,N] (b stored [N,K] with transB), c [M,N];
// the G matrices of each operand `stride*` elements apart. alpha and beta are device pointers
// to floats, so an enqueued product has no host state and can be captured into a CUDA graph.
struct GemmLayout {
  std::uint64_t G = 1, M = 1, K = 1, N = 1;
  bool transA = false, transB = false;
  std::uint64_t strideA = 0, strideB = 0, strideC = 0;
  Type inputType = FLOAT, outputType = FLOAT; // a and b; c
  bool allowTF32 = false;
  std::uint32_t alignment = 256; // bytes every a, b and c address it is given is aligned to
};

class CudaGemmPlan {
public:
  // Raises aspen::error naming `what` when cuBLASLt has no algorithm for the layout.
  CudaGemmPlan(const CudaBlasLt &blas, const GemmLayout &layout, const std::string &what);
  CudaGemmPlan(const CudaGemmPlan &) = delete;
  CudaGemmPlan &operator=(const CudaGemmPlan &) = delete;
  ~CudaGemmPlan();
  void enqueue(cudaStream_t stream, const void *a, const void *b, void *c, const void *alpha,
               const void *beta) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The largest power of two up to 256 that divides `address`: the alignment cuBLASLt may assume.
std::uint32_t gemmAlignmentOf(std::uint64_t address);

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
