// bench_collectives: Aspen's cross-replica all-reduce and all-gather, over MPI and in one
// process, against MPI_Allreduce and MPI_Allgather called directly in the same run, at 4 KB to
// 256 MB; and the data-parallel LSTM's training step on 1 and on all ranks.
//
// Run it under mpiexec (scripts/bench.sh does: mpiexec -n 2); alone it measures the in-process
// transport only. Each figure is the median over repeats of the slowest rank's time for a
// program that repeats the collective (Repeat(k) around it), and the bus bandwidth is
// nccl-tests': all-reduce size/time · 2(n-1)/n, all-gather (n · size)/time · (n-1)/n, for n
// replicas. The ratio is Aspen's bandwidth over MPI's direct call (higher is better); the
// in-process column (one engine, every replica on rank 0's threads) has its own ratio to the
// same MPI direct call.
#include <aspen/Collectives.hpp>
#include <aspen/Distributed.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/ops/ScaledAdd.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace aspen;
using Clock = std::chrono::steady_clock;

namespace {

int rank = 0, ranks = 1;

double slowest(double seconds) {
  double out = seconds;
  MPI_Allreduce(&seconds, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

// The median over three runs of f's seconds: the slowest rank's when `together` (every rank
// runs f), else this rank's alone.
template <class F> double median(bool together, F &&f) {
  std::vector<double> t;
  for (int i = 0; i < 3; ++i) {
    if (together)
      MPI_Barrier(MPI_COMM_WORLD);
    const auto start = Clock::now();
    f();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    t.push_back(together ? slowest(seconds) : seconds);
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

enum class Kind { AllReduce, AllGather };

// Seconds one collective of `bytes` (each replica's data) takes in an Aspen program repeating
// it `k` times, over `replicas` replicas: spread over the ranks ("mpi"), or all in this process
// ("threads").
double aspenSeconds(Kind kind, std::size_t bytes, unsigned replicas, const char *transport,
                    unsigned k) {
  Graph graph(Target::createGeneric(1), replication_factor(replicas));
  Tensor x = graph.addVariable(FLOAT, {bytes / 4}, "x");
  graph.setTileMapping(x, 0);
  program::Sequence body;
  if (kind == Kind::AllReduce)
    collectives::allReduceInPlaceCrossReplica(graph, x, collectives::CollectiveOperator::ADD,
                                              body, "sum");
  else
    graph.setTileMapping(collectives::allGatherCrossReplica(graph, x, body, "gather"), 0);
  Engine engine(graph, program::Repeat(k, body), {{"aspen.collectives.transport", transport}, {"debug.allowOutOfMemory", "true"}});
  engine.load(Device::createCPUDevice());
  engine.run(0); // the first touches every page
  return median(std::string(transport) == "mpi", [&] { engine.run(0); }) / k;
}

double mpiSeconds(Kind kind, std::size_t bytes, unsigned k) {
  std::vector<float> data(bytes / 4, 0.0f), all(kind == Kind::AllGather ? bytes / 4 * ranks : 0);
  const auto once = [&] {
    for (unsigned i = 0; i < k; ++i)
      if (kind == Kind::AllReduce)
        MPI_Allreduce(MPI_IN_PLACE, data.data(), int(data.size()), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      else
        MPI_Allgather(data.data(), int(data.size()), MPI_FLOAT, all.data(), int(data.size()),
                      MPI_FLOAT, MPI_COMM_WORLD);
  };
  once();
  return median(true, once) / k;
}

// nccl-tests' bus bandwidth in GB/s.
double busBandwidth(Kind kind, std::size_t bytes, unsigned n, double seconds) {
  if (kind == Kind::AllReduce)
    return double(bytes) / seconds * 2.0 * (n - 1) / n / 1e9;
  return double(bytes) * n / seconds * (n - 1) / n / 1e9;
}

std::string sizeText(std::size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MB"
                             : std::to_string(bytes >> 10) + " KB";
}

void bandwidths(Kind kind, std::size_t maxBytes) {
  const char *name = kind == Kind::AllReduce ? "allReduce" : "allGather";
  const unsigned n = unsigned(std::max(ranks, 2)); // the in-process replicas
  if (rank == 0) {
    std::printf("\n%s of FLOAT over %d rank%s, bus bandwidth in GB/s (ratio: Aspen over MPI / "
                "MPI direct; in process: %u replicas on rank 0's threads, its ratio to MPI "
                "direct)\n",
                name, ranks, ranks > 1 ? "s" : "", n);
    std::printf("  %-8s %12s %12s %7s %12s %7s\n", "size", "Aspen MPI", "MPI direct", "ratio",
                "in process", "ratio");
  }
  for (std::size_t bytes = 4096; bytes <= maxBytes; bytes *= 4) {
    const unsigned k = unsigned(std::clamp<std::size_t>((64u << 20) / bytes, 1, 200));
    double aspen = 0, direct = 0, local = 0;
    if (ranks > 1) {
      aspen = aspenSeconds(kind, bytes, unsigned(ranks), "mpi", k);
      direct = mpiSeconds(kind, bytes, k);
    }
    if (rank == 0)
      local = aspenSeconds(kind, bytes, n, "threads", k);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0)
      continue;
    if (ranks > 1) {
      const double directBus = busBandwidth(kind, bytes, unsigned(ranks), direct),
                   localBus = busBandwidth(kind, bytes, n, local);
      std::printf("  %-8s %12.3f %12.3f %7.2f %12.3f %7.2f\n", sizeText(bytes).c_str(),
                  busBandwidth(kind, bytes, unsigned(ranks), aspen), directBus, direct / aspen,
                  localBus, localBus / directBus);
    }
    else
      std::printf("  %-8s %12s %12s %7s %12.3f\n", sizeText(bytes).c_str(), "-", "-", "-",
                  busBandwidth(kind, bytes, n, local));
    std::fflush(stdout);
  }
}

// The data-parallel LSTM's training step (forward, backward with the weight gradients, a MEAN
// all-reduce of each gradient, SGD) on a batch of `batch` rows a replica, `replicas` replicas
// spread over the ranks (or one, alone on this rank).
double lstmStepSeconds(std::size_t batch, unsigned replicas, const char *transport) {
  namespace lstm = aspen::nn::lstm;
  constexpr std::size_t T = 20, I = 128, H = 256;
  constexpr unsigned kSteps = 5;
  Graph graph(Target::createGeneric(1), replication_factor(replicas));
  nn::addCodelets(graph);
  const lstm::LstmParams params(FLOAT, batch, T, {I, H});
  const Tensor x = lstm::createInput(graph, params, "x");
  const lstm::LstmState init = lstm::createInitialState(graph, params, "init");
  const lstm::LstmWeights w = lstm::createWeights(graph, params, "w");
  program::Sequence step;
  Tensor inter;
  const Tensor out = lstm::lstmFwd(graph, params, init, x, w, &inter, step, "fwd").first;
  lstm::LstmWeights dw;
  lstm::lstmBwdWithWU(graph, params, step, init, inter, w, x, out, out, nullptr, nullptr, dw,
                      "bwd");
  const Tensor grads[3] = {dw.inputWeights, dw.outputWeights, dw.biases};
  const Tensor weights[3] = {w.inputWeights, w.outputWeights, w.biases};
  for (int k = 0; k < 3; ++k) {
    Tensor g = grads[k];
    collectives::allReduceInPlaceCrossReplica(graph, g, collectives::CollectiveOperator::MEAN,
                                              step, "mean");
    ops::scaledSubtractFrom(graph, weights[k], g, 1e-3f, step, "sgd");
  }
  Engine engine(graph, program::Repeat(kSteps, step),
                {{"aspen.collectives.transport", transport}, {"debug.allowOutOfMemory", "true"}});
  engine.load(Device::createCPUDevice());
  engine.run(0);
  return median(std::string(transport) == "mpi", [&] { engine.run(0); }) / kSteps;
}

void lstmScaling() {
  constexpr std::size_t B = 32;
  double one = 0;
  if (rank == 0)
    one = lstmStepSeconds(B, 1, "threads");
  MPI_Barrier(MPI_COMM_WORLD);
  const double all = ranks > 1 ? lstmStepSeconds(B / std::size_t(ranks), unsigned(ranks), "mpi")
                               : one;
  if (rank == 0)
    std::printf("\ndata-parallel LSTM training step (T 20, I 128, H 256, batch %zu): 1 rank "
                "%.2f ms, %d ranks of %zu rows %.2f ms: speed-up %.2f (efficiency %.0f%%)\n",
                B, one * 1e3, ranks, B / std::size_t(ranks), all * 1e3, one / all,
                100.0 * one / all / ranks);
}

} // namespace

int main(int argc, char **argv) {
  int level = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &level);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::size_t maxBytes = std::size_t(256) << 20;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--max-mb" && i + 1 < argc)
      maxBytes = std::size_t(std::stoul(argv[++i])) << 20;
  if (rank == 0)
    std::printf("bench_collectives: %d rank%s (dist::World: %s)\n", ranks, ranks > 1 ? "s" : "",
                dist::World::fromEnvironment().launcher().empty()
                    ? "not launched by mpiexec"
                    : dist::World::fromEnvironment().launcher().c_str());
  bandwidths(Kind::AllReduce, maxBytes);
  bandwidths(Kind::AllGather, std::min(maxBytes, std::size_t(64) << 20));
  lstmScaling();
  MPI_Finalize();
  return 0;
}
