#include "MemoryLayout.hpp"

#include "support/Logging.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <map>
#include <tuple>

namespace aspen::detail {

namespace {
constexpr std::uint64_t kBufferAlignment = 64;
std::uint64_t alignUp(std::uint64_t x) {
  return (x + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

bool holdValuesTogether(const Buffer &a, const Buffer &b) {
  const bool bothHold = a.liveBegin <= a.liveEnd && b.liveBegin <= b.liveEnd;
  return bothHold && a.liveBegin <= b.liveEnd && b.liveBegin <= a.liveEnd;
}

// Places one program's reusable buffers from offset 0, first fit, largest first; returns the
// bytes they need.
std::uint64_t placeReusable(std::vector<Buffer> &buffers, std::vector<std::uint32_t> indices) {
  std::sort(indices.begin(), indices.end(), [&](std::uint32_t x, std::uint32_t y) {
    const Buffer &a = buffers[x], &b = buffers[y];
    return std::tuple(b.bytes, a.liveBegin, x) < std::tuple(a.bytes, b.liveBegin, y);
  });
  std::vector<std::uint32_t> placed;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> taken; // [offset, end) of placed buffers
  std::uint64_t peak = 0;
  for (std::uint32_t i : indices) {
    Buffer &b = buffers[i];
    const std::uint64_t size = alignUp(b.bytes);
    taken.clear();
    for (std::uint32_t j : placed)
      if (holdValuesTogether(b, buffers[j]))
        taken.emplace_back(buffers[j].offset, buffers[j].offset + alignUp(buffers[j].bytes));
    std::sort(taken.begin(), taken.end());
    std::uint64_t offset = 0;
    for (const auto &[begin, end] : taken) {
      if (offset + size <= begin)
        break;
      offset = std::max(offset, end);
    }
    b.offset = offset;
    placed.push_back(i);
    peak = std::max(peak, offset + size);
  }
  return peak;
}
// Calls f(tile, bytes) for the bytes of variable v mapped to each tile below numTiles.
template <class F>
void forEachTile(const GraphState &graph, std::uint32_t v, std::size_t numTiles, F &&f) {
  const Variable &var = graph.variables[v];
  for (const TileMap::Run &run : var.mapping.runs())
    if (run.tile < numTiles)
      f(run.tile, (run.end - run.begin) * var.type.size());
}

// Where a tile's peak is: `program` and `position` (Buffer::liveBegin numbering), or
// `throughout` when only variables that are always live count there.
struct PeakAt {
  bool throughout = true;
  std::uint32_t program = 0;
  std::uint64_t position = 0;
};

// Variable bytes mapped to each tile at the busiest step of any program: always-live variables
// (and those that never hold a value, which still have bytes) count throughout, reusable ones
// during their live range. `where`, when given, receives where each tile's peak is.
std::vector<std::uint64_t> tilePeaks(const GraphState &graph, const CompiledGraph &out,
                                     std::vector<PeakAt> *where = nullptr) {
  const std::size_t numTiles = out.tileBytes.size();
  std::vector<std::uint64_t> throughout(numTiles, 0);
  struct Event {
    std::uint64_t at;
    bool starts;
    std::uint32_t var;
  };
  std::map<std::uint32_t, std::vector<Event>> eventsByProgram;
  for (std::uint32_t v = 0; v < graph.variables.size(); ++v) {
    const Buffer &b = out.buffers[v];
    if (b.isReusable() && b.liveBegin <= b.liveEnd) {
      eventsByProgram[b.liveProgram].push_back({b.liveBegin, true, v});
      eventsByProgram[b.liveProgram].push_back({b.liveEnd + 1, false, v});
    } else {
      forEachTile(graph, v, numTiles,
                  [&](std::uint32_t tile, std::uint64_t bytes) { throughout[tile] += bytes; });
    }
  }
  std::vector<std::uint64_t> peak = throughout;
  if (where)
    where->assign(numTiles, PeakAt{});
  for (auto &[programIndex, events] : eventsByProgram) {
    const std::uint32_t program = programIndex; // a lambda below uses it (clang 14: no binding)
    // Ranges ending before a step free their bytes before ranges starting there take theirs.
    std::sort(events.begin(), events.end(), [](const Event &a, const Event &b) {
      return std::tuple(a.at, a.starts, a.var) < std::tuple(b.at, b.starts, b.var);
    });
    std::vector<std::uint64_t> now = throughout;
    for (const Event &e : events)
      forEachTile(graph, e.var, numTiles, [&](std::uint32_t tile, std::uint64_t bytes) {
        if (!e.starts) {
          now[tile] -= bytes;
          return;
        }
        now[tile] += bytes;
        if (now[tile] > peak[tile]) {
          peak[tile] = now[tile];
          if (where)
            (*where)[tile] = {false, program, e.at};
        }
      });
  }
  return peak;
}

std::string shapeText(const Variable &var) {
  std::string text = var.type.toString() + " [";
  for (std::size_t i = 0; i < var.shape.size(); ++i)
    text += (i ? "," : "") + std::to_string(var.shape[i]);
  return text + "]";
}

// The step at `position` of `program`, as the compile report names it.
std::string stepAt(const CompileReport &report, std::uint32_t program, std::uint64_t position) {
  std::string text = "position " + std::to_string(position) + " of program " +
                     std::to_string(program);
  if (program < report.runOrder.size() && position < report.runOrder[program].positions.size())
    text += " (" + report.runOrder[program].positions[position] + ")";
  return text;
}

// The tile over its budget with the highest peak, and the largest variables that hold values
// on it at that peak: their debug names, shapes, bytes on the tile and where they are live.
std::string outOfMemoryMessage(const GraphState &graph, const CompiledGraph &out,
                               const CompileReport &report, std::uint64_t budget) {
  std::vector<PeakAt> where;
  const std::vector<std::uint64_t> peaks = tilePeaks(graph, out, &where);
  const auto worst = std::max_element(peaks.begin(), peaks.end());
  const auto tile = static_cast<std::uint32_t>(worst - peaks.begin());
  const auto over = std::count_if(peaks.begin(), peaks.end(),
                                  [&](std::uint64_t p) { return p > budget; });
  const PeakAt at = where[tile];
  std::string message = "tile " + std::to_string(tile) + " needs " + std::to_string(*worst) +
                        " bytes of variables at once but the target has " +
                        std::to_string(budget) + " bytes per tile";
  if (over > 1)
    message += " (" + std::to_string(over) + " tiles are over their budget; tile " +
               std::to_string(tile) + " the most)";

  std::vector<std::pair<std::uint64_t, std::uint32_t>> live; // bytes on the tile, variable
  for (std::uint32_t v = 0; v < graph.variables.size(); ++v) {
    const Buffer &b = out.buffers[v];
    const bool holds = !b.isReusable() || b.liveBegin > b.liveEnd ||
                       (!at.throughout && b.liveProgram == at.program &&
                        b.liveBegin <= at.position && at.position <= b.liveEnd);
    if (!holds)
      continue;
    std::uint64_t bytes = 0;
    forEachTile(graph, v, peaks.size(), [&](std::uint32_t t, std::uint64_t n) {
      if (t == tile)
        bytes += n;
    });
    if (bytes)
      live.emplace_back(bytes, v);
  }
  const std::size_t shown = std::min<std::size_t>(live.size(), 8);
  std::partial_sort(live.begin(), live.begin() + shown, live.end(),
                    [](const auto &a, const auto &b) {
                      return a.first != b.first ? a.first > b.first : a.second < b.second;
                    });
  message += ". Its peak is " +
             (at.throughout ? std::string("from variables that are always live")
                            : "at " + stepAt(report, at.program, at.position)) +
             "; the largest tensors live there (" + std::to_string(live.size()) + " in all):";
  for (std::size_t i = 0; i < shown; ++i) {
    const Variable &var = graph.variables[live[i].second];
    const Buffer &b = out.buffers[live[i].second];
    message += "\n  '" + var.name + "' " + shapeText(var) + ": " +
               std::to_string(live[i].first) + " bytes on tile " + std::to_string(tile) + ", ";
    if (!b.isReusable() || b.liveBegin > b.liveEnd)
      message += "always live";
    else
      message += "live from " + stepAt(report, b.liveProgram, b.liveBegin) + " to " +
                 stepAt(report, b.liveProgram, b.liveEnd);
  }
  return message;
}
} // namespace

void addVariableBuffers(const GraphState &graph, CompiledGraph &out) {
  out.buffers.reserve(graph.variables.size() + 2);
  for (const Variable &v : graph.variables)
    out.buffers.push_back({BufferKind::Variable, v.name, v.bytes(), 0});
}

void planMemory(const GraphState &graph, bool allowOutOfMemory, const CompileReport &report,
                CompiledGraph &out) {
  std::uint64_t end = 0, scratchBytes = 0;
  std::map<std::uint32_t, std::vector<std::uint32_t>> reusableByProgram;
  out.bufferBytes = 0;
  for (std::uint32_t i = 0; i < out.buffers.size(); ++i) {
    Buffer &b = out.buffers[i];
    out.bufferBytes += b.bytes;
    if (b.kind == BufferKind::Scratch) {
      scratchBytes = std::max(scratchBytes, b.bytes);
    } else if (b.isReusable()) {
      reusableByProgram[b.liveProgram].push_back(i);
    } else {
      b.offset = end;
      end = alignUp(end + b.bytes);
    }
  }
  out.alwaysLiveBytes = end;
  for (Buffer &b : out.buffers)
    if (b.kind == BufferKind::Scratch)
      b.offset = end;
  const std::uint64_t reusableBase = alignUp(end + scratchBytes);
  std::uint64_t reusableBytes = 0;
  for (const auto &[program, indices] : reusableByProgram)
    reusableBytes = std::max(reusableBytes, placeReusable(out.buffers, indices));
  for (Buffer &b : out.buffers)
    if (b.isReusable())
      b.offset += reusableBase;
  out.arenaBytes = reusableBase + reusableBytes;
  logger().debug("memory layout: arena {} bytes (always live {}, scratch {}, reusable {}); "
                 "{} bytes of buffers",
                 out.arenaBytes, out.alwaysLiveBytes, scratchBytes, reusableBytes,
                 out.bufferBytes);

  out.tileBytes.assign(graph.target.getNumTiles(), 0);
  out.variableBytes = 0;
  for (std::uint32_t v = 0; v < graph.variables.size(); ++v) {
    const Variable &var = graph.variables[v];
    out.variableBytes += var.bytes();
    if (var.isConstant)
      out.initialValues.push_back({v, 0, var.constantData});
    else if (!var.initialData.empty())
      out.initialValues.push_back({v, 0, var.initialData});
    forEachTile(graph, v, out.tileBytes.size(),
                [&](std::uint32_t tile, std::uint64_t bytes) { out.tileBytes[tile] += bytes; });
  }
  out.tilePeakBytes = tilePeaks(graph, out);

  // A target without a per-tile budget (bytes per tile 0) cannot run out.
  const std::uint64_t budget = graph.target.getBytesPerTile();
  const bool overBudget =
      budget != 0 && std::any_of(out.tilePeakBytes.begin(), out.tilePeakBytes.end(),
                                 [&](std::uint64_t peak) { return peak > budget; });
  if (!overBudget)
    return;
  const std::string message = outOfMemoryMessage(graph, out, report, budget);
  if (!allowOutOfMemory && graph.target.isTileMemoryEnforced())
    throw graph_memory_allocation_error(
        message + "\n(engine option debug.allowOutOfMemory=true allows it)");
  logger().warn("{}\n(allowed by {})", message,
                allowOutOfMemory ? "debug.allowOutOfMemory"
                                 : "the target, which does not enforce tile memory");
}

} // namespace aspen::detail
