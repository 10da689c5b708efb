// The NCCL transport of the collectives (aspen/Collectives.hpp) on the CUDA executor: each
// collective kernel becomes NCCL calls on the executor's stream (eager, or captured into a CUDA
// graph of a device subtree, DeviceSubtrees.hpp), straight on the arena's device memory. One
// communicator of all replicas, NCCL's rank the replica (an engine on a GPU runs one replica,
// one process a GPU), and one more a kind of replica group (CommGroup), split from it at load
// with the replica's position in its group as its rank. NCCL is opened at load with dlopen
// (libnccl.so.2, about 220 MB, is not linked), and only in a build with its header (CMake
// ASPEN_NCCL).
//
// What NCCL takes: ADD, MUL, MIN, MAX and MEAN on FLOAT, HALF and the integer types but SHORT
// and UNSIGNED_SHORT (NCCL has no 16-bit integer), LOGICAL_AND and LOGICAL_OR on BOOL (NCCL's
// min and max of bytes), LOCAL (a copy), reduce-scatter (through a zero-padded scratch copy when
// the group size does not divide the elements), all-gather, broadcast, and all-to-all and
// cross-replica copy as grouped ncclSend/ncclRecv (the data copied aside first when it overlaps
// the result). SQUARE_ADD has no NCCL operator: a graph with one, or with a 16-bit integer
// collective, keeps all its collectives on the host path (unsupported()). NCCL's reduction order
// is its own, so a result may differ in its last bits from the CPU executor's replica-order
// one; it repeats for a fixed world.
#pragma once

#include "compiler/CompiledGraph.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace aspen::detail {

class CudaCollectives {
public:
  // Why NCCL cannot run `graph`'s collectives (empty: it can): an operator it lacks, or no
  // NCCL in this build.
  static std::string unsupported(const CompiledGraph &graph);
  // A new communicator id (ncclGetUniqueId), for rank 0 to hand to the others. Raises
  // aspen::error when NCCL cannot be opened.
  static std::vector<std::uint8_t> newId();

  // Joins the communicator `id` as replica `replica` of `replicas` on the current device, and
  // splits the groups' from it, waiting for the other replicas until `deadline` (aspen::error
  // naming the wait otherwise).
  CudaCollectives(const CompiledGraph &graph, std::uint8_t *arena, unsigned replica,
                  unsigned replicas, const std::vector<std::uint8_t> &id,
                  std::chrono::steady_clock::time_point deadline);
  ~CudaCollectives();
  CudaCollectives(const CudaCollectives &) = delete;
  CudaCollectives &operator=(const CudaCollectives &) = delete;

  // Puts collective kernel `index` on `stream`. Raises runtime_error once aborted.
  void enqueue(cudaStream_t stream, std::uint32_t index);
  // Aborts the communicators (ncclCommAbort: NCCL kernels waiting for a rank that never comes
  // return), because of `why` ("collective 'x' had not completed after 30 s"); every later
  // enqueue is refused, naming it.
  void abort(const std::string &why);
  // Why abort() was called; empty while the communicators work.
  const std::string &aborted() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace aspen::detail
