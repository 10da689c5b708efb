// The machinery behind aspen::nn::rnn::Rnn, shared with the LSTM builders (internal).
//
// runLoop builds both forms of the loop from one LoopSpec: the plain form (gatherFn empty) and
// the gather form (reverse, with temporaries collected in windows of stepsPerGather steps).
// Sequence layout: a [n, B, size] tensor is spread step by step over its shard's tiles
// (mapSteps); shard s of numShards holds steps [s*S, (s+1)*S), S = ceil(T / numShards), on the
// tiles shardTiles(target, s, numShards).
#pragma once

#include <aspen/Graph.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/nn/Rnn.hpp>

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

} // namespace aspen::nn::rnn::detail
