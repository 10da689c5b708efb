// What the recurrent-layer benchmarks share. bench_lstm and bench_gru time aspen::nn::lstm and
// aspen::nn::gru on the CPU executor against two peers in the same run (runCpuBenchmark, below):
// PyTorch's nn.LSTM and nn.GRU, and oneDNN's RNN primitives (lstm, lbr_gru; OneDnnRnnPeer.hpp),
// the strongest CPU peer; bench_gpu_lstm and bench_gpu_gru time their forwards on the GPU against
// cuDNN (GpuRnnBench.hpp). Here also: the deterministic data Aspen and the peers all build, the
// checksum their forward outputs are compared by, and what a layer supplies (RnnLayer; the layers
// are in RnnBenchLayers.hpp).
//
// The CPU benchmark: DeepBench-style H in {256, 512, 1024}, B in {1, 4, 16, 64}, T in
// {25, 50, 100}, I = H. Two programs a shape:
//   inference: the layer's forward (option inferenceOnly) vs the forward under torch.no_grad() and
//              oneDNN's forward_inference;
//   training:  forward + backward with weight update (input and weight gradients, gradient of the
//              full output sequence given) vs forward + backward(dy) with x.requires_grad (input
//              and weight gradients) and oneDNN's forward_training + backward (the same).
// Each is compiled once ("compile s": Engine construction and load) and timed with
// bench::medianSeconds; the table gives Aspen ms, PyTorch ms and PyTorch / Aspen, oneDNN ms and
// oneDNN / Aspen (above 1: Aspen faster), and "RESULT bench_<layer> key=value..." lines repeat it
// for scripts. All sides build the same deterministic inputs and weights, so the forward output is
// compared with each peer's through a weighted checksum: a fast wrong answer shows up (exit
// status 1).
//
// Aspen runs on the target bench_matmul uses, Target::createGeneric(cores, 1 worker, 256 MiB a
// tile), with the executor's thread pool at the core count; PyTorch (Debian's python3-torch, run
// by /usr/bin/python3 through bench::pythonResult, one process per measurement) gets
// torch.set_num_threads(cores), oneDNN (Debian's libdnnl-dev, linked when bench/ is configured)
// as many OpenMP threads. Without a peer the others' numbers are still reported.
//
// Usage: bench_<layer> [--quick] [--max-h N] [--shapes LIST] [--mode inference|training|both]
//                      [--reps N] [--option key=value]... [--engine-option key=value]...
//                      [--profile]   (ASPEN_BENCH_QUICK=1 is --quick)
// The full set takes long on a small machine: scripts/bench.sh passes --max-h 512 by default.
#pragma once

#include "BenchSupport.hpp"
#include "OneDnnRnnPeer.hpp"

#include <aspen/Device.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/Target.hpp>
#include <aspen/nn/Codelets.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace aspen::bench::rnn {

// ---- The data -------------------------------------------------------------------------------

// Element k of the tensor numbered `seed`, uniform in [-scale, scale); kPythonData computes the
// same doubles.
enum Seed : unsigned { kInput = 1, kInputWeights = 2, kOutputWeights = 3, kBiases = 4,
                       kOutputGrad = 5, kChecksumWeights = 9 };
inline std::vector<float> data(std::size_t n, Seed seed, double scale) {
  std::vector<float> v(n);
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint64_t m = (k * 2654435761ull + seed * 40503ull) % 1000003ull;
    v[k] = float((double(m) * (2.0 / 1000003) - 1.0) * scale);
  }
  return v;
}
// The peers' data(n, seed, scale), at a Python script's top level (after `import torch`).
inline constexpr const char *kPythonData =
    "def data(n, seed, scale):\n"
    "    k = torch.arange(n, dtype=torch.int64)\n"
    "    m = ((k * 2654435761 + seed * 40503) % 1000003).double()\n"
    "    return ((m * (2.0 / 1000003) - 1) * scale).float()\n";
// Weights of this size keep the gates' pre-activations of order 1 (no saturated sigmoids).
inline double weightScale(std::size_t H) { return 1.0 / std::sqrt(double(2 * H)); }
constexpr double kBiasScale = 0.1;

// {sum_k y[k] * w[k], sum_k |y[k] * w[k]|} with w = data(kChecksumWeights): the second is the
// scale a difference is measured against.
inline std::pair<double, double> checksum(const std::vector<float> &y) {
  const std::vector<float> w = data(y.size(), kChecksumWeights, 1.0);
  double sum = 0, scale = 0;
  for (std::size_t k = 0; k < y.size(); ++k) {
    sum += double(y[k]) * w[k];
    scale += std::fabs(double(y[k]) * w[k]);
  }
  return {sum, scale};
}

// Relative checksum difference above which Aspen's forward output counts as wrong: float rounding
// over 100 steps stays orders of magnitude below it, a wrong gate or step is of order 1.
constexpr double kCheckTolerance = 1e-5;

// ---- What a layer supplies --------------------------------------------------------------------

struct Shape {
  std::size_t H, B, T;
  std::string name() const { return fmt::format("h{}-b{}-t{}", H, B, T); }
};

enum class Mode { Inference, Training };
inline const char *modeName(Mode mode) {
  return mode == Mode::Inference ? "inference" : "training";
}

// A layer's program, added to a graph: the data its host writes take, by handle, and the number of
// elements of the forward output, host read "out".
struct LayerProgram {
  program::Sequence prog;
  std::vector<std::pair<std::string, std::vector<float>>> writes;
  std::size_t outputSize = 0;
};

struct RnnLayer {
  std::string name;        // "lstm": the benchmarks are bench_lstm and bench_gpu_lstm
  std::string description; // the headline's: "LSTM float (I = H)"
  std::string torchClass;  // the peer's module: "nn.LSTM"
  std::string fwd, bwd;    // Aspen's functions timed: "lstmFwd", "lstmBwdWithWU"
  // Adds to `graph` (nn's codelets added) the program for `mode` at shape s, I = H, with the
  // layer's `options` (inferenceOnly=true for inference): zeroing the initial state, the forward
  // (full output sequence, host read "out") and for training the backward with weight update,
  // input gradients included, from the output gradient data(T * B * H, kOutputGrad, 1.0). Input
  // data(kInput, 1.0), weights data(kInputWeights / kOutputWeights, weightScale(H)), biases
  // data(kBiases, kBiasScale), each in Aspen's layout.
  std::function<LayerProgram(Graph &, const Shape &, Mode, const OptionFlags &)> build;
  // Python lines, at a script's top level, that make `m`: the peer's module (float, on the CPU)
  // holding build's weights, from I, H, ws (weightScale(H)) and data().
  std::string torchModel;
  // oneDNN's cell computing the same layer and, for each of its gates in its order, the slot of
  // dimension 0 that holds it in build's weights and biases (OneDnnRnnPeer.hpp maps them).
  onednn::Cell onednnCell = onednn::Cell::Lstm;
  std::vector<std::size_t> onednnGateSlots;
  // Layers of a stack (bench_lstm_stack): every layer has build's weights, and so do the peers'.
  std::size_t layers = 1;
};

// A layer's program built, compiled and loaded on `device` (run `repeats` times a run), its data
// written.
class CompiledLayer {
public:
  CompiledLayer(const RnnLayer &layer, const Target &target, const Shape &s, Mode mode,
                const OptionFlags &options, const OptionFlags &engineOptions,
                const Device &device, unsigned repeats = 1)
      : graph_(target) {
    nn::addCodelets(graph_);
    LayerProgram p = layer.build(graph_, s, mode, options);
    const auto start = std::chrono::steady_clock::now();
    const program::Program program = repeats == 1 ? program::Program(p.prog)
                                                  : program::Repeat(repeats, p.prog);
    engine_ = std::make_unique<Engine>(graph_, program, engineOptions);
    engine_->load(device);
    compileSeconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const auto &[handle, v] : p.writes)
      engine_->writeTensor(handle, v.data(), v.data() + v.size());
    outputSize_ = p.outputSize;
  }

  double compileSeconds() const { return compileSeconds_; }
  void run() { engine_->run(0); }
  void printProfile() const { engine_->printProfileSummary(std::cout); }
  std::vector<float> output() {
    std::vector<float> y(outputSize_);
    engine_->readTensor("out", y.data(), y.data() + y.size());
    return y;
  }

private:
  Graph graph_;
  std::unique_ptr<Engine> engine_;
  double compileSeconds_ = 0;
  std::size_t outputSize_ = 0;
};

// ---- The CPU benchmark ------------------------------------------------------------------------

namespace cpu {

struct Settings {
  std::vector<Shape> shapes;
  std::vector<Mode> modes = {Mode::Inference, Mode::Training};
  unsigned repetitions = 5;
  // Extra layer options (--option key=value), e.g. preCalcWeights=true for the LSTM.
  std::vector<std::pair<std::string, std::string>> layerOptions;
  // Extra engine options (--engine-option key=value), e.g. aspen.cachedSteps=false.
  std::vector<std::pair<std::string, std::string>> engineOptions;
  bool profile = false; // --profile: Aspen's profile summary after each measurement
};

// Python lines that set up the peer: torch with `threads` threads, data(), m = the layer's module
// holding Aspen's weights and x = the input.
inline std::string torchSetup(const RnnLayer &layer, const Shape &s, unsigned threads) {
  return fmt::format("import time, torch\n"
                     "torch.set_num_threads({})\n"
                     "T, B, I, H = {}, {}, {}, {}\n",
                     threads, s.T, s.B, s.H, s.H) +
         kPythonData + fmt::format("ws = {}\n", weightScale(s.H)) + layer.torchModel +
         fmt::format("x = data(T * B * I, {}, 1.0).view(T, B, I)\n", unsigned(kInput));
}

// PyTorch's median ms for `mode`, negative when the peer is unavailable.
inline double torchMs(const RnnLayer &layer, const Shape &s, unsigned threads, Mode mode,
                      unsigned repetitions) {
  const std::string step =
      mode == Mode::Inference
          ? "torch.set_grad_enabled(False)\n"
            "def f():\n"
            "    m(x)\n"
          : "x.requires_grad_(True)\n"
            "dy = data(T * B * H, " + std::to_string(kOutputGrad) + ", 1.0).view(T, B, H)\n"
            "def f():\n"
            "    m.zero_grad(set_to_none=True)\n"
            "    x.grad = None\n"
            "    m(x)[0].backward(dy)\n";
  return bench::pythonResult(torchSetup(layer, s, threads) + step +
                             fmt::format("f(); t = []\n"
                                         "for _ in range({}):\n"
                                         "    s = time.perf_counter(); f(); "
                                         "t.append(time.perf_counter() - s)\n"
                                         "print(sorted(t)[len(t) // 2] * 1e3)\n",
                                         std::max(1u, repetitions)));
}

// |sum - PyTorch's checksum| / scale for Aspen's forward output checksum (see checksum()), or a
// negative number when the peer is unavailable.
inline double torchRelativeDifference(const RnnLayer &layer, const Shape &s, unsigned threads,
                                      double sum, double scale) {
  return bench::pythonResult(
      torchSetup(layer, s, threads) +
      fmt::format("with torch.no_grad():\n"
                  "    y = m(x)[0].double().reshape(-1)\n"
                  "print(abs(float((y * data(T * B * H, {}, 1.0).double()).sum()) - {}) / {})\n",
                  unsigned(kChecksumWeights), sum, std::max(scale, 1e-30)));
}

// The oneDNN peer's problem at shape s: build()'s data, in Aspen's layout.
inline onednn::Problem onednnProblem(const RnnLayer &layer, const Shape &s, Mode mode) {
  const std::size_t gates = layer.onednnGateSlots.size();
  const std::size_t biasesPerGate = layer.onednnCell == onednn::Cell::LbrGru ? 2 : 1;
  onednn::Problem p;
  p.cell = layer.onednnCell;
  p.H = s.H;
  p.B = s.B;
  p.T = s.T;
  p.layers = layer.layers;
  p.gateSlots = layer.onednnGateSlots;
  p.input = data(s.T * s.B * s.H, kInput, 1.0);
  p.inputWeights = data(gates * s.H * s.H, kInputWeights, weightScale(s.H));
  p.outputWeights = data(gates * s.H * s.H, kOutputWeights, weightScale(s.H));
  p.biases = data(gates * biasesPerGate * s.H, kBiases, kBiasScale);
  if (mode == Mode::Training)
    p.outputGrad = data(s.T * s.B * s.H, kOutputGrad, 1.0);
  return p;
}

// What was measured of one peer.
struct PeerResult {
  double ms = -1;                                                        // negative: not run
  double relativeDifference = std::numeric_limits<double>::quiet_NaN(); // NaN: not checked
  bool wrong() const { return relativeDifference > kCheckTolerance; }
};

struct Row {
  Mode mode = Mode::Inference;
  Shape shape{};
  double compileSeconds = 0, aspenMs = 0;
  PeerResult torch, onednn;
  std::string error;       // Aspen failed
  std::string onednnError; // the oneDNN peer failed
  bool wrong() const { return torch.wrong() || onednn.wrong(); }
};

inline void printRow(const Row &r) {
  const bool ran = r.error.empty();
  auto ms = [](double x) { return x > 0 ? fmt::format("{:.2f}", x) : "n/a"; };
  auto ratio = [&](const PeerResult &peer) {
    return ran && peer.ms > 0 ? fmt::format("{:.2f}", peer.ms / r.aspenMs) : "n/a";
  };
  auto check = [&](const PeerResult &peer) {
    return !ran ? "failed"
           : std::isnan(peer.relativeDifference)
               ? "n/a"
               : fmt::format("{:.1e}{}", peer.relativeDifference, peer.wrong() ? " WRONG" : "");
  };
  fmt::print("{:<10} {:<15} {:>10} {:>10} {:>10} {:>12} {:>14} {:>10} {:>13} {:>14}\n",
             modeName(r.mode), r.shape.name(),
             ran ? fmt::format("{:.3f}", r.compileSeconds) : "failed",
             ran ? ms(r.aspenMs) : "failed", ms(r.torch.ms), ratio(r.torch), check(r.torch),
             r.onednnError.empty() ? ms(r.onednn.ms) : "failed", ratio(r.onednn),
             check(r.onednn));
  if (!ran)
    fmt::print("  aspen failed: {}\n", r.error);
  if (!r.onednnError.empty())
    fmt::print("  onednn failed: {}\n", r.onednnError);
  std::fflush(stdout);
}

inline void printResultLine(const RnnLayer &layer, const Row &r, unsigned tiles,
                            unsigned threads) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const bool ran = r.error.empty();
  auto status = [&](const PeerResult &peer) {
    return !ran                                ? "aspen_failed"
           : std::isnan(peer.relativeDifference) ? "unchecked"
           : peer.wrong()                        ? "wrong"
                                                 : "ok";
  };
  auto ms = [&](const PeerResult &peer) { return peer.ms > 0 ? peer.ms : nan; };
  auto ratio = [&](const PeerResult &peer) {
    return peer.ms > 0 && ran ? peer.ms / r.aspenMs : nan;
  };
  fmt::print("RESULT bench_{} mode={} H={} B={} T={} I={} tiles={} threads={} compile_s={:.3f} "
             "aspen_ms={:.3f} torch_ms={:.3f} torch_over_aspen={:.3f} check={} "
             "rel_diff={:.2e} onednn_ms={:.3f} onednn_over_aspen={:.3f} onednn_check={} "
             "onednn_rel_diff={:.2e}\n",
             layer.name, modeName(r.mode), r.shape.H, r.shape.B, r.shape.T, r.shape.H, tiles,
             threads, ran ? r.compileSeconds : nan, ran ? r.aspenMs : nan, ms(r.torch),
             ratio(r.torch), status(r.torch), r.torch.relativeDifference, ms(r.onednn),
             ratio(r.onednn), r.onednnError.empty() ? status(r.onednn) : "onednn_failed",
             r.onednn.relativeDifference);
}

[[noreturn]] inline void usage(const RnnLayer &layer, const std::string &problem) {
  std::fprintf(stderr,
               "bench_%s: %s\n"
               "usage: bench_%s [--quick] [--max-h N] [--shapes LIST] "
               "[--mode inference|training|both] [--reps N]\n"
               "  --quick        h256 at b1 and b16, t25 (also ASPEN_BENCH_QUICK=1)\n"
               "  --max-h N      only shapes with H <= N\n"
               "  --shapes LIST  comma-separated patterns of dash-separated parts hN, bN, tN; a\n"
               "                 shape runs when every part of some pattern matches it\n"
               "                 (e.g. --shapes h512-b16,t25)\n"
               "  --mode M       inference, training or both (default both)\n"
               "  --reps N       timed runs a measurement, after one warm-up (default 5)\n"
               "  --option K=V   an option for Aspen's %s layer (repeatable)\n"
               "  --engine-option K=V  an engine option (repeatable), e.g. "
               "aspen.cachedSteps=false\n"
               "  --profile      print Aspen's profile summary after each measurement\n",
               layer.name.c_str(), problem.c_str(), layer.name.c_str(), layer.name.c_str());
  std::exit(2);
}

// A bad command line: parseArguments' helpers throw it, and it ends in usage().
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::size_t parseCount(const std::string &flag, const std::string &text) {
  std::size_t used = 0;
  unsigned long value = 0;
  try {
    value = std::stoul(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value == 0)
    throw UsageError(fmt::format("{} needs a positive number, got '{}'", flag, text));
  return value;
}

// Whether `s` matches one pattern of --shapes ("h512-b16").
inline bool matches(const Shape &s, const std::string &pattern) {
  std::istringstream parts(pattern);
  std::string part;
  while (std::getline(parts, part, '-')) {
    if (part.size() < 2)
      throw UsageError(fmt::format("--shapes: '{}' is not hN, bN or tN", part));
    const std::size_t n = parseCount("--shapes", part.substr(1));
    switch (part[0]) {
    case 'h': if (s.H != n) return false; break;
    case 'b': if (s.B != n) return false; break;
    case 't': if (s.T != n) return false; break;
    default: throw UsageError(fmt::format("--shapes: '{}' is not hN, bN or tN", part));
    }
  }
  return true;
}

inline Settings parseArguments(int argc, char **argv) {
  Settings settings;
  const char *quickEnv = std::getenv("ASPEN_BENCH_QUICK");
  bool quick = quickEnv && std::string(quickEnv) != "" && std::string(quickEnv) != "0";
  std::size_t maxH = std::numeric_limits<std::size_t>::max();
  std::vector<std::string> patterns;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw UsageError(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--quick") {
      quick = true;
    } else if (flag == "--max-h") {
      maxH = parseCount(flag, value());
    } else if (flag == "--shapes") {
      std::istringstream list(value());
      std::string pattern;
      while (std::getline(list, pattern, ','))
        if (!pattern.empty())
          patterns.push_back(pattern);
    } else if (flag == "--profile") {
      settings.profile = true;
    } else if (flag == "--option" || flag == "--engine-option") {
      const std::string kv = value();
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UsageError(flag + " takes key=value, got '" + kv + "'");
      (flag == "--option" ? settings.layerOptions : settings.engineOptions)
          .emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (flag == "--reps") {
      settings.repetitions = unsigned(parseCount(flag, value()));
    } else if (flag == "--mode") {
      const std::string mode = value();
      if (mode == "inference")
        settings.modes = {Mode::Inference};
      else if (mode == "training")
        settings.modes = {Mode::Training};
      else if (mode != "both")
        throw UsageError("--mode is inference, training or both, got '" + mode + "'");
    } else {
      throw UsageError("unknown argument '" + flag + "'");
    }
  }
  for (std::size_t H : {256, 512, 1024})
    for (std::size_t B : {1, 4, 16, 64})
      for (std::size_t T : {25, 50, 100}) {
        const Shape s{H, B, T};
        if (quick && !(H == 256 && (B == 1 || B == 16) && T == 25))
          continue;
        if (H > maxH)
          continue;
        if (!patterns.empty() && std::none_of(patterns.begin(), patterns.end(),
                                              [&](const std::string &p) { return matches(s, p); }))
          continue;
        settings.shapes.push_back(s);
      }
  if (settings.shapes.empty())
    throw UsageError("no shape is selected");
  return settings;
}

} // namespace cpu

// The CPU benchmark of `layer` (see the top of this file): its main().
inline int runCpuBenchmark(int argc, char **argv, const RnnLayer &layer) {
  using namespace cpu;
  // OpenBLAS single-threaded, for both sides. Aspen runs one tile a core, each tile's block
  // products one sgemm: OpenBLAS's own threads on top would oversubscribe the cores, and its idle
  // threads spin into the other side's measurement. PyTorch (its intra-op threads set to the
  // same count) is also faster so than with OpenBLAS threading of its own: 223 against 413 ms
  // for an LSTM training step at H=512, B=16, T=25 here (docs/performance.md). Set before the
  // linalg codelets load OpenBLAS; the peer's Python inherits it.
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  Settings settings;
  try {
    settings = parseArguments(argc, argv);
  } catch (const UsageError &e) {
    usage(layer, e.what());
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const Target target = Target::createGeneric(cores, 1, std::size_t(256) << 20);
  const bool peer = bench::pythonResult("import torch\nprint(1)\n") > 0;
  // Before anything else of oneDNN's: it sets the thread count its primitives take.
  onednn::Peer onednnPeer(cores);
  const std::string primitive = onednn::primitiveName(layer.onednnCell);
  auto withOnednn = [&](const std::string &text) {
    return onednnPeer.available() ? " and " + text : std::string();
  };

  fmt::print("{} on the CPU executor ({} tiles of 256 MiB, {} threads) vs PyTorch {} ({} "
             "threads){}, median of {} runs\n",
             layer.description, cores, cores, layer.torchClass, cores,
             withOnednn(fmt::format("oneDNN {} {} ({} OpenMP threads)", onednn::Peer::version(),
                                    primitive, onednnPeer.threads())),
             settings.repetitions);
  fmt::print("inference: {} (inferenceOnly) vs forward under no_grad{}; training: {} + {} vs "
             "forward + backward (input and weight gradients){}\n",
             layer.fwd, withOnednn(primitive + "_forward (forward_inference)"), layer.fwd,
             layer.bwd,
             withOnednn(primitive + "_forward (forward_training) + " + primitive + "_backward"));
  if (!peer)
    fmt::print("peer unavailable: /usr/bin/python3 cannot import torch (apt-get install "
               "python3-torch); no PyTorch numbers\n");
  if (!onednnPeer.available())
    fmt::print("peer unavailable: oneDNN was not found when bench/ was configured (apt-get "
               "install libdnnl-dev, then reconfigure); no oneDNN numbers\n");
  fmt::print("{:<10} {:<15} {:>10} {:>10} {:>10} {:>12} {:>14} {:>10} {:>13} {:>14}\n", "mode",
             "shape", "compile s", "aspen ms", "torch ms", "torch/aspen", "check", "onednn ms",
             "onednn/aspen", "onednn check");
  std::fflush(stdout);

  // The generic target's tiles model a core's share of memory; the largest shapes need more.
  OptionFlags engineOptions{{"aspen.cpu.threads", std::to_string(cores)},
                            {"debug.allowOutOfMemory", "true"}};
  for (const auto &[key, value] : settings.engineOptions)
    engineOptions.set(key, value);
  std::vector<Row> rows;
  for (const Shape &s : settings.shapes) {
    for (Mode mode : settings.modes) {
      Row row;
      row.mode = mode;
      row.shape = s;
      std::optional<std::pair<double, double>> aspenChecksum;
      try {
        OptionFlags options =
            mode == Mode::Training ? OptionFlags{} : OptionFlags{{"inferenceOnly", "true"}};
        for (const auto &[key, value] : settings.layerOptions)
          options.set(key, value);
        CompiledLayer aspen(layer, target, s, mode, options, engineOptions,
                            Device::createModelDevice(target));
        row.compileSeconds = aspen.compileSeconds();
        row.aspenMs = 1e3 * bench::medianSeconds(settings.repetitions, [&] { aspen.run(); });
        if (settings.profile)
          aspen.printProfile();
        aspenChecksum = checksum(aspen.output());
        const auto [sum, scale] = *aspenChecksum;
        const double difference =
            peer ? torchRelativeDifference(layer, s, cores, sum, scale) : -1;
        if (difference >= 0)
          row.torch.relativeDifference = difference;
      } catch (const std::exception &e) {
        row.error = e.what();
      }
      if (peer)
        row.torch.ms = torchMs(layer, s, cores, mode, settings.repetitions);
      if (onednnPeer.available()) {
        try {
          const onednn::Result result =
              onednnPeer.run(onednnProblem(layer, s, mode), settings.repetitions);
          row.onednn.ms = result.ms;
          if (aspenChecksum)
            row.onednn.relativeDifference =
                std::fabs(checksum(result.output).first - aspenChecksum->first) /
                std::max(aspenChecksum->second, 1e-30);
        } catch (const std::exception &e) {
          row.onednnError = e.what();
        }
      }
      printRow(row);
      rows.push_back(row);
    }
  }
  if (!peer)
    fmt::print("peer unavailable\n");
  for (const Row &r : rows)
    printResultLine(layer, r, cores, cores);
  const bool failed = std::any_of(rows.begin(), rows.end(),
                                  [](const Row &r) { return !r.error.empty() || r.wrong(); });
  return failed ? 1 : 0;
}

} // namespace aspen::bench::rnn
