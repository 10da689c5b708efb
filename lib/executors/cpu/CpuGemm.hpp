// The CPU executor's Gemm library kernel (Kernels.hpp): c[g] = alpha * a[g] . b[g] +
// beta * c[g] on host memory, row-major blocks one after another. OpenBLAS's cblas_sgemm (opened
// at the first call, see CpuGemm.cpp) on all cores: one call when OpenBLAS runs threads of its
// own, else (OPENBLAS_NUM_THREADS=1, another CBLAS) slices of c's rows (or columns, when it has
// fewer rows) cut by the shape alone, which the executor's threads share, so the bits do not
// depend on the executor's thread count. Without a CBLAS library, a
// portable loop over the executor's thread pool. Half operands are widened to float and a half
// result rounded once at the end, so products always accumulate in float.
#pragma once

#include "ThreadPool.hpp"
#include "compiler/CompiledGraph.hpp"

#include <vector>

namespace aspen::detail {

// Raises aspen::error when a dimension exceeds what the BLAS interface can index.
void checkCpuGemm(const CompiledKernel &kernel);

// One row-major float product on the calling thread, C[M,N] = alpha * op(A) . op(B) + beta * C
// (op: transposed when asked; lda, ldb, ldc the row lengths as stored), through the CBLAS
// library cpuGemm opens, or a portable loop without one. For kernels that cut their own work
// (the convolution calls, CpuConv.hpp); dimensions must fit an int.
void hostSgemm(bool transA, bool transB, std::uint64_t M, std::uint64_t N, std::uint64_t K,
               float alpha, const float *a, std::uint64_t lda, const float *b, std::uint64_t ldb,
               float beta, float *c, std::uint64_t ldc);
// Whether that library runs threads of its own: its callers should then make one call at a time.
bool hostBlasHasOwnThreads();

void cpuGemm(const GemmShape &shape, const void *a, const void *b, void *c, float alpha,
             ThreadPool &pool, std::vector<float> &workspace);

} // namespace aspen::detail
