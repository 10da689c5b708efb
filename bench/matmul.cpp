// Times aspen::linalg::matMul (float) on the CPU executor against OpenBLAS's cblas_sgemm on the
// same shapes in the same run: square 256, 512, 1024, one row (1x1024x4096: a batch-1 step)
// and the LSTM shapes of issue 12 (16x1024x2048, 64x2048x4096). Prints GFLOP/s (2·M·N·K per product, median of several rounds)
// and the ratio Aspen / OpenBLAS; the results are compared with OpenBLAS's, so a fast wrong
// answer shows up.
//
// Aspen plans for two targets and runs on the CPU executor modelling each: the default device's
// target where that is the CPU executor (Device::createDefaultDevice: the h200 model on a
// machine without a GPU; the h200 model otherwise), and the ipu2 model. The planner picks a
// library plan (one Gemm: OpenBLAS over all cores) or a vertex plan by its cost model; the
// column "plan" says which. OpenBLAS runs with its default thread count (the core count). The
// three are timed interleaved (one call of each per round) so that all see the same load on a
// shared machine.
#include <aspen/Engine.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/Codelets.hpp>

#if ASPEN_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace aspen;

namespace {

constexpr unsigned kRepetitions = 31;

struct Shape {
  const char *name;
  std::size_t M, K, N;
};

double gflops(const Shape &s, double seconds) { return 2.0 * s.M * s.K * s.N / seconds / 1e9; }

// One product built for Aspen on `target`, operands written.
struct AspenProduct {
  Target target;
  Graph graph;
  std::unique_ptr<Engine> engine;
  std::string method;

  AspenProduct(const Shape &s, const Target &t, const std::vector<float> &a,
               const std::vector<float> &b)
      : target(t), graph(target) {
    ops::addCodelets(graph);
    linalg::addCodelets(graph);
    method = linalg::toString(
        linalg::planMatMul(target, {FLOAT, FLOAT, {s.M, s.K}, {s.K, s.N}}).method);
    Tensor A = linalg::createMatMulInputLHS(graph, FLOAT, {s.M, s.K}, {s.K, s.N}, "A");
    Tensor B = linalg::createMatMulInputRHS(graph, FLOAT, {s.M, s.K}, {s.K, s.N}, "B");
    program::Sequence prog;
    Tensor C = linalg::matMul(graph, A, B, prog, "C");
    graph.createHostWrite("A", A);
    graph.createHostWrite("B", B);
    graph.createHostRead("C", C);
    engine = std::make_unique<Engine>(graph, prog);
    engine->load(Device::createModelDevice(target));
    engine->writeTensor("A", a.data(), a.data() + a.size());
    engine->writeTensor("B", b.data(), b.data() + b.size());
  }
  void run() { engine->run(0); }
  std::vector<float> result(std::size_t n) {
    std::vector<float> c(n);
    engine->readTensor("C", c.data(), c.data() + n);
    return c;
  }
};

// Median seconds of each of `fs`, timed interleaved (one call of each per round, after a warm-up
// round) so that all see the same load on a shared machine.
std::vector<double> interleavedMedians(const std::vector<std::function<void()>> &fs) {
  std::vector<std::vector<double>> times(fs.size());
  for (unsigned round = 0; round <= kRepetitions; ++round)
    for (std::size_t i = 0; i < fs.size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      fs[i]();
      const double t =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (round > 0)
        times[i].push_back(t);
    }
  std::vector<double> medians;
  for (auto &t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t[t.size() / 2]);
  }
  return medians;
}

// The largest difference of x and y relative to the largest |y|.
double relativeDifference(const std::vector<float> &x, const std::vector<float> &y) {
  double diff = 0, scale = 1e-30;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, double(std::fabs(x[i] - y[i])));
    scale = std::max(scale, double(std::fabs(y[i])));
  }
  return diff / scale;
}

} // namespace

int main() {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const Device defaultDevice = Device::createDefaultDevice();
  const Target defaultTarget = defaultDevice.getKind() == DeviceKind::Gpu
                                   ? Target::createModel("h200")
                                   : defaultDevice.getTarget();
  const Target ipu2 = Target::createModel("ipu2");
  const std::vector<Shape> shapes = {{"square 256", 256, 256, 256},
                                     {"square 512", 512, 512, 512},
                                     {"square 1024", 1024, 1024, 1024},
                                     {"vector 1", 1, 1024, 4096},
                                     {"LSTM 16", 16, 1024, 2048},
                                     {"LSTM 64", 64, 2048, 4096}};
  fmt::print("matMul float on the CPU executor vs OpenBLAS cblas_sgemm, {} cores, median of {} "
             "interleaved runs (GFLOP/s); default device target: {}\n",
             cores, kRepetitions, defaultTarget.getName());
  fmt::print("{:<12} {:>10} {:>10} {:>9} {:>10} {:>9} {:>8} {:>8} {:>10}\n", "shape", "openblas",
             "default", "plan", "ipu2", "plan", "ratio d", "ratio i", "max diff");
  for (const Shape &s : shapes) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> a(s.M * s.K), b(s.K * s.N), ref(s.M * s.N);
    for (float &x : a)
      x = u(rng);
    for (float &x : b)
      x = u(rng);
    AspenProduct onDefault(s, defaultTarget, a, b), onIpu(s, ipu2, a, b);
    std::vector<std::function<void()>> fs = {[&] { onDefault.run(); }, [&] { onIpu.run(); }};
#if ASPEN_BENCH_HAVE_OPENBLAS
    fs.push_back([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(s.M), int(s.N), int(s.K), 1.0f,
                  a.data(), int(s.K), b.data(), int(s.N), 0.0f, ref.data(), int(s.N));
    });
#endif
    const std::vector<double> seconds = interleavedMedians(fs);
    const double defaultRate = gflops(s, seconds[0]), ipuRate = gflops(s, seconds[1]);
    const double blas = fs.size() > 2 ? gflops(s, seconds[2]) : -1;
    const double diff = std::max(relativeDifference(onDefault.result(s.M * s.N), ref),
                                 relativeDifference(onIpu.result(s.M * s.N), ref));
    auto ratio = [&](double x) { return blas > 0 ? fmt::format("{:.2f}", x / blas) : "n/a"; };
    fmt::print("{:<12} {:>10.1f} {:>10.1f} {:>9} {:>10.1f} {:>9} {:>8} {:>8} {:>10.1e}\n",
               s.name, blas, defaultRate, onDefault.method, ipuRate, onIpu.method,
               ratio(defaultRate), ratio(ipuRate), blas > 0 ? diff : 0.0);
  }
}
