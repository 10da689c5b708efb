#include "CpuConv.hpp"

#include "CpuGemm.hpp"
#include "support/ConvTables.hpp"

#include <aspen/Error.hpp>
#include <aspen/HalfFloat.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

namespace aspen::detail {

// The call's sizes and its tables flattened: offsets[t * P + p] is the element of an image
// channel ([F...], row-major) that output p reads through tap t, or -1.
struct CpuConvLayout {
  std::uint64_t B = 0, G = 0, Ci = 0, Co = 0, F = 1, P = 1, T = 1, K = 0, chunk = 1;
  std::vector<std::int64_t> offsets;
  bool identity = false; // T = 1 and output p reads element p of an F = P image
  // The same tables split at the last field dimension, for im2col's runs along it: output p =
  // (outer, o) with o < lastOutputs, tap t = (outerTap, last) with last < lastTaps; the element
  // is outerOffsets[outerTap * (P / lastOutputs) + outer] (-1: a zero run) plus
  // segments[last]'s index of o (start + step * o for o in [lo, hi), else zero).
  struct Segment {
    std::uint64_t lo = 0, hi = 0;
    std::int64_t start = 0, step = 0;
    bool affine = true; // false: read offsets[] element by element
  };
  std::uint64_t lastOutputs = 1, lastTaps = 1;
  std::vector<std::int64_t> outerOffsets;
  std::vector<Segment> segments;
};


namespace {

// A chunk of im2col columns takes about this many bytes (it and the weights stay in L2).
constexpr std::uint64_t kChunkBytes = 512 * 1024;
// At least this many output positions a chunk, so that each sgemm has columns to work on.
constexpr std::uint64_t kMinChunk = 64;
// Backward data and filter cut channels or rows into at most this many parts an image or group.
constexpr std::uint64_t kMaxParts = 16, kMinRowsPerPart = 32;
// The forward cuts output channels when images x chunks are fewer than this many tasks.
constexpr std::uint64_t kMinTasks = 8;

// Splits l's tables at the last field dimension (Layout::segments).
void splitLastDimension(const program::ConvGeometry &g, CpuConvLayout &l) {
  const std::size_t dims = g.inputField.size();
  if (dims == 0) {
    l.outerOffsets.assign(1, 0);
    l.segments.assign(1, {0, 1, 0, 1, true});
    return;
  }
  l.lastOutputs = g.outputField.back(), l.lastTaps = g.taps.back();
  const std::vector<std::int64_t> &last = g.inputIndex.back();
  for (std::uint64_t t = 0; t < l.lastTaps; ++t) {
    const auto at = [&](std::uint64_t out) { return last[out * l.lastTaps + t]; };
    CpuConvLayout::Segment seg;
    std::uint64_t o = 0;
    while (o < l.lastOutputs && at(o) < 0)
      ++o;
    seg.lo = seg.hi = o;
    if (o < l.lastOutputs) {
      seg.step = o + 1 < l.lastOutputs && at(o + 1) >= 0 ? at(o + 1) - at(o) : 1;
      seg.start = at(o) - seg.step * std::int64_t(o);
      while (o < l.lastOutputs && at(o) == seg.start + seg.step * std::int64_t(o))
        ++o;
      seg.hi = o;
      while (o < l.lastOutputs && at(o) < 0)
        ++o;
      seg.affine = o == l.lastOutputs; // nothing is read after the run
    }
    l.segments.push_back(seg);
  }
  // The outer dimensions' offsets: the tables without the last dimension, flattened, scaled by
  // the last dimension's size (the stride of the outer ones).
  program::ConvGeometry outer = g;
  outer.inputField.pop_back(), outer.outputField.pop_back(), outer.taps.pop_back();
  outer.inputIndex.pop_back();
  l.outerOffsets = flatInputOffsets(outer);
  for (std::int64_t &offset : l.outerOffsets)
    if (offset >= 0)
      offset *= std::int64_t(g.inputField.back());
}

CpuConvLayout layoutOf(const ConvShape &s) {
  const program::ConvGeometry &g = s.geometry;
  CpuConvLayout l;
  l.B = g.batch, l.G = g.groups, l.Ci = g.inChans, l.Co = g.outChans;
  for (std::size_t d = 0; d < g.inputField.size(); ++d)
    l.F *= g.inputField[d], l.P *= g.outputField[d], l.T *= g.taps[d];
  l.K = l.Ci * l.T;
  l.offsets = flatInputOffsets(g);
  splitLastDimension(g, l);
  l.identity = l.T == 1 && l.F == l.P;
  for (std::uint64_t p = 0; l.identity && p < l.P; ++p)
    l.identity = l.offsets[p] == std::int64_t(p);
  l.chunk = std::clamp<std::uint64_t>(kChunkBytes / (4 * std::max<std::uint64_t>(l.K, 1)),
                                      kMinChunk, std::max<std::uint64_t>(l.P, 1));
  return l;
}

// `p` as floats: itself when FLOAT, else widened into `buffer`.
const float *floats(const void *p, Type type, std::uint64_t n, std::vector<float> &buffer) {
  if (type == FLOAT)
    return static_cast<const float *>(p);
  buffer.resize(n);
  const auto *h = static_cast<const half *>(p);
  for (std::uint64_t i = 0; i < n; ++i)
    buffer[i] = float(h[i]);
  return buffer.data();
}

void narrow(const std::vector<float> &src, void *dst) {
  auto *h = static_cast<half *>(dst);
  for (std::size_t i = 0; i < src.size(); ++i)
    h[i] = half(src[i]);
}

// Tasks on the pool when the BLAS runs one thread, else in order on this thread.
void runTasks(std::uint64_t n, ThreadPool &pool, const std::function<void(std::size_t)> &task) {
  if (n == 1 || hostBlasHasOwnThreads()) {
    for (std::uint64_t i = 0; i < n; ++i)
      task(i);
  } else if (n > 1) {
    pool.parallelFor(n, task);
  }
}

// Rows [r0, r1) of the image's col, columns [p0, p1), into col (row length p1 - p0): a run
// of the last output dimension at a time, as zeros, a copy (contiguous or strided) and zeros
// where its tap's segment is affine, element by element where it is not.
void im2col(const CpuConvLayout &l, const float *image, std::uint64_t r0, std::uint64_t r1,
            std::uint64_t p0, std::uint64_t p1, float *col) {
  const std::uint64_t width = p1 - p0, outerOutputs = l.P / std::max<std::uint64_t>(l.lastOutputs, 1);
  for (std::uint64_t r = r0; r < r1; ++r) {
    const std::uint64_t tap = r % l.T, outerTap = tap / l.lastTaps;
    const CpuConvLayout::Segment &seg = l.segments[tap % l.lastTaps];
    const float *channel = image + (r / l.T) * l.F;
    const std::int64_t *offsets = l.offsets.data() + tap * l.P;
    float *row = col + (r - r0) * width; // row[q - p0] is output q
    for (std::uint64_t p = p0; p < p1;) {
      const std::uint64_t outer = p / l.lastOutputs, o0 = p % l.lastOutputs;
      const std::uint64_t end = std::min(p1, (outer + 1) * l.lastOutputs), o1 = o0 + (end - p);
      const std::int64_t base = l.outerOffsets[outerTap * outerOutputs + outer];
      float *run = row + (p - p0); // run[o - o0] is output o of this last-dimension run
      if (base < 0) {
        std::fill(run, run + (o1 - o0), 0.0f);
      } else if (!seg.affine) {
        for (std::uint64_t q = p; q < end; ++q)
          row[q - p0] = offsets[q] < 0 ? 0.0f : channel[offsets[q]];
      } else {
        const std::uint64_t lo = std::clamp(seg.lo, o0, o1), hi = std::clamp(seg.hi, lo, o1);
        std::fill(run, run + (lo - o0), 0.0f);
        const std::int64_t first = base + seg.start + seg.step * std::int64_t(lo);
        if (seg.step == 1)
          std::copy(channel + first, channel + first + (hi - lo), run + (lo - o0));
        else
          for (std::uint64_t o = lo; o < hi; ++o)
            run[o - o0] = channel[first + seg.step * std::int64_t(o - lo)];
        std::fill(run + (hi - o0), run + (o1 - o0), 0.0f);
      }
      p = end;
    }
  }
}

std::uint64_t partsOf(std::uint64_t extent) {
  return std::max<std::uint64_t>(1, std::min(kMaxParts, extent / kMinRowsPerPart));
}

void forward(const ConvShape &s, const CpuConvLayout &l, void *const *ops, ThreadPool &pool) {
  std::vector<float> inBuffer, wBuffer, outBuffer;
  const float *in = floats(ops[0], s.inputType, l.B * l.G * l.Ci * l.F, inBuffer);
  const float *w = floats(ops[1], s.inputType, l.G * l.Co * l.K, wBuffer);
  float *out = static_cast<float *>(ops[2]);
  if (s.outputType != FLOAT) {
    outBuffer.resize(l.B * l.G * l.Co * l.P);
    out = outBuffer.data();
  }
  // Few images and chunks (a late layer's small field): output channels are cut too, so that
  // there are kMinTasks tasks where the channels allow (each part lowers its chunk itself).
  const std::uint64_t chunks = (l.P + l.chunk - 1) / l.chunk, few = l.B * l.G * chunks;
  const std::uint64_t coParts =
      few == 0 ? 1
               : std::clamp<std::uint64_t>((kMinTasks + few - 1) / few, 1,
                                           std::max<std::uint64_t>(l.Co / kMinRowsPerPart, 1));
  runTasks(few * coParts, pool, [&](std::size_t task) {
    const std::uint64_t part = task % coParts, rest = task / coParts;
    const std::uint64_t image = rest / chunks, p0 = (rest % chunks) * l.chunk,
                        p1 = std::min(l.P, p0 + l.chunk), g = image % l.G;
    const std::uint64_t co0 = l.Co * part / coParts, co1 = l.Co * (part + 1) / coParts;
    const float *source = in + image * l.Ci * l.F, *wg = w + (g * l.Co + co0) * l.K;
    float *o = out + (image * l.Co + co0) * l.P + p0;
    if (l.identity) {
      hostSgemm(false, false, co1 - co0, p1 - p0, l.Ci, 1.0f, wg, l.K, source + p0, l.F, 0.0f, o,
                l.P);
      return;
    }
    thread_local std::vector<float> col;
    col.resize(l.K * (p1 - p0));
    im2col(l, source, 0, l.K, p0, p1, col.data());
    hostSgemm(false, false, co1 - co0, p1 - p0, l.K, 1.0f, wg, l.K, col.data(), p1 - p0, 0.0f, o,
              l.P);
  });
  if (s.outputType != FLOAT)
    narrow(outBuffer, ops[2]);
}

void backwardData(const ConvShape &s, const CpuConvLayout &l, void *const *ops, ThreadPool &pool) {
  std::vector<float> dyBuffer, wBuffer, dxBuffer;
  const float *dy = floats(ops[0], s.outputType, l.B * l.G * l.Co * l.P, dyBuffer);
  const float *w = floats(ops[1], s.inputType, l.G * l.Co * l.K, wBuffer);
  const std::uint64_t dxElements = l.B * l.G * l.Ci * l.F;
  float *dx = static_cast<float *>(ops[2]);
  if (s.inputType != FLOAT) {
    dxBuffer.resize(dxElements);
    dx = dxBuffer.data();
  }
  std::fill(dx, dx + dxElements, 0.0f);
  const std::uint64_t parts = std::min(partsOf(l.Ci * l.T), std::max<std::uint64_t>(l.Ci, 1));
  runTasks(l.B * l.G * parts, pool, [&](std::size_t task) {
    const std::uint64_t image = task / parts, part = task % parts, g = image % l.G;
    const std::uint64_t r0 = l.Ci * part / parts * l.T, r1 = l.Ci * (part + 1) / parts * l.T;
    const float *dyImage = dy + image * l.Co * l.P, *wg = w + g * l.Co * l.K;
    float *dxImage = dx + image * l.Ci * l.F;
    thread_local std::vector<float> dcol;
    for (std::uint64_t p0 = 0; p0 < l.P && r1 > r0; p0 += l.chunk) {
      const std::uint64_t p1 = std::min(l.P, p0 + l.chunk), width = p1 - p0;
      dcol.resize((r1 - r0) * width);
      hostSgemm(true, false, r1 - r0, width, l.Co, 1.0f, wg + r0, l.K, dyImage + p0, l.P, 0.0f,
                dcol.data(), width);
      for (std::uint64_t r = r0; r < r1; ++r) { // col2im: add each column back where it came from
        float *channel = dxImage + (r / l.T) * l.F;
        const std::int64_t *offsets = l.offsets.data() + (r % l.T) * l.P;
        const float *src = dcol.data() + (r - r0) * width;
        for (std::uint64_t p = p0; p < p1; ++p)
          if (offsets[p] >= 0)
            channel[offsets[p]] += src[p - p0];
      }
    }
  });
  if (s.inputType != FLOAT)
    narrow(dxBuffer, ops[2]);
}

void backwardFilter(const ConvShape &s, const CpuConvLayout &l, void *const *ops, ThreadPool &pool) {
  std::vector<float> dyBuffer, inBuffer, wBuffer;
  const float *dy = floats(ops[0], s.outputType, l.B * l.G * l.Co * l.P, dyBuffer);
  const float *in = floats(ops[1], s.inputType, l.B * l.G * l.Ci * l.F, inBuffer);
  const std::uint64_t wElements = l.G * l.Co * l.K;
  float *w = static_cast<float *>(ops[2]);
  if (s.inputType != FLOAT) {
    if (s.accumulate)
      floats(ops[2], s.inputType, wElements, wBuffer);
    else
      wBuffer.assign(wElements, 0.0f);
    w = wBuffer.data();
  }
  float alpha = 1.0f;
  if (ops[3])
    std::memcpy(&alpha, ops[3], sizeof alpha);
  const std::uint64_t parts = std::min(partsOf(l.K), std::max<std::uint64_t>(l.K, 1));
  runTasks(l.G * parts, pool, [&](std::size_t task) {
    const std::uint64_t g = task / parts, part = task % parts;
    const std::uint64_t r0 = l.K * part / parts, r1 = l.K * (part + 1) / parts;
    float *wg = w + g * l.Co * l.K;
    bool first = !s.accumulate;
    thread_local std::vector<float> col;
    for (std::uint64_t b = 0; b < l.B && r1 > r0; ++b) {
      const std::uint64_t image = b * l.G + g;
      const float *dyImage = dy + image * l.Co * l.P, *source = in + image * l.Ci * l.F;
      for (std::uint64_t p0 = 0; p0 < l.P; p0 += l.chunk) {
        const std::uint64_t p1 = std::min(l.P, p0 + l.chunk), width = p1 - p0;
        const float *rows = source + r0 * l.F + p0; // the image itself is col when identity
        std::uint64_t ld = l.F;
        if (!l.identity) {
          col.resize((r1 - r0) * width);
          im2col(l, source, r0, r1, p0, p1, col.data());
          rows = col.data(), ld = width;
        }
        hostSgemm(false, true, l.Co, r1 - r0, width, alpha, dyImage + p0, l.P, rows, ld,
                  first ? 0.0f : 1.0f, wg + r0, l.K);
        first = false;
      }
    }
    if (first) // no product: the deltas of these rows are 0
      for (std::uint64_t co = 0; co < l.Co; ++co)
        std::fill(wg + co * l.K + r0, wg + co * l.K + r1, 0.0f);
  });
  if (s.inputType != FLOAT)
    narrow(wBuffer, ops[2]);
}

} // namespace

std::shared_ptr<const CpuConvLayout> prepareCpuConv(const CompiledKernel &kernel) {
  auto layout = std::make_shared<CpuConvLayout>(layoutOf(kernel.conv));
  const CpuConvLayout &l = *layout;
  const std::uint64_t limit = INT_MAX;
  if (l.K > limit || l.Co > limit || l.P > limit || l.F > limit)
    throw error(std::string(kernelKindName(kernel.kind)) + " '" + kernel.name +
                "': Ci*T = " + std::to_string(l.K) + ", Co = " + std::to_string(l.Co) +
                ", P = " + std::to_string(l.P) + ", F = " + std::to_string(l.F) +
                ": the CPU executor's BLAS takes dimensions up to " + std::to_string(limit));
  return layout;
}

void cpuConv(const CompiledKernel &kernel, const CpuConvLayout &l, void *const *operands,
             ThreadPool &pool) {
  switch (kernel.kind) {
  case KernelKind::ConvForward: forward(kernel.conv, l, operands, pool); break;
  case KernelKind::ConvBackwardData: backwardData(kernel.conv, l, operands, pool); break;
  case KernelKind::ConvBackwardFilter: backwardFilter(kernel.conv, l, operands, pool); break;
  default: throw internal_error("cpuConv: not a convolution kernel");
  }
}

} // namespace aspen::detail
