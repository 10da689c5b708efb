// The persistent recurrent kernels on the GPU (issue 28; docs/architecture.md "Persistent
// recurrent kernels"), in three parts, each against what the same run measures:
//  1. The primitives a persistent loop waits on: a flag round trip between two blocks
//     (aspen::publish, then Block::waitUntil on the other block's answer) and Block::gridSync
//     over one block a multiprocessor, each as (time of R + 1 rounds - time of 1 round) / R, so
//     the launch is not counted. These calibrate the cost model's exchange constant
//     (lib/nn/RnnPersistent.cpp, kExchangeSeconds: 1 us estimated).
//  2. The layers' forward (inference) and training step (forward, backward and weight update)
//     on the research note's shapes, the anchor H = 768, B = 16, T = 1024 in half among them:
//     Aspen's per-step loop (rnnPersistentKernel false), its persistent loop (true; tensor
//     cores for HALF, as auto takes them) and what auto takes with the cost model's estimates,
//     against torch.nn.LSTM / nn.GRU on cuDNN 9 (PyTorch picks cuDNN's algorithm: persistent
//     static for an fp16 LSTM where its rules allow, standard otherwise), timed by CUDA events,
//     and, for the forward, against cuDNN called directly with each algorithm forced
//     (standard, persistent static, persistent static small-H, persistent dynamic;
//     CudnnRnnPeer.hpp), where cuDNN accepts the shape.
//     The peer has its own weights: this part times; the GPU tests (aspen_gpu_tests, "the
//     persistent LSTM and GRU loops give the cpu's bits ...") check Aspen's results against
//     the CPU executor. Aspen's outputs are checked finite and not all zero here.
//  3. Targets (issue 28): persistent at least 3x cuDNN at B <= 16, H <= 1024 where cuDNN has no
//     persistent path, at least 0.8x where it has one, training at least 2x; the verdicts are
//     printed per shape.
// Without a GPU it prints "no GPU: skipped" and exits 0. "RESULT bench_gpu_persistent ..."
// lines repeat the tables for scripts.
//
// Usage: bench_gpu_persistent [--quick]   (--quick: the primitives, the anchor and two more)
#include "CudnnRnnPeer.hpp"
#include "GpuBenchSupport.hpp"

#include <aspen/BlockCodelets.hpp>
#include <aspen/Engine.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Gru.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/nn/RecurrentPlan.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/Fill.hpp>
#include <aspen/linalg/Codelets.hpp>

#include <fmt/core.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

using namespace aspen;

namespace {

constexpr int kReps = 5;

// ---- 1. The primitives ----------------------------------------------------------------------

const char *const kProbeCodelets = R"(
#include <aspen/Vertex.hpp>
using namespace aspen;

// Thread 0 of block 0 publishes ping[i] and waits for pong[i]; thread 0 of block 1 waits for
// ping[i] and answers in pong[i]; both buffers start unpublished (-0.0).
class PingPong : public BlockVertex {
public:
  static constexpr bool coResident = true;
  InOut<Vector<float>> ping;
  InOut<Vector<float>> pong;

  bool compute(Block &block) {
    if (block.threadId() != 0 || block.blockId() > 1)
      return true;
    const unsigned n = ping.size();
    for (unsigned i = 0; i < n; ++i) {
      const float *wait = block.blockId() == 0 ? &pong[i] : &ping[i];
      if (block.blockId() == 0)
        publish(&ping[i], float(i + 1));
      if (!block.waitUntil([&] { return !isUnpublished(loadAcquire(wait)); }))
        return false;
      if (block.blockId() == 1)
        publish(&pong[i], loadAcquire(wait));
    }
    return true;
  }
};

// `rounds` grid barriers; then every block's thread 0 writes rounds.
class GridSyncs : public BlockVertex {
public:
  static constexpr bool coResident = true;
  Output<Vector<unsigned>> count;
  unsigned rounds;

  bool compute(Block &block) {
    for (unsigned i = 0; i < rounds; ++i)
      if (!block.gridSync())
        return false;
    if (block.threadId() == 0)
      count[block.blockId()] = rounds;
    return true;
  }
};
)";

// Seconds a run of the probe `vertex` with `rounds` rounds takes (median of kReps).
double probeSeconds(const Target &target, const char *vertex, unsigned rounds, unsigned blocks,
                    unsigned threads) {
  Graph g(target);
  ops::addCodelets(g);
  g.addCodeletsFromString(kProbeCodelets, "persistent_probes.cpp");
  program::Sequence prog;
  ComputeSet cs = g.addComputeSet(vertex);
  VertexRef v = g.addVertex(cs, vertex);
  g.setTileMapping(v, 0);
  Tensor check;
  if (std::string(vertex) == "PingPong") {
    Tensor ping = g.addVariable(FLOAT, {rounds}, "ping"), pong = g.addVariable(FLOAT, {rounds}, "pong");
    g.setTileMapping(ping, 0);
    g.setTileMapping(pong, 0);
    ops::fill(g, ping, prog, -0.0f, "unpublish");
    ops::fill(g, pong, prog, -0.0f, "unpublish");
    g.connect(v["ping"], ping);
    g.connect(v["pong"], pong);
    check = pong;
  } else {
    Tensor count = g.addVariable(UNSIGNED_INT, {blocks}, "count");
    g.setTileMapping(count, 0);
    g.connect(v["count"], count);
    g.setInitialValue(v["rounds"], rounds);
    check = count;
  }
  g.createHostRead("check", check);
  LaunchShape shape;
  shape.blocks = blocks;
  shape.threadsPerBlock = threads;
  shape.coResident = true;
  prog.add(program::Launch(cs, shape, "probe"));
  Engine e(g, prog);
  e.load(Device::createGpuDevice(0));
  const double seconds = bench::deviceSeconds(kReps, [&] { e.run(); });
  // The probe really ran: the last answer arrived, or every block passed every barrier.
  if (std::string(vertex) == "PingPong") {
    std::vector<float> pong(rounds);
    e.readTensor("check", pong.data(), pong.data() + rounds);
    if (pong[rounds - 1] != float(rounds))
      throw std::runtime_error(fmt::format("PingPong: pong[{}] = {}", rounds - 1, pong[rounds - 1]));
  } else {
    std::vector<unsigned> count(blocks);
    e.readTensor("check", count.data(), count.data() + blocks);
    for (unsigned c : count)
      if (c != rounds)
        throw std::runtime_error(fmt::format("GridSyncs: a block counted {} of {}", c, rounds));
  }
  return seconds;
}

// ---- 2. The layers ----------------------------------------------------------------------------

struct LayerShape {
  bool gru;
  Type type;
  std::size_t H, B, T;
  bool training;
  std::string note; // where cuDNN has a persistent path, or why not
  bool cudnnPersistent; // PyTorch would give cuDNN's persistent algorithm (its rules)
};

std::string shapeName(const LayerShape &s) {
  return fmt::format("{} {} h{}-b{}-t{}{}", s.gru ? "GRU" : "LSTM", s.type == HALF ? "half" : "float",
                     s.H, s.B, s.T, s.training ? " training" : "");
}

std::vector<unsigned char> randomBytes(Type type, std::size_t n, std::mt19937 &rng, float scale) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<unsigned char> bytes(n * (type == HALF ? 2 : 4));
  for (std::size_t i = 0; i < n; ++i) {
    const float v = d(rng);
    if (type == HALF) {
      const half h(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    }
  }
  return bytes;
}

struct AspenTiming {
  double ms = NAN;
  std::string status = "ok";
};

// Aspen's layer at shape s with `options`: ms a call (forward, or the training step), median of
// kReps runs of Repeat(repeats).
AspenTiming timeAspen(const Target &target, const LayerShape &s, OptionFlags options,
                      unsigned repeats) {
  AspenTiming result;
  try {
    Graph g(target);
    nn::addCodelets(g);
    ops::addCodelets(g);
    linalg::addCodelets(g);
    options.set("inferenceOnly", s.training ? "false" : "true");
    program::Sequence prog;
    std::mt19937 rng(7);
    std::vector<std::pair<std::string, std::vector<unsigned char>>> writes;
    auto write = [&](const Tensor &t, const std::string &name, float scale) {
      g.createHostWrite(name, t);
      writes.emplace_back(name, randomBytes(s.type, t.numElements(), rng, scale));
    };
    const float ws = 1.0f / std::sqrt(float(s.H));
    Tensor out;
    if (!s.gru) {
      nn::lstm::LstmParams params(s.type, s.B, s.T, {s.H, s.H});
      Tensor in = nn::lstm::createInput(g, params, "in", options);
      nn::lstm::LstmState init = nn::lstm::createInitialState(g, params, "init", options);
      nn::lstm::LstmWeights w = nn::lstm::createWeights(g, params, "w", options);
      write(in, "in", 1.0f);
      write(init.output, "h0", 0.0f);
      write(init.cellState, "c0", 0.0f);
      write(w.inputWeights, "wi", ws);
      write(w.outputWeights, "wo", ws);
      write(w.biases, "b", 0.1f);
      Tensor inter;
      out = nn::lstm::lstmFwd(g, params, init, in, w, s.training ? &inter : nullptr, prog, "fwd",
                              options)
                .first;
      if (s.training) {
        Tensor dy = g.clone(out, "dy");
        write(dy, "dy", 1.0f);
        Tensor dx;
        nn::lstm::LstmWeights dw;
        nn::lstm::lstmBwdWithWU(g, params, prog, init, inter, w, in, out, dy,
                                static_cast<const Tensor *>(nullptr), &dx, dw, "bwd", options);
      }
    } else {
      nn::gru::GruParams params(s.type, s.B, s.T, {s.H, s.H});
      params.resetAfter = true; // PyTorch's (and cuDNN's) GRU
      Tensor in = nn::gru::createInput(g, params, "in", options);
      Tensor init = nn::gru::createInitialState(g, params, "init", options);
      nn::gru::GruWeights w = nn::gru::createWeights(g, params, "w", options);
      write(in, "in", 1.0f);
      write(init, "h0", 0.0f);
      write(w.inputWeights, "wi", ws);
      write(w.outputWeights, "wo", ws);
      write(w.biases, "b", 0.1f);
      Tensor inter;
      out = nn::gru::gruFwd(g, params, init, in, w, s.training ? &inter : nullptr, prog, "fwd",
                            options);
      if (s.training) {
        Tensor dy = g.clone(out, "dy");
        write(dy, "dy", 1.0f);
        Tensor dx;
        nn::gru::GruWeights dw;
        nn::gru::gruBwdWithWU(g, params, prog, init, inter, w, in, out, dy, &dx, dw, "bwd",
                              options);
      }
    }
    g.createHostRead("out", out);
    Engine e(g, program::Repeat(repeats, prog));
    e.load(Device::createGpuDevice(0));
    for (const auto &[handle, bytes] : writes)
      e.writeTensor(handle, bytes.data(), bytes.data() + bytes.size());
    result.ms = 1e3 * bench::deviceSeconds(kReps, [&] { e.run(); }) / repeats;
    // The layer computed something: finite, not all zero.
    std::vector<unsigned char> bytes(out.numElements() * (s.type == HALF ? 2 : 4));
    e.readTensor("out", bytes.data(), bytes.data() + bytes.size());
    bool nonzero = false, finite = true;
    for (std::size_t i = 0; i < out.numElements(); ++i) {
      float v;
      if (s.type == HALF) {
        half h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        v = float(h);
      } else {
        std::memcpy(&v, bytes.data() + 4 * i, 4);
      }
      nonzero |= v != 0.0f;
      finite &= std::isfinite(v);
    }
    if (!nonzero || !finite)
      result.status = !finite ? "not_finite" : "all_zero";
  } catch (const invalid_option &e) {
    result.status = "refused";
    std::printf("  %s: refused: %s\n", shapeName(s).c_str(), e.what());
  } catch (const std::exception &e) {
    result.status = "failed";
    std::printf("  %s: failed: %s\n", shapeName(s).c_str(), e.what());
  }
  return result;
}

// The peer: cuDNN through torch, one process for all shapes; ms a call each (median of 20 by
// CUDA events), or -1 where it failed.
std::string peerScript(const std::vector<LayerShape> &shapes) {
  std::string list;
  for (const LayerShape &s : shapes)
    list += fmt::format("({}, \"{}\", {}, {}, {}, {}), ", s.gru ? 1 : 0,
                        s.type == HALF ? "half" : "float", s.H, s.B, s.T, s.training ? 1 : 0);
  return "import torch\n"
         "torch.backends.cudnn.allow_tf32 = False\n"
         "torch.backends.cuda.matmul.allow_tf32 = False\n"
         "dev = torch.device(\"cuda\")\n"
         "print(torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else 0, "
         "flush=True)\n"
         "for gru, dtype, H, B, T, training in [" +
         list +
         "]:\n"
         "    try:\n"
         "        dt = torch.float16 if dtype == \"half\" else torch.float32\n"
         "        m = (torch.nn.GRU(H, H) if gru else torch.nn.LSTM(H, H)).to(dev, dt)\n"
         "        x = torch.randn(T, B, H, device=dev, dtype=dt, requires_grad=bool(training))\n"
         "        def call():\n"
         "            if training:\n"
         "                y = m(x)[0]\n"
         "                y.backward(torch.ones_like(y))\n"
         "            else:\n"
         "                with torch.no_grad():\n"
         "                    m(x)\n"
         "        for _ in range(3):\n"
         "            call()\n"
         "        torch.cuda.synchronize()\n"
         "        times = []\n"
         "        for _ in range(20):\n"
         "            a = torch.cuda.Event(enable_timing=True)\n"
         "            b = torch.cuda.Event(enable_timing=True)\n"
         "            a.record()\n"
         "            call()\n"
         "            b.record()\n"
         "            torch.cuda.synchronize()\n"
         "            times.append(a.elapsed_time(b))\n"
         "        print(sorted(times)[len(times) // 2], flush=True)\n"
         "    except Exception:\n"
         "        print(-1, flush=True)\n";
}

} // namespace

int main(int argc, char **argv) {
  const bool quick = argc == 2 && std::string(argv[1]) == "--quick";
  if (argc > 2 || (argc == 2 && !quick)) {
    std::fprintf(stderr, "usage: bench_gpu_persistent [--quick]\n");
    return 2;
  }
  if (bench::noGpu())
    return 0;
  const Target target = Device::createGpuDevice(0).getTarget();
  const unsigned sms = target.getGpuProperties().multiProcessorCount;
  std::vector<std::string> results;
  bool failed = false;

  // 1. The primitives.
  std::printf("persistent kernels on %s (%u multiprocessors)\n", target.getName().c_str(), sms);
  try {
    constexpr unsigned kRounds = 10000;
    const double pingOne = probeSeconds(target, "PingPong", 1, 2, 32);
    const double pingMany = probeSeconds(target, "PingPong", kRounds + 1, 2, 32);
    const double roundTrip = (pingMany - pingOne) / kRounds;
    const double syncOne = probeSeconds(target, "GridSyncs", 1, sms, 256);
    const double syncMany = probeSeconds(target, "GridSyncs", 1001, sms, 256);
    const double gridSync = (syncMany - syncOne) / 1000;
    std::printf("flag round trip between two blocks: %.3f us; gridSync over %u blocks of 256: "
                "%.3f us (the cost model assumes 1 us an exchange)\n",
                1e6 * roundTrip, sms, 1e6 * gridSync);
    results.push_back(fmt::format("RESULT bench_gpu_persistent primitive=flag_round_trip us={:.4f}",
                                  1e6 * roundTrip));
    results.push_back(fmt::format(
        "RESULT bench_gpu_persistent primitive=grid_sync blocks={} us={:.4f}", sms, 1e6 * gridSync));
  } catch (const std::exception &e) {
    std::printf("primitives failed: %s\n", e.what());
    failed = true;
  }

  // 2. The layers: the research note's shapes (section 2), the anchor first.
  std::vector<LayerShape> shapes = {
      {false, HALF, 768, 16, 1024, false, "cuDNN persistent static (fp16, H % 128, B % 8)", true},
      {false, HALF, 256, 16, 256, false, "cuDNN persistent static", true},
      {true, HALF, 768, 16, 256, false, "no persistent GRU in cuDNN", false},
  };
  if (!quick) {
    const std::vector<LayerShape> more = {
        {false, FLOAT, 512, 16, 256, false, "fp32: no persistent path", false},
        {false, HALF, 1024, 8, 256, false, "cuDNN persistent static", true},
        {false, HALF, 512, 5, 256, false, "odd batch: no persistent path", false},
        {false, HALF, 1536, 16, 128, false, "H above 1024: no persistent path", false},
        {true, FLOAT, 256, 16, 256, false, "GRU fp32", false},
        {false, HALF, 768, 16, 256, true, "training", true},
        {true, HALF, 512, 16, 256, true, "GRU training", false},
    };
    shapes.insert(shapes.end(), more.begin(), more.end());
  }
  const std::vector<double> peer = bench::peerNumbers(peerScript(shapes));
  const bool havePeer = peer.size() == 1 + shapes.size();
  std::printf("against %s\n", havePeer ? fmt::format("cuDNN {} through torch (CUDA events; "
                                                     "no TF32)", peer[0]).c_str()
                                       : "no peer (needs python3 with CUDA PyTorch, or "
                                         "ASPEN_BENCH_PYTHON)");
  const bench::cudnn::Api cudnnApi;
  if (!cudnnApi.library)
    std::printf("cuDNN called directly: not available (%s)\n", cudnnApi.error.c_str());
  else
    std::printf("cuDNN called directly: version %zu\n", cudnnApi.cudnnGetVersion());
  std::printf("%-30s %10s %10s %10s %9s %9s %8s  %s\n", "shape", "cuDNN ms", "step ms",
              "pers. ms", "cuDNN/pers", "cuDNN/step", "auto", "target");
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const LayerShape &s = shapes[i];
    const unsigned repeats = s.T >= 1024 ? 2 : 5;
    const AspenTiming step = timeAspen(target, s, {{"rnnPersistentKernel", "false"}}, repeats);
    const AspenTiming persistent = timeAspen(target, s, {{"rnnPersistentKernel", "true"}}, repeats);
    failed |= (step.status != "ok" && step.status != "refused") ||
              (persistent.status != "ok" && persistent.status != "refused");
    // What auto takes, and the cost model's estimates a step.
    std::string autoChoice = "-";
    try {
      Graph g(target);
      const nn::RecurrentPlan plan =
          s.gru ? nn::gru::getPlan(g, nn::gru::GruParams(s.type, s.B, s.T, {s.H, s.H}))
                : nn::lstm::getPlan(g, nn::lstm::LstmParams(s.type, s.B, s.T, {s.H, s.H}));
      autoChoice = plan.persistent ? "pers." : "step";
      std::printf("  %s: auto takes %s (estimated %.2f us a step per step, %.2f us "
                  "persistent%s%s)\n",
                  shapeName(s).c_str(), plan.persistent ? "persistent" : "per-step",
                  1e6 * plan.perStepSecondsEstimate, 1e6 * plan.persistentSecondsEstimate,
                  plan.persistent ? "" : "; ", plan.persistent ? "" : plan.persistentRefusal.c_str());
    } catch (const std::exception &e) {
      std::printf("  %s: plan failed: %s\n", shapeName(s).c_str(), e.what());
    }
    const double cudnn = havePeer && peer[1 + i] > 0 ? peer[1 + i] : NAN;
    const double persistentRatio = cudnn / persistent.ms, stepRatio = cudnn / step.ms;
    const double goal = s.training ? 2.0 : s.cudnnPersistent ? 0.8 : 3.0;
    const std::string verdict =
        std::isnan(persistentRatio)
            ? "unmeasured"
            : fmt::format("{} {:.1f}x ({})", persistentRatio >= goal ? "met" : "MISSED", goal,
                          s.note);
    std::printf("%-30s %10.3f %10.3f %10.3f %9.2f %9.2f %8s  %s\n", shapeName(s).c_str(), cudnn,
                step.ms, persistent.ms, persistentRatio, stepRatio, autoChoice.c_str(),
                verdict.c_str());
    // cuDNN's algorithms forced, the forward only.
    if (cudnnApi.library && !s.training) {
      std::string line = "    cuDNN forced:";
      for (const bench::cudnn::Algorithm &algorithm : bench::cudnn::kAlgorithms) {
        const bench::cudnn::Timing t = bench::cudnn::forward(
            cudnnApi, s.gru, s.type == HALF, int(s.H), int(s.B), int(s.T), algorithm);
        if (t.ms > 0) {
          line += fmt::format(" {} {:.3f} ms (persistent {:.2f}x);", algorithm.name, t.ms,
                              t.ms / persistent.ms);
          results.push_back(fmt::format(
              "RESULT bench_gpu_persistent layer={} type={} H={} B={} T={} cudnn_algo=\"{}\" "
              "ms={:.4f} over_persistent={:.3f}",
              s.gru ? "gru" : "lstm", s.type == HALF ? "half" : "float", s.H, s.B, s.T,
              algorithm.name, t.ms, t.ms / persistent.ms));
        } else {
          line += fmt::format(" {} refused ({});", algorithm.name, t.refused);
        }
      }
      std::printf("%s\n", line.c_str());
    }
    std::fflush(stdout);
    results.push_back(fmt::format(
        "RESULT bench_gpu_persistent layer={} type={} H={} B={} T={} mode={} cudnn_ms={:.4f} "
        "step_ms={:.4f} step_status={} persistent_ms={:.4f} persistent_status={} "
        "cudnn_over_persistent={:.3f} auto={} goal={}",
        s.gru ? "gru" : "lstm", s.type == HALF ? "half" : "float", s.H, s.B, s.T,
        s.training ? "training" : "inference", cudnn, step.ms, step.status, persistent.ms,
        persistent.status, persistentRatio, autoChoice, goal));
  }
  for (const std::string &line : results)
    std::printf("%s\n", line.c_str());
  return failed ? 1 : 0;
}
