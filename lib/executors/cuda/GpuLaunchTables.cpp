// Building GPU launch tables and copy plans (see GpuLaunchTables.hpp).
#include "GpuLaunchTables.hpp"

#include "executors/FieldResolution.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <cstring>

namespace aspen::detail {

namespace {

// `count` elements at `address`, then every `stride` bytes.
struct AddressRun {
  std::uint64_t address = 0;
  std::int64_t stride = 0;
  std::uint64_t count = 0;
};

std::vector<AddressRun> addressRuns(const RegionList &regions, const std::vector<Buffer> &buffers,
                                    std::uint64_t arenaBase) {
  std::vector<AddressRun> runs;
  runs.reserve(regions.runs.size());
  for (const ByteRun &r : regions.runs)
    runs.push_back({arenaAddress(arenaBase, buffers, r.buffer, r.offset), r.stride, r.count});
  return runs;
}

std::vector<AddressRun> contiguousRun(std::uint64_t address, const RegionList &regions) {
  return {{address, std::int64_t(regions.elementBytes), regions.numElements}};
}

bool isContiguous(const GpuCopySegment &s, std::uint32_t elementBytes) {
  return s.dstStride == std::int64_t(elementBytes) && s.srcStride == std::int64_t(elementBytes);
}

// Appends `s`, extending the last segment when `s` continues it with the same strides.
void appendMerged(std::vector<GpuCopySegment> &segments, GpuCopySegment s) {
  if (!segments.empty()) {
    GpuCopySegment &last = segments.back();
    if (last.dstStride == s.dstStride && last.srcStride == s.srcStride &&
        last.dst + std::uint64_t(last.dstStride * std::int64_t(last.count)) == s.dst &&
        last.src + std::uint64_t(last.srcStride * std::int64_t(last.count)) == s.src) {
      last.count += s.count;
      return;
    }
  }
  segments.push_back(s);
}

// Element i of `src` to element i of `dst`: both lists walked in step, each stretch that both
// runs allow becoming one segment; then long contiguous stretches become memcpys and the rest is
// cut into kernel-sized segments.
GpuCopyStage pairRuns(const std::vector<AddressRun> &src, const std::vector<AddressRun> &dst,
                      std::uint32_t elementBytes) {
  const auto eb = std::int64_t(elementBytes);
  std::vector<GpuCopySegment> merged;
  std::size_t i = 0, j = 0;
  std::uint64_t si = 0, dj = 0; // elements done in src[i], dst[j]
  while (i < src.size() && j < dst.size()) {
    const std::uint64_t n = std::min(src[i].count - si, dst[j].count - dj);
    if (n > 0) {
      GpuCopySegment s{dst[j].address + std::uint64_t(dst[j].stride * std::int64_t(dj)),
                       src[i].address + std::uint64_t(src[i].stride * std::int64_t(si)),
                       n == 1 ? eb : dst[j].stride, n == 1 ? eb : src[i].stride, n};
      appendMerged(merged, s);
    }
    if ((si += n) == src[i].count)
      ++i, si = 0;
    if ((dj += n) == dst[j].count)
      ++j, dj = 0;
  }
  GpuCopyStage stage;
  for (const GpuCopySegment &s : merged) {
    const std::uint64_t bytes = s.count * elementBytes;
    if (isContiguous(s, elementBytes) && (bytes >= kGpuMemcpyMinBytes || merged.size() == 1)) {
      stage.memcpys.push_back({s.dst, s.src, bytes});
      continue;
    }
    for (std::uint64_t done = 0; done < s.count; done += kGpuCopySegmentElements) {
      const std::uint64_t n = std::min(kGpuCopySegmentElements, s.count - done);
      stage.segments.push_back({s.dst + std::uint64_t(s.dstStride * std::int64_t(done)),
                                s.src + std::uint64_t(s.srcStride * std::int64_t(done)),
                                s.dstStride, s.srcStride, n});
    }
  }
  return stage;
}

template <typename T> std::uint64_t appendRecords(std::vector<std::uint8_t> &image,
                                                  const std::vector<T> &records) {
  image.resize((image.size() + 15) / 16 * 16);
  const std::uint64_t offset = image.size();
  image.resize(offset + records.size() * sizeof(T));
  if (!records.empty())
    std::memcpy(image.data() + offset, records.data(), records.size() * sizeof(T));
  return offset;
}

} // namespace

GpuCopyPlan gpuCopyPlan(const CopyPlan &plan, const std::vector<Buffer> &buffers,
                        std::uint64_t arenaBase, std::uint64_t temporaryBase) {
  GpuCopyPlan result;
  result.elementBytes = plan.src.elementBytes;
  const auto src = addressRuns(plan.src, buffers, arenaBase);
  const auto dst = addressRuns(plan.dst, buffers, arenaBase);
  if (plan.throughTemporary) {
    const auto temporary = contiguousRun(temporaryBase, plan.src);
    result.stages.push_back(pairRuns(src, temporary, result.elementBytes));
    result.stages.push_back(pairRuns(temporary, dst, result.elementBytes));
  } else {
    result.stages.push_back(pairRuns(src, dst, result.elementBytes));
  }
  return result;
}

GpuCopyPlan gpuTransferPlan(const RegionList &regions, const std::vector<Buffer> &buffers,
                            std::uint64_t arenaBase, std::uint64_t stagingBase, bool toArena) {
  const auto arena = addressRuns(regions, buffers, arenaBase);
  const auto staging = contiguousRun(stagingBase, regions);
  GpuCopyPlan result;
  result.elementBytes = regions.elementBytes;
  result.stages.push_back(toArena ? pairRuns(staging, arena, regions.elementBytes)
                                  : pairRuns(arena, staging, regions.elementBytes));
  return result;
}

std::vector<std::uint32_t> gpuVertexTypeIndices(const CompiledGraph &graph) {
  std::vector<std::uint32_t> indices;
  indices.reserve(graph.vertexTypes.size());
  for (const CompiledVertexType &type : graph.vertexTypes) {
    const auto &classes = graph.libraries.at(type.library)->vertexTypes();
    const auto it =
        std::find_if(classes.begin(), classes.end(),
                     [&](const VertexTypeInfo &info) { return info.name == type.name; });
    if (it == classes.end())
      throw internal_error("vertex type " + type.name + " is not a class of codelet library " +
                           graph.libraries[type.library]->sourceName());
    indices.push_back(std::uint32_t(it - classes.begin()));
  }
  return indices;
}

GpuComputeSetTables gpuLaunchTables(const CompiledGraph &graph, std::uint32_t computeSet,
                                    const std::vector<std::uint32_t> &vertexTypeIndices,
                                    std::uint64_t arenaBase, std::uint64_t tableBase) {
  const CompiledComputeSet &cs = graph.computeSets.at(computeSet);
  GpuComputeSetTables tables;

  // Launches in order of each library's first vertex; per tile group, one record per library.
  std::vector<std::int32_t> launchOfLibrary(graph.libraries.size(), -1);
  for (const TileGroup &group : cs.tiles) {
    for (std::uint32_t v = group.begin; v < group.end; ++v) {
      const CompiledVertex &vertex = cs.vertices[v];
      const std::uint32_t library = graph.vertexTypes[vertex.type].library;
      if (launchOfLibrary[library] < 0) {
        launchOfLibrary[library] = std::int32_t(tables.launches.size());
        tables.launches.push_back({});
        tables.launches.back().library = library;
      }
      GpuLaunch &launch = tables.launches[std::size_t(launchOfLibrary[library])];
      const auto index = std::uint32_t(launch.vertices.size());
      if (launch.tiles.empty() || launch.computeSetVertex.back() < group.begin)
        launch.tiles.push_back({group.tile, index, index});
      launch.vertices.push_back({vertexTypeIndices[vertex.type], vertex.firstField});
      launch.computeSetVertex.push_back(v);
      ++launch.tiles.back().end;
    }
  }

  // The image: fields, nested descriptors, then each launch's records.
  const std::uint64_t nestedOffset = (cs.fields.size() * sizeof(FieldDesc) + 15) / 16 * 16;
  const ResolvedFields resolved =
      resolveFields(cs, graph.buffers, arenaBase, tableBase + nestedOffset);
  tables.fieldsOffset = appendRecords(tables.image, resolved.fields);
  tables.nestedOffset = appendRecords(tables.image, resolved.nested);
  if (tables.nestedOffset != nestedOffset)
    throw internal_error("GPU launch tables: nested descriptors of compute set '" + cs.name +
                         "' are not where their addresses say");
  for (GpuLaunch &launch : tables.launches) {
    launch.tilesOffset = appendRecords(tables.image, launch.tiles);
    launch.verticesOffset = appendRecords(tables.image, launch.vertices);
  }
  return tables;
}

} // namespace aspen::detail
