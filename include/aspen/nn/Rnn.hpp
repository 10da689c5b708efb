// The generic recurrent loop (popnn's Rnn.hpp): a user-supplied cell body run once per time step
// inside the device program, over sequence tensors sliced along time, optionally sharded.
//
// Notation: T = params.maxTimeSteps, B = params.batchSize, I = layerSizes[0], H = layerSizes[1].
//
// RnnParams(dataType, B, T, {I, H}) or RnnParams(dataType, B, T, timeSteps, {I, H}):
//   timeSteps (optional) is an UNSIGNED_INT tensor of shape [1] or [B] read on the device: the
//   sequence length of all rows, or of each row. Lengths above T count as T. With variable time
//   steps the loop runs to max(L_b) (steps past it do nothing), rows past their own length keep
//   their state (the loop body sees a per-row mask), and sequence outputs past a row's length
//   are zero. docs/recurrent.md is the contract.
//
// Sequence tensors are [T, B, size] (createInputTensor, createOutputTensor,
// createRecurrentTensor): every time step is laid out identically over the tiles of its shard,
// so a step is sliced on the device without moving data between tiles. A shard is a contiguous
// chunk of ceil(T / numShards) steps whose tensors live on their own group of tiles; the loop
// runs shard after shard. Results never depend on the shard count.
//
// Rnn(graph, params, reverse, initState, stateSequence, inputs, interimIn, interimOut, outputs,
//     created, prog, loopFn, numShards, options, debug) -> final states
//   initState: the loop-carried state tensors (each of any shape); Rnn copies them into state
//     variables, calls loopFn once per shard (or once in all with code reuse) to build the step
//     body, and returns the state after the last step (the first step when reverse), followed by
//     the tensors loopFn put in `created`.
//   inputs: sequence tensors [T, ...]; the body sees their slices at the current step.
//   interimIn: optional [T, ...] sequence read like an input (slice.interimIn).
//   interimOut: optional [T, ...] sequence (created by the caller); the body writes
//     slice.interimOut (one step of it) and Rnn stores it at the current step.
//   outputs: sequence tensors [T, ...]; the body writes slice.outputs[i], stored at the step.
//   stateSequence: when its `output` is valid, state[stateIndex] is stored there at every step.
//   loopFn(graph, time, batchwiseFlags, state, slice, created, initProg, debug) -> step program.
//     time.counter: UNSIGNED_INT [1], the absolute time step t being computed; time.begin: the
//     first step of the shard; time.variableSeqFlag: UNSIGNED_INT [1], 1 while t < max length.
//     batchwiseFlags (valid only with per-row lengths): mask [B] of dataType, 1 where t < L_b,
//     and inverse = 1 - mask. initProg: a program run once before the loop.
//   options: "codeReuse" true/false (default false): one step body shared by every shard
//     (shards copy their slices in and out of a common window) instead of one per shard.
//   Order: forward t = 0..T-1, or T-1..0 when reverse; state, outputs and interimOut are written
//   before the next step reads them. Outputs and interimOut are zeroed first when time steps are
//   variable, so steps that do not run leave zeros.
//
// Rnn(graph, params, initState, stateSequence, inputs, interimIn, numTemps, prog, loopFn,
//     gatherInputs, gatherFn, numShards, stepsPerGather, options, debug) -> final states
//   The gather form, used by the interleaved weight update: it runs in reverse (t = T-1..0).
//   The body writes slice.interimOut, a temporary [numTemps, B, H]. Every stepsPerGather = k
//   steps (after the steps t with t mod k == 0) gatherFn is called with a slice whose
//   interimOut is a window [k, numTemps, B, H] holding the temporaries of the last k steps and
//   whose inputs are windows [k, ...] of gatherInputs at those steps (window slot j holds step
//   t0 + j where t0 is the group's first step; slots of steps past T are zero). k = 0 means one
//   gather of all T steps after the loop.
//
// Errors: shape_error (sequence tensors whose dim 0 is not T, state or timeSteps shapes),
// type_error (timeSteps not UNSIGNED_INT, dataType not FLOAT/HALF), invalid_option (numShards
// outside [1, T], unknown option keys and values).
#pragma once

#include <aspen/DebugContext.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace aspen::nn::rnn {

struct ASPEN_API RnnParams {
  Type dataType;
  std::size_t batchSize;
  std::size_t maxTimeSteps;
  // Equal to maxTimeSteps (popnn's deprecated name).
  std::size_t timeSteps;
  // UNSIGNED_INT [1] or [B]; invalid when every row runs maxTimeSteps steps.
  Tensor varTimeSteps;
  // {I, H}
  std::vector<std::size_t> layerSizes;

  RnnParams(Type dataType, std::size_t batchSize, std::size_t timeSteps,
            std::vector<std::size_t> layerSizes);
  RnnParams(Type dataType, std::size_t batchSize, std::size_t maxTimeSteps,
            const Tensor &varTimeSteps, std::vector<std::size_t> layerSizes);

  // The most shards: T (one step each). With more shards than tiles, shards share tiles.
  std::size_t getMaxShards(const Graph &graph) const;
  // Steps per shard: ceil(T / numShards).
  std::size_t getMaxShardSize(unsigned numShards) const;
  // Bytes of one time step of the input / output on each tile holding it (the largest share).
  std::size_t getInputBytesPerTile(const Graph &graph) const;
  std::size_t getOutputBytesPerTile(const Graph &graph) const;
  bool variableTimeSteps() const;
  // Lengths given per row ([B], B > 1 or not) rather than one length for all rows.
  bool batchVariableTimeSteps() const;
};

// [multiple, B, size] with size = H when isOutput, else I; mapped like one time step.
ASPEN_API Tensor createInitialState(Graph &graph, const RnnParams &params, bool isOutput,
                                    unsigned multiple, unsigned numShards,
                                    const DebugContext &debug = {});
// [T, B, size] laid out for slicing over time and sharding.
ASPEN_API Tensor createRecurrentTensor(Graph &graph, const RnnParams &params, unsigned size,
                                       unsigned numShards, const DebugContext &debug = {});
// [T, B, I]
ASPEN_API Tensor createInputTensor(Graph &graph, const RnnParams &params, unsigned numShards,
                                   const DebugContext &debug = {});
// [T, B, H], or [multiple * T, B, H]
ASPEN_API Tensor createOutputTensor(Graph &graph, const RnnParams &params, unsigned numShards,
                                    const DebugContext &debug = {});
ASPEN_API Tensor createOutputTensor(Graph &graph, const RnnParams &params, unsigned multiple,
                                    unsigned numShards, const DebugContext &debug = {});

// A [T, ...] tensor whose step t holds step t-1 of tBase and whose step 0 holds tSingle (copied
// in `prog`): the "previous output" sequence.
ASPEN_API Tensor shiftRnnTensor(Graph &graph, const RnnParams &params, const Tensor &tBase,
                                const Tensor &tSingle, program::Sequence &prog, unsigned numShards,
                                const DebugContext &debug = {});

struct RnnSlice {
  std::vector<Tensor> inputs;
  Tensor interimIn;
  Tensor interimOut;
  std::vector<Tensor> outputs;
};

struct RnnBatchwiseFlags {
  Tensor mask;
  Tensor inverse;
  bool valid() const { return mask.valid(); }
};

struct TimeStepState {
  Tensor begin;
  Tensor counter;
  Tensor variableSeqFlag;
};

struct StateSequence {
  Tensor output;
  std::size_t stateIndex = 0;
};

using LoopBodyType = std::function<program::Sequence(
    Graph &graph, const TimeStepState &time, const RnnBatchwiseFlags &batchwiseFlags,
    std::vector<Tensor> &state, const RnnSlice &slice, std::vector<Tensor> &created,
    program::Sequence *initProg, const DebugContext &debug)>;

using GatherBodyType =
    std::function<program::Sequence(Graph &graph, const RnnSlice &slice, unsigned stepsPerGather,
                                    program::Sequence *initProg, const DebugContext &debug)>;

// What a stack's training forward keeps for its backward (lstm::lstmStackFwd,
// gru::gruStackFwd; docs/recurrent.md, "Stacks in one call"), L layers in D directions.
struct StackIntermediates {
  std::vector<Tensor> layers;  // [L*D]: each layer and direction's fwdIntermediates
  std::vector<Tensor> inputs;  // [L]: each layer's input, inputs[0] the stack's
  std::vector<Tensor> outputs; // [L*D]: each layer and direction's own output [T, B, W]
};

// Dropout between the layers of a stack (an Aspen extension; docs/recurrent.md, "Stacks"):
// a copy of seq [T, B, W] in which element i = (t * B + b) * W + j is kept, times
// 1 / (1 - rate), when (mix(mix(seed ^ (layer + 1) * 0xD1B54A32D192ED03) + i) >> 11) * 2^-53
// >= rate, and is 0 otherwise (mix: SplitMix64's step; the product in float, rounded once to
// the data type). A counter-based mask: the same on every device, thread and tile mapping, and
// the one the C backend's stacks use. The gradient of the dropped sequence is dropped with the
// same call. rate in [0, 1) (invalid_option), seq FLOAT or HALF [T, B, W] (type_error,
// shape_error).
ASPEN_API Tensor dropoutSequence(Graph &graph, const RnnParams &params, const Tensor &seq,
                                 double rate, std::uint64_t seed, unsigned layer,
                                 program::Sequence &prog, const DebugContext &debug = {});

ASPEN_API std::vector<Tensor>
Rnn(Graph &graph, const RnnParams &params, bool reverse, const std::vector<Tensor> &initState,
    const StateSequence &stateSequence, const std::vector<Tensor> &inputs, const Tensor *interimIn,
    Tensor *interimOut, const std::vector<Tensor> &outputs, const std::vector<Tensor> &created,
    program::Sequence &prog, const LoopBodyType &loopFn, unsigned numShards, OptionFlags &options,
    const DebugContext &debug = {});

ASPEN_API std::vector<Tensor>
Rnn(Graph &graph, const RnnParams &params, const std::vector<Tensor> &initState,
    const StateSequence &stateSequence, const std::vector<Tensor> &inputs, const Tensor &interimIn,
    unsigned numTemps, program::Sequence &prog, const LoopBodyType &loopFn,
    const std::vector<Tensor> &gatherInputs, const GatherBodyType &gatherFn, unsigned numShards,
    unsigned stepsPerGather, OptionFlags &options, const DebugContext &debug = {});

} // namespace aspen::nn::rnn
