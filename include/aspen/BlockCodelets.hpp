// Block codelets: hand-written kernels that use block-shared memory and block barriers, run as
// kernel steps with their own launch shape. An Aspen extension (Poplar has none).
//
// Writing one: a codelet class deriving from aspen::BlockVertex with
// `bool compute(aspen::Block &block)` (or void), fields as for any vertex (Vertex.hpp). Every
// thread of every block runs compute(); block.threadId(), numThreads(), blockId() and
// numBlocks() place it, block.shared<T>() is the block's shared memory (sharedBytes, contents
// undefined at entry) and block.sync() is the block barrier, which every thread of the block
// must reach the same number of times. This is the place for kernels the vertex model cannot
// express: tiled products staged through shared memory, block-wide scans and reductions, a
// persistent recurrence that keeps its state on chip across time steps.
//
// Running one: add it to a compute set of its own with Graph::addVertex, connect and map it like
// any vertex (its tile mapping is where its own state lives; the launch is not per tile), then
// add program::Launch(cs, shape) to a program. On a GPU the launch is one kernel of
// shape.blocks blocks of shape.threadsPerBlock threads with shape.sharedBytes of dynamic shared
// memory; the CPU executor runs each block's threads as fibers that switch at block.sync() and at
// waits, with blocks in parallel on its threads, so a race-free codelet gives the same results
// on both.
//
// Co-resident launches: LaunchShape::coResident promises that every block of the launch runs
// at the same time, so blocks may wait for each other (Block::waitUntil over values published
// with aspen::storeRelease or aspen::publish, and Block::gridSync, in Vertex.hpp). On a GPU it
// is a cooperative launch: at load the executor checks that the grid fits on the device at
// once (the blocks per multiprocessor that the kernel's registers and shared memory allow,
// times the multiprocessors) and fails naming both when it does not; a wait that polls longer
// than aspen.cuda.waitTimeout (10 s) gives up and the run fails naming the Launch, the block
// and where it waited, never a hang. Control flow over a co-resident Launch runs from the host
// (a cooperative kernel cannot be in a CUDA graph's conditional node). On the CPU executor all
// blocks' fibers exist at once, spread over the executor's threads, and a waiting fiber yields,
// so the launch completes on one thread too; when every thread of the launch waits and nothing
// can change, the run fails with a runtime_error naming the Launch and where each block waits.
// A block of a launch that is not co-resident that waits for what no thread of its own block
// provides fails the same way, pointing at coResident.
//
// Errors (control_program_error, raised when the program is compiled): a compute set that holds
// anything but one block codelet vertex, a block codelet in a compute set run by Execute,
// threadsPerBlock above 1024 (or the GPU target's limit, or the codelet's maxThreadsPerBlock),
// sharedBytes above the target's opt-in shared memory per block (227 KiB on targets that are
// not GPUs), a codelet declaring coResident in a launch that is not, and on a GPU target a
// co-resident launch of more blocks than its multiprocessors hold at once by threads and shared
// memory. At construction: no blocks.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Program.hpp>

#include <cstddef>

namespace aspen {

struct LaunchShape {
  unsigned blocks = 1;
  unsigned threadsPerBlock = 0; // 0: the target's workers per tile
  std::size_t sharedBytes = 0;
  // Every block runs at the same time, so blocks may wait for each other (Block::waitUntil,
  // Block::gridSync in Vertex.hpp). See "Co-resident launches" above.
  bool coResident = false;
};

namespace program {

class ASPEN_API Launch : public Program {
public:
  Launch(ComputeSet cs, const LaunchShape &shape, const DebugContext &debug = {});
};

} // namespace program
} // namespace aspen
