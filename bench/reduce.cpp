// Reduce-add of 16M floats through the CPU executor (all dimensions, the rows and the columns of
// a [4096, 4096] matrix) against a plain C++ loop and NumPy (np.sum, run by /usr/bin/python3 in a
// subprocess when numpy is installed). Prints the median of several runs, GB/s of input read,
// the ratios, and each result's relative error against a double-precision sum.
//   bench_reduce [tiles (default 16)] [repetitions (default 7)]
#include "BenchSupport.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/util/TileMapping.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace aspen;

namespace {

constexpr std::size_t kRows = 4096, kCols = 4096, kElements = kRows * kCols;


struct Measured {
  double seconds;
  double error; // largest relative error of the outputs against the double reference
};

double largestError(const std::vector<float> &got, const std::vector<double> &reference) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - reference[i]) / std::fabs(reference[i]));
  return worst;
}

// The reduction through an Engine; the time is of Engine::run only (input already written).
Measured aspenReduce(unsigned tiles, unsigned repetitions, const std::vector<float> &x,
                     std::vector<std::size_t> dims, const std::vector<double> &reference) {
  Graph g(Target::createGeneric(tiles));
  ops::addCodelets(g);
  Tensor in = g.addVariable(FLOAT, {kRows, kCols}, "in");
  util::mapTensorLinearly(g, in);
  program::Sequence prog;
  Tensor out = ops::reduce(g, in, dims, ops::Operation::ADD, prog, "sum");
  g.createHostWrite("in", in);
  g.createHostRead("out", out);
  Engine e(g, prog, {{"debug.allowOutOfMemory", "true"}});
  e.load(Device::createModelDevice(g.getTarget()));
  e.writeTensor("in", x.data(), x.data() + x.size());
  e.run(); // warm up
  const double seconds = bench::medianSeconds(repetitions, [&] { e.run(); });
  std::vector<float> result(out.numElements());
  e.readTensor("out", result.data(), result.data() + result.size());
  return {seconds, largestError(result, reference)};
}

enum class Kind { All, Rows, Columns };
const char *const kNumpyCalls[] = {"x.sum()", "x.sum(axis=1)", "x.sum(axis=0)"};

Measured loopReduce(unsigned repetitions, const std::vector<float> &x, Kind kind,
                    const std::vector<double> &reference) {
  std::vector<float> result(reference.size());
  const double seconds = bench::medianSeconds(repetitions, [&] {
    if (kind == Kind::Columns) {
      std::fill(result.begin(), result.end(), 0.0f);
      for (std::size_t r = 0; r < kRows; ++r)
        for (std::size_t c = 0; c < kCols; ++c)
          result[c] += x[r * kCols + c];
    } else if (kind == Kind::Rows) {
      for (std::size_t r = 0; r < kRows; ++r) {
        float s = 0;
        for (std::size_t c = 0; c < kCols; ++c)
          s += x[r * kCols + c];
        result[r] = s;
      }
    } else {
      float s = 0;
      for (float v : x)
        s += v;
      result[0] = s;
    }
  });
  return {seconds, largestError(result, reference)};
}

// NumPy's time (median, seconds) for np.sum over the same values, or a negative number.
double numpySeconds(unsigned repetitions, Kind kind) {
  const std::string script = "import time, numpy as np\n"
                             "x = (np.random.default_rng(1).random(" +
                             std::to_string(kElements) +
                             ", dtype=np.float32) + np.float32(0.5)).reshape(" +
                             std::to_string(kRows) + ", " + std::to_string(kCols) +
                             ")\n"
                             "f = lambda: " +
                             kNumpyCalls[int(kind)] +
                             "\n"
                             "f()\n"
                             "t = []\n"
                             "for _ in range(" +
                             std::to_string(repetitions) +
                             "):\n"
                             "    s = time.perf_counter(); f(); t.append(time.perf_counter() - s)\n"
                             "print(sorted(t)[len(t) // 2])\n";
  return bench::pythonResult(script);
}

void report(const char *name, unsigned tiles, const Measured &aspen, const Measured &loop,
            double numpy) {
  const double gb = double(kElements) * sizeof(float) / 1e9;
  fmt::print("{}\n", name);
  fmt::print("  aspen ({} tiles)  {:8.2f} ms  {:6.2f} GB/s  rel. error {:.1e}\n", tiles,
             aspen.seconds * 1e3, gb / aspen.seconds, aspen.error);
  fmt::print("  C++ loop          {:8.2f} ms  {:6.2f} GB/s  rel. error {:.1e}   aspen/loop  "
             "{:.2f}x time\n",
             loop.seconds * 1e3, gb / loop.seconds, loop.error, aspen.seconds / loop.seconds);
  if (numpy > 0)
    fmt::print("  NumPy sum         {:8.2f} ms  {:6.2f} GB/s                      aspen/numpy "
               "{:.2f}x time\n",
               numpy * 1e3, gb / numpy, aspen.seconds / numpy);
  else
    fmt::print("  NumPy sum         not measured (/usr/bin/python3 has no numpy)\n");
}

} // namespace

int main(int argc, char **argv) {
  const unsigned tiles = argc > 1 ? unsigned(std::atoi(argv[1])) : 16;
  const unsigned repetitions = argc > 2 ? unsigned(std::atoi(argv[2])) : 7;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(0.5f, 1.5f);
  std::vector<float> x(kElements);
  for (float &v : x)
    v = dist(rng);
  std::vector<double> rowSums(kRows, 0.0), columnSums(kCols, 0.0), total(1, 0.0);
  for (std::size_t r = 0; r < kRows; ++r)
    for (std::size_t c = 0; c < kCols; ++c) {
      rowSums[r] += x[r * kCols + c];
      columnSums[c] += x[r * kCols + c];
    }
  for (double s : rowSums)
    total[0] += s;

  fmt::print("reduce-add of {} floats ({} MB), median of {} runs\n", kElements,
             kElements * sizeof(float) >> 20, repetitions);
  report("all dimensions -> scalar", tiles, aspenReduce(tiles, repetitions, x, {0, 1}, total),
         loopReduce(repetitions, x, Kind::All, total), numpySeconds(repetitions, Kind::All));
  report("rows of [4096, 4096] -> [4096]", tiles, aspenReduce(tiles, repetitions, x, {1}, rowSums),
         loopReduce(repetitions, x, Kind::Rows, rowSums), numpySeconds(repetitions, Kind::Rows));
  report("columns of [4096, 4096] -> [4096]", tiles,
         aspenReduce(tiles, repetitions, x, {0}, columnSums),
         loopReduce(repetitions, x, Kind::Columns, columnSums),
         numpySeconds(repetitions, Kind::Columns));
  return 0;
}
