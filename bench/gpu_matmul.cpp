// aspen::linalg::matMul on the GPU against cuBLAS measured in the same run: square FLOAT and HALF
// products (float partials and accumulation on both sides: cublasGemmEx with
// CUBLAS_COMPUTE_32F, no TF32), reported as GFLOP/s (2·M·N·K per product) and as the ratio
// Aspen/cuBLAS. Both results are read back and compared, so a fast wrong answer shows up. The
// host time to build and compile each graph is printed too.
//
// Usage: bench_gpu_matmul [--sizes N,N,...]   (default 1024,2048,4096,8192: the range issue 12
// asks for at least 0.8 of cuBLAS; on a GPU target matMul plans these as one cuBLASLt call)
#include "GpuBenchSupport.hpp"

#include <aspen/Engine.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/Codelets.hpp>

#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace aspen;

namespace {
const std::vector<std::size_t> kDefaultSizes = {1024, 2048, 4096, 8192};
constexpr unsigned kRepeats = 5;
constexpr int kReps = 5;

void checkCublas(cublasStatus_t status, const char *call, int line) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  std::fprintf(stderr, "%s failed at %s:%d on device 0: status %d\n", call, __FILE__, line,
               int(status));
  std::exit(1);
}
#define BENCH_CUBLAS_CHECK(call) checkCublas((call), #call, __LINE__)

// Host bytes of `type` (FLOAT or HALF) holding the values of v, and one value back.
std::vector<std::uint8_t> encode(Type type, const std::vector<float> &v) {
  std::vector<std::uint8_t> bytes(v.size() * type.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (type == HALF) {
      const aspen::half h(v[i]);
      std::memcpy(&bytes[i * 2], &h, 2);
    } else {
      std::memcpy(&bytes[i * 4], &v[i], 4);
    }
  }
  return bytes;
}
float decode(Type type, const std::uint8_t *p) {
  if (type == HALF) {
    aspen::half h;
    std::memcpy(&h, p, 2);
    return float(h);
  }
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

struct Result {
  double seconds;                   // median time of one product
  double buildSeconds = 0;          // host time to build and compile the graph (Aspen only)
  std::vector<std::uint8_t> output; // C, row-major, of the product's type
};

Result aspenMatMul(const Target &target, Type type, std::size_t n,
                   const std::vector<std::uint8_t> &a, const std::vector<std::uint8_t> &b) {
  const auto buildStart = std::chrono::steady_clock::now();
  Graph g(target);
  ops::addCodelets(g);
  linalg::addCodelets(g);
  Tensor ta = linalg::createMatMulInputLHS(g, type, {n, n}, {n, n}, "a");
  Tensor tb = linalg::createMatMulInputRHS(g, type, {n, n}, {n, n}, "b");
  program::Sequence product;
  Tensor c = linalg::matMul(g, ta, tb, product);
  g.createHostWrite("a", ta);
  g.createHostWrite("b", tb);
  g.createHostRead("c", c);
  Engine e(g, program::Repeat(kRepeats, product), {{"debug.allowOutOfMemory", "true"}});
  const double buildSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - buildStart).count();
  e.load(Device::createGpuDevice(0));
  e.writeTensor("a", a.data(), a.data() + a.size());
  e.writeTensor("b", b.data(), b.data() + b.size());
  Result r;
  r.buildSeconds = buildSeconds;
  r.seconds = bench::deviceSeconds(kReps, [&] { e.run(); }) / kRepeats;
  r.output.resize(n * n * type.size());
  e.readTensor("c", r.output.data(), r.output.data() + r.output.size());
  return r;
}

Result cublasMatMul(cublasHandle_t handle, Type type, std::size_t n,
                    const std::vector<std::uint8_t> &a, const std::vector<std::uint8_t> &b) {
  const cudaDataType_t cudaType = type == HALF ? CUDA_R_16F : CUDA_R_32F;
  void *da, *db, *dc;
  BENCH_CUDA_CHECK(cudaMalloc(&da, a.size()));
  BENCH_CUDA_CHECK(cudaMalloc(&db, b.size()));
  BENCH_CUDA_CHECK(cudaMalloc(&dc, a.size()));
  BENCH_CUDA_CHECK(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice));
  BENCH_CUDA_CHECK(cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice));
  const float one = 1, zero = 0;
  const int dim = int(n);
  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: swap the operands.
  auto gemm = [&] {
    BENCH_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &one, db,
                                    cudaType, dim, da, cudaType, dim, &zero, dc, cudaType, dim,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  Result r;
  r.seconds = bench::deviceSeconds(kReps, [&] {
    for (unsigned i = 0; i < kRepeats; ++i)
      gemm();
  }) / kRepeats;
  r.output.resize(a.size());
  BENCH_CUDA_CHECK(cudaMemcpy(r.output.data(), dc, r.output.size(), cudaMemcpyDeviceToHost));
  for (void *p : {da, db, dc})
    BENCH_CUDA_CHECK(cudaFree(p));
  return r;
}
// "1024,2048" as sizes; exits with a message on anything else.
std::vector<std::size_t> parseSizes(const char *text) {
  std::vector<std::size_t> sizes;
  const char *p = text;
  while (*p) {
    char *end = nullptr;
    const unsigned long long n = std::strtoull(p, &end, 10);
    if (end == p || n == 0 || n > 65536 || (*end != ',' && *end != '\0')) {
      std::fprintf(stderr, "bench_gpu_matmul: --sizes wants sizes in [1, 65536] separated by "
                           "commas, not '%s'\n", text);
      std::exit(2);
    }
    sizes.push_back(std::size_t(n));
    p = *end == ',' ? end + 1 : end;
  }
  return sizes;
}
} // namespace

int main(int argc, char **argv) {
  std::vector<std::size_t> sizes = kDefaultSizes;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      sizes = parseSizes(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_gpu_matmul [--sizes N,N,...]\n");
      return 2;
    }
  }
  if (bench::noGpu())
    return 0;
  const Target target = Device::createGpuDevice(0).getTarget();
  cublasHandle_t handle;
  BENCH_CUBLAS_CHECK(cublasCreate(&handle));
  BENCH_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH)); // no TF32 for FLOAT
  std::printf("matMul on %u blocks (%s) against cuBLAS (GemmEx, 32-bit accumulation)\n",
              target.getNumTiles(), target.getName().c_str());
  for (Type type : {FLOAT, HALF})
    for (std::size_t n : sizes) {
      std::mt19937 rng{static_cast<unsigned>(n)};
      std::uniform_real_distribution<float> dist(-1, 1);
      std::vector<float> av(n * n), bv(n * n);
      for (float &x : av)
        x = dist(rng);
      for (float &x : bv)
        x = dist(rng);
      const auto a = encode(type, av), b = encode(type, bv);
      const Result ours = aspenMatMul(target, type, n, a, b);
      const Result peer = cublasMatMul(handle, type, n, a, b);
      double maxDiff = 0, maxPeer = 0;
      for (std::size_t i = 0; i < n * n; ++i) {
        const double x = decode(type, &ours.output[i * type.size()]);
        const double y = decode(type, &peer.output[i * type.size()]);
        maxDiff = std::max(maxDiff, std::fabs(x - y));
        maxPeer = std::max(maxPeer, std::fabs(y));
      }
      const double flops = 2.0 * double(n) * n * n;
      std::printf("%-5s %5zu^3: aspen %8.1f GFLOP/s | cuBLAS %8.1f GFLOP/s | aspen/cuBLAS %5.2fx | "
                  "max |difference| %.2g (of max |C| %.3g) | built in %.1f s\n",
                  type == HALF ? "half" : "float", n, flops / ours.seconds / 1e9,
                  flops / peer.seconds / 1e9, peer.seconds / ours.seconds, maxDiff, maxPeer,
                  ours.buildSeconds);
    }
  BENCH_CUBLAS_CHECK(cublasDestroy(handle));
  return 0;
}
