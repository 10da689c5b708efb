// Planning, building and compiling a large matMul for a GPU target, timed, with this process's
// peak memory: the h200 model at 4096^3 (and 8192^3) for float and half. Issue 12's target is
// under 2 s and under 200 MB for 4096^3. Each phase is timed once (they are deterministic and
// take seconds, not microseconds); the peak resident set is the process's high-water mark
// (getrusage), so run one size per process to read it per size:
//   bench_plan_build [size] [float|half] [library|vertices]   (the method pinned; default: the
//   planner's choice)
#include <aspen/Engine.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/Codelets.hpp>

#include <fmt/core.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <string>

using namespace aspen;

namespace {
double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
double peakMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0; // kilobytes on Linux
}
} // namespace

int main(int argc, char **argv) {
  const std::size_t n = argc > 1 ? std::stoul(argv[1]) : 4096;
  const Type type = argc > 2 && std::string(argv[2]) == "half" ? HALF : FLOAT;
  OptionFlags options;
  if (argc > 3)
    options.set("planConstraints", std::string(R"({"method": ")") + argv[3] + "\"}");
  const Target target = Target::createModel("h200");
  const double startMiB = peakMiB();

  auto t0 = std::chrono::steady_clock::now();
  const linalg::MatMulPlan plan = linalg::planMatMul(target, {type, type, {n, n}, {n, n}}, options);
  const double planSeconds = secondsSince(t0);

  t0 = std::chrono::steady_clock::now();
  Graph graph(target);
  ops::addCodelets(graph);
  linalg::addCodelets(graph);
  const double codelets = secondsSince(t0);

  t0 = std::chrono::steady_clock::now();
  Tensor A = linalg::createMatMulInputLHS(graph, type, {n, n}, {n, n}, "A", options);
  Tensor B = linalg::createMatMulInputRHS(graph, type, {n, n}, {n, n}, "B", options);
  program::Sequence prog;
  linalg::matMul(graph, A, B, prog, "C", options);
  const double build = secondsSince(t0);

  t0 = std::chrono::steady_clock::now();
  Engine engine(graph, prog);
  const double compile = secondsSince(t0);

  fmt::print("matMul {}^3 {} on the h200 model: {} plan ({} serial steps, {} tiles)\n", n,
             type.toString(), linalg::toString(plan.method), plan.serialSteps(), plan.tilesUsed);
  fmt::print("  plan {:.3f} s, add codelets {:.3f} s, build {:.3f} s, compile {:.3f} s; "
             "plan + build {:.3f} s\n",
             planSeconds, codelets, build, compile, planSeconds + build);
  fmt::print("  peak resident memory {:.0f} MiB (at start {:.0f} MiB)\n", peakMiB(), startMiB);
}
