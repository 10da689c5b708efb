// The NCCL transport of the collectives (aspen/Collectives.hpp) on the CUDA executor: each
// collective kernel becomes one NCCL call on the executor's stream, straight on the arena's
// device memory, over a communicator of the launch's ranks (one GPU a rank: an engine on a GPU
// runs one replica). NCCL is opened at load with dlopen (libnccl.so.2, about 220 MB, is not
// linked), and only in a build with its header (CMake ASPEN_NCCL).
//
// What NCCL takes: ADD, MUL, MIN, MAX and MEAN on FLOAT, HALF, INT and UNSIGNED_INT (MEAN:
// FLOAT and HALF), LOGICAL_AND and LOGICAL_OR on BOOL (NCCL's min and max of bytes), LOCAL (a
// copy), reduce-scatter (through a zero-padded scratch copy when r does not divide the
// elements), all-gather and broadcast. SQUARE_ADD has no NCCL operator: a graph with one keeps
// its collectives on the host path (supported()). NCCL's reduction order is its own, so a
// result may differ in its last bits from the CPU executor's replica-order one; it repeats for
// a fixed world.
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

  // Joins the communicator `id` as `rank` of `ranks` on the current device, waiting for the
  // other ranks until `deadline` (aspen::error naming the wait otherwise).
  CudaCollectives(const CompiledGraph &graph, std::uint8_t *arena, unsigned rank, unsigned ranks,
                  const std::vector<std::uint8_t> &id,
                  std::chrono::steady_clock::time_point deadline);
  ~CudaCollectives();
  CudaCollectives(const CudaCollectives &) = delete;
  CudaCollectives &operator=(const CudaCollectives &) = delete;

  // Puts collective kernel `index` on `stream`.
  void enqueue(cudaStream_t stream, std::uint32_t index);

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace aspen::detail
