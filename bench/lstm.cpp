// Times aspen::nn::lstm (float) on the CPU executor against PyTorch's nn.LSTM on the same shapes in
// the same run: DeepBench-style H in {256, 512, 1024}, B in {1, 4, 16, 64}, T in {25, 50, 100},
// I = H. Two programs a shape:
//   inference: lstmFwd (option inferenceOnly) vs the forward under torch.no_grad();
//   training:  lstmFwd + lstmBwdWithWU (input and weight gradients, gradient of the full output
//              sequence given) vs forward + backward(dy) with x.requires_grad (input and weight
//              gradients).
// Each is compiled once ("compile s": Engine construction and load) and timed with
// bench::medianSeconds; the table gives Aspen ms, PyTorch ms and PyTorch / Aspen (above 1: Aspen
// faster), and "RESULT bench_lstm key=value..." lines repeat it for scripts. Both sides build the
// same deterministic inputs and weights, so the forward output is compared through a weighted
// checksum: a fast wrong answer shows up (exit status 1).
//
// Aspen runs on the target bench_matmul uses, Target::createGeneric(cores, 1 worker, 256 MiB a
// tile), with the executor's thread pool at the core count; PyTorch (Debian's python3-torch, run
// by /usr/bin/python3 through bench::pythonResult, one process per measurement) gets
// torch.set_num_threads(cores). Without PyTorch the Aspen numbers are still reported.
//
// Usage: bench_lstm [--quick] [--max-h N] [--shapes LIST] [--mode inference|training|both]
//                   [--reps N] [--option key=value]... [--profile]   (ASPEN_BENCH_QUICK=1 is
//                   --quick)
// The full set takes long on a small machine: scripts/bench.sh passes --max-h 512 by default.
#include "BenchSupport.hpp"
#include "LstmBenchData.hpp"

#include <aspen/Engine.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Lstm.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <exception>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace aspen;
namespace lstm = aspen::nn::lstm;

namespace {

// Relative checksum difference above which Aspen's forward output counts as wrong: float rounding
// over 100 steps stays orders of magnitude below it, a wrong gate or step is of order 1.
constexpr double kCheckTolerance = 1e-5;

struct Shape {
  std::size_t H, B, T;
  std::string name() const { return fmt::format("h{}-b{}-t{}", H, B, T); }
};

enum class Mode { Inference, Training };
const char *modeName(Mode mode) { return mode == Mode::Inference ? "inference" : "training"; }

struct Settings {
  std::vector<Shape> shapes;
  std::vector<Mode> modes = {Mode::Inference, Mode::Training};
  unsigned repetitions = 5;
  // Extra LSTM options (--option key=value), e.g. preCalcWeights=true.
  std::vector<std::pair<std::string, std::string>> layerOptions;
  bool profile = false; // --profile: Aspen's profile summary after each measurement
};

using namespace aspen::bench::lstm_data;

// One LSTM program built, compiled and loaded, inputs written.
class AspenLstm {
public:
  AspenLstm(const Target &target, unsigned threads, const Shape &s, Mode mode,
            const std::vector<std::pair<std::string, std::string>> &layerOptions)
      : graph_(target) {
    nn::addCodelets(graph_);
    lstm::LstmParams params(FLOAT, s.B, s.T, {s.H, s.H});
    const bool training = mode == Mode::Training;
    OptionFlags options = training ? OptionFlags{} : OptionFlags{{"inferenceOnly", "true"}};
    for (const auto &[key, value] : layerOptions)
      options.set(key, value);
    linalg::PlanningCache cache;
    Tensor in = lstm::createInput(graph_, params, "in", options, &cache);
    lstm::LstmState init = lstm::createInitialState(graph_, params, "init", options, &cache);
    lstm::LstmWeights weights = lstm::createWeights(graph_, params, "weights", options, &cache);
    program::Sequence prog;
    lstm::zeroInitialState(graph_, init, prog, "zeroState");
    Tensor intermediates;
    Tensor out = lstm::lstmFwd(graph_, params, prog, init, weights, in,
                               training ? &intermediates : nullptr, "fwd", options, &cache);
    graph_.createHostWrite("in", in);
    graph_.createHostWrite("inputWeights", weights.inputWeights);
    graph_.createHostWrite("outputWeights", weights.outputWeights);
    graph_.createHostWrite("biases", weights.biases);
    graph_.createHostRead("out", out);
    if (training) {
      Tensor outGrad = graph_.clone(out, "outGrad");
      graph_.createHostWrite("outGrad", outGrad);
      Tensor inGrad;
      lstm::LstmWeights weightsGrad;
      lstm::lstmBwdWithWU(graph_, params, prog, init, intermediates, weights, in, out, outGrad,
                          nullptr, &inGrad, weightsGrad, "bwd", options, &cache);
    }
    const auto start = std::chrono::steady_clock::now();
    // The generic target's tiles model a core's share of memory; the largest shapes need more.
    engine_ = std::make_unique<Engine>(graph_, prog,
                                       OptionFlags{{"aspen.cpu.threads", std::to_string(threads)},
                                                   {"debug.allowOutOfMemory", "true"}});
    engine_->load(Device::createModelDevice(target));
    compileSeconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    write("in", data(s.T * s.B * s.H, kInput, 1.0));
    write("inputWeights", data(4 * s.H * s.H, kInputWeights, weightScale(s.H)));
    write("outputWeights", data(4 * s.H * s.H, kOutputWeights, weightScale(s.H)));
    write("biases", data(4 * s.H, kBiases, kBiasScale));
    if (training)
      write("outGrad", data(s.T * s.B * s.H, kOutputGrad, 1.0));
    outputSize_ = s.T * s.B * s.H;
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
  void write(const char *handle, const std::vector<float> &v) {
    engine_->writeTensor(handle, v.data(), v.data() + v.size());
  }

  Graph graph_;
  std::unique_ptr<Engine> engine_;
  double compileSeconds_ = 0;
  std::size_t outputSize_ = 0;
};

// Python lines that set up the peer: torch with `threads` threads, data() as above, m = an
// nn.LSTM holding the Aspen layer's weights and x = the input. Aspen's weights are [4, I, H] with
// dimension 0 in params.cellOrder; torch's are [4H, I] in the order input, forget, cell, output,
// with two biases (the second left zero).
std::string torchSetup(const Shape &s, unsigned threads) {
  const std::vector<lstm::BasicLstmCellUnit> cellOrder =
      lstm::LstmParams(FLOAT, s.B, s.T, {s.H, s.H}).cellOrder;
  std::vector<std::size_t> slotOfTorchGate;
  for (lstm::BasicLstmCellUnit gate :
       {lstm::BASIC_LSTM_CELL_INPUT_GATE, lstm::BASIC_LSTM_CELL_FORGET_GATE,
        lstm::BASIC_LSTM_CELL_CANDIDATE, lstm::BASIC_LSTM_CELL_OUTPUT_GATE})
    slotOfTorchGate.push_back(
        std::find(cellOrder.begin(), cellOrder.end(), gate) - cellOrder.begin());
  return fmt::format(
      "import time, torch\n"
      "torch.set_num_threads({threads})\n"
      "T, B, I, H = {T}, {B}, {H}, {H}\n"
      "def data(n, seed, scale):\n"
      "    k = torch.arange(n, dtype=torch.int64)\n"
      "    m = ((k * 2654435761 + seed * 40503) % 1000003).double()\n"
      "    return ((m * (2.0 / 1000003) - 1) * scale).float()\n"
      "perm = [{p0}, {p1}, {p2}, {p3}]\n"
      "ws = {ws}\n"
      "m = torch.nn.LSTM(I, H)\n"
      "with torch.no_grad():\n"
      "    m.weight_ih_l0.copy_(data(4 * I * H, {wiSeed}, ws).view(4, I, H)[perm].transpose(1, 2)"
      ".reshape(4 * H, I))\n"
      "    m.weight_hh_l0.copy_(data(4 * H * H, {woSeed}, ws).view(4, H, H)[perm].transpose(1, 2)"
      ".reshape(4 * H, H))\n"
      "    m.bias_ih_l0.copy_(data(4 * H, {bSeed}, {bs}).view(4, H)[perm].reshape(4 * H))\n"
      "    m.bias_hh_l0.zero_()\n"
      "x = data(T * B * I, {xSeed}, 1.0).view(T, B, I)\n",
      fmt::arg("threads", threads), fmt::arg("T", s.T), fmt::arg("B", s.B), fmt::arg("H", s.H),
      fmt::arg("p0", slotOfTorchGate[0]), fmt::arg("p1", slotOfTorchGate[1]),
      fmt::arg("p2", slotOfTorchGate[2]), fmt::arg("p3", slotOfTorchGate[3]),
      fmt::arg("ws", weightScale(s.H)), fmt::arg("bs", kBiasScale), fmt::arg("xSeed", kInput),
      fmt::arg("wiSeed", kInputWeights), fmt::arg("woSeed", kOutputWeights),
      fmt::arg("bSeed", kBiases));
}

// PyTorch's median ms for `mode`, negative when the peer is unavailable.
double torchMs(const Shape &s, unsigned threads, Mode mode, unsigned repetitions) {
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
  return bench::pythonResult(torchSetup(s, threads) + step +
                             fmt::format("f(); t = []\n"
                                         "for _ in range({}):\n"
                                         "    s = time.perf_counter(); f(); "
                                         "t.append(time.perf_counter() - s)\n"
                                         "print(sorted(t)[len(t) // 2] * 1e3)\n",
                                         std::max(1u, repetitions)));
}

// |sum - PyTorch's checksum| / scale for Aspen's forward output checksum (see checksum()), or a
// negative number when the peer is unavailable.
double torchRelativeDifference(const Shape &s, unsigned threads, double sum, double scale) {
  return bench::pythonResult(
      torchSetup(s, threads) +
      fmt::format("with torch.no_grad():\n"
                  "    y = m(x)[0].double().reshape(-1)\n"
                  "print(abs(float((y * data(T * B * H, {}, 1.0).double()).sum()) - {}) / {})\n",
                  unsigned(kChecksumWeights), sum, std::max(scale, 1e-30)));
}

struct Row {
  Mode mode = Mode::Inference;
  Shape shape{};
  double compileSeconds = 0, aspenMs = 0, torchMs = -1;
  double relativeDifference = std::numeric_limits<double>::quiet_NaN(); // NaN: not checked
  std::string error;                                                     // Aspen failed
  bool wrong() const { return relativeDifference > kCheckTolerance; }
};

void printRow(const Row &r) {
  const bool ran = r.error.empty();
  auto ms = [](double x) { return x > 0 ? fmt::format("{:.2f}", x) : "n/a"; };
  const std::string check =
      !ran ? "failed"
      : std::isnan(r.relativeDifference)
          ? "n/a"
          : fmt::format("{:.1e}{}", r.relativeDifference, r.wrong() ? " WRONG" : "");
  fmt::print("{:<10} {:<15} {:>10} {:>10} {:>10} {:>12} {:>14}\n", modeName(r.mode),
             r.shape.name(), ran ? fmt::format("{:.3f}", r.compileSeconds) : "failed",
             ran ? ms(r.aspenMs) : "failed", ms(r.torchMs),
             ran && r.torchMs > 0 ? fmt::format("{:.2f}", r.torchMs / r.aspenMs) : "n/a", check);
  if (!ran)
    fmt::print("  aspen failed: {}\n", r.error);
  std::fflush(stdout);
}

void printResultLine(const Row &r, unsigned tiles, unsigned threads) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::string status = !r.error.empty()                 ? "aspen_failed"
                             : std::isnan(r.relativeDifference) ? "unchecked"
                             : r.wrong()                        ? "wrong"
                                                                : "ok";
  fmt::print("RESULT bench_lstm mode={} H={} B={} T={} I={} tiles={} threads={} compile_s={:.3f} "
             "aspen_ms={:.3f} torch_ms={:.3f} torch_over_aspen={:.3f} check={} "
             "rel_diff={:.2e}\n",
             modeName(r.mode), r.shape.H, r.shape.B, r.shape.T, r.shape.H, tiles, threads,
             r.error.empty() ? r.compileSeconds : nan, r.error.empty() ? r.aspenMs : nan,
             r.torchMs > 0 ? r.torchMs : nan,
             r.torchMs > 0 && r.error.empty() ? r.torchMs / r.aspenMs : nan, status,
             r.relativeDifference);
}

[[noreturn]] void usage(const std::string &problem) {
  std::fprintf(stderr,
               "bench_lstm: %s\n"
               "usage: bench_lstm [--quick] [--max-h N] [--shapes LIST] "
               "[--mode inference|training|both] [--reps N]\n"
               "  --quick        h256 at b1 and b16, t25 (also ASPEN_BENCH_QUICK=1)\n"
               "  --max-h N      only shapes with H <= N\n"
               "  --shapes LIST  comma-separated patterns of dash-separated parts hN, bN, tN; a\n"
               "                 shape runs when every part of some pattern matches it\n"
               "                 (e.g. --shapes h512-b16,t25)\n"
               "  --mode M       inference, training or both (default both)\n"
               "  --reps N       timed runs a measurement, after one warm-up (default 5)\n"
               "  --option K=V   an LSTM option for Aspen's layer (repeatable)\n"
               "  --profile      print Aspen's profile summary after each measurement\n",
               problem.c_str());
  std::exit(2);
}

std::size_t parseCount(const std::string &flag, const std::string &text) {
  std::size_t used = 0;
  unsigned long value = 0;
  try {
    value = std::stoul(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value == 0)
    usage(fmt::format("{} needs a positive number, got '{}'", flag, text));
  return value;
}

// Whether `s` matches one pattern of --shapes ("h512-b16").
bool matches(const Shape &s, const std::string &pattern) {
  std::istringstream parts(pattern);
  std::string part;
  while (std::getline(parts, part, '-')) {
    if (part.size() < 2)
      usage(fmt::format("--shapes: '{}' is not hN, bN or tN", part));
    const std::size_t n = parseCount("--shapes", part.substr(1));
    switch (part[0]) {
    case 'h': if (s.H != n) return false; break;
    case 'b': if (s.B != n) return false; break;
    case 't': if (s.T != n) return false; break;
    default: usage(fmt::format("--shapes: '{}' is not hN, bN or tN", part));
    }
  }
  return true;
}

Settings parseArguments(int argc, char **argv) {
  Settings settings;
  const char *quickEnv = std::getenv("ASPEN_BENCH_QUICK");
  bool quick = quickEnv && std::string(quickEnv) != "" && std::string(quickEnv) != "0";
  std::size_t maxH = std::numeric_limits<std::size_t>::max();
  std::vector<std::string> patterns;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(flag + " needs a value");
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
    } else if (flag == "--option") {
      const std::string kv = value();
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        usage("--option takes key=value, got '" + kv + "'");
      settings.layerOptions.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (flag == "--reps") {
      settings.repetitions = unsigned(parseCount(flag, value()));
    } else if (flag == "--mode") {
      const std::string mode = value();
      if (mode == "inference")
        settings.modes = {Mode::Inference};
      else if (mode == "training")
        settings.modes = {Mode::Training};
      else if (mode != "both")
        usage("--mode is inference, training or both, got '" + mode + "'");
    } else {
      usage("unknown argument '" + flag + "'");
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
    usage("no shape is selected");
  return settings;
}

} // namespace

int main(int argc, char **argv) {
  // OpenBLAS single-threaded, for both sides. Aspen runs one tile a core, each tile's block
  // products one sgemm: OpenBLAS's own threads on top would oversubscribe the cores, and its idle
  // threads spin into the other side's measurement. PyTorch (its intra-op threads set to the
  // same count) is also faster so than with OpenBLAS threading of its own: 223 against 413 ms
  // for a training step at H=512, B=16, T=25 here (docs/performance.md). Set before the linalg
  // codelets load OpenBLAS; the peer's Python inherits it.
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  const Settings settings = parseArguments(argc, argv);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const Target target = Target::createGeneric(cores, 1, std::size_t(256) << 20);
  const bool peer = bench::pythonResult("import torch\nprint(1)\n") > 0;

  fmt::print("LSTM float (I = H) on the CPU executor ({} tiles of 256 MiB, {} threads) vs "
             "PyTorch nn.LSTM ({} threads), median of {} runs\n",
             cores, cores, cores, settings.repetitions);
  fmt::print("inference: lstmFwd (inferenceOnly) vs forward under no_grad; training: lstmFwd + "
             "lstmBwdWithWU vs forward + backward (input and weight gradients)\n");
  if (!peer)
    fmt::print("peer unavailable: /usr/bin/python3 cannot import torch (apt-get install "
               "python3-torch); Aspen's numbers only\n");
  fmt::print("{:<10} {:<15} {:>10} {:>10} {:>10} {:>12} {:>14}\n", "mode", "shape", "compile s",
             "aspen ms", "torch ms", "torch/aspen", "check");
  std::fflush(stdout);

  std::vector<Row> rows;
  for (const Shape &s : settings.shapes) {
    for (Mode mode : settings.modes) {
      Row row;
      row.mode = mode;
      row.shape = s;
      try {
        AspenLstm aspen(target, cores, s, mode, settings.layerOptions);
        row.compileSeconds = aspen.compileSeconds();
        row.aspenMs = 1e3 * bench::medianSeconds(settings.repetitions, [&] { aspen.run(); });
        if (settings.profile)
          aspen.printProfile();
        const auto [sum, scale] = checksum(aspen.output());
        const double difference = peer ? torchRelativeDifference(s, cores, sum, scale) : -1;
        if (difference >= 0)
          row.relativeDifference = difference;
      } catch (const std::exception &e) {
        row.error = e.what();
      }
      if (peer)
        row.torchMs = torchMs(s, cores, mode, settings.repetitions);
      printRow(row);
      rows.push_back(row);
    }
  }
  if (!peer)
    fmt::print("peer unavailable\n");
  for (const Row &r : rows)
    printResultLine(r, cores, cores);
  const bool failed = std::any_of(rows.begin(), rows.end(),
                                  [](const Row &r) { return !r.error.empty() || r.wrong(); });
  return failed ? 1 : 0;
}
