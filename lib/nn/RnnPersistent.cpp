// The choice of a recurrent layer's persistent loop (RnnLoop.hpp, choosePersistent): what the
// kernels of codelets/nn/persistent.cpp need, checked against the target's shared memory, the
// launch and arithmetic variant they take, and the cost model that `auto` decides by.
// LstmPersistent.cpp and GruPersistent.cpp build the loops.
//
// The cost model (docs/architecture.md "Persistent recurrent kernels", research note
// persistent-rnn.md section 5): seconds a step of each path, from the layer's shape and the
// target's numbers. The constants marked [E] are the note's estimates, not yet measured on a
// GPU; scripts/gpu-check.sh measures what calibrates them (grid sync and flag round trip, both
// paths' time a step).
#include "RnnLoop.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace aspen::nn::rnn::detail {

namespace {

// Non-GPU targets run a launch as fibers of the host: a few blocks of one warp's width.
constexpr unsigned kHostBlocks = 4, kHostThreads = 32;
constexpr unsigned kGpuThreads = 256; // the kernels' maxThreadsPerBlock
constexpr std::size_t kHostSharedBytes = 232448; // Verify.cpp's limit for targets not GPUs

// GPU: a graph node of the per-step loop (launch and dependency), [E] 1.5-3 us.
constexpr double kGraphNodeSeconds = 2e-6;
// Its nodes a step: control, If, slices, product, cell, stores; two more per extra exchange.
constexpr unsigned kPerStepNodes = 6;
// GPU: one exchange's latency (publish, then the other blocks see it), [E] about a grid sync.
constexpr double kExchangeSeconds = 1e-6;
// GPU: L2 read bandwidth for every block staging the exchanged vector, [E] 5-7 TB/s.
constexpr double kL2BytesPerSecond = 5.5e12;
// GPU cycles of a multiprocessor: an mma with its batch operand's four 32-bit loads a lane
// from shared memory and its weight fragment from registers (4), or from shared memory too
// (one 16-byte load a lane more: 6) [E]; a cell for a block's threads [E].
constexpr double kCyclesPerMma = 6, kCyclesPerMmaInRegisters = 4, kCellCycles = 200;
// Host: one correctly rounded fma of the exact variant (glibc's fmaf; measured 1.3 ns,
// docs/performance.md 2026-12-05) and a fiber switch per block and exchange.
constexpr double kHostFmaSeconds = 1.3e-9, kHostExchangeSeconds = 2e-6;
// Host: the per-step loop's overhead a step besides its product [E].
constexpr double kHostStepSeconds = 5e-6;

std::size_t ceilDiv(std::size_t a, std::size_t b) { return (a + b - 1) / std::max<std::size_t>(b, 1); }

// The estimates a step of both paths.
void estimate(const Target &target, const PersistentLoop &loop, unsigned blocks,
              unsigned threads, std::size_t units, unsigned splits, bool tensor,
              bool inRegisters, PersistentChoice &choice) {
  const double bytes = loop.type == HALF ? 2.0 : 4.0;
  const double macs = double(loop.rowsPerUnit) * double(loop.H) * double(loop.depth) *
                      double(loop.B); // the recurrent products of a step
  const double clock = target.getTileClockFrequency() > 0 ? target.getTileClockFrequency() : 1.5e9;
  const double peak = double(target.getMatMulMacsPerCycle(loop.type)) * target.getNumTiles() * clock;
  const std::size_t pairs = loop.B * units;
  if (!target.isGpu()) {
    choice.perStepSeconds = kHostStepSeconds * loop.exchanges + macs / peak;
    choice.persistentSeconds =
        macs * kHostFmaSeconds + kHostExchangeSeconds * loop.exchanges * blocks;
    return;
  }
  const GpuProperties &gpu = target.getGpuProperties();
  const double weightBytes = double(loop.gates) * double(loop.H) * double(loop.H) * bytes;
  const double bandwidth =
      gpu.memoryBandwidthBytesPerSecond > 0 ? gpu.memoryBandwidthBytesPerSecond : 1e12;
  choice.perStepSeconds = kGraphNodeSeconds * (kPerStepNodes + 2 * (loop.exchanges - 1)) +
                          std::max(macs / peak, weightBytes / bandwidth);
  // A block's product: the exact variant's threads each load two operands an fma, one warp's
  // load a cycle; the tensor variant's mma tiles, its weight fragments in registers or not.
  const std::size_t rows = loop.rowsPerUnit * units;
  const double cyclesPerMma = inRegisters ? kCyclesPerMmaInRegisters : kCyclesPerMma;
  const double productCycles =
      tensor ? cyclesPerMma * double(ceilDiv(rows, 16) * ceilDiv(loop.B, 8) *
                                     ceilDiv(loop.depth, 16)) /
                   std::max(1u, std::min(splits * unsigned(ceilDiv(rows, 16)), threads / 32u))
             : 2.0 * double(loop.rowsPerUnit) * double(loop.depth) * double(ceilDiv(pairs, 32));
  const double cellCycles = kCellCycles * double(ceilDiv(pairs, threads));
  const double staged = double(blocks) * double(loop.stagedFloats) * bytes / kL2BytesPerSecond;
  choice.persistentSeconds = loop.exchanges * kExchangeSeconds + staged +
                             (productCycles + cellCycles) / clock;
}

} // namespace

PersistentChoice choosePersistent(const Graph &graph, const PersistentOptions &options,
                                  const PersistentLoop &loop, const std::string &what) {
  using Mode = PersistentOptions::Mode;
  using Arithmetic = PersistentOptions::Arithmetic;
  PersistentChoice choice;
  choice.launch.blocks = 0;
  if (options.mode == Mode::Off) {
    choice.refusal = "rnnPersistentKernel is false";
    return choice;
  }
  const Target &target = graph.getTarget();
  const std::size_t H = loop.H;
  // What the kernel cannot do, whatever the mode.
  std::string cannot;
  if (!elementWise(loop.activation) || !elementWise(loop.recurrentActivation))
    cannot = "the activations must be element-wise (a softmax reduces over H units that "
             "several blocks own)";
  else if (target.isGpu() && !target.getGpuProperties().cooperativeLaunch)
    cannot = fmt::format("target '{}' cannot launch a grid cooperatively (every block resident "
                         "at once), which the persistent kernel needs",
                         target.getName());
  const unsigned blocks =
      options.blocks != 0
          ? options.blocks
          : unsigned(std::min<std::size_t>(
                H, target.isGpu() ? target.getGpuProperties().multiProcessorCount : kHostBlocks));
  const unsigned threads = options.threadsPerBlock != 0 ? options.threadsPerBlock
                           : target.isGpu()             ? kGpuThreads
                                                        : kHostThreads;
  const std::size_t units = ceilDiv(H, std::max(1u, blocks));
  // The arithmetic: tensor cores (mma.sync m16n8k16, sm_80 and later) take half operands in
  // whole warps; auto takes them for HALF on such GPUs.
  const bool mmaTarget = !target.isGpu() || target.getGpuProperties().computeCapabilityMajor >= 8;
  std::string noTensor;
  if (loop.type != HALF)
    noTensor = fmt::format("the tensor variant takes HALF data, not {} (tensor cores would "
                           "round FLOAT operands to TF32)",
                           loop.type.toString());
  else if (threads % 32 != 0)
    noTensor = fmt::format("the tensor variant runs whole warps: rnnPersistentThreadsPerBlock "
                           "{} is not a multiple of 32",
                           threads);
  else if (!mmaTarget)
    noTensor = fmt::format("the tensor variant needs compute capability 8.0 or later; target "
                           "'{}' is {}",
                           target.getName(), target.getTargetArchString());
  const bool tensor = options.arithmetic == Arithmetic::Tensor ||
                      (options.arithmetic == Arithmetic::Auto && target.isGpu() &&
                       noTensor.empty());
  if (cannot.empty() && tensor && !noTensor.empty())
    cannot = "rnnPersistentArithmetic is tensor, but " + noTensor;
  // The product's k ranges a row tile: enough to give every warp a part.
  const std::size_t rows = loop.rowsPerUnit * units, warps = std::max(1u, threads / 32);
  const unsigned splits = unsigned(std::clamp<std::size_t>(
      warps / ceilDiv(rows, 16), 1, std::max<std::size_t>(ceilDiv(loop.depth, 16), 1)));
  const std::size_t productFloats =
      tensor ? splits * ceilDiv(rows, 16) * 16 * ceilDiv(loop.B, 8) * 8 : 0;
  // A warp's weight fragments a step (codelets/nn/persistent.cpp, Product::fragments): all in
  // its registers, the weights need no shared memory.
  auto fragments = [&](std::size_t productRows, std::size_t depth) {
    const std::size_t kTiles = std::max<std::size_t>(ceilDiv(depth, 16), 1);
    return ceilDiv(ceilDiv(productRows, 16) * splits, warps) * ceilDiv(kTiles, splits);
  };
  // The tensor variant keeps a warp's first fragments in registers and stages the rest in
  // shared memory (a fragment is 32 lanes x 4 words); it never stages the weights as floats.
  auto stagedWords = [&](std::size_t productRows, std::size_t depth, unsigned inRegisters) {
    const std::size_t n = fragments(productRows, depth);
    return n > inRegisters ? warps * (n - inRegisters) * 32 * 4 : std::size_t(0);
  };
  const std::size_t fragmentWords =
      !tensor ? 0
              : stagedWords(rows, loop.depth, loop.registerFragments[0]) +
                    (loop.secondRows == 0 ? 0
                                          : stagedWords(loop.secondRows * units,
                                                        loop.secondDepth,
                                                        loop.registerFragments[1]));
  const bool inRegisters = tensor && fragmentWords == 0;
  // The staged vector: halves in the tensor variant (in 16-byte multiples, a region for each
  // exchange), floats in the exact one.
  const std::size_t vectorWords =
      tensor ? (loop.stagedFloats + 7) / 8 * 4 + 4 * (loop.exchanges - 1) : loop.stagedFloats;
  const std::size_t keptBytes =
      (vectorWords + loop.blockFloats(units) + productFloats) * sizeof(float);
  const std::size_t stageBytes = keptBytes + fragmentWords * sizeof(float);
  const std::size_t weightBytes = loop.gates * units * H * sizeof(float);
  const std::size_t limit =
      target.isGpu() ? target.getGpuProperties().sharedMemoryPerBlockOptin : kHostSharedBytes;
  if (cannot.empty() && keptBytes > limit)
    cannot = fmt::format("{}, staged whole in every block (with what a block keeps, {} bytes), "
                         "exceeds the {} bytes of shared memory a block of target '{}' has",
                         loop.staged, keptBytes, limit, target.getName());
  if (cannot.empty() && stageBytes > limit)
    cannot = fmt::format("the weight fragments a block's warps cannot hold in registers ({} "
                         "bytes) and the staged {} ({} bytes) exceed the {} bytes of shared "
                         "memory a block of target '{}' has: the weights do not fit on chip",
                         fragmentWords * sizeof(float), loop.staged, keptBytes, limit,
                         target.getName());
  if (cannot.empty() && target.isGpu() && !tensor && stageBytes + weightBytes > limit)
    cannot = fmt::format("the weights of a block ({} units x {} gates x {} as float, {} bytes) "
                         "and the staged {} ({} bytes) exceed the {} bytes of shared memory "
                         "a block of target '{}' has: the weights do not fit on chip",
                         units, loop.gates, H, weightBytes, loop.staged, stageBytes, limit,
                         target.getName());
  if (cannot.empty()) { // the launch it takes (or would take, under auto)
    choice.weightsInRegisters = inRegisters;
    choice.weightsInShared = !tensor && stageBytes + weightBytes <= limit;
    choice.launch.blocks = blocks;
    choice.launch.threadsPerBlock = threads;
    choice.launch.sharedBytes = stageBytes + (choice.weightsInShared ? weightBytes : 0);
    choice.launch.coResident = true;
    choice.tensor = tensor;
    choice.splits = tensor ? splits : 0;
    estimate(target, loop, blocks, threads, units, splits, tensor, inRegisters, choice);
  }
  if (options.mode == Mode::Auto) {
    if (!cannot.empty()) {
      choice.refusal = cannot;
    } else if (!target.isGpu()) {
      choice.refusal = "auto keeps the per-step path on targets that are not GPUs (the "
                       "library products are faster there)";
    } else if (choice.persistentSeconds >= choice.perStepSeconds) {
      choice.refusal = fmt::format("auto keeps the per-step path: the cost model estimates "
                                   "{:.3g} us a step for it against {:.3g} us persistent",
                                   1e6 * choice.perStepSeconds, 1e6 * choice.persistentSeconds);
    } else {
      choice.use = true;
    }
    return choice;
  }
  if (!cannot.empty())
    throw invalid_option(fmt::format("{}: rnnPersistentKernel is true, but {}", what, cannot));
  choice.use = true;
  return choice;
}

} // namespace aspen::nn::rnn::detail
