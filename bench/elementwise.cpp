// Element-wise throughput through the CPU executor: a fused expression of twelve operations over
// 16M floats (one generated codelet) and a single add, each against a hand-written C++ loop of
// the same computation and against NumPy (a /usr/bin/python3 subprocess, when numpy imports).
// Prints the median of several repetitions as GB/s (bytes read + written) and ratios.
#include "BenchSupport.hpp"

#include <aspen/Engine.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace aspen;
namespace ex = aspen::ops::expr;

namespace {
constexpr std::size_t kN = std::size_t(1) << 24;
constexpr int kReps = 5;


// NumPy's median time for `statement` on float32 arrays a, b of kN elements; negative if absent.
double numpySeconds(const std::string &statement) {
  const std::string script =
      "import numpy as np, timeit\n"
      "a = np.random.default_rng(1).uniform(-3, 3, " + std::to_string(kN) + ").astype(np.float32)\n"
      "b = np.random.default_rng(2).uniform(-3, 3, " + std::to_string(kN) + ").astype(np.float32)\n"
      "f = lambda: " + statement + "\n"
      "f(); t = sorted(timeit.repeat(f, number=1, repeat=" + std::to_string(kReps) + "))\n"
      "print(t[len(t) // 2])\n";
  return bench::pythonResult(script);
}

const ex::Any kExpr = ex::Select(ex::Exp(ex::Neg(ex::Abs(ex::_1))) * 2.0f + ex::Sqrt(ex::Abs(ex::_2)),
                                 ex::Max(ex::_1, ex::_2) - 1, ex::_1 < ex::_2) * ex::_1;
const char *kNumpyExpr = "np.where(a < b, np.exp(-np.abs(a)) * 2 + np.sqrt(np.abs(b)), "
                         "np.maximum(a, b) - 1) * a";

void loopExpr(const float *a, const float *b, float *o) {
  for (std::size_t i = 0; i < kN; ++i) {
    const float x = a[i], y = b[i];
    const float s = std::exp(-std::fabs(x)) * 2.0f + std::sqrt(std::fabs(y));
    const float m = (x != x || x > y ? x : y) - 1.0f;
    o[i] = (x < y ? s : m) * x;
  }
}
void loopAdd(const float *a, const float *b, float *o) {
  for (std::size_t i = 0; i < kN; ++i)
    o[i] = a[i] + b[i];
}

// aspen1: the executor on one thread, the same resources as the single-threaded loop (the fair
// ratio); aspenAll: on all hardware threads.
void report(const char *name, double aspen1, double aspenAll, double loop, double numpy) {
  const double gb = 3.0 * kN * sizeof(float) / 1e9;
  std::printf("%-22s aspen 1 thread %7.2f GB/s, all threads %7.2f GB/s | C++ loop %7.2f GB/s | "
              "aspen(1 thread)/loop time %5.2fx",
              name, gb / aspen1, gb / aspenAll, gb / loop, aspen1 / loop);
  if (numpy > 0)
    std::printf(" | numpy %7.2f GB/s | aspen(1 thread)/numpy time %5.2fx\n", gb / numpy, aspen1 / numpy);
  else
    std::printf(" | numpy unavailable\n");
}
} // namespace

int main() {
  const Target target = Target::createGeneric(16);
  std::vector<float> a(kN), b(kN), o(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    a[i] = -3.0f + 6.0f * static_cast<float>((i * 2654435761u) % 1000003) / 1000003.0f;
    b[i] = -3.0f + 6.0f * static_cast<float>((i * 40503u + 7) % 999983) / 999983.0f;
  }
  for (const bool fused : {true, false}) {
    Graph g(target);
    ops::addCodelets(g);
    Tensor ta = g.addVariable(FLOAT, {kN}, "a"), tb = g.addVariable(FLOAT, {kN}, "b");
    util::mapTensorLinearly(g, ta);
    util::mapTensorLinearly(g, tb);
    program::Sequence prog;
    Tensor out = fused ? ops::map(g, kExpr, {ta, tb}, prog) : ops::add(g, ta, tb, prog);
    g.createHostWrite("a", ta);
    g.createHostWrite("b", tb);
    auto timeAspen = [&](const char *threads) {
      OptionFlags options{{"debug.allowOutOfMemory", "true"}};
      if (threads)
        options.set("aspen.cpu.threads", threads);
      Engine e(g, prog, options);
      e.load(Device::createModelDevice(target));
      e.writeTensor("a", a.data(), a.data() + kN);
      e.writeTensor("b", b.data(), b.data() + kN);
      return bench::medianSeconds(kReps, [&] { e.run(); });
    };
    const double aspen1 = timeAspen("1"), aspenAll = timeAspen(nullptr);
    const double loop = bench::medianSeconds(kReps, [&] { (fused ? loopExpr : loopAdd)(a.data(), b.data(), o.data()); });
    const double numpy = numpySeconds(fused ? kNumpyExpr : "a + b");
    report(fused ? "12-op expression, 16M" : "add, 16M", aspen1, aspenAll, loop, numpy);
  }
  std::printf("(the C++ loop is single-threaded; NumPy's elementwise ops are single-threaded too)\n");
  return 0;
}
