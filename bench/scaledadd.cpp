// Times scaledAddTo (A += 0.5 * B, float and half) on the CPU executor against a plain C++
// loop and NumPy (run in a subprocess) in the same run. Prints medians of several repetitions
// and the ratios; the machine is noisy, so only the ratios mean anything.
#include "BenchSupport.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ScaledAdd.hpp>
#include <aspen/util/TileMapping.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace aspen;

namespace {

constexpr int kRepetitions = 7;

template <class F> double medianMilliseconds(F &&f) {
  return 1e3 * bench::medianSeconds(kRepetitions, f);
}

// Median milliseconds of one `a += 0.5 * b` in NumPy, or a negative value without NumPy.
double numpyMilliseconds(std::size_t n, const char *dtype) {
  const std::string script = fmt::format(
      "import numpy as np, time\n"
      "a = np.ones({0}, dtype=np.{1}); b = np.ones({0}, dtype=np.{1}); s = np.{1}(0.5)\n"
      "t = []\n"
      "for _ in range({2}):\n"
      "    t0 = time.perf_counter(); a += s * b; t.append(time.perf_counter() - t0)\n"
      "print(sorted(t)[len(t) // 2] * 1e3)\n",
      n, dtype, kRepetitions);
  return bench::pythonResult(script);
}

template <class T> double loopMilliseconds(std::size_t n) {
  std::vector<T> a(n, T(1.0f)), b(n, T(1.0f));
  return medianMilliseconds([&] {
    for (std::size_t i = 0; i < n; ++i)
      a[i] = T(float(a[i]) + 0.5f * float(b[i]));
  });
}

double aspenMilliseconds(Type type, std::size_t n, const Target &target, unsigned threads) {
  Graph g(target);
  ops::addCodelets(g);
  Tensor A = g.addVariable(type, {n}, "A"), B = g.addVariable(type, {n}, "B");
  util::mapTensorLinearly(g, A);
  util::mapTensorLinearly(g, B);
  program::Sequence prog;
  ops::scaledAddTo(g, A, B, 0.5f, prog);
  Engine e(g, prog, {{"aspen.cpu.threads", std::to_string(threads)}});
  e.load(Device::createModelDevice(target));
  e.run(); // warm up
  return medianMilliseconds([&] { e.run(); });
}

} // namespace

int main() {
  constexpr std::size_t n = 1 << 22;
  fmt::print("scaledAddTo A += 0.5 * B, {} elements, median of {} runs\n", n, kRepetitions);
  fmt::print("{:<8} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12}\n", "type", "loop ms", "numpy ms",
             "aspen1 ms", "aspenN ms", "aspenN/loop", "aspenN/numpy");
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const Target target = Target::createModel("ipu2");
  for (const auto &[type, dtype] : {std::pair{FLOAT, "float32"}, std::pair{HALF, "float16"}}) {
    const double loop = type == FLOAT ? loopMilliseconds<float>(n) : loopMilliseconds<half>(n);
    const double numpy = numpyMilliseconds(n, dtype);
    const double one = aspenMilliseconds(type, n, target, 1);
    const double many = aspenMilliseconds(type, n, target, threads);
    fmt::print("{:<8} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>12.2f} {:>12}\n", type.toString(),
               loop, numpy, one, many, many / loop,
               numpy > 0 ? fmt::format("{:.2f}", many / numpy) : "n/a");
  }
}
