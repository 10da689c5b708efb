// How the CPU executor runs a block codelet's launch (BlockCodelets.hpp): every thread of a block
// is a fiber (ucontext), and all the fibers of one block live on one host thread, so a block's
// shared memory and barrier need no locks.
//
// A fiber runs until it reaches block.sync(), polls a wait (Block::waitUntil, Block::gridSync)
// whose predicate is false, or returns. A host thread cycles over its fibers, pass after pass:
// a block's threads waiting at its barrier are released when every thread of the block still
// running has reached it (CUDA's __syncthreads rule; threads that returned no longer count, as
// on sm_70 and later), and a polling fiber tests its predicate again each time it is resumed.
//
// A launch that is not co-resident runs block by block in parallel on the pool, one block's
// fibers at a time on a host thread, as before. A co-resident launch (LaunchShape::coResident)
// creates every block's fibers at once, the blocks dealt round-robin to min(pool threads,
// blocks) host threads, so a block that waits for another makes progress whatever the number of
// host threads, even one. A host thread whose whole pass changed nothing (every fiber it
// resumed found its predicate still false) sleeps until another host thread makes progress.
// When every host thread's last pass changed nothing and none has made progress since, nothing
// can change any more: the launch fails with a runtime_error naming it and where its blocks
// wait. The same check ends a block that is not co-resident and waits for something no thread of
// its own block can provide.
//
// Fiber stacks are 64 KiB of address space each (MAP_NORESERVE: only the pages a codelet
// touches cost memory), kept per host thread for the next launch.
#pragma once

#include <aspen/detail/VertexAbi.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace aspen::detail {

class ThreadPool;
class Watchdog;

inline constexpr std::size_t kBlockThreadStackBytes = 64 * 1024;

struct BlockLaunchRun {
  BlockEntry entry = nullptr;
  const FieldDesc *fields = nullptr;
  unsigned blocks = 1, threads = 1;
  std::size_t sharedBytes = 0;
  bool coResident = false;
  bool reverseThreads = false; // resume a block's fibers from the last to the first
  std::string name;            // the Launch, for messages
  // Under aspen.timeLimit: the watchdog and the run's generation (CodeletInterrupt.hpp);
  // nullptr when the run has no time limit.
  Watchdog *watchdog = nullptr;
  std::uint64_t generation = 0;
};

struct BlockLaunchOutcome {
  bool failed = false;  // some thread's compute() returned false
  bool stopped = false; // the watchdog stopped the launch
};

// Runs every block of `run` on `pool`. Raises runtime_error when every thread of the launch (or
// of one block of a launch that is not co-resident) waits and nothing can change.
BlockLaunchOutcome runBlockLaunch(const BlockLaunchRun &run, ThreadPool &pool);

} // namespace aspen::detail
