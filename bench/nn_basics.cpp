// Times aspen::nn basics on the CPU executor (generic target, 1 tile per hardware thread) against
// a plain C++ loop computing the same thing, and against NumPy when /usr/bin/python3 has it:
// sigmoid over 4M elements, stable softmax and arg-max over [4096, 1000]. Prints the median of
// several runs and the ratios (the machine is noisy; compare ratios, not times).
#include "BenchSupport.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Loss.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/util/TileMapping.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace aspen;

namespace {

constexpr int kRepeats = 7;

double medianMs(const std::function<void()> &f) {
  return 1e3 * bench::medianSeconds(kRepeats, f);
}

// NumPy's median time in ms for `statement` on x (rows x cols of uniform [-4, 4)), or a
// negative value when NumPy is not available.
double numpyMs(std::size_t rows, std::size_t cols, const std::string &statement) {
  const std::string script =
      fmt::format("import time, numpy as np\n"
                  "x = np.random.default_rng(1).uniform(-4, 4, ({}, {})).astype(np.float32)\n"
                  "f = lambda: {}\n"
                  "f(); t = []\n"
                  "for _ in range({}):\n"
                  "    s = time.perf_counter(); f(); t.append(time.perf_counter() - s)\n"
                  "print(sorted(t)[len(t) // 2] * 1000)\n",
                  rows, cols, statement, kRepeats);
  return bench::pythonResult(script);
}

struct Result {
  std::string name;
  double aspenMs, loopMs, numpyMs;
};

// Runs `build` on a fresh graph and times one engine run.
double aspenMs(unsigned tiles, std::size_t n,
               const std::function<void(Graph &, Tensor, program::Sequence &)> &build,
               std::vector<std::size_t> shape) {
  Graph graph(Target::createGeneric(tiles));
  nn::addCodelets(graph);
  Tensor x = graph.addVariable(FLOAT, shape, "x");
  util::mapTensorLinearly(graph, x);
  program::Sequence prog;
  build(graph, x, prog);
  graph.createHostWrite("x", x);
  // The generic target models 624 KiB tiles; these tensors are bigger than that.
  Engine engine(graph, prog,
                {{"aspen.cpu.threads", std::to_string(tiles)}, {"debug.allowOutOfMemory", "true"}});
  engine.load(Device::createModelDevice(graph.getTarget()));
  std::vector<float> data(n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-4, 4);
  for (float &v : data)
    v = dist(rng);
  engine.writeTensor("x", data.data(), data.data() + n);
  return medianMs([&] { engine.run(); });
}

} // namespace

int main() {
  const unsigned tiles = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t rows = 4096, cols = 1000, n = rows * cols;
  std::vector<float> x(n), y(n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-4, 4);
  for (float &v : x)
    v = dist(rng);
  std::vector<unsigned> best(rows);

  std::vector<Result> results;
  results.push_back(
      {"sigmoid 4M",
       aspenMs(tiles, n,
               [](Graph &g, Tensor t, program::Sequence &p) { nn::sigmoidInPlace(g, t, p); }, {n}),
       medianMs([&] {
         for (std::size_t i = 0; i < n; ++i)
           y[i] = 1.0f / (1.0f + std::exp(-x[i]));
       }),
       numpyMs(rows, cols, "1 / (1 + np.exp(-x))")});
  results.push_back(
      {"softmax stable 4096x1000",
       aspenMs(tiles, n,
               [](Graph &g, Tensor t, program::Sequence &p) { nn::softmaxStableInPlace(g, t, p); },
               {rows, cols}),
       medianMs([&] {
         for (std::size_t r = 0; r < rows; ++r) {
           const float *in = &x[r * cols];
           float *out = &y[r * cols];
           const float m = *std::max_element(in, in + cols);
           float sum = 0;
           for (std::size_t c = 0; c < cols; ++c)
             sum += out[c] = std::exp(in[c] - m);
           for (std::size_t c = 0; c < cols; ++c)
             out[c] /= sum;
         }
       }),
       numpyMs(rows, cols,
               "(lambda e: e / e.sum(1, keepdims=True))(np.exp(x - x.max(1, keepdims=True)))")});
  results.push_back(
      {"argMax 4096x1000",
       aspenMs(tiles, n,
               [](Graph &g, Tensor t, program::Sequence &p) { (void)nn::argMax(g, t, p); },
               {rows, cols}),
       medianMs([&] {
         for (std::size_t r = 0; r < rows; ++r)
           best[r] = unsigned(std::max_element(&x[r * cols], &x[r * cols] + cols) - &x[r * cols]);
       }),
       numpyMs(rows, cols, "x.argmax(1)")});

  fmt::print("aspen::nn basics on {} tiles/threads, median of {} runs\n", tiles, kRepeats);
  fmt::print("{:<26} {:>10} {:>10} {:>10} {:>12} {:>12}\n", "operation", "aspen ms", "loop ms",
             "numpy ms", "aspen/loop", "aspen/numpy");
  for (const Result &r : results)
    fmt::print("{:<26} {:>10.2f} {:>10.2f} {:>10} {:>12.2f} {:>12}\n", r.name, r.aspenMs, r.loopMs,
               r.numpyMs < 0 ? "n/a" : fmt::format("{:.2f}", r.numpyMs), r.aspenMs / r.loopMs,
               r.numpyMs < 0 ? "n/a" : fmt::format("{:.2f}", r.aspenMs / r.numpyMs));
  return 0;
}
