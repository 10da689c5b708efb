// The CUDA executor: runs a CompiledGraph on one GPU.
//
// Memory is one arena from cudaMalloc (never managed memory) holding every buffer at its planned
// offset, loaded with the graph's initial values. A compute set runs as one launch per codelet
// library (GpuLaunchTables: one block per tile record, the compiled target's worker count of
// threads) on one stream, its gathers and scatters being Copy steps of their own; a vertex whose
// compute() returns false is reported like the CPU executor does (the lowest failing vertex of
// the compute set). Copies and non-contiguous host transfers run the copy kernel
// (CudaExecutorKernels.hpp) or memcpys.
// Device-only control-flow subtrees run as cached CUDA graphs (CudaGraph.hpp) unless control flow
// is host-driven. Compute sets run one by one are timed with CUDA events; NVTX ranges name compute
// sets and graph subtrees.
//
// Every kernel is loaded into the context when the engine loads (CUDA loads lazily by default,
// and a first load inside a graph capture is refused by some drivers), and the codelet kernels'
// register counts are checked against the block size then.
#pragma once

#include "CudaExecutorOptions.hpp"
#include "executors/Executor.hpp"

#include <memory>

namespace aspen::detail {

std::unique_ptr<Executor> makeCudaExecutor(const CudaExecutorOptions &options);

} // namespace aspen::detail
