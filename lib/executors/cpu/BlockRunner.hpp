// How the CPU executor runs a block codelet (BlockCodelets.hpp): each block's threads are fibers
// (ucontext) on one host thread. The runner resumes the threads in order, each until it reaches
// block.sync() or returns; when every thread still running waits at the barrier, all of them are
// released. So a block behaves as CUDA's __syncthreads says, and a race-free codelet gives the
// same results as on a GPU. Threads that have returned no longer count at barriers (as on sm_70
// and later). Fiber stacks are 64 KiB (a codelet's locals live there), kept per host thread.
#pragma once

#include <aspen/detail/VertexAbi.hpp>

#include <cstddef>

namespace aspen::detail {

inline constexpr std::size_t kBlockThreadStackBytes = 64 * 1024;

// Runs block `blockId` of `numBlocks`: `threads` calls of `entry`, sharing `sharedBytes` of
// block memory. Returns false when any thread's compute() returned false.
bool runCodeletBlock(BlockEntry entry, const FieldDesc *fields, unsigned blockId,
                     unsigned numBlocks, unsigned threads, std::size_t sharedBytes);

} // namespace aspen::detail
