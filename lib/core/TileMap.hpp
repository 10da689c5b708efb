// TileMap: which tile owns each element of one variable, as sorted disjoint intervals.
#pragma once

#include <aspen/GraphElements.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <vector>

namespace aspen::detail {

class TileMap {
public:
  struct Run {
    std::size_t begin, end;
    unsigned tile;
  };

  // Elements [begin, end) now belong to `tile` (replacing any earlier mapping).
  void assign(std::size_t begin, std::size_t end, unsigned tile);
  // The tile of element i, or kInvalidId when unmapped.
  unsigned tileOf(std::size_t i) const;
  // The first element in [0, n) that no tile owns, or n when all are mapped.
  std::size_t firstUnmapped(std::size_t n) const;
  // Mapped runs in element order, adjacent runs of one tile merged.
  std::vector<Run> runs() const;
  // Calls f(begin, end, tile) for consecutive pieces of [begin, end), each owned by one tile
  // (kInvalidId where unmapped), in O(runs) rather than O(elements).
  template <class F> void forEachRun(std::size_t begin, std::size_t end, F &&f) const {
    auto it = runs_.upper_bound(begin);
    if (it != runs_.begin())
      --it;
    std::size_t pos = begin;
    while (pos < end) {
      if (it == runs_.end() || it->second.begin >= end) {
        f(pos, end, kInvalidId);
        return;
      }
      const Run &run = it->second;
      if (run.end <= pos) {
        ++it;
      } else if (run.begin > pos) {
        f(pos, run.begin, kInvalidId);
        pos = run.begin;
      } else {
        const std::size_t stop = std::min(run.end, end);
        f(pos, stop, run.tile);
        pos = stop;
        ++it;
      }
    }
  }
  bool empty() const { return runs_.empty(); }

private:
  std::map<std::size_t, Run> runs_; // keyed by begin
};

} // namespace aspen::detail
