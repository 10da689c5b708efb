// The matmul planner: checks the parameters, then searches chunk counts per dimension and
// their split into parts over tiles and serial steps, scoring each candidate with a cost model
// built from the Target. See MatMulPlanner.hpp for the block geometry and MatMulPlan.hpp for
// what a plan means.
//
// Search. Every plan cuts G, M, K, N into chunk counts cg, cm, ck, cn; the working set per tile
// depends only on those, the steps on how each count factors into parts * serial. Candidate
// counts per dimension are the counts where ceil(D / c) changes (no chunk empty), thinned
// geometrically, plus divisors of the tile count (which fill the tiles). Candidates are
// ranked by (serial steps, estimated cycles, tiles used, partition, serial), so a plan has
// serial steps only when no one-step plan fits.
//
// Cost model, per tile and serial step: compute = block MACs / the tile's vertex MAC rate (on a
// GPU the FP32 lanes of its SM: codelets do not use tensor cores; elsewhere the vector width of
// the input type * workers); exchange = bytes of the A block (when partition.n > 1: the block
// lives on one of the tiles that read it) and of the B block (when partition.m > 1) / exchange
// bytes per cycle;
// a fixed sync cost per compute set. When partition.k > 1, each (m, n) serial step ends with a
// reduction in which every tile receives and adds (k - 1) / k of a partials block.
#include "linalg/MatMulPlanner.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

namespace aspen::linalg::detail {

namespace {

std::size_t ceilDiv(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

std::string shapes(const MatMulParams &params) {
  return fmt::format("A [{}] . B [{}]", fmt::join(params.aShape, ","),
                     fmt::join(params.bShape, ","));
}

bool isMatMulType(Type t) { return t == FLOAT || t == HALF; }

// Sync and launch of one compute set, in cycles.
constexpr std::uint64_t computeSetSyncCycles = 100;

// Launch and set-up of one kernel, in cycles: a few kernel launches' worth.
constexpr std::uint64_t libraryCallCycles = 4 * computeSetSyncCycles;

// MACs one tile's vertices complete per cycle (see the cost model above).
std::uint64_t vertexMacsPerCycle(const Target &target, Type type) {
  if (target.isGpu())
    return target.getMatMulMacsPerCycle(FLOAT);
  return std::uint64_t(target.getVectorWidth(type)) * target.getNumWorkerContexts();
}

// At most this many chunk counts per dimension come from the geometric thinning.
constexpr std::size_t geometricCandidates = 32;

} // namespace

MatMulShape checkMatMulParams(const MatMulParams &params) {
  const auto &a = params.aShape;
  const auto &b = params.bShape;
  if (a.size() != b.size() || (a.size() != 2 && a.size() != 3))
    throw shape_error(fmt::format("matMul {}: the operands must both have rank 2 ([M,K] . [K,N]) "
                                  "or both rank 3 ([G,M,K] . [G,K,N]), not {} and {}",
                                  shapes(params), a.size(), b.size()));
  const std::size_t off = a.size() - 2;
  MatMulShape s;
  s.G = off ? a[0] : 1;
  s.M = a[off];
  s.K = a[off + 1];
  s.N = b[off + 1];
  if (off && a[0] != b[0])
    throw shape_error(fmt::format("matMul {}: the group counts differ ({} and {})",
                                  shapes(params), a[0], b[0]));
  if (a[off + 1] != b[off])
    throw shape_error(fmt::format("matMul {}: the inner dimensions differ (A has K = {} columns, "
                                  "B has {} rows)",
                                  shapes(params), a[off + 1], b[off]));
  if (s.G == 0 || s.M == 0 || s.K == 0 || s.N == 0)
    throw shape_error(fmt::format("matMul {}: every dimension must be at least 1",
                                  shapes(params)));
  if (!isMatMulType(params.inputType))
    throw type_error(fmt::format("matMul {}: input type {} is not supported; the input type "
                                 "must be float or half",
                                 shapes(params), params.inputType.toString()));
  if (!isMatMulType(params.outputType))
    throw type_error(fmt::format("matMul {}: output type {} is not supported; the output type "
                                 "must be float or half",
                                 shapes(params), params.outputType.toString()));
  return s;
}

bool isValidChunkCount(std::size_t size, std::size_t chunks) {
  return chunks >= 1 && chunks <= size && ceilDiv(size, ceilDiv(size, chunks)) == chunks;
}

Interval matMulBlock(std::size_t size, std::size_t parts, std::size_t serial, std::size_t step,
                     std::size_t part) {
  if (part >= parts || step >= serial || !isValidChunkCount(size, parts * serial))
    throw internal_error(fmt::format("matMulBlock: part {} of {}, step {} of {} of {} rows",
                                     part, parts, step, serial, size));
  const std::size_t b = ceilDiv(size, parts * serial);
  const std::size_t chunk = step * parts + part;
  return {std::min(size, chunk * b), std::min(size, (chunk + 1) * b)};
}

std::uint64_t matMulTileBytes(const MatMulPlan &plan, std::size_t groups, std::size_t m,
                              std::size_t k, std::size_t n) {
  const std::uint64_t in = plan.inputType.size();
  std::uint64_t bytes = in * groups * (m * k + k * n) + plan.partialsType.size() * groups * m * n;
  if (plan.partialsType != plan.outputType)
    bytes += plan.outputType.size() * groups * m * n;
  return bytes;
}

std::uint64_t matMulTileBudget(const Target &target, const MatMulOptions &options) {
  return static_cast<std::uint64_t>(std::floor(double(target.getBytesPerTile()) *
                                               options.availableMemoryProportion));
}

namespace {

// The pins of one dimension: its part count, serial count, or neither.
struct DimPins {
  std::optional<std::size_t> parts, serial;
};

// Valid chunk counts of `size` up to `limit`: the few smallest, a geometric selection of the
// rest, every valid divisor of the tile count, and `size` itself when allowed.
std::vector<std::size_t> chunkCandidates(std::size_t size, std::size_t limit, unsigned tiles) {
  std::vector<std::size_t> valid; // ceil(size / b) for every block size b, descending b
  for (std::size_t b = 1; b <= size;) {
    const std::size_t c = ceilDiv(size, b);
    valid.push_back(c);
    b = c == 1 ? size + 1 : (size - 1) / (c - 1) + 1;
  }
  std::sort(valid.begin(), valid.end());
  std::vector<std::size_t> out;
  const std::size_t top = std::min(limit, size);
  const double ratio = std::pow(double(top) / 8.0, 1.0 / geometricCandidates);
  double next = 0;
  std::size_t largest = 1;
  for (std::size_t c : valid) {
    if (c > top)
      break;
    largest = c;
    if (c <= 8 || double(c) >= next) {
      out.push_back(c);
      next = double(c) * ratio;
    }
  }
  out.push_back(largest);
  for (unsigned d = 1; d <= tiles && d <= top; ++d)
    if (tiles % d == 0 && isValidChunkCount(size, d))
      out.push_back(d);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Chunk counts of one dimension compatible with its pins.
std::vector<std::size_t> dimCandidates(std::size_t size, const DimPins &pins, unsigned tiles) {
  if (pins.parts && pins.serial)
    return {*pins.parts * *pins.serial};
  std::vector<std::size_t> out;
  if (!pins.parts && !pins.serial)
    return chunkCandidates(size, size, tiles);
  const std::size_t fixed = pins.parts ? *pins.parts : *pins.serial;
  for (std::size_t other : chunkCandidates(size / fixed, size / fixed, tiles))
    if (isValidChunkCount(size, fixed * other))
      out.push_back(fixed * other);
  return out;
}

// The part counts a chunk count of a dimension may be split into (ascending).
std::vector<std::size_t> partChoices(std::size_t chunks, const DimPins &pins, unsigned tiles) {
  if (pins.parts)
    return {*pins.parts};
  if (pins.serial)
    return {chunks / *pins.serial};
  std::vector<std::size_t> out;
  for (std::size_t d = 1; d <= chunks && d <= tiles; ++d)
    if (chunks % d == 0)
      out.push_back(d);
  return out;
}

class Search {
public:
  Search(const Target &target, const MatMulShape &shape, const MatMulOptions &options,
         MatMulPlan proto)
      : target_(target), shape_(shape), options_(options), proto_(std::move(proto)),
        tiles_(target.getNumTiles()), budget_(matMulTileBudget(target, options)) {
    const MatMulConstraints &c = options.constraints;
    pins_ = {DimPins{c.partitionM, c.serialM}, DimPins{c.partitionK, c.serialK},
             DimPins{c.partitionN, c.serialN}};
    rate_ = vertexMacsPerCycle(target, proto_.inputType);
    partialsRate_ = vertexMacsPerCycle(target, proto_.partialsType);
  }

  std::optional<MatMulPlan> run() {
    if (options_.constraints.partitionGroups)
      gs_ = {*options_.constraints.partitionGroups};
    else
      gs_ = chunkCandidates(shape_.G, std::min<std::size_t>(shape_.G, tiles_), tiles_);
    chunks_ = {dimCandidates(shape_.M, pins_[0], tiles_), dimCandidates(shape_.K, pins_[1], tiles_),
               dimCandidates(shape_.N, pins_[2], tiles_)};
    // Chunk combinations are visited in rounds of equal lower bounds on their serial steps
    // (ceil(chunks / tiles)), lowest first, until no round can reach the best plan's steps.
    std::uint64_t level = 1;
    for (;;) {
      const std::uint64_t next = visitRound(level);
      if (next == noRound || (best_ && next > best_->serialSteps()))
        return best_;
      level = next;
    }
  }

private:
  static constexpr std::uint64_t noRound = std::numeric_limits<std::uint64_t>::max();

  // Factorises every fitting chunk combination whose lower bound is `level`; returns the
  // lowest bound above it (noRound when none). For fixed g, m, k the working set falls and the
  // bound rises as n grows, so the n of a round form a range found by binary search.
  std::uint64_t visitRound(std::uint64_t level) {
    std::uint64_t next = noRound;
    const auto &ns = chunks_[2];
    for (std::size_t g : gs_) {
      const std::size_t bg = ceilDiv(shape_.G, g);
      const std::uint64_t tilesLeft = tiles_ / g;
      for (std::size_t m : chunks_[0])
        for (std::size_t k : chunks_[1]) {
          const std::size_t bm = ceilDiv(shape_.M, m), bk = ceilDiv(shape_.K, k);
          auto fits = [&](std::size_t n) {
            return matMulTileBytes(proto_, bg, bm, bk, ceilDiv(shape_.N, n)) <= budget_;
          };
          auto bound = [&](std::size_t n) {
            return ceilDiv(std::uint64_t(m) * k * n, tilesLeft);
          };
          auto it = std::partition_point(ns.begin(), ns.end(),
                                         [&](std::size_t n) { return !fits(n); });
          it = std::partition_point(it, ns.end(),
                                    [&](std::size_t n) { return bound(n) < level; });
          for (; it != ns.end() && bound(*it) == level; ++it)
            factorise(g, {m, k, *it}, level);
          if (it != ns.end())
            next = std::min(next, bound(*it));
        }
    }
    return next;
  }

  // Tries every split of chunk counts (m, k, n) into parts over the tiles left by g.
  void factorise(std::size_t g, std::array<std::size_t, 3> chunks, std::uint64_t minSteps) {
    const std::size_t tilesLeft = tiles_ / g;
    if (minSteps == 1) { // everything on tiles at once, when the pins allow one step
      if ((!pins_[0].serial || *pins_[0].serial == 1) &&
          (!pins_[1].serial || *pins_[1].serial == 1) &&
          (!pins_[2].serial || *pins_[2].serial == 1) &&
          (!pins_[0].parts || *pins_[0].parts == chunks[0]) &&
          (!pins_[1].parts || *pins_[1].parts == chunks[1]) &&
          (!pins_[2].parts || *pins_[2].parts == chunks[2]))
        return consider(g, chunks, chunks);
    }
    std::array<std::vector<std::size_t>, 3> choices;
    for (int d = 0; d < 3; ++d)
      choices[d] = partChoices(chunks[d], pins_[d], tilesLeft);
    for (std::size_t pm : choices[0]) {
      if (pm > tilesLeft)
        break;
      for (std::size_t pk : choices[1]) {
        if (pm * pk > tilesLeft)
          break;
        const auto &pns = choices[2];
        // Within a (pm, pk), fewer steps means the largest pn that fits the tiles; equal steps
        // only come from that pn.
        auto it = std::upper_bound(pns.begin(), pns.end(), tilesLeft / (pm * pk));
        if (it == pns.begin())
          continue;
        consider(g, {pm, pk, *std::prev(it)}, chunks);
      }
    }
  }

  void consider(std::size_t g, std::array<std::size_t, 3> parts,
                std::array<std::size_t, 3> chunks) {
    MatMulPlan p = proto_;
    p.partition = {g, parts[0], parts[1], parts[2]};
    p.serial = {1, chunks[0] / parts[0], chunks[1] / parts[1], chunks[2] / parts[2]};
    if (best_ && p.serialSteps() > best_->serialSteps())
      return;
    score(p, chunks);
    if (!best_ || better(p, *best_))
      best_ = p;
  }

  static bool better(const MatMulPlan &a, const MatMulPlan &b) {
    auto key = [](const MatMulPlan &p) {
      return std::make_tuple(p.serialSteps(), p.estimatedCycles, p.tilesUsed, p.partition.groups,
                             p.partition.m, p.partition.k, p.partition.n, p.serial.m, p.serial.k,
                             p.serial.n);
    };
    return key(a) < key(b);
  }

  void score(MatMulPlan &p, std::array<std::size_t, 3> chunks) const {
    const std::uint64_t G = shape_.G, M = shape_.M, K = shape_.K, N = shape_.N;
    const std::uint64_t bg = ceilDiv(G, p.partition.groups), bm = ceilDiv(M, chunks[0]),
                        bk = ceilDiv(K, chunks[1]), bn = ceilDiv(N, chunks[2]);
    const std::uint64_t in = p.inputType.size(), part = p.partialsType.size();
    const std::uint64_t xbpc = target_.getExchangeBytesPerCycle();
    p.tilesUsed = p.partition.product();
    p.maxTileBytes = matMulTileBytes(p, bg, bm, bk, bn);
    const double outBytes = part + (p.partialsType != p.outputType ? p.outputType.size() : 0);
    p.meanTileBytes = (double(in) * G * K * (double(M) * chunks[2] + double(N) * chunks[0]) +
                       outBytes * G * M * N * chunks[1]) /
                      (double(p.tilesUsed) * p.serialSteps());
    p.exchangeBytes = in * (G * M * K * p.serial.n * (p.partition.n - 1) +
                            G * K * N * p.serial.m * (p.partition.m - 1)) +
                      part * G * M * N * (p.partition.k - 1);

    const std::uint64_t compute = ceilDiv(bg * bm * bk * bn, rate_);
    const std::uint64_t received = in * ((p.partition.n > 1 ? bg * bm * bk : 0) +
                                         (p.partition.m > 1 ? bg * bk * bn : 0));
    const std::uint64_t step = compute + ceilDiv(received, xbpc) + computeSetSyncCycles;
    std::uint64_t reduce = 0;
    if (p.partition.k > 1) {
      const std::uint64_t share = ceilDiv(bg * bm * bn, p.partition.k);
      const std::uint64_t incoming = (p.partition.k - 1) * share;
      reduce = ceilDiv(incoming * part, xbpc) + ceilDiv(incoming, partialsRate_) +
               computeSetSyncCycles;
    }
    p.estimatedCycles = p.serialSteps() * step + p.serial.m * p.serial.n * reduce;
  }

  const Target &target_;
  MatMulShape shape_;
  const MatMulOptions &options_;
  MatMulPlan proto_;
  std::size_t tiles_;
  std::uint64_t budget_;
  std::array<DimPins, 3> pins_;
  std::vector<std::size_t> gs_;
  std::array<std::vector<std::size_t>, 3> chunks_;
  std::uint64_t rate_ = 1, partialsRate_ = 1;
  std::optional<MatMulPlan> best_;
};

// Pins that need the target: part counts within the tile count.
void checkPinsOnTarget(const MatMulConstraints &c, const Target &target) {
  const std::size_t tiles = target.getNumTiles();
  std::size_t product = 1;
  std::string pinned;
  for (const auto &[name, value] : {std::pair{"groups", c.partitionGroups},
                                    std::pair{"m", c.partitionM}, std::pair{"k", c.partitionK},
                                    std::pair{"n", c.partitionN}}) {
    if (!value)
      continue;
    if (*value > tiles)
      throw invalid_option(fmt::format("planConstraints.partition.{} = {}: the target {} has {} "
                                       "tiles",
                                       name, *value, target.getName(), tiles));
    product *= *value;
    pinned += fmt::format("{}{} = {}", pinned.empty() ? "" : " * ", name, *value);
    if (product > tiles)
      throw invalid_option(fmt::format("planConstraints.partition: {} = {} tiles, more than the "
                                       "{} tiles of target {}",
                                       pinned, product, tiles, target.getName()));
  }
}

// Whether the executors' libraries take these types (cuBLASLt: float -> float, half -> half,
// half -> float).
bool libraryTakes(Type in, Type out) { return in == out || (in == HALF && out == FLOAT); }

// The library plan of `proto`'s product, when its types are supported and its operands, mapped
// linearly over all tiles, fit the budget.
std::optional<MatMulPlan> libraryPlan(const Target &target, const MatMulPlan &proto,
                                      std::uint64_t budget) {
  if (!libraryTakes(proto.inputType, proto.outputType))
    return std::nullopt;
  MatMulPlan p = proto;
  p.method = MatMulMethod::Library;
  const std::uint64_t tiles = target.getNumTiles();
  const std::uint64_t G = p.G, M = p.M, K = p.K, N = p.N;
  const double bytes = double(p.inputType.size()) * G * K * (double(M) + double(N)) +
                       double(p.outputType.size()) * G * M * N;
  p.tilesUsed = tiles;
  p.meanTileBytes = bytes / double(tiles);
  p.maxTileBytes = static_cast<std::uint64_t>(std::ceil(p.meanTileBytes));
  if (p.maxTileBytes > budget)
    return std::nullopt;
  p.exchangeBytes = 0;
  const std::uint64_t rate = std::uint64_t(target.getMatMulMacsPerCycle(p.inputType)) * tiles;
  p.estimatedCycles = ceilDiv(G * M * K * N, rate) + libraryCallCycles;
  return p;
}

} // namespace

MatMulPlan planMatMul(const Target &target, const MatMulParams &params,
                      const MatMulOptions &options) {
  const MatMulShape shape = checkMatMulParams(params);
  checkPinsOnTarget(options.constraints, target);
  MatMulPlan proto;
  proto.G = shape.G;
  proto.M = shape.M;
  proto.K = shape.K;
  proto.N = shape.N;
  proto.inputType = params.inputType;
  proto.outputType = params.outputType;
  proto.partialsType = options.partialsType;
  const MatMulConstraints &c = options.constraints;
  const std::uint64_t budget = matMulTileBudget(target, options);
  const bool vertices = c.method != MatMulMethod::Library;
  const bool library = c.method != MatMulMethod::Vertices && !c.pinsSplits();
  std::optional<MatMulPlan> best;
  if (library)
    best = libraryPlan(target, proto, budget);
  if (vertices)
    if (auto plan = Search(target, shape, options, proto).run())
      if (!best || plan->estimatedCycles <= best->estimatedCycles)
        best = plan;
  if (best)
    return *best;
  if (!vertices) {
    if (!libraryTakes(params.inputType, params.outputType))
      throw invalid_option(fmt::format(
          "planConstraints.method = \"library\": matMul {} has {} inputs and a {} output; the "
          "libraries take float -> float, half -> half and half -> float",
          shapes(params), params.inputType.toString(), params.outputType.toString()));
    throw graph_memory_allocation_error(fmt::format(
        "matMul {} as a kernel: its operands need {} bytes per tile spread over the {} "
        "tiles of target {}, more than the {} bytes available ({} bytes x "
        "availableMemoryProportion {})",
        shapes(params), libraryPlan(target, proto, ~std::uint64_t(0))->maxTileBytes,
        target.getNumTiles(), target.getName(), budget, target.getBytesPerTile(),
        options.availableMemoryProportion));
  }

  const std::size_t groupChunks = chunkCandidates(shape.G, target.getNumTiles(), 0).back();
  const std::uint64_t smallest = matMulTileBytes(proto, ceilDiv(shape.G, groupChunks), 1, 1, 1);
  if (options.constraints.empty() && smallest <= budget)
    throw internal_error(fmt::format("matMul {}: no plan found although 1x1x1 blocks fit",
                                     shapes(params)));
  if (!options.constraints.empty() && smallest <= budget)
    throw invalid_option(fmt::format(
        "planConstraints {}: no plan with these pins fits {} bytes per tile ({} bytes x "
        "availableMemoryProportion {}) for matMul {} on target {}",
        options.constraints.toJson(), budget, target.getBytesPerTile(),
        options.availableMemoryProportion, shapes(params), target.getName()));
  throw graph_memory_allocation_error(fmt::format(
      "matMul {} ({} inputs, {} partials): even the smallest blocks need {} bytes per tile, more "
      "than the {} bytes available ({} bytes x availableMemoryProportion {}) on target {}",
      shapes(params), params.inputType.toString(), options.partialsType.toString(), smallest,
      budget, target.getBytesPerTile(), options.availableMemoryProportion, target.getName()));
}

} // namespace aspen::linalg::detail
