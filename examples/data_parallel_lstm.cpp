// Data-parallel LSTM training: a graph replicated R ways (Graph(target,
// replication_factor(R))), each replica fed its own shard of the batch through its own stream,
// the weight gradients averaged across the replicas with one multi-tensor MEAN all-reduce
// (aspen/Collectives.hpp), and the same SGD step in every replica. Started alone, the replicas
// run at once in this process, on host threads; started by mpiexec, each rank runs its share of
// them (dist::World) and the all-reduce meets over MPI. It checks that every replica ends with
// the same weights, bit for bit (under mpiexec: each rank's replicas against the same training
// run in one process), and that they are the weights one replica gets on the whole batch (with
// the learning rate over R: MEAN divides the summed gradients by R) within rounding, and exits
// with 1 otherwise.
//
// With --gpu each rank runs one replica on a GPU (its local rank's, modulo the GPUs it sees),
// and the all-reduce is NCCL's on the GPUs (aspen.collectives.onDevice true): its summation
// order is NCCL's, so the weights are checked against the run in one process on the CPU within
// rounding rather than bit for bit. A world of one (no mpiexec) runs R = 1 on one GPU.
//
// Usage: data_parallel_lstm [R]                  (R replicas in this process, default 2)
//        mpiexec -n N data_parallel_lstm [R]     (R replicas over N ranks, default N)
//        mpiexec -n N data_parallel_lstm --gpu   (N replicas, one a rank and a GPU)
#include <aspen/Collectives.hpp>
#include <aspen/Distributed.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/ReplicatedStreamMode.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/ScaledAdd.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace aspen;
namespace lstm = aspen::nn::lstm;

namespace {

constexpr std::size_t kT = 5, kShard = 4, kI = 3, kH = 6; // steps, rows a replica, sizes
constexpr unsigned kSteps = 8;                            // SGD steps in one run
constexpr float kLearningRate = 0.05f;

const char *const kWeights[3] = {"inputWeights", "outputWeights", "biases"};

// One engine: `replicas` replicas of B rows each, training kSteps steps with learning rate lr.
// Per replica, streams "x" [T, B, I] and "target" [T, B, H] (read again every step: the same
// batch); the loss is half the squared distance of the outputs from the targets.
struct Trainer {
  Graph graph;
  program::Sequence prog;
  Trainer(const Device &device, unsigned replicas, std::size_t B, float lr)
      : graph(device, replication_factor(replicas)) {
    nn::addCodelets(graph);
    const lstm::LstmParams params(FLOAT, B, kT, {kI, kH});
    const Tensor x = lstm::createInput(graph, params, "x");
    const Tensor target =
        graph.addVariable(FLOAT, {kT, B, kH}, VariableMappingMethod::LINEAR, "target");
    const lstm::LstmState init = lstm::createInitialState(graph, params, "init");
    const lstm::LstmWeights w = lstm::createWeights(graph, params, "w");
    program::Sequence step;
    // REPLICATE: each replica its own stream, fed its own shard of the batch.
    step.add(program::Copy(
        graph.addHostToDeviceFIFO("x", FLOAT, x.numElements(), ReplicatedStreamMode::REPLICATE),
        x));
    step.add(program::Copy(graph.addHostToDeviceFIFO("target", FLOAT, target.numElements(),
                                                     ReplicatedStreamMode::REPLICATE),
                           target));
    Tensor inter;
    const Tensor out = lstm::lstmFwd(graph, params, init, x, w, &inter, step, "fwd").first;
    using namespace aspen::ops::expr;
    const Tensor dy = ops::map(graph, _1 - _2, {out, target}, step, "dy");
    lstm::LstmWeights dw;
    lstm::lstmBwdWithWU(graph, params, step, init, inter, w, x, out, dy, nullptr, nullptr, dw,
                        "bwd");
    // One multi-tensor MEAN all-reduce of the three gradients (one collective step), then SGD.
    std::vector<Tensor> grads{dw.inputWeights, dw.outputWeights, dw.biases};
    collectives::allReduceInPlaceCrossReplica(graph, grads, collectives::CollectiveOperator::MEAN,
                                              step, "mean");
    const Tensor weights[3] = {w.inputWeights, w.outputWeights, w.biases};
    for (int k = 0; k < 3; ++k) {
      ops::scaledSubtractFrom(graph, weights[k], grads[std::size_t(k)], lr, step,
                              std::string("sgd/") + kWeights[k]);
      graph.createHostWrite(kWeights[k], weights[k]);
      graph.createHostRead(std::string("out/") + kWeights[k], weights[k]);
    }
    graph.createHostWrite("h0", init.output);
    graph.createHostWrite("c0", init.cellState);
    prog.add(program::Repeat(kSteps, step));
  }
};

// Deterministic data: the whole batch's rows [R * kShard], row-major [T, rows, size].
std::vector<float> randomValues(std::size_t n, unsigned seed, float range) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-range, range);
  std::vector<float> v(n);
  for (float &e : v)
    e = u(rng);
  return v;
}

// Rows [first, first + count) of a [T, rows, size] sequence.
std::vector<float> rowsOf(const std::vector<float> &seq, std::size_t rows, std::size_t size,
                          std::size_t first, std::size_t count) {
  std::vector<float> out;
  for (std::size_t t = 0; t < kT; ++t)
    for (std::size_t r = first; r < first + count; ++r)
      for (std::size_t k = 0; k < size; ++k)
        out.push_back(seq[(t * rows + r) * size + k]);
  return out;
}

// Trains and returns the final weights (the three tensors, concatenated) of the replicas the
// engine runs, [first, first + count): all of them in this process (`transport` "threads"),
// this rank's over MPI ("auto" under mpiexec).
std::vector<std::vector<float>> train(unsigned replicas, std::size_t B, float lr,
                                      const std::vector<float> &x, const std::vector<float> &y,
                                      std::vector<std::vector<float>> &shards,
                                      const std::string &transport, unsigned first,
                                      unsigned count, const Device &device) {
  Trainer t(device, replicas, B, lr);
  OptionFlags options{{"aspen.collectives.transport", transport}};
  if (device.getKind() == DeviceKind::Gpu)
    options.set("aspen.collectives.onDevice", "true"); // NCCL, or a load error saying why not
  Engine e(t.graph, t.prog, options);
  e.load(device);
  const std::size_t rows = replicas * B;
  const std::size_t sizes[3] = {4 * kI * kH, 4 * kH * kH, 4 * kH};
  for (int k = 0; k < 3; ++k) { // the same initial weights in every replica
    const std::vector<float> w = randomValues(sizes[k], 10 + k, 0.4f);
    e.writeTensor(kWeights[k], w.data(), w.data() + w.size());
  }
  const std::vector<float> zeros(B * kH, 0.0f);
  e.writeTensor("h0", zeros.data(), zeros.data() + zeros.size());
  e.writeTensor("c0", zeros.data(), zeros.data() + zeros.size());
  shards.assign(2 * replicas, {});
  for (unsigned r = first; r < first + count; ++r) {
    shards[2 * r] = rowsOf(x, rows, kI, r * B, B);
    shards[2 * r + 1] = rowsOf(y, rows, kH, r * B, B);
    // A circular buffer of one batch: every step reads the same shard again.
    e.connectStream("x", r, shards[2 * r].data(), shards[2 * r].data() + shards[2 * r].size());
    e.connectStream("target", r, shards[2 * r + 1].data(),
                    shards[2 * r + 1].data() + shards[2 * r + 1].size());
  }
  e.run();
  std::vector<std::vector<float>> result(count);
  for (unsigned r = first; r < first + count; ++r)
    for (int k = 0; k < 3; ++k) {
      std::vector<float> w(sizes[k]);
      e.readTensor(std::string("out/") + kWeights[k], r, w.data(), w.data() + w.size());
      result[r - first].insert(result[r - first].end(), w.begin(), w.end());
    }
  return result;
}

} // namespace

int main(int argc, char **argv) {
  const dist::World world = dist::World::fromEnvironment();
  const bool overRanks = world.size() > 1;
  const bool gpu = argc > 1 && std::string(argv[1]) == "--gpu";
  if (gpu) {
    --argc;
    ++argv;
  }
  const unsigned R = argc > 1 ? unsigned(std::atoi(argv[1]))
                              : gpu ? world.size() : std::max(2u, world.size());
  if (R < 1 || R > 16 || R % world.size() != 0 || (gpu && R != world.size())) {
    std::fprintf(stderr, "usage: data_parallel_lstm [R], 1 <= R <= 16 replicas, a multiple of "
                         "the ranks; data_parallel_lstm --gpu [R]: R the ranks, one replica a "
                         "GPU\n");
    return 2;
  }
  if (gpu && Device::gpuCount() == 0) {
    std::fprintf(stderr, "data_parallel_lstm --gpu: this process sees no GPU (Device::gpuCount() "
                         "is 0)\n");
    return 2;
  }
  const Device cpu = Device::createCPUDevice();
  const Device device =
      gpu ? Device::createGpuDevice(world.localRank() % Device::gpuCount())
          : Device::createCPUDevice();
  const unsigned first = overRanks ? world.firstReplica(R) : 0,
                 count = overRanks ? world.localReplicas(R) : R;
  const std::size_t rows = R * kShard;
  const std::vector<float> x = randomValues(kT * rows * kI, 1, 1.0f);
  const std::vector<float> y = randomValues(kT * rows * kH, 2, 0.5f);
  std::vector<std::vector<float>> shards, whole;
  const auto replicas =
      train(R, kShard, kLearningRate, x, y, shards, "auto", first, count, device);
  const auto single =
      train(1, rows, kLearningRate / float(R), x, y, whole, "threads", 0, 1, cpu);
  bool same = true;
  double fromHere = 0; // under --gpu: the largest difference from the run in one process
  if (overRanks || gpu) { // each rank's replicas against the same training with every replica here
    const auto here = train(R, kShard, kLearningRate, x, y, shards, "threads", 0, R, cpu);
    for (unsigned r = 0; r < count; ++r) {
      if (!gpu)
        same = same && replicas[r] == here[first + r];
      for (std::size_t i = 0; i < here[first + r].size(); ++i)
        fromHere = std::max(fromHere, double(std::fabs(replicas[r][i] - here[first + r][i])));
    }
    same = same && fromHere <= 1e-5;
  }
  for (unsigned r = 1; r < count; ++r)
    same = same && replicas[r] == replicas[0];
  double worst = 0, moved = 0;
  const std::vector<float> start = [] {
    std::vector<float> w;
    const std::size_t sizes[3] = {4 * kI * kH, 4 * kH * kH, 4 * kH};
    for (int k = 0; k < 3; ++k) {
      const std::vector<float> v = randomValues(sizes[k], 10 + k, 0.4f);
      w.insert(w.end(), v.begin(), v.end());
    }
    return w;
  }();
  for (std::size_t i = 0; i < single[0].size(); ++i) {
    worst = std::max(worst, double(std::fabs(replicas[0][i] - single[0][i])));
    moved = std::max(moved, double(std::fabs(single[0][i] - start[i])));
  }
  const std::string who = overRanks ? "rank " + std::to_string(world.rank()) + " of " +
                                          std::to_string(world.size()) + ": "
                                    : std::string();
  std::printf("%sdata-parallel LSTM: %u replicas of %zu rows%s, %u SGD steps, one MEAN "
              "all-reduce of the three weight gradients\n",
              who.c_str(), R, kShard,
              overRanks ? (", " + std::to_string(count) + " on this rank, over MPI").c_str() : "",
              kSteps);
  if (gpu)
    std::printf("%s  on %s, NCCL's all-reduce: worst difference from the run of every replica "
                "in one process on the CPU %.3g: %s\n",
                who.c_str(), device.describe().c_str(), fromHere, same ? "yes" : "NO");
  else
    std::printf("%s  replicas' weights bit for bit equal%s: %s\n", who.c_str(),
                overRanks ? " (and to the run in one process)" : "", same ? "yes" : "NO");
  std::printf("%s  against one replica on all %zu rows (learning rate / %u): worst difference "
              "%.3g (the weights moved up to %.3g)\n",
              who.c_str(), rows, R, worst, moved);
  const bool ok = same && worst <= 1e-5 && moved > 1e-3;
  std::printf("%s%s\n", who.c_str(), ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
