#include "MemoryLayout.hpp"

#include "core/Logging.hpp"

#include <aspen/Error.hpp>

#include <algorithm>

namespace aspen::detail {

namespace {
constexpr std::uint64_t kBufferAlignment = 64;
std::uint64_t alignUp(std::uint64_t x) { return (x + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }
} // namespace

void addVariableBuffers(const GraphState &graph, CompiledGraph &out) {
  out.buffers.reserve(graph.variables.size() + 2);
  for (const Variable &v : graph.variables)
    out.buffers.push_back({BufferKind::Variable, v.name, v.bytes(), 0});
}

void planMemory(const GraphState &graph, bool allowOutOfMemory, CompiledGraph &out) {
  std::uint64_t end = 0, scratchBytes = 0;
  for (Buffer &b : out.buffers) {
    if (b.kind == BufferKind::Scratch) {
      scratchBytes = std::max(scratchBytes, b.bytes);
      continue;
    }
    b.offset = end;
    end = alignUp(end + b.bytes);
  }
  for (Buffer &b : out.buffers)
    if (b.kind == BufferKind::Scratch)
      b.offset = end;
  out.arenaBytes = alignUp(end + scratchBytes);

  out.tileBytes.assign(graph.target.getNumTiles(), 0);
  out.variableBytes = 0;
  for (std::uint32_t v = 0; v < graph.variables.size(); ++v) {
    const Variable &var = graph.variables[v];
    out.variableBytes += var.bytes();
    if (var.isConstant)
      out.initialValues.push_back({v, 0, var.constantData});
    for (const TileMap::Run &run : var.mapping.runs())
      if (run.tile < out.tileBytes.size())
        out.tileBytes[run.tile] += (run.end - run.begin) * var.type.size();
  }

  // A target without a per-tile budget (bytes per tile 0) cannot run out.
  const std::uint64_t budget = graph.target.getBytesPerTile();
  for (std::uint32_t tile = 0; budget != 0 && tile < out.tileBytes.size(); ++tile) {
    if (out.tileBytes[tile] <= budget)
      continue;
    const std::string message = "tile " + std::to_string(tile) + " needs " +
                                std::to_string(out.tileBytes[tile]) +
                                " bytes of variables but the target has " +
                                std::to_string(budget) + " bytes per tile";
    if (!allowOutOfMemory)
      throw graph_memory_allocation_error(message +
                                          " (engine option debug.allowOutOfMemory=true allows it)");
    logger().warn("{} (allowed by debug.allowOutOfMemory; later tiles not reported)", message);
    break;
  }
}

} // namespace aspen::detail
