// bench_gpu_conv: aspen::linalg convolutions on the GPU against torch's cuDNN (CUDA PyTorch) in
// one run: ResNet-50 and VGG-16 layers, forward, backward data and backward filter, float with
// FMA maths on both sides (torch.backends.cudnn.allow_tf32 = False). torch runs twice, with
// cudnn.benchmark off (cuDNN's heuristic, as Aspen chooses) and on (the fastest algorithm found
// by timing them all). Reported as GFLOP/s and the torch/Aspen time ratios (above 1, Aspen is
// faster). Both sides read the same inputs, made by one integer formula, and each result's
// checksum (the sum of its elements times a second formula) must agree, so a fast wrong answer
// fails the run.
//
// Usage: bench_gpu_conv [--all] [--batches 1,32] [--option key=value]... [--peer-script] [--cpu]
//   --peer-script: print the torch script the peer runs, and exit.
//   --cpu: both sides on the CPU (Aspen's CPU executor, torch on the CPU): a dry run of the
//          method and its checks on a machine without a GPU, not a measurement to report.
//   default: six ResNet-50 layers (the stem, 3x3 at 56/28/7, a strided 3x3, a 1x1 at 14) at
//   B = 1 and 32; --all: every layer of bench/torch_conv.py's lists.
// Aspen's time is the median of engine runs (each waits for the device); torch's the median of
// calls followed by torch.cuda.synchronize(). Prints "no GPU: skipped" without a GPU.
#include "GpuBenchSupport.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/ConvPlan.hpp>
#include <aspen/linalg/ConvUtil.hpp>
#include <aspen/linalg/Convolution.hpp>
#include <aspen/ops/Codelets.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace aspen;
namespace linalg = aspen::linalg;

namespace {

struct Layer {
  const char *name;
  std::size_t in, out, field, kernel, stride, padding;
};

const std::vector<Layer> kQuick = {
    {"r50.stem7x7s2", 3, 64, 224, 7, 2, 3},       {"r50.56.3x3.64-64", 64, 64, 56, 3, 1, 1},
    {"r50.56.3x3s2.128-128", 128, 128, 56, 3, 2, 1}, {"r50.28.3x3.128-128", 128, 128, 28, 3, 1, 1},
    {"r50.14.1x1.1024-256", 1024, 256, 14, 1, 1, 0}, {"r50.7.3x3.512-512", 512, 512, 7, 3, 1, 1}};
const std::vector<Layer> kAll = {
    {"r50.stem7x7s2", 3, 64, 224, 7, 2, 3},
    {"r50.56.1x1.64-64", 64, 64, 56, 1, 1, 0},
    {"r50.56.3x3.64-64", 64, 64, 56, 3, 1, 1},
    {"r50.56.1x1.64-256", 64, 256, 56, 1, 1, 0},
    {"r50.56.1x1.256-64", 256, 64, 56, 1, 1, 0},
    {"r50.56.3x3s2.128-128", 128, 128, 56, 3, 2, 1},
    {"r50.28.1x1.128-512", 128, 512, 28, 1, 1, 0},
    {"r50.28.1x1.512-128", 512, 128, 28, 1, 1, 0},
    {"r50.28.3x3.128-128", 128, 128, 28, 3, 1, 1},
    {"r50.14.3x3.256-256", 256, 256, 14, 3, 1, 1},
    {"r50.14.1x1.256-1024", 256, 1024, 14, 1, 1, 0},
    {"r50.14.1x1.1024-256", 1024, 256, 14, 1, 1, 0},
    {"r50.7.3x3.512-512", 512, 512, 7, 3, 1, 1},
    {"r50.7.1x1.512-2048", 512, 2048, 7, 1, 1, 0},
    {"r50.7.1x1.2048-512", 2048, 512, 7, 1, 1, 0},
    {"vgg.224.3-64", 3, 64, 224, 3, 1, 1},
    {"vgg.224.64-64", 64, 64, 224, 3, 1, 1},
    {"vgg.112.128-128", 128, 128, 112, 3, 1, 1},
    {"vgg.56.256-256", 256, 256, 56, 3, 1, 1},
    {"vgg.28.512-512", 512, 512, 28, 3, 1, 1},
    {"vgg.14.512-512", 512, 512, 14, 3, 1, 1}};
const char *const kPasses[] = {"fwd", "bwd", "wu"};
constexpr unsigned kReps = 10;
// Seeds of the input formula: x, w, dy, and the checksum's weights.
constexpr std::uint64_t kSeedX = 1, kSeedW = 2, kSeedDy = 3, kSeedCheck = 4;

// Element i of a formula both sides compute exactly: an integer hash scaled into [-1, 1).
std::vector<float> formula(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t h = (std::uint64_t(i) * 2654435761ull + seed * 40503ull) % 4294967296ull;
    v[i] = float(double(h) / 2147483648.0 - 1.0);
  }
  return v;
}

std::size_t outSize(const Layer &l) { return (l.field + 2 * l.padding - l.kernel) / l.stride + 1; }

double gflop(const Layer &l, std::size_t batch) {
  const double p = double(outSize(l));
  return 2.0 * double(batch) * double(l.out * l.in * l.kernel * l.kernel) * p * p / 1e9;
}

linalg::ConvParams paramsOf(const Layer &l, std::size_t batch) {
  const std::vector<unsigned> zeros(2, 0), ones(2, 1), pad(2, unsigned(l.padding)),
      stride(2, unsigned(l.stride));
  const std::vector<bool> noFlip(2, false);
  return linalg::ConvParams(FLOAT, FLOAT, batch, {l.field, l.field}, {l.kernel, l.kernel}, l.in,
                            l.out, 1, {zeros, zeros, ones, pad, pad, noFlip},
                            {zeros, zeros, ones, zeros, zeros, noFlip},
                            {zeros, zeros, stride, zeros, zeros});
}

struct Timed {
  double ms = 0, checksum = 0;
  std::string method;
};

// One pass on the GPU: its median time and its result's checksum.
Timed aspenPass(const Device &device, const Layer &l, std::size_t batch, const std::string &pass,
                const OptionFlags &options) {
  const linalg::ConvParams fwd = paramsOf(l, batch);
  const Target target = device.getTarget();
  Graph graph(target);
  ops::addCodelets(graph);
  linalg::addCodelets(graph);
  linalg::PlanningCache cache;
  program::Sequence prog;
  const Tensor w = linalg::createWeights(graph, fwd, "w", options, &cache);
  const Tensor x = linalg::createInput(graph, fwd, "x", options, &cache);
  const Tensor dy = linalg::createConvOutput(graph, fwd, "dy", options, &cache);
  linalg::ConvParams planned = fwd;
  Tensor result;
  if (pass == "fwd") {
    result = linalg::convolution(graph, x, w, fwd, false, prog, "fwd", options, &cache);
  } else if (pass == "bwd") {
    planned = linalg::getGradientParams(fwd);
    result = linalg::convolution(graph, dy, w, planned, true, prog, "bwd", options, &cache);
  } else {
    result = linalg::calculateWeightDeltas(graph, dy, x, fwd, prog, "wu", options, &cache);
  }
  const std::pair<const char *, std::pair<Tensor, std::uint64_t>> inputs[] = {
      {"x", {x, kSeedX}}, {"w", {w, kSeedW}}, {"dy", {dy, kSeedDy}}};
  for (const auto &[name, input] : inputs)
    graph.createHostWrite(name, input.first);
  graph.createHostRead("result", result);
  Engine engine(graph, prog);
  engine.load(device);
  for (const auto &[name, input] : inputs) {
    const std::vector<float> values = formula(input.first.numElements(), input.second);
    engine.writeTensor(name, values.data(), values.data() + values.size());
  }
  Timed t;
  t.ms = bench::medianSeconds(kReps, [&] { engine.run(0); }) * 1e3;
  std::vector<float> out(result.numElements());
  engine.readTensor("result", out.data(), out.data() + out.size());
  const std::vector<float> weights = formula(out.size(), kSeedCheck);
  for (std::size_t i = 0; i < out.size(); ++i)
    t.checksum += double(out[i]) * double(weights[i]);
  t.method = linalg::getConvPlan(graph, planned, options, &cache).method;
  return t;
}

// The peer: per layer, batch and pass, median ms with cudnn.benchmark off, on, the checksum and
// the sum of the checksum's absolute terms (its scale).
std::string peerScript(const std::vector<Layer> &layers, const std::vector<std::size_t> &batches,
                       bool cpu) {
  std::string shapes;
  for (std::size_t b : batches)
    for (const Layer &l : layers)
      shapes += fmt::format("({},{},{},{},{},{},{}),", b, l.in, l.out, l.field, l.kernel, l.stride,
                            l.padding);
  return fmt::format(
      "import torch\n"
      "torch.backends.cudnn.allow_tf32 = False\n"
      "torch.backends.cuda.matmul.allow_tf32 = False\n"
      "dev = torch.device(\"{device}\")\n"
      "sync = (lambda: None) if dev.type == \"cpu\" else torch.cuda.synchronize\n"
      "def data(shape, seed):\n"
      "    n = 1\n"
      "    for s in shape: n *= s\n"
      "    i = torch.arange(n, dtype=torch.int64, device=dev)\n"
      "    h = (i * 2654435761 + seed * 40503) % 4294967296\n"
      "    return (h.double() / 2147483648.0 - 1.0).float().reshape(shape)\n"
      "def median(f):\n"
      "    import time\n"
      "    f(); sync()\n"
      "    t = []\n"
      "    for _ in range({reps}):\n"
      "        s = time.perf_counter(); f(); sync()\n"
      "        t.append(time.perf_counter() - s)\n"
      "    return sorted(t)[len(t) // 2] * 1e3\n"
      "for (b, ci, co, f, k, st, p) in [{shapes}]:\n"
      "    o = (f + 2 * p - k) // st + 1\n"
      "    x = data((b, ci, f, f), {sx}); w = data((co, ci, k, k), {sw})\n"
      "    dy = data((b, co, o, o), {sdy})\n"
      "    args = ([st, st], [p, p], [1, 1], False, [0, 0], 1)\n"
      "    calls = [lambda: torch.nn.functional.conv2d(x, w, None, st, p),\n"
      "             lambda: torch.ops.aten.convolution_backward(dy, x, w, None, *args,\n"
      "                                                         [True, False, False])[0],\n"
      "             lambda: torch.ops.aten.convolution_backward(dy, x, w, None, *args,\n"
      "                                                         [False, True, False])[1]]\n"
      "    with torch.no_grad():\n"
      "        for call in calls:\n"
      "            torch.backends.cudnn.benchmark = False\n"
      "            off = median(call)\n"
      "            torch.backends.cudnn.benchmark = True\n"
      "            on = median(call)\n"
      "            r = call().double().flatten()\n"
      "            c = data((r.numel(),), {sc}).double()\n"
      "            print(off, on, float((r * c).sum()), float((r * c).abs().sum()), flush=True)\n",
      fmt::arg("device", cpu ? "cpu" : "cuda"), fmt::arg("reps", kReps), fmt::arg("shapes", shapes), fmt::arg("sx", kSeedX),
      fmt::arg("sw", kSeedW), fmt::arg("sdy", kSeedDy), fmt::arg("sc", kSeedCheck));
}

} // namespace

int main(int argc, char **argv) {
  try {
    std::vector<Layer> layers = kQuick;
    std::vector<std::size_t> batches = {1, 32};
    OptionFlags options;
    bool printPeer = false, cpu = false;
    for (int i = 1; i < argc; ++i) {
      const std::string flag = argv[i];
      if (flag == "--peer-script") {
        printPeer = true;
      } else if (flag == "--cpu") {
        cpu = true;
      } else if (flag == "--all") {
        layers = kAll;
      } else if (flag == "--batches" && i + 1 < argc) {
        batches.clear();
        std::string list = argv[++i];
        for (std::size_t at = 0; at <= list.size();) {
          const std::size_t comma = std::min(list.find(',', at), list.size());
          batches.push_back(std::stoul(list.substr(at, comma - at)));
          at = comma + 1;
        }
      } else if (flag == "--option" && i + 1 < argc) {
        const std::string kv = argv[++i];
        const std::size_t eq = kv.find('=');
        if (eq == std::string::npos)
          throw invalid_option("--option " + kv + ": expected key=value");
        options.set(kv.substr(0, eq), kv.substr(eq + 1));
      } else {
        fmt::print(stderr, "usage: bench_gpu_conv [--all] [--batches 1,32] [--option k=v]... "
                           "[--peer-script] [--cpu]\n");
        return 2;
      }
    }
    if (printPeer) { // the peer's script, to run by hand
      fmt::print("{}", peerScript(layers, batches, cpu));
      return 0;
    }
    if (!cpu && bench::noGpu())
      return 0;
    const unsigned cores = Device::cpuThreadCount();
    const Device device =
        cpu ? Device::createModelDevice(Target::createGeneric(cores, 1, std::size_t(256) << 20))
            : Device::createGpuDevice(0);
    if (cpu)
      options.set("availableMemoryProportion", "1");
    const std::vector<double> peer = bench::peerNumbers(peerScript(layers, batches, cpu));
    const std::size_t expected = 4 * 3 * layers.size() * batches.size();
    if (peer.size() != expected) {
      fmt::print("cuDNN: peer unavailable (needs python3 with CUDA PyTorch, or "
                 "ASPEN_BENCH_PYTHON): {} of {} numbers\n",
                 peer.size(), expected);
      return 1;
    }
    fmt::print("float, FMA maths on both sides; GFLOP/s Aspen | torch cuDNN (benchmark off, on); "
               "ratios torch/Aspen time\n");
    fmt::print("{:<22} {:>3} {:>4} {:>8} {:>9} {:>9} {:>9} {:>6} {:>6}\n", "layer", "B", "pass",
               "method", "aspen", "cudnn", "cudnn-bm", "r-off", "r-on");
    std::vector<double> ratiosOff, ratiosOn;
    bool agree = true;
    std::size_t at = 0;
    for (std::size_t batch : batches)
      for (const Layer &l : layers)
        for (const char *pass : kPasses) {
          const double off = peer[at], on = peer[at + 1], checksum = peer[at + 2],
                       scale = peer[at + 3];
          at += 4;
          const Timed a = aspenPass(device, l, batch, pass, options);
          const bool ok = std::abs(a.checksum - checksum) <= 1e-5 * std::max(scale, 1e-30);
          agree &= ok;
          const double g = gflop(l, batch);
          ratiosOff.push_back(off / a.ms), ratiosOn.push_back(on / a.ms);
          fmt::print("{:<22} {:>3} {:>4} {:>8} {:>9.1f} {:>9.1f} {:>9.1f} {:>6.2f} {:>6.2f}{}\n",
                     l.name, batch, pass, a.method, g / a.ms * 1e3, g / off * 1e3, g / on * 1e3,
                     off / a.ms, on / a.ms,
                     ok ? "" : fmt::format("  CHECKSUM {} against torch's {}", a.checksum,
                                           checksum));
          fmt::print("RESULT layer={} B={} pass={} aspen_ms={:.4f} cudnn_ms={:.4f} "
                     "cudnn_benchmark_ms={:.4f} method={} agrees={}\n",
                     l.name, batch, pass, a.ms, off, on, a.method, ok ? 1 : 0);
        }
    const auto geomean = [](const std::vector<double> &v) {
      double s = 0;
      for (double x : v)
        s += std::log(x);
      return std::exp(s / double(v.size()));
    };
    fmt::print("geometric mean torch/Aspen: {:.2f} (cudnn.benchmark off), {:.2f} (on) over {} "
               "passes\n",
               geomean(ratiosOff), geomean(ratiosOn), ratiosOff.size());
    if (!agree) {
      fmt::print("FAIL: a result's checksum differs from torch's\n");
      return 1;
    }
    return 0;
  } catch (const std::exception &e) {
    fmt::print(stderr, "bench_gpu_conv: {}\n", e.what());
    return 1;
  }
}
