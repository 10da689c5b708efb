// Memory bandwidth on the GPU, each against a peer measured in the same run:
//  - a Copy program of 64M floats (contiguous) against cudaMemcpy device-to-device of the same
//    bytes, and a transposing Copy (a gather through a view) against the same memcpy;
//  - element-wise ops::add and a fused 5-operation expression (one generated codelet) against the
//    contiguous Copy: bytes read + written per second, so 1.0x means "as fast as copying".
// Each program repeats its work kRepeats times per run so that one run's launch cost is small.
#include "GpuBenchSupport.hpp"

#include <aspen/Engine.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <cstdio>
#include <vector>

using namespace aspen;
namespace ex = aspen::ops::expr;

namespace {
constexpr std::size_t kRows = 8192, kCols = 8192, kN = kRows * kCols;
constexpr unsigned kRepeats = 10;
constexpr int kReps = 5;
constexpr double kGB = 1e9;

// GB/s of moving `bytes` kRepeats times in `seconds`.
double gbps(double bytes, double seconds) { return bytes * kRepeats / seconds / kGB; }
} // namespace

int main() {
  if (bench::noGpu())
    return 0;
  const Target target = Device::createGpuDevice(0).getTarget();
  const double copyBytes = 2.0 * kN * sizeof(float); // read + write

  // The peer: cudaMemcpy device to device of the same bytes.
  void *src = nullptr, *dst = nullptr;
  BENCH_CUDA_CHECK(cudaMalloc(&src, kN * sizeof(float)));
  BENCH_CUDA_CHECK(cudaMalloc(&dst, kN * sizeof(float)));
  BENCH_CUDA_CHECK(cudaMemset(src, 0, kN * sizeof(float)));
  const double memcpySeconds = bench::deviceSeconds(kReps, [&] {
    for (unsigned r = 0; r < kRepeats; ++r)
      BENCH_CUDA_CHECK(cudaMemcpyAsync(dst, src, kN * sizeof(float), cudaMemcpyDeviceToDevice));
  });
  BENCH_CUDA_CHECK(cudaFree(src));
  BENCH_CUDA_CHECK(cudaFree(dst));

  Graph g(target);
  ops::addCodelets(g);
  Tensor a = g.addVariable(FLOAT, {kRows, kCols}, "a"), b = g.addVariable(FLOAT, {kRows, kCols}, "b");
  Tensor c = g.addVariable(FLOAT, {kRows, kCols}, "c");
  for (Tensor t : {a, b, c})
    util::mapTensorLinearly(g, t);
  g.createHostWrite("a", a);
  g.createHostWrite("b", b);
  g.createHostRead("c", c);
  // Tensors live in device memory; a tile's bytes bound only its on-chip working set.
  const OptionFlags options{{"debug.allowOutOfMemory", "true"}};
  auto time = [&](const program::Program &body) {
    Engine e(g, program::Repeat(kRepeats, body), options);
    e.load(Device::createGpuDevice(0));
    std::vector<float> av(kN), bv(kN);
    for (std::size_t i = 0; i < kN; ++i) {
      av[i] = float(i % 1000) * 0.001f;
      bv[i] = float(i % 777) * 0.002f;
    }
    e.writeTensor("a", av.data(), av.data() + kN);
    e.writeTensor("b", bv.data(), bv.data() + kN);
    return bench::deviceSeconds(kReps, [&] { e.run(); });
  };
  const double copySeconds = time(program::Copy(a, c));
  const double transposeSeconds = time(program::Copy(a.transpose(), c));
  program::Sequence add, fused;
  ops::addWithOutput(g, a, b, c, add);
  ops::mapWithOutput(g, ex::Sqrt(ex::Abs(ex::_1 * 2.0f - ex::_2)) + ex::Max(ex::_1, ex::_2), {a, b},
                     c, fused);
  const double addSeconds = time(add), fusedSeconds = time(fused);
  const double ewBytes = 3.0 * kN * sizeof(float); // two reads, one write

  const double copyGbps = gbps(copyBytes, copySeconds);
  std::printf("%zu x %zu floats (%.0f MiB a tensor), %u blocks (%s)\n", kRows, kCols,
              kN * sizeof(float) / 1048576.0, target.getNumTiles(), target.getName().c_str());
  std::printf("Copy contiguous   %8.1f GB/s | cudaMemcpy D2D %8.1f GB/s | copy/memcpy %5.2fx\n",
              copyGbps, gbps(copyBytes, memcpySeconds), memcpySeconds / copySeconds);
  std::printf("Copy transposed   %8.1f GB/s | cudaMemcpy D2D %8.1f GB/s | transpose/memcpy %5.2fx\n",
              gbps(copyBytes, transposeSeconds), gbps(copyBytes, memcpySeconds),
              memcpySeconds / transposeSeconds);
  std::printf("add               %8.1f GB/s | Copy %8.1f GB/s | add/copy bandwidth %5.2fx\n",
              gbps(ewBytes, addSeconds), copyGbps, gbps(ewBytes, addSeconds) / copyGbps);
  std::printf("5-op expression   %8.1f GB/s | Copy %8.1f GB/s | expression/copy bandwidth %5.2fx\n",
              gbps(ewBytes, fusedSeconds), copyGbps, gbps(ewBytes, fusedSeconds) / copyGbps);
  return 0;
}
