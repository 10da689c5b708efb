// aspen::nn::lstm's forward (inference, float) on the GPU against cuDNN through PyTorch's CUDA
// nn.LSTM, measured in the same run: T = 50, I = H, H in {256, 512, 1024}, B in {1, 4, 16, 64}.
// The target is to be faster than cuDNN at batch <= 16. Reports ms per forward (median of kReps
// runs of Repeat(kRepeats) of the forward, as bench_gpu_matmul does) and cuDNN / Aspen (above 1:
// Aspen faster); TF32 is off on the peer's side (as for cuBLAS in bench_gpu_matmul), so both
// compute in float. Both sides build bench_lstm's deterministic inputs and weights, and the
// forward outputs are compared through a weighted checksum: a wrong answer exits with status 1.
//
// The peer is one Python process for all shapes, so torch and CUDA start once: `python3` from
// PATH, which on the GPU machines is the interpreter holding PyTorch (bench::pythonResult's
// /usr/bin/python3 has none there), or the interpreter named by ASPEN_BENCH_PYTHON. It runs
// before Aspen and exits, so the two never share the GPU.
//
// Usage: bench_gpu_lstm [--max-h N]    (scripts/gpu-check.sh passes --max-h 512)
#include "GpuBenchSupport.hpp"
#include "LstmBenchData.hpp"

#include <aspen/Engine.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Lstm.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

using namespace aspen;
namespace lstm = aspen::nn::lstm;

namespace {
constexpr std::size_t kTimeSteps = 50;
constexpr std::size_t kHidden[] = {256, 512, 1024};
constexpr std::size_t kBatches[] = {1, 4, 16, 64};
constexpr std::size_t kTargetMaxBatch = 16;
constexpr unsigned kRepeats = 5;
constexpr int kReps = 5;
// Relative checksum difference above which Aspen's output counts as wrong (see bench_lstm).
constexpr double kCheckTolerance = 1e-5;

struct Shape {
  std::size_t H, B;
};

using namespace aspen::bench::lstm_data;

struct Result {
  double ms;                 // median time of one forward
  std::vector<float> output; // [T, B, H]
};

Result aspenLstm(const Target &target, const Shape &s) {
  Graph g(target);
  nn::addCodelets(g);
  lstm::LstmParams params(FLOAT, s.B, kTimeSteps, {s.H, s.H});
  const OptionFlags options{{"inferenceOnly", "true"}};
  linalg::PlanningCache cache;
  Tensor in = lstm::createInput(g, params, "in", options, &cache);
  lstm::LstmState init = lstm::createInitialState(g, params, "init", options, &cache);
  lstm::LstmWeights weights = lstm::createWeights(g, params, "weights", options, &cache);
  program::Sequence forward;
  lstm::zeroInitialState(g, init, forward, "zeroState");
  Tensor out =
      lstm::lstmFwd(g, params, forward, init, weights, in, nullptr, "fwd", options, &cache);
  g.createHostWrite("in", in);
  g.createHostWrite("inputWeights", weights.inputWeights);
  g.createHostWrite("outputWeights", weights.outputWeights);
  g.createHostWrite("biases", weights.biases);
  g.createHostRead("out", out);
  Engine e(g, program::Repeat(kRepeats, forward), {{"debug.allowOutOfMemory", "true"}});
  e.load(Device::createGpuDevice(0));
  auto write = [&](const char *handle, const std::vector<float> &v) {
    e.writeTensor(handle, v.data(), v.data() + v.size());
  };
  write("in", data(kTimeSteps * s.B * s.H, kInput, 1.0));
  write("inputWeights", data(4 * s.H * s.H, kInputWeights, weightScale(s.H)));
  write("outputWeights", data(4 * s.H * s.H, kOutputWeights, weightScale(s.H)));
  write("biases", data(4 * s.H, kBiases, kBiasScale));
  Result r;
  r.ms = 1e3 * bench::deviceSeconds(kReps, [&] { e.run(); }) / kRepeats;
  r.output.resize(kTimeSteps * s.B * s.H);
  e.readTensor("out", r.output.data(), r.output.data() + r.output.size());
  return r;
}

// The peer: prints cuDNN's version, then for each shape its ms per forward and output checksum.
// Aspen's weights are [4, I, H] with dimension 0 in params.cellOrder; torch's are [4H, I] in the
// order input, forget, cell, output, with two biases (the second left zero).
std::string peerScript(const std::vector<Shape> &shapes) {
  const std::vector<lstm::BasicLstmCellUnit> cellOrder =
      lstm::LstmParams(FLOAT, 1, kTimeSteps, {1, 1}).cellOrder;
  std::string perm;
  for (lstm::BasicLstmCellUnit gate :
       {lstm::BASIC_LSTM_CELL_INPUT_GATE, lstm::BASIC_LSTM_CELL_FORGET_GATE,
        lstm::BASIC_LSTM_CELL_CANDIDATE, lstm::BASIC_LSTM_CELL_OUTPUT_GATE})
    perm += fmt::format("{}, ", std::find(cellOrder.begin(), cellOrder.end(), gate) -
                                    cellOrder.begin());
  std::string shapeList;
  for (const Shape &s : shapes)
    shapeList += fmt::format("({}, {}, {}), ", s.H, s.B, weightScale(s.H));
  return fmt::format(
      "import time, torch\n"
      "torch.backends.cuda.matmul.allow_tf32 = False\n"
      "torch.backends.cudnn.allow_tf32 = False\n"
      "torch.set_grad_enabled(False)\n"
      "dev = torch.device(\"cuda\")\n"
      "def data(n, seed, scale):\n"
      "    k = torch.arange(n, dtype=torch.int64)\n"
      "    m = ((k * 2654435761 + seed * 40503) % 1000003).double()\n"
      "    return ((m * (2.0 / 1000003) - 1) * scale).float()\n"
      "print(torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else 0, "
      "flush=True)\n"
      "perm = [{perm}]\n"
      "T = {T}\n"
      "for H, B, ws in [{shapes}]:\n"
      "    I = H\n"
      "    m = torch.nn.LSTM(I, H)\n"
      "    m.weight_ih_l0.copy_(data(4 * I * H, {wiSeed}, ws).view(4, I, H)[perm].transpose(1, 2)"
      ".reshape(4 * H, I))\n"
      "    m.weight_hh_l0.copy_(data(4 * H * H, {woSeed}, ws).view(4, H, H)[perm].transpose(1, 2)"
      ".reshape(4 * H, H))\n"
      "    m.bias_ih_l0.copy_(data(4 * H, {bSeed}, {bs}).view(4, H)[perm].reshape(4 * H))\n"
      "    m.bias_hh_l0.zero_()\n"
      "    m = m.to(dev)\n"
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
      fmt::arg("perm", perm), fmt::arg("T", kTimeSteps), fmt::arg("shapes", shapeList),
      fmt::arg("bs", kBiasScale), fmt::arg("reps", kReps), fmt::arg("repeats", kRepeats),
      fmt::arg("xSeed", kInput), fmt::arg("wiSeed", kInputWeights),
      fmt::arg("woSeed", kOutputWeights), fmt::arg("bSeed", kBiases),
      fmt::arg("checkSeed", kChecksumWeights));
}

// Runs `script` with the peer's interpreter and returns the numbers it prints, in order: fewer
// than expected when it failed (its error goes to stderr). Unlike bench::pythonResult, this one
// reads several numbers and takes the interpreter from PATH (see the top of this file).
std::vector<double> peerNumbers(const std::string &script) {
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

std::size_t parseMaxH(int argc, char **argv) {
  if (argc == 1)
    return kHidden[2];
  const std::string value = argc == 3 ? argv[2] : "";
  if (argc != 3 || std::string(argv[1]) != "--max-h" || value.empty() ||
      value.find_first_not_of("0123456789") != std::string::npos) {
    std::fprintf(stderr, "usage: bench_gpu_lstm [--max-h N]\n");
    std::exit(2);
  }
  return std::stoul(value);
}
} // namespace

int main(int argc, char **argv) {
  const std::size_t maxH = parseMaxH(argc, argv);
  if (bench::noGpu())
    return 0;
  std::vector<Shape> shapes;
  for (std::size_t H : kHidden)
    for (std::size_t B : kBatches)
      if (H <= maxH)
        shapes.push_back({H, B});
  const Target target = Device::createGpuDevice(0).getTarget();

  const std::vector<double> peer = peerNumbers(peerScript(shapes));
  const bool havePeer = peer.size() == 1 + 2 * shapes.size();
  std::printf("lstm forward (inference, float), T = %zu, I = H, on %u blocks (%s) against ",
              kTimeSteps, target.getNumTiles(), target.getName().c_str());
  if (havePeer)
    std::printf("cuDNN %.0f (PyTorch nn.LSTM, no TF32); ms per forward\n", peer[0]);
  else
    std::printf("cuDNN: peer unavailable (needs python3 with CUDA PyTorch, or "
                "ASPEN_BENCH_PYTHON)\n");
  std::printf("target: faster than cuDNN (cuDNN/aspen > 1) at batch <= %zu\n", kTargetMaxBatch);
  std::printf("%5s %4s %10s %10s %12s %16s\n", "H", "B", "aspen ms", "cuDNN ms", "cuDNN/aspen",
              "check");
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
      const Result ours = aspenLstm(target, s);
      ms = ours.ms;
      if (havePeer) {
        const auto [sum, scale] = checksum(ours.output);
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
    const double ratio = peerMs / ms;
    if (s.B <= kTargetMaxBatch && havePeer && !std::isnan(ms)) {
      ++targetShapes;
      targetMet += ratio > 1;
    }
    std::printf("%5zu %4zu %10.3f %10.3f %12.2f %16s\n", s.H, s.B, ms, peerMs, ratio,
                check.c_str());
    std::fflush(stdout);
    lines.push_back(fmt::format(
        "RESULT bench_gpu_lstm mode=inference H={} B={} T={} I={} aspen_ms={:.4f} "
        "cudnn_ms={:.4f} cudnn_over_aspen={:.3f} check={} rel_diff={:.2e}\n",
        s.H, s.B, kTimeSteps, s.H, ms, peerMs, ratio, status, difference));
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
