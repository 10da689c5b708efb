#include "TileMap.hpp"

namespace aspen::detail {

void TileMap::assign(std::size_t begin, std::size_t end, unsigned tile) {
  if (begin >= end)
    return;
  // Cut the runs overlapping [begin, end) and keep their parts outside it.
  auto it = runs_.lower_bound(begin);
  if (it != runs_.begin() && std::prev(it)->second.end > begin)
    --it;
  std::vector<Run> keep;
  while (it != runs_.end() && it->second.begin < end) {
    const Run r = it->second;
    if (r.begin < begin)
      keep.push_back({r.begin, begin, r.tile});
    if (r.end > end)
      keep.push_back({end, r.end, r.tile});
    it = runs_.erase(it);
  }
  for (const Run &r : keep)
    runs_.emplace(r.begin, r);
  runs_.emplace(begin, Run{begin, end, tile});
}

unsigned TileMap::tileOf(std::size_t i) const {
  auto it = runs_.upper_bound(i);
  if (it == runs_.begin())
    return kInvalidId;
  --it;
  return i < it->second.end ? it->second.tile : kInvalidId;
}

std::size_t TileMap::firstUnmapped(std::size_t n) const {
  std::size_t next = 0;
  for (const auto &[begin, run] : runs_) {
    if (run.begin > next)
      return next;
    next = run.end;
    if (next >= n)
      return n;
  }
  return next < n ? next : n;
}

std::vector<TileMap::Run> TileMap::runs() const {
  std::vector<Run> out;
  for (const auto &[begin, run] : runs_) {
    if (!out.empty() && out.back().end == run.begin && out.back().tile == run.tile)
      out.back().end = run.end;
    else
      out.push_back(run);
  }
  return out;
}

} // namespace aspen::detail
