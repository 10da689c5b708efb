// The CPU executor: runs compiled codelets' host entry points. A compute set's tiles run in
// parallel on a thread pool; a tile's vertices run in order of addition; a MultiVertex runs
// compute(workerId) for every worker of the target, one after another.
#pragma once

#include "executors/Executor.hpp"

#include <memory>

namespace aspen::detail {

struct CpuExecutorOptions {
  unsigned threads = 1;
  // Runs MultiVertex workers from the last to the first, to show that results do not depend on
  // the order of workers.
  bool reverseWorkers = false;
  // Convolution calls through oneDNN where it applies (CpuOneDnn.hpp); false: im2col + BLAS.
  bool oneDnnConvolutions = true;
  // A compute set whose fields hold at most this many elements runs on the calling thread
  // (CpuExecutor.cpp); 0 splits every compute set over the threads, as the tests that compare
  // thread counts do.
  unsigned inlineElements = 16384;
};

std::unique_ptr<Executor> makeCpuExecutor(const CpuExecutorOptions &options);

} // namespace aspen::detail
