// GPU launch tables: what the CUDA executor uploads to run a compute set and its copies.
//
// Plain host code (no CUDA calls), so that it is built and tested without a GPU or toolkit. Every
// address is absolute: the caller says where the arena, the compute set's table region and the
// copy temporary live (device addresses on a GPU, anything in tests).
//
// A compute set becomes one launch per codelet library it uses (<aspen/detail/GpuAbi.hpp>): the
// library's vertices of each tile, in their order within the tile, as one tile record. The table
// region holds the compute set's FieldDescs (shared by its launches; a vertex's firstField is its
// index in CompiledComputeSet::fields), then its nested descriptors, then each launch's tile and
// vertex records. Copies become stages of merged strided segments (run by a copy kernel) and
// memcpys for long contiguous stretches.
#pragma once

#include "compiler/CompiledGraph.hpp"

#include <aspen/detail/GpuAbi.hpp>

#include <cstdint>
#include <vector>

namespace aspen::detail {

// `count` elements from src (every srcStride bytes) to dst (every dstStride bytes). The copy
// kernel declares the same layout.
struct GpuCopySegment {
  std::uint64_t dst = 0, src = 0;
  std::int64_t dstStride = 0, srcStride = 0;
  std::uint64_t count = 0;
};
static_assert(sizeof(GpuCopySegment) == 40);

struct GpuMemcpy {
  std::uint64_t dst = 0, src = 0, bytes = 0;
};

// Parts of one stage touch disjoint bytes, so they may run in any order.
struct GpuCopyStage {
  std::vector<GpuMemcpy> memcpys;
  std::vector<GpuCopySegment> segments; // each at most kGpuCopySegmentElements long
};

// Stages run one after the other: one, or two through the temporary when src and dst may overlap.
struct GpuCopyPlan {
  std::uint32_t elementBytes = 0;
  std::vector<GpuCopyStage> stages;
};

// Segments are split to this many elements, one block of the copy kernel each.
inline constexpr std::uint64_t kGpuCopySegmentElements = 4096;
// Contiguous stretches of at least this many bytes become memcpys (as does a copy that is one
// contiguous stretch of any length); shorter ones are segments of the copy kernel.
inline constexpr std::uint64_t kGpuMemcpyMinBytes = 64 * 1024;

GpuCopyPlan gpuCopyPlan(const CopyPlan &plan, const std::vector<Buffer> &buffers,
                        std::uint64_t arenaBase, std::uint64_t temporaryBase);
// Between `regions` of the arena and a contiguous staging area holding them in element order.
GpuCopyPlan gpuTransferPlan(const RegionList &regions, const std::vector<Buffer> &buffers,
                            std::uint64_t arenaBase, std::uint64_t stagingBase, bool toArena);

// The vertices of one codelet library in a compute set: one kernel launch.
struct GpuLaunch {
  std::uint32_t library = 0; // index into CompiledGraph::libraries
  std::vector<GpuTileRecord> tiles;
  std::vector<GpuVertexRecord> vertices;
  std::vector<std::uint32_t> computeSetVertex; // vertices[i] is cs.vertices[computeSetVertex[i]]
  std::uint64_t tilesOffset = 0, verticesOffset = 0; // in the table image
};

struct GpuComputeSetTables {
  std::vector<std::uint8_t> image; // to be stored at the table base
  std::uint64_t fieldsOffset = 0, nestedOffset = 0;
  std::vector<GpuLaunch> launches; // in order of each library's first vertex
};

// For each CompiledGraph::vertexTypes entry, its index in its library's vertexTypes(). Raises
// internal_error when a library lacks the class.
std::vector<std::uint32_t> gpuVertexTypeIndices(const CompiledGraph &graph);

GpuComputeSetTables gpuLaunchTables(const CompiledGraph &graph, std::uint32_t computeSet,
                                    const std::vector<std::uint32_t> &vertexTypeIndices,
                                    std::uint64_t arenaBase, std::uint64_t tableBase);

} // namespace aspen::detail
