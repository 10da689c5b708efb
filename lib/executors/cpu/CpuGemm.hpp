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

void cpuGemm(const GemmShape &shape, const void *a, const void *b, void *c, float alpha,
             ThreadPool &pool, std::vector<float> &workspace);

} // namespace aspen::detail
