// The binary contract between the CUDA executor and a codelet library compiled for the GPU.
//
// Every codelet library compiled for the GPU (ahead of time by nvcc, or by NVRTC at engine
// compile time) exports one kernel:
//
//   extern "C" __global__ void aspen_run_vertices(const aspen::detail::GpuTileRecord *tiles,
//                                                 const aspen::detail::GpuVertexRecord *vertices,
//                                                 const aspen::detail::FieldDesc *fields,
//                                                 unsigned *failedVertex);
//
// launched with one block per tile record (gridDim.x = number of tile records) and blockDim.x =
// the compiled target's worker count. Block b runs the vertices [tiles[b].begin, tiles[b].end)
// of the vertex table in order: a MultiVertex on every thread of the block (workerId =
// threadIdx.x, numWorkers = blockDim.x); a Vertex on one thread, vertex i of the tile on thread
// (i - begin) % blockDim.x. Vertex v's field descriptors start at fields[vertices[v].firstField]
// (same layout and meaning as the host ABI in VertexAbi.hpp, with device addresses), and
// vertices[v].type is the index of the vertex class in the library's vertex list
// (CodeletLibrary::vertexTypes() order). When compute() returns false the kernel stores ~v into
// *failedVertex with atomicMax, so the word (0 when nothing failed) names the lowest failing
// vertex of the launch, whatever order blocks and threads run in.
// The kernel is declared __launch_bounds__(ASPEN_GPU_MAX_THREADS_PER_BLOCK, 1), so it loads for
// any block size a device allows (at most 64 registers a thread, and no fewer: one block of 1024
// threads a multiprocessor is all the bound asks for), and each warp reconverges (__syncwarp)
// before a MultiVertex, so that warp-wide instructions (mma.sync, shuffles) in one see every
// lane of the warp.
//
// A block codelet (a class deriving from BlockVertex) is never dispatched by that kernel (its
// case traps). The library exports one kernel per such class k instead:
//
//   extern "C" __global__ void aspen_block_<k>(const aspen::detail::FieldDesc *fields,
//                                              unsigned long long sharedBytes,
//                                              unsigned *failedVertex,
//                                              aspen::detail::GridState *grid);
//
// launched by program::Launch with its own shape (gridDim.x blocks of blockDim.x threads and
// sharedBytes of dynamic shared memory); fields are the vertex's descriptors, a thread whose
// compute() returns false stores ~0 into *failedVertex (atomicMax), and grid holds the launch's
// grid barrier and wait record (VertexAbi.hpp), its first 16 bytes zeroed before each launch.
// It is declared __launch_bounds__(maxThreadsPerBlock, 1) when the class declares that
// (Vertex.hpp), else with ASPEN_GPU_MAX_THREADS_PER_BLOCK. A co-resident launch
// (LaunchShape::coResident) is a cooperative launch: every block is resident at once.
// No standard library here: this header is also compiled by NVRTC.
#pragma once

#include <aspen/detail/VertexAbi.hpp>

namespace aspen {
namespace detail {

// The largest block a GPU runs (every CUDA device since compute capability 2.0).
#define ASPEN_GPU_MAX_THREADS_PER_BLOCK 1024

struct GpuTileRecord {
  unsigned tile;  // the tile of the compiled target, for messages
  unsigned begin; // vertices [begin, end) of the vertex table
  unsigned end;
};

struct GpuVertexRecord {
  unsigned type;       // index into the library's vertex classes
  unsigned firstField; // index of the vertex's first FieldDesc
};

// The kernel every GPU codelet library exports.
#define ASPEN_GPU_KERNEL_NAME "aspen_run_vertices"
// The prefix of a block codelet's kernel, followed by the class's index in the library.
#define ASPEN_GPU_BLOCK_KERNEL_PREFIX "aspen_block_"

} // namespace detail
} // namespace aspen
