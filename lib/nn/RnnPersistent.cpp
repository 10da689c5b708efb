// The choice of a recurrent layer's persistent loop (RnnLoop.hpp, choosePersistent): what the
// kernels of codelets/nn/persistent.cpp need, checked against the target's shared memory, and
// the launch they take. LstmPersistent.cpp and GruPersistent.cpp build the loops.
#include "RnnLoop.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace aspen::nn::rnn::detail {

namespace {

// Non-GPU targets run a launch as fibers of the host: a few blocks of one warp's width.
constexpr unsigned kHostBlocks = 4, kHostThreads = 32;
constexpr unsigned kGpuThreads = 256; // the kernels' maxThreadsPerBlock
constexpr std::size_t kHostSharedBytes = 232448; // Verify.cpp's limit for targets not GPUs

} // namespace

PersistentChoice choosePersistent(const Graph &graph, const PersistentOptions &options,
                                  NonLinearityType activation,
                                  NonLinearityType recurrentActivation, std::size_t H,
                                  unsigned gates, std::size_t stagedFloats, const char *staged,
                                  const std::function<std::size_t(std::size_t)> &blockFloats,
                                  const std::string &what) {
  using Mode = PersistentOptions::Mode;
  PersistentChoice choice;
  choice.launch.blocks = 0;
  if (options.mode == Mode::Off) {
    choice.refusal = "rnnPersistentKernel is false";
    return choice;
  }
  const Target &target = graph.getTarget();
  // What the kernel cannot do, whatever the mode.
  std::string cannot;
  if (!elementWise(activation) || !elementWise(recurrentActivation))
    cannot = "the activations must be element-wise (a softmax reduces over H units that "
             "several blocks own)";
  const unsigned blocks =
      options.blocks != 0
          ? options.blocks
          : unsigned(std::min<std::size_t>(
                H, target.isGpu() ? target.getGpuProperties().multiProcessorCount : kHostBlocks));
  const unsigned threads = options.threadsPerBlock != 0 ? options.threadsPerBlock
                           : target.isGpu()             ? kGpuThreads
                                                        : kHostThreads;
  const std::size_t units = (H + blocks - 1) / std::max(1u, blocks);
  const std::size_t stageBytes = (stagedFloats + blockFloats(units)) * sizeof(float);
  const std::size_t weightBytes = gates * units * H * sizeof(float);
  const std::size_t limit =
      target.isGpu() ? target.getGpuProperties().sharedMemoryPerBlockOptin : kHostSharedBytes;
  if (cannot.empty() && stageBytes > limit)
    cannot = fmt::format("{}, staged whole in every block (with what a block keeps, {} bytes), "
                         "exceeds the {} bytes of shared memory a block of target '{}' has",
                         staged, stageBytes, limit, target.getName());
  if (cannot.empty() && target.isGpu() && stageBytes + weightBytes > limit)
    cannot = fmt::format("the weights of a block ({} units x {} gates x {} as float, {} bytes) "
                         "and the staged {} ({} bytes) exceed the {} bytes of shared memory "
                         "a block of target '{}' has: the weights do not fit on chip",
                         units, gates, H, weightBytes, staged, stageBytes, limit,
                         target.getName());
  if (cannot.empty()) { // the launch it takes (or would take, under auto)
    choice.weightsInShared = stageBytes + weightBytes <= limit;
    choice.launch.blocks = blocks;
    choice.launch.threadsPerBlock = threads;
    choice.launch.sharedBytes = stageBytes + (choice.weightsInShared ? weightBytes : 0);
    choice.launch.coResident = true;
  }
  if (options.mode == Mode::Auto) {
    choice.refusal = !cannot.empty() ? cannot
                     : target.isGpu()
                         ? "auto keeps the per-step path until the persistent kernel's cost "
                           "model is calibrated on a GPU"
                         : "auto keeps the per-step path on targets that are not GPUs (the "
                           "library products are faster there)";
    return choice;
  }
  if (!cannot.empty())
    throw invalid_option(fmt::format("{}: rnnPersistentKernel is true, but {}", what, cannot));
  choice.use = true;
  return choice;
}

} // namespace aspen::nn::rnn::detail
