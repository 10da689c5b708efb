// Per-step launch overhead on the GPU: a Repeat of 100 tiny compute sets (x += 1 on one element
// per tile, one thread block per SM), run with the whole program as one CUDA graph
// (aspen.cuda.controlFlow = graph) and driven from the host (= host), against a peer measured in
// the same run: the same number of 4-byte cudaMemsetAsync calls, the cheapest stream operation
// the runtime offers. Prints microseconds per compute set and the ratios.
#include "GpuBenchSupport.hpp"

#include <aspen/Engine.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <cstdio>
#include <vector>

using namespace aspen;

namespace {
constexpr unsigned kComputeSets = 100;
constexpr unsigned kRepeats = 50;
constexpr unsigned kSteps = kComputeSets * kRepeats;
constexpr int kReps = 5;
} // namespace

int main() {
  if (bench::noGpu())
    return 0;
  Device probe = Device::createGpuDevice(0);
  const Target target = probe.getTarget();
  const unsigned tiles = target.getNumTiles();
  Graph g(target);
  ops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {tiles}, "x");
  util::mapTensorLinearly(g, x, 1, 1);
  g.createHostRead("x", x);
  program::Sequence body;
  for (unsigned i = 0; i < kComputeSets; ++i)
    ops::addInPlace(g, x, 1.0f, body);
  const program::Program prog = program::Sequence({program::Repeat(kRepeats, body)});

  double perStep[2] = {0, 0};
  const char *modes[2] = {"graph", "host"};
  for (int m = 0; m < 2; ++m) {
    Engine e(g, prog, {{"aspen.cuda.controlFlow", modes[m]}});
    e.load(Device::createGpuDevice(0));
    perStep[m] = bench::deviceSeconds(kReps, [&] { e.run(); }) / kSteps;
    // The program really ran: every element counted every step of every run (1 + kReps runs).
    std::vector<float> values(tiles);
    e.readTensor("x", values.data(), values.data() + tiles);
    if (values[0] != float(kSteps * (1 + kReps)) || values[tiles - 1] != values[0]) {
      std::printf("%s mode: x = %g after %d runs, expected %u\n", modes[m], values[0], 1 + kReps,
                  kSteps * (1 + kReps));
      return 1;
    }
  }

  void *scratch = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(&scratch, 4));
  const double memsetPerStep = bench::deviceSeconds(kReps, [&] {
    for (unsigned s = 0; s < kSteps; ++s)
      BENCH_CUDA_CHECK(cudaMemsetAsync(scratch, 0, 4));
  }) / kSteps;
  BENCH_CUDA_CHECK(cudaFree(scratch));

  std::printf("Repeat(%u) of %u compute sets on %u blocks (%s)\n", kRepeats, kComputeSets, tiles,
              target.getName().c_str());
  std::printf("per compute set: graph %7.2f us | host %7.2f us | cudaMemsetAsync %7.2f us | "
              "host/graph %5.2fx | graph/memset %5.2fx\n",
              perStep[0] * 1e6, perStep[1] * 1e6, memsetPerStep * 1e6, perStep[1] / perStep[0],
              perStep[0] / memsetPerStep);
  return 0;
}
