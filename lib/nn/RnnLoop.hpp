// The machinery behind aspen::nn::rnn::Rnn, shared with the LSTM builders (internal).
//
// runLoop builds both forms of the loop from one LoopSpec: the plain form (gatherFn empty) and
// the gather form (reverse, with temporaries collected in windows of stepsPerGather steps).
// Sequence layout: a [n, B, size] tensor is spread step by step over its shard's tiles
// (mapSteps); shard s of numShards holds steps [s*S, (s+1)*S), S = ceil(T / numShards), on the
// tiles shardTiles(target, s, numShards).
#pragma once

#include <aspen/Graph.hpp>
#include <aspen/nn/Rnn.hpp>

#include <string>
#include <utility>
#include <vector>

namespace aspen::nn::rnn::detail {

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
