// Moving elements between byte runs of an arena and contiguous memory, on the host.
#pragma once

#include "compiler/CompiledGraph.hpp"

#include <cstdint>
#include <vector>

namespace aspen::detail {

// Addresses of buffers in a loaded arena. A buffer bound to memory outside the arena has as its
// offset that memory's address minus the arena's, modulo 2^64 (CpuExecutor::bindBuffer).
class ArenaView {
public:
  ArenaView() = default;
  ArenaView(std::uint8_t *base, const std::vector<Buffer> &buffers)
      : base_(base), buffers_(&buffers) {}
  std::uint8_t *address(std::uint32_t buffer, std::int64_t offset) const {
    return reinterpret_cast<std::uint8_t *>(reinterpret_cast<std::uintptr_t>(base_) +
                                            (*buffers_)[buffer].offset +
                                            static_cast<std::uint64_t>(offset));
  }

private:
  std::uint8_t *base_ = nullptr;
  const std::vector<Buffer> *buffers_ = nullptr;
};

// regions -> host (element order), host -> regions.
void gatherRegions(const ArenaView &arena, const RegionList &regions, void *host);
void scatterRegions(const ArenaView &arena, const RegionList &regions, const void *host);
// The same for elements [first, last) only (host still points at element 0): parts of one
// transfer that threads can move side by side.
void gatherRegions(const ArenaView &arena, const RegionList &regions, void *host,
                   std::uint64_t first, std::uint64_t last);
void scatterRegions(const ArenaView &arena, const RegionList &regions, const void *host,
                    std::uint64_t first, std::uint64_t last);
// Element i of plan.src to element i of plan.dst; `temporary` is reused between calls.
void copyRegions(const ArenaView &arena, const CopyPlan &plan, std::vector<std::uint8_t> &temporary);

} // namespace aspen::detail
