// bench_conv: times one 2-D convolution layer's passes with aspen::linalg on the CPU executor --
// forward, backward data (convolution on getGradientParams with transposed, flipped weights) and
// weight deltas (calculateWeightDeltas) -- each its own engine, on the target bench_matmul and
// bench_lstm use (a tile a core, 256 MiB each). bench/torch_conv.py runs it beside torch's
// F.conv2d and its gradients; it can also run alone.
//
// Usage: bench_conv --batch B --field H,W --in C --out K --kernel R[,S] [--stride s]
//                   [--padding p] [--groups g] [--reps N] [--passes fwd,bwd,wu]
//                   [--option key=value]...
// Prints one line per pass: "RESULT pass=<fwd|bwd|wu> ms=<fastest> median_ms=<median>
// compile_s=<s> method=<plan method>". Inputs are uniform in [-1, 1] from a fixed seed.
#include "BenchSupport.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/ConvUtil.hpp>
#include <aspen/linalg/Convolution.hpp>
#include <aspen/ops/Codelets.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace aspen;
namespace linalg = aspen::linalg;

namespace {

struct Settings {
  std::size_t batch = 1, in = 64, out = 64, groups = 1;
  std::vector<std::size_t> field = {56, 56}, kernel = {3, 3};
  unsigned stride = 1, padding = 1, reps = 5;
  std::vector<std::string> passes = {"fwd", "bwd", "wu"};
  OptionFlags options;
};

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> items;
  std::size_t at = 0;
  while (at <= s.size()) {
    const std::size_t comma = std::min(s.find(',', at), s.size());
    items.push_back(s.substr(at, comma - at));
    at = comma + 1;
  }
  return items;
}

Settings parse(int argc, char **argv) {
  Settings s;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    const auto sizes = [&] {
      std::vector<std::size_t> v;
      for (const std::string &item : split(value))
        v.push_back(std::stoul(item));
      return v;
    };
    if (flag == "--batch") s.batch = std::stoul(value);
    else if (flag == "--field") s.field = sizes();
    else if (flag == "--in") s.in = std::stoul(value);
    else if (flag == "--out") s.out = std::stoul(value);
    else if (flag == "--kernel") s.kernel = sizes();
    else if (flag == "--stride") s.stride = unsigned(std::stoul(value));
    else if (flag == "--padding") s.padding = unsigned(std::stoul(value));
    else if (flag == "--groups") s.groups = std::stoul(value);
    else if (flag == "--reps") s.reps = unsigned(std::stoul(value));
    else if (flag == "--passes") s.passes = split(value);
    else if (flag == "--option") {
      const std::size_t eq = value.find('=');
      if (eq == std::string::npos)
        throw invalid_option("--option " + value + ": expected key=value");
      s.options.set(value.substr(0, eq), value.substr(eq + 1));
    } else
      throw invalid_option("bench_conv: unknown flag " + flag);
  }
  if (s.kernel.size() == 1)
    s.kernel.push_back(s.kernel.front());
  return s;
}

linalg::ConvParams paramsOf(const Settings &s) {
  const std::vector<unsigned> zeros(2, 0), ones(2, 1), pad(2, s.padding), stride(2, s.stride);
  const std::vector<bool> noFlip(2, false);
  return linalg::ConvParams(FLOAT, FLOAT, s.batch, s.field, s.kernel, s.in / s.groups,
                            s.out / s.groups, s.groups, {zeros, zeros, ones, pad, pad, noFlip},
                            {zeros, zeros, ones, zeros, zeros, noFlip},
                            {zeros, zeros, stride, zeros, zeros});
}

void timePass(const Settings &s, const std::string &pass, const Target &target,
              const OptionFlags &engineOptions) {
  const linalg::ConvParams fwd = paramsOf(s);
  Graph graph(target);
  ops::addCodelets(graph);
  linalg::addCodelets(graph);
  linalg::PlanningCache cache;
  program::Sequence prog;
  const Tensor w = linalg::createWeights(graph, fwd, "w", s.options, &cache);
  std::vector<Tensor> inputs = {w};
  linalg::ConvParams planned = fwd;
  if (pass == "fwd") {
    const Tensor x = linalg::createInput(graph, fwd, "x", s.options, &cache);
    inputs.push_back(x);
    linalg::convolution(graph, x, w, fwd, false, prog, "fwd", s.options, &cache);
  } else if (pass == "bwd") {
    planned = linalg::getGradientParams(fwd);
    const Tensor dy = linalg::createConvOutput(graph, fwd, "dy", s.options, &cache);
    inputs.push_back(dy);
    linalg::convolution(graph, dy, w, planned, true, prog, "bwd", s.options, &cache);
  } else if (pass == "wu") {
    const Tensor x = linalg::createInput(graph, fwd, "x", s.options, &cache);
    const Tensor dy = linalg::createConvOutput(graph, fwd, "dy", s.options, &cache);
    inputs.push_back(x);
    inputs.push_back(dy);
    linalg::calculateWeightDeltas(graph, dy, x, fwd, prog, "wu", s.options, &cache);
  } else {
    throw invalid_option("bench_conv: unknown pass " + pass + " (fwd, bwd, wu)");
  }
  for (std::size_t i = 0; i < inputs.size(); ++i)
    graph.createHostWrite("in" + std::to_string(i), inputs[i]);
  const auto start = std::chrono::steady_clock::now();
  Engine engine(graph, prog, engineOptions);
  engine.load(Device::createModelDevice(target));
  const double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::vector<float> values(inputs[i].numElements());
    for (float &v : values)
      v = u(rng);
    engine.writeTensor("in" + std::to_string(i), values.data(), values.data() + values.size());
  }
  engine.run(0); // warm: first-touch of the arena and the library's buffers
  std::vector<double> ms;
  for (unsigned r = 0; r < s.reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    engine.run(0);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  fmt::print("RESULT pass={} ms={:.4f} median_ms={:.4f} compile_s={:.3f} method={}\n", pass,
             ms.front(), ms[ms.size() / 2], compileSeconds,
             linalg::getConvPlan(graph, planned, s.options, &cache).method);
}

} // namespace

int main(int argc, char **argv) {
  try {
    const Settings s = parse(argc, argv);
    const unsigned cores = Device::cpuThreadCount();
    const Target target = Target::createGeneric(cores, 1, std::size_t(256) << 20);
    const OptionFlags engineOptions{{"aspen.cpu.threads", std::to_string(cores)},
                                    {"debug.allowOutOfMemory", "true"}};
    for (const std::string &pass : s.passes)
      timePass(s, pass, target, engineOptions);
    return 0;
  } catch (const std::exception &e) {
    fmt::print(stderr, "bench_conv: {}\n", e.what());
    return 1;
  }
}
