// Field descriptors at run time: a compute set's DescTemplates turned into FieldDescs, given
// where the arena and the compute set's nested descriptor table live. The CPU executor resolves
// into host memory; the CUDA executor resolves into device addresses (GpuLaunchTables), so both
// see every field at the same arena offset and size.
#pragma once

#include "compiler/CompiledGraph.hpp"

#include <aspen/detail/VertexAbi.hpp>

#include <cstdint>
#include <vector>

namespace aspen::detail {

// Address of byte `offset` of `buffer` in an arena whose first byte is at `arenaBase`.
inline std::uint64_t arenaAddress(std::uint64_t arenaBase, const std::vector<Buffer> &buffers,
                                  std::uint32_t buffer, std::int64_t offset) {
  return arenaBase + buffers[buffer].offset + static_cast<std::uint64_t>(offset);
}

// The descriptors of `cs` (fields[i] for cs.fields[i], nested[i] for cs.nested[i]) when the arena
// starts at `arenaBase` and the nested descriptors will be stored at `nestedBase`.
struct ResolvedFields {
  std::vector<FieldDesc> fields, nested;
};
ResolvedFields resolveFields(const CompiledComputeSet &cs, const std::vector<Buffer> &buffers,
                             std::uint64_t arenaBase, std::uint64_t nestedBase);

} // namespace aspen::detail
