#include "RegionCopy.hpp"

#include <algorithm>
#include <cstring>

namespace aspen::detail {

namespace {

// n elements of `bytes` each from src (every srcStride bytes) to dst (every dstStride bytes).
template <std::size_t Bytes>
void stridedCopy(std::uint8_t *dst, std::int64_t dstStride, const std::uint8_t *src,
                 std::int64_t srcStride, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i, dst += dstStride, src += srcStride)
    std::memcpy(dst, src, Bytes);
}

void copyElements(std::uint8_t *dst, std::int64_t dstStride, const std::uint8_t *src,
                  std::int64_t srcStride, std::uint64_t n, std::uint32_t bytes) {
  const auto eb = std::int64_t(bytes);
  if (dstStride == eb && srcStride == eb) {
    std::memcpy(dst, src, n * bytes);
    return;
  }
  switch (bytes) {
  case 1: return stridedCopy<1>(dst, dstStride, src, srcStride, n);
  case 2: return stridedCopy<2>(dst, dstStride, src, srcStride, n);
  case 4: return stridedCopy<4>(dst, dstStride, src, srcStride, n);
  case 8: return stridedCopy<8>(dst, dstStride, src, srcStride, n);
  default:
    for (std::uint64_t i = 0; i < n; ++i, dst += dstStride, src += srcStride)
      std::memcpy(dst, src, bytes);
  }
}

} // namespace

namespace {

// Calls f(run, firstElementOfRun, count, hostElement) for the parts of the runs that hold
// elements [first, last) of the list (element order).
template <class F>
void forEachRunPart(const RegionList &regions, std::uint64_t first, std::uint64_t last, F &&f) {
  std::uint64_t at = 0; // elements before the current run
  for (const ByteRun &r : regions.runs) {
    if (at >= last)
      return;
    const std::uint64_t b = std::max(first, at), e = std::min(last, at + r.count);
    if (b < e)
      f(r, b - at, e - b, b);
    at += r.count;
  }
}

} // namespace

void gatherRegions(const ArenaView &arena, const RegionList &regions, void *host,
                   std::uint64_t first, std::uint64_t last) {
  auto *out = static_cast<std::uint8_t *>(host);
  const std::uint32_t eb = regions.elementBytes;
  forEachRunPart(regions, first, last,
                 [&](const ByteRun &r, std::uint64_t skip, std::uint64_t n, std::uint64_t at) {
                   copyElements(out + at * eb, eb,
                                arena.address(r.buffer, r.offset + r.stride * std::int64_t(skip)),
                                r.stride, n, eb);
                 });
}

void scatterRegions(const ArenaView &arena, const RegionList &regions, const void *host,
                    std::uint64_t first, std::uint64_t last) {
  const auto *in = static_cast<const std::uint8_t *>(host);
  const std::uint32_t eb = regions.elementBytes;
  forEachRunPart(regions, first, last,
                 [&](const ByteRun &r, std::uint64_t skip, std::uint64_t n, std::uint64_t at) {
                   copyElements(arena.address(r.buffer, r.offset + r.stride * std::int64_t(skip)),
                                r.stride, in + at * eb, eb, n, eb);
                 });
}

void gatherRegions(const ArenaView &arena, const RegionList &regions, void *host) {
  gatherRegions(arena, regions, host, 0, regions.numElements);
}

void scatterRegions(const ArenaView &arena, const RegionList &regions, const void *host) {
  scatterRegions(arena, regions, host, 0, regions.numElements);
}

void copyRegions(const ArenaView &arena, const CopyPlan &plan,
                 std::vector<std::uint8_t> &temporary) {
  if (plan.throughTemporary) {
    temporary.resize(plan.src.bytes());
    gatherRegions(arena, plan.src, temporary.data());
    scatterRegions(arena, plan.dst, temporary.data());
    return;
  }
  // Walk both run lists in step, copying the longest stretch both runs allow each time.
  const std::uint32_t eb = plan.src.elementBytes;
  const auto &src = plan.src.runs, &dst = plan.dst.runs;
  std::size_t i = 0, j = 0;
  std::uint64_t si = 0, dj = 0; // elements done in src[i], dst[j]
  while (i < src.size() && j < dst.size()) {
    const std::uint64_t n = std::min(src[i].count - si, dst[j].count - dj);
    copyElements(arena.address(dst[j].buffer, dst[j].offset + dst[j].stride * std::int64_t(dj)),
                 dst[j].stride,
                 arena.address(src[i].buffer, src[i].offset + src[i].stride * std::int64_t(si)),
                 src[i].stride, n, eb);
    if ((si += n) == src[i].count)
      ++i, si = 0;
    if ((dj += n) == dst[j].count)
      ++j, dj = 0;
  }
}

} // namespace aspen::detail
