// The front-door demo (scripts/demo.sh): one LSTM layer built with the popnn-style builder
// (aspen::nn::lstm), planned for the default device, run on random data and checked against an
// independent double-precision host model, with its time beside torch.nn.LSTM's when the script
// could measure that. It ends with a one-line verdict; the exit status is 0 when every output
// agrees with the model.
//
// Usage: lstm_demo [--steps T] [--batch B] [--input I] [--hidden H] [--runs N]
//                  [--device default|cpu|h200|gpu] [--torch-script FILE]
// Defaults: T = 50, B = 16, I = H = 256, 20 timed runs, the default device: the first GPU when
// there is one, else the CPU executor with the layer planned for this machine's cores (cpu);
// h200 runs on the CPU executor what Aspen plans for an H200. With --torch-script (scripts/demo.sh
// passes examples/python/time_torch_lstm.py), the demo runs that script under /usr/bin/python3
// on the same shape and device kind and prints torch.nn.LSTM's fastest time a run beside
// Aspen's; without torch there, it says so and the verdict gives Aspen's time alone.
#include "rnnref/Lstm.hpp" // the double model the lstm_layer driver checks with

#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/nn/RecurrentPlan.hpp>
#include <aspen/ops/Codelets.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace aspen;
namespace lstm = aspen::nn::lstm;

namespace {

struct Settings {
  std::size_t T = 50, B = 16, I = 256, H = 256;
  unsigned runs = 20;
  std::string device = "default";
  std::string torchScript;
};

Settings parseArguments(int argc, char **argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc)
      throw invalid_option("lstm_demo: " + flag + " needs a value (see the usage in the source)");
    const std::string value = argv[++i];
    const auto count = [&] {
      std::size_t used = 0;
      const unsigned long v = std::stoul(value, &used);
      if (used != value.size() || v == 0)
        throw invalid_option("lstm_demo: " + flag + " " + value + ": expected a positive integer");
      return static_cast<std::size_t>(v);
    };
    if (flag == "--steps")
      s.T = count();
    else if (flag == "--batch")
      s.B = count();
    else if (flag == "--input")
      s.I = count();
    else if (flag == "--hidden")
      s.H = count();
    else if (flag == "--runs")
      s.runs = static_cast<unsigned>(count());
    else if (flag == "--device")
      s.device = value;
    else if (flag == "--torch-script")
      s.torchScript = value;
    else
      throw invalid_option("lstm_demo: unknown flag " + flag +
                           " (--steps, --batch, --input, --hidden, --runs, --device, --torch-script)");
  }
  return s;
}

// "cpu": the CPU executor planning for this machine, a tile a core with 256 MiB each (as
// bench_lstm does); "h200": the CPU executor running what Aspen plans for an H200; "gpu": the
// first GPU; "default": the GPU when there is one, else "cpu".
Device deviceNamed(const std::string &name) {
  if (name == "default")
    return deviceNamed(Device::gpuCount() > 0 ? "gpu" : "cpu");
  if (name == "cpu")
    return Device::createModelDevice(
        Target::createGeneric(Device::cpuThreadCount(), 1, std::size_t(256) << 20));
  if (name == "h200")
    return Device::createModelDevice(Target::createModel("h200"));
  if (name == "gpu")
    return Device::createGpuDevice(0);
  throw invalid_option("lstm_demo: unknown device '" + name + "' (default, cpu, h200 or gpu)");
}

// Uniform in [-scale, scale], rounded to float: Aspen and the model see the same values.
std::vector<float> randomValues(std::mt19937 &rng, std::size_t n, double scale) {
  std::uniform_real_distribution<float> uniform(float(-scale), float(scale));
  std::vector<float> v(n);
  for (float &x : v)
    x = uniform(rng);
  return v;
}

std::vector<double> toDouble(const std::vector<float> &v) { return {v.begin(), v.end()}; }

// The largest |aspen - model| / (1e-5 + 2e-4 |model|): at most 1 passes (lstm_layer's float
// tolerance: absolute 1e-5 plus relative 2e-4).
double worstError(const std::vector<float> &aspen, const std::vector<double> &model) {
  double worst = 0;
  for (std::size_t i = 0; i < model.size(); ++i) {
    const double err = std::abs(double(aspen[i]) - model[i]) / (1e-5 + 2e-4 * std::abs(model[i]));
    worst = std::isnan(err) ? INFINITY : std::max(worst, err);
  }
  return worst;
}

// A line of the engine's profile summary that starts with `prefix` (after its indent).
std::string summaryLine(const std::string &summary, const std::string &prefix) {
  std::istringstream lines(summary);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t start = line.find_first_not_of(' ');
    if (start != std::string::npos && line.compare(start, prefix.size(), prefix) == 0) {
      const std::size_t value = line.find_first_not_of(' ', start + prefix.size());
      return value == std::string::npos ? "" : line.substr(value, line.find(' ', value) - value);
    }
  }
  return "";
}

// torch.nn.LSTM's fastest time a run in ms on the same shape, from the script's last line, or
// why there is none.
struct PeerTime {
  std::optional<double> ms;
  std::string why;
};
PeerTime timeTorch(const Settings &s, bool gpu) {
  if (s.torchScript.empty())
    return {std::nullopt, "not asked for (--torch-script)"};
  const std::string command =
      "/usr/bin/python3 '" + s.torchScript + "' --steps " + std::to_string(s.T) + " --batch " +
      std::to_string(s.B) + " --input " + std::to_string(s.I) + " --hidden " +
      std::to_string(s.H) + " --runs " + std::to_string(s.runs) + (gpu ? " --cuda" : "") +
      " 2>&1";
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return {std::nullopt, "could not start /usr/bin/python3"};
  std::string text, last;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe))
    text += buffer;
  const int status = pclose(pipe);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty())
      last = line;
  if (status != 0 || last.rfind("torch_ms ", 0) != 0)
    return {std::nullopt, last.empty() ? "the script failed" : last};
  return {std::stod(last.substr(9)), ""};
}

void printPlan(const nn::RecurrentPlan &plan) {
  std::printf("Plan\n");
  if (plan.persistent)
    std::printf("  forward loop     one persistent launch: %u blocks of %u threads, weights %s\n",
                plan.persistentBlocks, plan.persistentThreadsPerBlock,
                plan.persistentWeightsInSharedMemory ? "on chip" : "read from memory");
  else
    std::printf("  forward loop     per step, because %s\n", plan.persistentRefusal.c_str());
  std::printf("  input product    %s\n", plan.preCalcWeights
                                            ? "one [T*B, I] x [I, 4H] product before the loop"
                                            : "inside every step");
  std::printf("  time shards      %u\n", plan.numShards);
}

} // namespace

int runDemo(const Settings &s) {
  Device device = deviceNamed(s.device);
  std::printf("Aspen LSTM demo: T=%zu steps, batch %zu, input %zu, hidden %zu, float, inference\n",
              s.T, s.B, s.I, s.H);
  std::printf("Device: %s\n", device.describe().c_str());

  // The layer: popnn's builder, as a Poplar program would call it.
  Graph graph(device.getTarget());
  ops::addCodelets(graph);
  linalg::addCodelets(graph);
  nn::addCodelets(graph);
  const lstm::LstmParams params(FLOAT, s.B, s.T, {s.I, s.H});
  const OptionFlags options = {{"inferenceOnly", "true"}};
  linalg::PlanningCache cache;
  printPlan(lstm::getPlan(graph, params, options));

  program::Sequence prog;
  const Tensor input = lstm::createInput(graph, params, "input", options, &cache);
  const lstm::LstmState init = lstm::createInitialState(graph, params, "init", options, &cache);
  const lstm::LstmWeights weights = lstm::createWeights(graph, params, "weights", options, &cache);
  const auto [output, finalCell] = lstm::lstmFwd(graph, params, init, input, weights, nullptr,
                                                 prog, "lstm", options, &cache);
  const std::pair<const char *, Tensor> inputs[] = {
      {"input", input},
      {"initialOutput", init.output},
      {"initialCellState", init.cellState},
      {"inputWeights", weights.inputWeights},
      {"outputWeights", weights.outputWeights},
      {"biases", weights.biases}};
  for (const auto &[name, tensor] : inputs)
    graph.createHostWrite(name, tensor);
  graph.createHostRead("output", output);
  graph.createHostRead("finalCellState", finalCell);

  const auto compileStart = std::chrono::steady_clock::now();
  Engine engine(graph, prog);
  engine.load(device);
  const double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compileStart).count();
  std::ostringstream summary;
  engine.printProfileSummary(summary);
  std::printf("  memory           %s bytes of variables; %s bytes at once\n",
              summaryLine(summary.str(), "Total variable bytes:").c_str(),
              summaryLine(summary.str(), "Arena bytes (peak):").c_str());
  const std::string estimate = summaryLine(summary.str(), "Program 0:");
  const double estimateSeconds = estimate.empty() ? NAN : std::stod(estimate);
  std::printf("  estimated time   %.1f us a step (%.3f ms a run, the target model's)\n",
              1e6 * estimateSeconds / double(s.T), 1e3 * estimateSeconds);
  std::printf("  compiled and loaded in %.2f s\n", compileSeconds);

  // Random data, written once; the model sees the same values in double precision.
  std::mt19937 rng(1);
  const double weightScale = 1 / std::sqrt(double(s.H));
  const std::vector<float> x = randomValues(rng, s.T * s.B * s.I, 1.0),
                           h0 = randomValues(rng, s.B * s.H, 1.0),
                           c0 = randomValues(rng, s.B * s.H, 1.0),
                           wi = randomValues(rng, 4 * s.I * s.H, weightScale),
                           wo = randomValues(rng, 4 * s.H * s.H, weightScale),
                           b = randomValues(rng, 4 * s.H, 1.0);
  const std::vector<float> *values[] = {&x, &h0, &c0, &wi, &wo, &b};
  for (std::size_t i = 0; i < std::size(inputs); ++i)
    engine.writeTensor(inputs[i].first, values[i]->data(), values[i]->data() + values[i]->size());

  // Timed: the fastest of N runs (the first also packs the weights, once).
  double bestMs = INFINITY;
  for (unsigned r = 0; r < s.runs + 1; ++r) {
    const auto start = std::chrono::steady_clock::now();
    engine.run(0);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    if (r > 0)
      bestMs = std::min(bestMs, ms);
  }
  std::vector<float> y(s.T * s.B * s.H), cT(s.B * s.H);
  engine.readTensor("output", y.data(), y.data() + y.size());
  engine.readTensor("finalCellState", cT.data(), cT.data() + cT.size());

  lstmref::LstmModel model;
  model.T = s.T, model.B = s.B, model.I = s.I, model.H = s.H;
  const lstmref::LstmForward ref = lstmref::forward(
      model, {toDouble(x), toDouble(h0), toDouble(c0), toDouble(wi), toDouble(wo), toDouble(b)});
  const double error = std::max(worstError(y, ref.output), worstError(cT, ref.finalCellState));
  const bool agrees = error <= 1.0;

  std::printf("Result\n");
  std::printf("  double model     %s: worst error %.3f of the tolerance (1e-5 + 2e-4 |ref|) "
              "over %zu outputs\n",
              agrees ? "agrees" : "DISAGREES", error, y.size() + cT.size());
  std::printf("  Aspen            %.3f ms a run (fastest of %u), %.1f us a step\n", bestMs,
              s.runs, 1e3 * bestMs / double(s.T));
  const PeerTime torch = timeTorch(s, device.getKind() == DeviceKind::Gpu);
  if (torch.ms)
    std::printf("  torch.nn.LSTM    %.3f ms a run (fastest of %u, same shape, %s)\n", *torch.ms,
                s.runs, device.getKind() == DeviceKind::Gpu ? "on the GPU" : "on the CPU");
  else
    std::printf("  torch.nn.LSTM    not measured: %s\n", torch.why.c_str());

  std::string speed;
  if (torch.ms) {
    const double ratio = *torch.ms / bestMs;
    char text[96];
    std::snprintf(text, sizeof text, "; %.2fx %s torch.nn.LSTM", ratio >= 1 ? ratio : 1 / ratio,
                  ratio >= 1 ? "faster than" : "slower than");
    speed = text;
  }
  std::printf("Verdict: %s: the LSTM %s the double-precision model; %.3f ms a run%s\n",
              agrees ? "PASS" : "FAIL", agrees ? "matches" : "does not match", bestMs,
              speed.c_str());
  return agrees ? 0 : 1;
}

int main(int argc, char **argv) {
  try {
    return runDemo(parseArguments(argc, argv));
  } catch (const std::exception &e) {
    std::cerr << "lstm_demo: " << e.what() << "\n";
    return 2;
  }
}
