// The GPU benchmark of a recurrent layer (RnnBench.hpp's RnnLayer): its forward (inference,
// float) on the GPU against cuDNN through PyTorch's CUDA module, measured in the same run: T = 50,
// I = H, H in {256, 512, 1024}, B in {1, 4, 16, 64}. The target is to be faster than cuDNN at
// batch <= 16. Reports ms per forward (median of kReps runs of Repeat(kRepeats) of the forward, as
// bench_gpu_matmul does) and cuDNN / Aspen (above 1: Aspen faster); TF32 is off on the peer's side
// (as for cuBLAS in bench_gpu_matmul), so both compute in float. Both sides build the CPU
// benchmark's deterministic inputs and weights, and the forward outputs are compared through a
// weighted checksum: a wrong answer exits with status 1. "RESULT bench_gpu_<layer> key=value..."
// lines repeat the table for scripts.
//
// Each shape runs twice on Aspen's side: the per-step loop (rnnPersistentKernel false, else the
// layer's defaults) and the persistent loop (rnnPersistentKernel true: one co-resident launch
// keeping the weights on chip, docs/architecture.md), each checked against cuDNN's output (auto
// takes one of them by the cost model); a shape the persistent kernel
// cannot take (its staged state or weights beyond a block's shared memory) says "refused".
// cuDNN/persistent is the persistent kernel's ratio.
//
// The peer is one Python process for all shapes, so torch and CUDA start once: `python3` from
// PATH, which on the GPU machines is the interpreter holding PyTorch (bench::pythonResult's
// /usr/bin/python3 has none there), or the interpreter named by ASPEN_BENCH_PYTHON. It runs
// before Aspen and exits, so the two never share the GPU.
//
// Usage: bench_gpu_<layer> [--max-h N]    (scripts/gpu-check.sh passes one)
#pragma once

#include "GpuBenchSupport.hpp"
#include "RnnBench.hpp"

#include <aspen/Device.hpp>
#include <aspen/Error.hpp>
#include <aspen/Target.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

namespace aspen::bench::rnn {

namespace gpu {

constexpr std::size_t kTimeSteps = 50;
constexpr std::size_t kHidden[] = {256, 512, 1024};
constexpr std::size_t kBatches[] = {1, 4, 16, 64};
constexpr std::size_t kTargetMaxBatch = 16;
constexpr unsigned kRepeats = 5;
constexpr int kReps = 5;

// `lines` with every line indented by four spaces.
inline std::string indented(const std::string &lines) {
  std::istringstream in(lines);
  std::string line, out;
  while (std::getline(in, line))
    out += "    " + line + "\n";
  return out;
}

// The peer: prints cuDNN's version, then for each shape its ms per forward and output checksum.
inline std::string peerScript(const RnnLayer &layer, const std::vector<Shape> &shapes) {
  std::string shapeList;
  for (const Shape &s : shapes)
    shapeList += fmt::format("({}, {}, {}), ", s.H, s.B, weightScale(s.H));
  return fmt::format("import time, torch\n"
                     "torch.backends.cuda.matmul.allow_tf32 = False\n"
                     "torch.backends.cudnn.allow_tf32 = False\n"
                     "torch.set_grad_enabled(False)\n"
                     "dev = torch.device(\"cuda\")\n") +
         kPythonData +
         fmt::format("print(torch.backends.cudnn.version() if "
                     "torch.backends.cudnn.is_available() else 0, flush=True)\n"
                     "T = {}\n"
                     "for H, B, ws in [{}]:\n"
                     "    I = H\n",
                     kTimeSteps, shapeList) +
         indented(layer.torchModel) +
         fmt::format("    m = m.to(dev)\n"
                     "    m.flatten_parameters()\n"
                     "    x = data(T * B * I, {xSeed}, 1.0).view(T, B, I).to(dev)\n"
                     "    for _ in range(3):\n"
                     "        m(x)\n"
                     "    torch.cuda.synchronize()\n"
                     "    t = []\n"
                     "    for _ in range({reps}):\n"
                     "        s = time.perf_counter()\n"
                     "        for _ in range({repeats}):\n"
                     "            m(x)\n"
                     "        torch.cuda.synchronize()\n"
                     "        t.append((time.perf_counter() - s) / {repeats})\n"
                     "    y = m(x)[0].double().reshape(-1).cpu()\n"
                     "    c = float((y * data(T * B * H, {checkSeed}, 1.0).double()).sum())\n"
                     "    print(sorted(t)[len(t) // 2] * 1e3, c, flush=True)\n",
                     fmt::arg("xSeed", unsigned(kInput)), fmt::arg("reps", kReps),
                     fmt::arg("repeats", kRepeats),
                     fmt::arg("checkSeed", unsigned(kChecksumWeights)));
}

inline std::size_t parseMaxH(const RnnLayer &layer, int argc, char **argv) {
  if (argc == 1)
    return kHidden[2];
  const std::string value = argc == 3 ? argv[2] : "";
  if (argc != 3 || std::string(argv[1]) != "--max-h" || value.empty() ||
      value.find_first_not_of("0123456789") != std::string::npos) {
    std::fprintf(stderr, "usage: bench_gpu_%s [--max-h N]\n", layer.name.c_str());
    std::exit(2);
  }
  return std::stoul(value);
}

} // namespace gpu

// The GPU benchmark of `layer` (see the top of this file): its main().
inline int runGpuBenchmark(int argc, char **argv, const RnnLayer &layer) {
  using namespace gpu;
  const std::size_t maxH = parseMaxH(layer, argc, argv);
  if (bench::noGpu())
    return 0;
  std::vector<Shape> shapes;
  for (std::size_t H : kHidden)
    for (std::size_t B : kBatches)
      if (H <= maxH)
        shapes.push_back({H, B, kTimeSteps});
  const Target target = Device::createGpuDevice(0).getTarget();

  const std::vector<double> peer = peerNumbers(peerScript(layer, shapes));
  const bool havePeer = peer.size() == 1 + 2 * shapes.size();
  std::printf("%s forward (inference, float), T = %zu, I = H, on %u blocks (%s) against ",
              layer.name.c_str(), kTimeSteps, target.getNumTiles(), target.getName().c_str());
  if (havePeer)
    std::printf("cuDNN %.0f (PyTorch %s, no TF32); ms per forward\n", peer[0],
                layer.torchClass.c_str());
  else
    std::printf("cuDNN: peer unavailable (needs python3 with CUDA PyTorch, or "
                "ASPEN_BENCH_PYTHON)\n");
  std::printf("target: faster than cuDNN (cuDNN/aspen > 1) at batch <= %zu\n", kTargetMaxBatch);
  std::printf("%5s %4s %10s %10s %12s %16s %12s %16s %16s\n", "H", "B", "aspen ms", "cuDNN ms",
              "cuDNN/aspen", "check", "persist. ms", "cuDNN/persistent", "persistent check");
  std::fflush(stdout);

  std::vector<std::string> lines;
  unsigned targetShapes = 0, targetMet = 0;
  bool failed = false;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const Shape &s = shapes[i];
    const double peerMs = havePeer ? peer[1 + 2 * i] : NAN;
    const double peerSum = havePeer ? peer[2 + 2 * i] : NAN;
    double ms = NAN, difference = NAN;
    std::string check = "n/a", status = "unchecked";
    try {
      CompiledLayer ours(layer, target, s, Mode::Inference,
                         {{"inferenceOnly", "true"}, {"rnnPersistentKernel", "false"}},
                         {{"debug.allowOutOfMemory", "true"}}, Device::createGpuDevice(0),
                         kRepeats);
      ms = 1e3 * bench::deviceSeconds(kReps, [&] { ours.run(); }) / kRepeats;
      if (havePeer) {
        const auto [sum, scale] = checksum(ours.output());
        difference = std::fabs(sum - peerSum) / std::max(scale, 1e-30);
        const bool wrong = !(difference <= kCheckTolerance);
        failed |= wrong;
        check = fmt::format("{:.1e}{}", difference, wrong ? " WRONG" : "");
        status = wrong ? "wrong" : "ok";
      }
    } catch (const std::exception &e) {
      std::printf("H=%zu B=%zu: aspen failed: %s\n", s.H, s.B, e.what());
      failed = true;
      check = "failed";
      status = "aspen_failed";
    }
    // The persistent loop, the same checks.
    double persistentMs = NAN, persistentDifference = NAN;
    std::string persistentCheck = "n/a", persistentStatus = "unchecked";
    try {
      CompiledLayer persistent(layer, target, s, Mode::Inference,
                               {{"inferenceOnly", "true"}, {"rnnPersistentKernel", "true"}},
                               {{"debug.allowOutOfMemory", "true"}}, Device::createGpuDevice(0),
                               kRepeats);
      persistentMs = 1e3 * bench::deviceSeconds(kReps, [&] { persistent.run(); }) / kRepeats;
      if (havePeer) {
        const auto [sum, scale] = checksum(persistent.output());
        persistentDifference = std::fabs(sum - peerSum) / std::max(scale, 1e-30);
        const bool wrong = !(persistentDifference <= kCheckTolerance);
        failed |= wrong;
        persistentCheck = fmt::format("{:.1e}{}", persistentDifference, wrong ? " WRONG" : "");
        persistentStatus = wrong ? "wrong" : "ok";
      }
    } catch (const invalid_option &) { // beyond what the kernel takes: not a failure
      persistentCheck = "refused";
      persistentStatus = "refused";
    } catch (const std::exception &e) {
      std::printf("H=%zu B=%zu: aspen persistent failed: %s\n", s.H, s.B, e.what());
      failed = true;
      persistentCheck = "failed";
      persistentStatus = "aspen_failed";
    }
    const double ratio = peerMs / ms;
    if (s.B <= kTargetMaxBatch && havePeer && !std::isnan(ms)) {
      ++targetShapes;
      targetMet += ratio > 1;
    }
    std::printf("%5zu %4zu %10.3f %10.3f %12.2f %16s %12.3f %16.2f %16s\n", s.H, s.B, ms, peerMs,
                ratio, check.c_str(), persistentMs, peerMs / persistentMs,
                persistentCheck.c_str());
    std::fflush(stdout);
    lines.push_back(fmt::format(
        "RESULT bench_gpu_{} mode=inference H={} B={} T={} I={} aspen_ms={:.4f} "
        "cudnn_ms={:.4f} cudnn_over_aspen={:.3f} check={} rel_diff={:.2e} persistent_ms={:.4f} "
        "cudnn_over_persistent={:.3f} persistent_check={} persistent_rel_diff={:.2e}\n",
        layer.name, s.H, s.B, kTimeSteps, s.H, ms, peerMs, ratio, status, difference,
        persistentMs, peerMs / persistentMs, persistentStatus, persistentDifference));
  }
  if (!havePeer)
    std::printf("peer unavailable\n");
  else
    std::printf("target (faster than cuDNN at batch <= %zu): met at %u of %u shapes\n",
                kTargetMaxBatch, targetMet, targetShapes);
  for (const std::string &line : lines)
    std::fputs(line.c_str(), stdout);
  return failed ? 1 : 0;
}

} // namespace aspen::bench::rnn
