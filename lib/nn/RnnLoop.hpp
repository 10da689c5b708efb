// The machinery behind aspen::nn::rnn::Rnn, shared with the LSTM builders (internal).
//
// runLoop builds both forms of the loop from one LoopSpec: the plain form (gatherFn empty) and
// the gather form (reverse, with temporaries collected in windows of stepsPerGather steps).
// Sequence layout: a [n, B, size] tensor is spread step by step over its shard's tiles
// (mapSteps); shard s of numShards holds steps [s*S, (s+1)*S), S = ceil(T / numShards), on the
// tiles shardTiles(target, s, numShards).
#pragma once

#include <aspen/BlockCodelets.hpp>
#include <aspen/Graph.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/nn/Rnn.hpp>

#include <cstdint>
#include <functional>
#include <optional>

#include <string>
#include <utility>
#include <vector>

namespace aspen::detail {
class OptionSpec;
}

namespace aspen::nn::rnn::detail {

// The options the LSTM and the GRU share beyond the loop's:
//   rnnStepsPerWU        any unsigned integer, as popnn parses it (0, or T and above: the weight
//                        update in one pass after the backward loop); digits only, so negative
//                        and non-integer values are refused.
//   hardSigmoidGradient  "poplibs" (default): HARD_SIGMOID's gradient is popnn's rule, 0.2
//                        wherever the output is in [0, 1], saturated outputs included; "exact":
//                        the true derivative, 0.2 inside (-2.5, 2.5) and 0 outside.
void addStepsPerWUOption(aspen::detail::OptionSpec &spec, std::optional<unsigned> &target);
// numShards (1 to maxShards) and rnnCodeReuse (true or false), each left empty when not given
// (the layer then chooses).
void addShardOptions(aspen::detail::OptionSpec &spec, unsigned maxShards,
                     std::optional<unsigned> &numShards, std::optional<bool> &codeReuse);
void addHardSigmoidGradientOption(aspen::detail::OptionSpec &spec, NonLinearityGradient &target);
// k = rnnStepsPerWU as the loops take it: 0 (one pass after the loop) for k >= T.
inline unsigned stepsPerWUWithin(unsigned k, std::size_t T) { return k >= T ? 0u : k; }

struct TileRange {
  unsigned first = 0;
  unsigned count = 1;
};

TileRange shardTiles(const Target &target, unsigned shard, unsigned numShards);
// t: [n, B, size]; each step laid out identically over `range`.
void mapSteps(Graph &graph, const Tensor &t, TileRange range);
// t: [T, B, size]; each shard's steps on the shard's tiles.
void mapSequence(Graph &graph, const Tensor &t, unsigned numShards);
Tensor addSequence(Graph &graph, Type type, std::size_t steps, std::size_t rows, std::size_t size,
                   unsigned numShards, const DebugContext &debug);
// [rows, size], laid out like one step on all tiles.
Tensor addStep(Graph &graph, Type type, std::size_t rows, std::size_t size,
               const DebugContext &debug);

// The default shard count: enough shards that the sequence tensors, `elementsPerRow` elements a
// step and batch row, fit `proportion` of all tiles' memory (clamped to [1, T]).
unsigned estimateShards(const Graph &graph, const RnnParams &params, std::size_t elementsPerRow,
                        double proportion);

// Raise the Rnn errors (type_error, shape_error, invalid_option) naming `what`.
void checkParams(const RnnParams &params, const std::string &what);
// v rounded to `type` (FLOAT or HALF), as a float: a vertex field the layer compares with its
// data (a clip's bound or threshold).
float roundedTo(Type type, double v);
// ONNX's activation clip of the LSTM and the GRU (their params' activationClip), when enabled:
// a finite threshold above 0 and element-wise activations; invalid_option naming `what`.
void checkActivationClip(bool enabled, double threshold, NonLinearityType activation,
                         NonLinearityType recurrentActivation, const std::string &what);
unsigned checkShards(const RnnParams &params, unsigned numShards, const std::string &what);
void checkSequence(const RnnParams &params, const Tensor &t, const std::string &what);

struct LoopSpec {
  // The members after params are set one by one (a constructor, not aggregate initialisation,
  // so that leaving them at their defaults draws no missing-initializer warning).
  explicit LoopSpec(RnnParams p) : params(std::move(p)) {}
  RnnParams params;
  bool reverse = false;
  std::vector<Tensor> initState;
  StateSequence stateSequence;
  std::vector<Tensor> inputs;
  const Tensor *interimIn = nullptr;
  Tensor *interimOut = nullptr;
  std::vector<Tensor> outputs;
  std::vector<Tensor> created;
  LoopBodyType loopFn;
  unsigned numShards = 1;
  bool codeReuse = false;
  // Gather form only.
  unsigned numTemps = 0;
  std::vector<Tensor> gatherInputs;
  GatherBodyType gatherFn;
  unsigned stepsPerGather = 0;
};

std::vector<Tensor> runLoop(Graph &graph, const LoopSpec &spec, program::Sequence &prog,
                            const DebugContext &debug);

// The direction option of the LSTM and the GRU (an Aspen extension, docs/recurrent.md):
// "forward" (the default) or "reverse". A reverse layer runs each row from its own last step
// (its length, or T) back to step 0: its builders reverse the first `length` steps of every row
// of the input sequences on the way in and of the output sequences on the way out
// (reverseSteps), and run the forward machinery between, so the intermediates they keep are in
// the reversed order and pair only with builders given the same option. "bidirectional" is
// refused, naming the two calls that make one.
void addDirectionOption(aspen::detail::OptionSpec &spec, bool &reverse);
// A copy of seq [T, B, ...] laid out as seq is, in which row b's first L_b steps are in reverse
// order and its steps from L_b on stay in place (L_b: params' varTimeSteps, [B] or [1] for every
// row, capped at T; T without them). Its own inverse. One compute set in prog, or a copy of the
// reversed view when every row runs T steps.
Tensor reverseSteps(Graph &graph, const RnnParams &params, const Tensor &seq,
                    program::Sequence &prog, const DebugContext &debug);
// The same for a [B, T] tensor (the AUGRU's attention), as a [B, T] view.
Tensor reverseRowSteps(Graph &graph, const RnnParams &params, const Tensor &rows,
                       program::Sequence &prog, const DebugContext &debug);
// A layer's sequences in the order its steps run, and back (the same reordering): themselves
// forward, reversed (reverseSteps, in prog) in reverse. What every builder's entry wraps.
struct RunOrder {
  Graph &graph;
  const RnnParams &params;
  bool reverse;
  program::Sequence &prog;
  const DebugContext &debug;
  // seq [T, B, ...].
  Tensor operator()(const Tensor &seq, const char *name) const {
    return reverse ? reverseSteps(graph, params, seq, prog, {debug, name}) : seq;
  }
  // The layer's output or its gradient: a sequence with outputFullSequence, else the final
  // output [B, H], which has no steps to reorder.
  Tensor output(const Tensor &t, bool fullSequence, const char *name) const {
    return fullSequence ? (*this)(t, name) : t;
  }
  // rows [B, T] (the AUGRU's attention).
  Tensor rows(const Tensor &bt, const char *name) const {
    return reverse ? reverseRowSteps(graph, params, bt, prog, {debug, name}) : bt;
  }
};

// How a forward step computes (the stepMethod option of the LSTM and the GRU): the library
// products then the cells' compute sets, or fused steps on weights packed once (program::Cached)
// (LstmFused.cpp, GruFused.cpp).
enum class StepMethod { Auto, Fused, ProductThenCell };
void addStepMethodOption(aspen::detail::OptionSpec &spec, StepMethod &target);
// Options rnnPersistentKernel (auto | true | false: the whole loop as one co-resident launch,
// LstmPersistent.cpp), rnnPersistentArithmetic (auto | exact | tensor: the kernels' recurrent
// product by ordered fma or on tensor cores; auto: tensor for HALF on GPUs of compute
// capability 8.0 and later) and, Aspen extensions for tests and tuning, rnnPersistentBlocks
// and rnnPersistentThreadsPerBlock (0: the builder's choice).
struct PersistentOptions {
  enum class Mode { Auto, On, Off } mode = Mode::Auto;
  enum class Arithmetic { Auto, Exact, Tensor } arithmetic = Arithmetic::Auto;
  unsigned blocks = 0, threadsPerBlock = 0;
};
void addPersistentOptions(aspen::detail::OptionSpec &spec, PersistentOptions &target);
// A layer whose steps can only be products then cells (`why` says what it has, e.g. "a
// projected layer (projSize 3)"; empty: none): stepMethod fused and rnnPersistentKernel true
// refused with invalid_option naming `what`.
void refuseFusedForms(const std::string &why, StepMethod stepMethod,
                      const PersistentOptions &persistent, const std::string &what);
// What a layer's persistent loop takes: whether it runs, its launch, whether a block's weights
// are staged in shared memory, and why the per-step path runs when it does.
// With the launch: the arithmetic (tensor, and its k ranges a tile: the kernels' `splits`)
// and the cost model's seconds a step of both paths (0 where no launch was planned).
struct PersistentChoice {
  bool use = false;
  LaunchShape launch;
  bool weightsInShared = false;
  bool weightsInRegisters = false; // the tensor variant's, every warp's fragments for the launch
  bool tensor = false;
  unsigned splits = 0;
  double perStepSeconds = 0, persistentSeconds = 0;
  std::string refusal;
};
// What a persistent loop is: its activations, type and sizes; per unit, `gates` weight
// columns and `rowsPerUnit` rows of its step's product (gates forward, 1 backward) over k <
// `depth` (the longest product's); `exchanges` waits for the other blocks a step (2: the GRU
// without resetAfter); a block stages `stagedFloats` floats a step (named `staged` in
// messages) plus `blockFloats(units)` of its own. The tensor variant's products: the first
// over rowsPerUnit rows a unit and k < depth, a second (secondRows a unit, k < secondDepth; 0:
// none) after the second exchange; a warp keeps up to `registerFragments` of each in registers
// (codelets/nn/persistent.cpp's kLstmFragments, kGruFragments, kGruSecondFragments).
struct PersistentLoop {
  NonLinearityType activation, recurrentActivation;
  Type type;
  std::size_t B, H;
  unsigned gates, rowsPerUnit;
  std::size_t depth;
  unsigned exchanges;
  std::size_t stagedFloats;
  const char *staged;
  std::function<std::size_t(std::size_t)> blockFloats;
  unsigned secondRows = 0;
  std::size_t secondDepth = 0;
  unsigned registerFragments[2] = {16, 0};
};
// The choice: mode false never; true where it can run, else invalid_option naming `what` and
// the limit; auto where it can run on a GPU target and the cost model (RnnPersistent.cpp)
// estimates it faster a step, never on other targets. The launch: min(multiprocessors, H)
// blocks of 256 threads on a GPU target, min(4, H) of 32 on others, or the options' shape.
PersistentChoice choosePersistent(const Graph &graph, const PersistentOptions &options,
                                  const PersistentLoop &loop, const std::string &what);
// Whether a fused step can compute activation t: element by element (not a softmax over a row).
inline bool elementWise(NonLinearityType t) {
  return t != NonLinearityType::SOFTMAX && t != NonLinearityType::SOFTMAX_STABLE;
}
// The stepMethod decision of every fused layer: productThenCell never fuses; fused always (and
// raises invalid_option naming `what` unless both activations are element-wise); auto fuses
// element-wise activations on a target that is not a GPU where paysAndFits() says so.
bool chooseFusedStep(const Graph &graph, StepMethod method, NonLinearityType activation,
                     NonLinearityType recurrentActivation, const std::string &what,
                     const std::function<bool()> &paysAndFits);
// Whether auto fuses a layer of `gates` gates: small batches only, and one row only when the
// weights are packed once (`inference`: no weight update in the engine, so the Cached pack runs
// once) or the sequence is long enough to pay for packing every run (RnnFused.cpp says where
// the lines are).
bool fusedStepPays(const RnnParams &params, unsigned gates, bool inference);
// The units [firstUnit, firstUnit + numUnits) whose packed weights one vertex a step keeps on
// `tile`, in granules of granuleUnits (the packing's panel width). Enough blocks that every
// worker of a tile has a granule and that a tile keeps at most half its memory in packed
// weights (packedBytes for all units), at most one a granule and one a tile.
struct FusedUnitBlock {
  unsigned firstUnit = 0, numUnits = 0, tile = 0;
};
std::vector<FusedUnitBlock> fusedUnitBlocks(const Target &target, std::size_t H,
                                            unsigned granuleUnits, std::size_t packedBytes);
// Whether the packed weights fit the tiles fusedUnitBlocks spreads them over.
bool fusedWeightsFit(const Target &target, std::size_t H, unsigned granuleUnits,
                     std::size_t packedBytes);

// t, or a contiguous copy of it made in prog (once a run): a vertex reads a contiguous edge in
// place, where a view on an edge would be gathered every time the vertex runs.
Tensor contiguousOrCopy(Graph &graph, const Tensor &t, program::Sequence &prog,
                        const DebugContext &debug);

// Weights packed for the GRU's and the vanilla RNN's fused steps: per block of units, panels of
// 16 units of one gate (PackUnitPanels in codelets/nn/rnn.cpp). rows lists the gates x K rows
// of [H] elements (row g * K + k: gate g's row k), read in place where contiguous; the packing
// is a Cached step added to prog (program::Cached: once, and again when the rows are written).
constexpr unsigned kUnitPanelUnits = 16;
std::size_t unitPanelBytes(std::size_t K, unsigned gates, std::size_t H);
struct PackedUnitBlock {
  FusedUnitBlock units;
  Tensor packed; // [blocks of 16 units][gates][K][16] float, on units.tile
};
std::vector<PackedUnitBlock> packUnitPanels(Graph &graph, Type type,
                                            const std::vector<Tensor> &rows, std::size_t K,
                                            unsigned gates, std::size_t H, program::Sequence &prog,
                                            const DebugContext &debug);

// The loop of a fused recurrent layer (the LSTM's and the GRU's fused steps): vertices that
// read the step t from a counter and index the sequences themselves, so a step is only its own
// compute sets. h lives in two buffers (h_t in buffer t % 2), and the clock in two counters,
// time[t % 2], so a step's vertices read one of each while they write the other.
struct FusedClock {
  Tensor time;    // [2] unsigned on tile 0: time[p] = t for the steps of parity p
  Tensor lengths; // the layer's lengths ([B] or [1]), or [1] = T when it has none
};
struct FusedShard {
  unsigned begin = 0, steps = 0; // the shard's steps [begin, begin + steps)
};
// Builds the clock (zeroed in prog) and, per shard (numShards as mapSequence splits T), the
// programs of its even and odd steps, step(shard, parity), each ending with a compute set that
// holds addClockVertex(parity); then plays them in order: Repeat(n / 2, {even, odd}), with one
// step before for an odd start and one after for an odd count.
void fusedLoop(Graph &graph, const RnnParams &params, unsigned numShards,
               const std::function<program::Sequence(const FusedClock &, const FusedShard &,
                                                     unsigned parity)> &step,
               program::Sequence &prog, const DebugContext &debug);
// The vertex advancing the clock: time[1 - parity] = time[parity] + 1, in cs.
void addClockVertex(Graph &graph, ComputeSet cs, const FusedClock &clock, unsigned parity);
// A fused step's input product in cs (the steps that weigh their input: the GRU's and the
// vanilla RNN's with preCalcWeights false): RnnStepProduct vertices, one a block, writing
// x_t . W (x [T, B, K], contiguous, read in place) into row t of xw [T, B, gates * H], each
// gate's block units, with the weights packed in `blocks` (packUnitPanels of gates x K rows).
void addStepProduct(Graph &graph, ComputeSet cs, const std::vector<PackedUnitBlock> &blocks,
                    const FusedClock &clock, unsigned parity, const Tensor &x, const Tensor &xw,
                    std::size_t H, unsigned gates);

// A stack in one call (RnnStack.cpp). The lengths the vertices read: params' varTimeSteps, or
// a constant [1] = T.
Tensor lengthsOf(Graph &graph, const RnnParams &params, const DebugContext &debug);
// Dropout between layers: element i = (t_caller * B + b) * W + column of layer l's [T, B, W]
// output is kept when (mix(key + i) >> 11) * 2^-53 >= rate, key = dropoutKey(seed, l) =
// mix(seed ^ (l + 1) * 0xD1B54A32D192ED03), mix SplitMix64's step (the C backend's stacks and
// docs/recurrent.md state the same mask); kept elements are scaled by 1 / (1 - rate).
struct Dropout {
  double rate = 0.0;
  std::uint64_t key = 0;
};
std::uint64_t dropoutKey(std::uint64_t seed, unsigned layer);
// RnnDropout vertices in cs writing out = dropout(in) (both [T, B, W]): every step, or with
// `time` valid ([1]) the step it holds. reversed: in and out are in a reverse layer's run order
// (the mask is still the caller's order's).
void addDropout(Graph &graph, ComputeSet cs, const RnnParams &params, const Tensor &in,
                const Tensor &out, const Dropout &dropout, const Tensor &time, bool reversed,
                const Tensor &lengths);
// [B, W]: each row's output at its last step (step 0 for a reverse layer, whose seq [T, B, W]
// is in the caller's order), or init's row when its length is 0.
Tensor finalOutputState(Graph &graph, const RnnParams &params, const Tensor &seq,
                        const Tensor &init, bool reverse, program::Sequence &prog,
                        const DebugContext &debug);
// Several fused loops as one: lane k's step t runs in wave offset_k + t, and the waves run in
// order, each as many compute sets as its lanes' steps have phases (per segment of waves with
// the same lanes, an even and an odd wave, played as fusedLoop plays a shard). Each lane has
// its own clock, advanced in its last phase; addStep adds phase `phase` of its step's vertices
// at a parity (numShards 1: the whole sequence is the shard). A lane may read what another
// wrote in an earlier wave, never in the same one.
struct WaveLane {
  std::size_t offset = 0;
  unsigned phases = 1;
  std::function<void(ComputeSet, unsigned phase, const FusedClock &, unsigned parity)> addStep;
};
void waveLoop(Graph &graph, const RnnParams &params, const std::vector<WaveLane> &lanes,
              program::Sequence &prog, const DebugContext &debug);

} // namespace aspen::nn::rnn::detail
