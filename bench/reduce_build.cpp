// How long building a reduction takes when its input is a view of many pieces: a [rows, 900]
// float tensor whose elements are 4-element chunks of one variable in a shuffled order (each
// chunk a piece of the view), mapped in 4-element runs to random tiles of a 1472-tile target, as
// PopLibs' reduction tests lay out their inputs. Reported against the same reduction of the
// variable itself (one piece, same mapping) built in the same run, with the process's peak
// memory. A build that slices the view once per segment and scans every piece per slice is
// quadratic in the pieces; the target is seconds for 6.5M elements.
//   bench_reduce_build [rows ... (default 1000 7200)]
#include <aspen/Graph.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/Reduce.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <sys/resource.h>
#include <vector>

using namespace aspen;

namespace {
constexpr std::size_t kCols = 900;

double peakMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0;
}

// Seconds to build reduce(view over dim 1) on a fresh graph; `shuffled` picks the view.
double buildSeconds(std::size_t rows, bool shuffled, std::size_t &pieces) {
  Graph g(Target::createGeneric(1472));
  ops::addCodelets(g);
  const std::size_t n = rows * kCols;
  Tensor in = g.addVariable(FLOAT, {rows, kCols}, "in");
  std::mt19937 rng(1);
  std::vector<std::vector<Interval>> mapping(g.getTarget().getNumTiles());
  for (std::size_t i = 0; i < n; i += 4)
    mapping[rng() % mapping.size()].emplace_back(i, std::min(i + 4, n));
  g.setTileMapping(in, mapping);
  Tensor view = in;
  if (shuffled) {
    const Tensor flat = in.flatten();
    std::vector<std::size_t> order(n / 4);
    for (std::size_t c = 0; c < order.size(); ++c)
      order[c] = c;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<Tensor> chunks;
    chunks.reserve(order.size());
    for (std::size_t c : order)
      chunks.push_back(flat.slice(4 * c, 4 * c + 4));
    view = concat(chunks).reshape({rows, kCols});
  }
  pieces = view.numRegions();
  program::Sequence prog;
  const auto start = std::chrono::steady_clock::now();
  ops::reduce(g, view, FLOAT, {1}, {ops::Operation::ADD}, prog);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
} // namespace

int main(int argc, char **argv) {
  std::vector<std::size_t> rows;
  for (int i = 1; i < argc; ++i)
    rows.push_back(std::strtoul(argv[i], nullptr, 10));
  if (rows.empty())
    rows = {1000, 7200};
  fmt::print("{:>10} {:>10} {:>14} {:>14} {:>8} {:>10}\n", "elements", "pieces",
             "shuffled (s)", "one piece (s)", "ratio", "peak MiB");
  for (std::size_t r : rows) {
    std::size_t pieces = 0, onePiece = 0;
    const double whole = buildSeconds(r, false, onePiece);
    const double shuffled = buildSeconds(r, true, pieces);
    fmt::print("{:>10} {:>10} {:>14.2f} {:>14.2f} {:>8.2f} {:>10.0f}\n", r * kCols, pieces,
               shuffled, whole, shuffled / whole, peakMiB());
  }
}
