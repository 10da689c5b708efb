// What the GPU benchmarks share: skipping cleanly without a GPU (so scripts/bench.sh keeps
// working everywhere), checking the CUDA calls of the peers they time, and median timing of
// work that is complete only once the device is idle.
#pragma once

#include "BenchSupport.hpp"

#include <aspen/Device.hpp>

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace aspen::bench {

// True (after printing "no GPU: skipped") when this machine has no GPU Aspen can use.
inline bool noGpu() {
  if (Device::gpuCount() > 0)
    return false;
  std::printf("no GPU: skipped\n");
  return true;
}

inline void checkCuda(cudaError_t status, const char *call, const char *file, int line) {
  if (status == cudaSuccess)
    return;
  std::fprintf(stderr, "%s failed at %s:%d on device 0: %s\n", call, file, line,
               cudaGetErrorString(status));
  std::exit(1);
}
#define BENCH_CUDA_CHECK(call) ::aspen::bench::checkCuda((call), #call, __FILE__, __LINE__)

// medianSeconds of f followed by waiting for the device, so queued work is counted.
inline double deviceSeconds(unsigned repetitions, const std::function<void()> &f) {
  return medianSeconds(repetitions, [&] {
    f();
    BENCH_CUDA_CHECK(cudaDeviceSynchronize());
  });
}

// Runs `script` with the GPU peers' interpreter and returns the numbers it prints, in order:
// fewer than expected when it failed (its error goes to stderr). The interpreter is `python3`
// from PATH, which on the GPU machines is the one holding CUDA PyTorch (bench::pythonResult's
// /usr/bin/python3 has none there), or the one ASPEN_BENCH_PYTHON names. The script must not
// contain a single quote.
inline std::vector<double> peerNumbers(const std::string &script) {
  const char *python = std::getenv("ASPEN_BENCH_PYTHON");
  const std::string command =
      std::string(python && *python ? python : "python3") + " -c '" + script + "'";
  std::vector<double> numbers;
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return numbers;
  double x;
  while (std::fscanf(pipe, "%lf", &x) == 1)
    numbers.push_back(x);
  pclose(pipe);
  return numbers;
}

} // namespace aspen::bench
