// The device a test runs its programs on, chosen by the environment so that one test body checks
// every backend: ASPEN_TEST_DEVICE unset (or "model") gives the CPU executor modelling the
// graph's target; ASPEN_TEST_DEVICE=gpu gives the first CUDA GPU, which runs any compiled graph
// (each tile of the graph's target becomes a thread block). tests/gpu registers the correctness
// suite a second time with ASPEN_TEST_DEVICE=gpu; without a GPU, tests/main.cpp then prints the
// skip marker and runs nothing, so CTest reports those tests as skipped, never as passed.
#pragma once

#include <aspen/Device.hpp>
#include <aspen/Error.hpp>
#include <aspen/Target.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace aspen::test {

// Printed by a test that needs a GPU where there is none; the tests' CTest property
// SKIP_REGULAR_EXPRESSION matches it.
inline constexpr const char *kSkipMarker = "ASPEN-SKIPPED";

// True when ASPEN_TEST_DEVICE=gpu; raises aspen::invalid_option for a value other than "gpu",
// "model" or empty, so that a typo cannot silently test the CPU instead of the GPU.
inline bool gpuRequested() {
  const char *value = std::getenv("ASPEN_TEST_DEVICE");
  const std::string device = value ? value : "";
  if (device == "gpu")
    return true;
  if (device.empty() || device == "model")
    return false;
  throw invalid_option("environment variable ASPEN_TEST_DEVICE='" + device +
                       "' is not a test device; it must be 'gpu' or 'model' (or unset)");
}

// The device to load an engine compiled for `target` on: see the top of this file.
inline Device deviceFor(const Target &target) {
  return gpuRequested() ? Device::createGpuDevice(0) : Device::createModelDevice(target);
}

// For a test that checks the host side only (worker processes, the CPU executor's time limit):
// in the suite's second, GPU run it prints the skip marker and returns true, since it would
// only repeat the first run. Use: if (skipOnGpuRun()) return;
inline bool skipOnGpuRun() {
  if (!gpuRequested())
    return false;
  std::printf("%s: a host-side test, run once without ASPEN_TEST_DEVICE=gpu\n", kSkipMarker);
  return true;
}

// For a test that needs a GPU whatever ASPEN_TEST_DEVICE says: prints the skip marker and
// returns true when this machine (or this build) has none. Use: if (skipWithoutGpu()) return;
inline bool skipWithoutGpu() {
  if (Device::gpuCount() > 0)
    return false;
  std::printf("%s: no GPU (Device::gpuCount() == 0)\n", kSkipMarker);
  return true;
}

} // namespace aspen::test
