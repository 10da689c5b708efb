// The CPU executor's Gemm library kernel (LibraryCalls.hpp): c[g] = alpha * a[g] . b[g] +
// beta * c[g] on host memory, row-major blocks one after another. OpenBLAS's cblas_sgemm (its
// own threads, all cores) when Aspen is built with it, else a portable loop over the executor's
// thread pool. Half operands are widened to float and a half result rounded once at the end, so
// products always accumulate in float.
#pragma once

#include "ThreadPool.hpp"
#include "compiler/CompiledGraph.hpp"

#include <vector>

namespace aspen::detail {

// Raises aspen::error when a dimension exceeds what the BLAS interface can index.
void checkCpuGemm(const CompiledKernel &kernel);

void cpuGemm(const GemmShape &shape, const void *a, const void *b, void *c, float alpha,
             ThreadPool &pool, std::vector<float> &workspace);

// Whether cpuGemm calls OpenBLAS (false: the portable loop).
bool cpuGemmUsesBlas();

} // namespace aspen::detail
