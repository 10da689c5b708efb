// What the LSTM and GRU builders decide about a layer from its parameters, its options and the
// graph's target, before anything is built: the same decisions lstmFwd/lstmBwd/lstmBwdWithWU
// (and the GRU's) take, so a plan can be inspected, printed and compared (aspen-plan shows it).
//
// getPlan(graph, params, options) reads the layer's options exactly as its builders do (unknown
// keys and bad values raise invalid_option; bad params shape_error/type_error/invalid_option),
// and adds nothing to the graph. The options and what they choose: docs/recurrent.md,
// "Parameters and options".
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/nn/Gru.hpp>
#include <aspen/nn/Lstm.hpp>

#include <cstddef>
#include <string>

namespace aspen::nn {

struct ASPEN_API RecurrentPlan {
  // Time-axis shards: option numShards, else estimated from the memory budget.
  unsigned numShards = 1;
  // One step body for every shard (option rnnCodeReuse; default: with more than one shard).
  bool codeReuse = false;
  // LSTM: the input weighed for all steps in one product before the loop (preCalcWeights).
  bool preCalcWeights = false;
  // The weight update of lstmBwdWithWU / gruBwdWithWU every stepsPerWU backward steps; 0: in one
  // pass after the backward loop (option rnnStepsPerWU, else the largest window that fits).
  unsigned stepsPerWU = 0;
  // LSTM: option recomputationMode (none, cellAndTanh, full); a GRU recomputes nothing.
  std::string recomputation = "none";
  std::string partialsType = "float";
  double availableMemoryProportion = 0.6;
  // The forward loop as one co-resident launch that keeps the weights on chip (option
  // rnnPersistentKernel): whether it is taken, its launch, its arithmetic (option
  // rnnPersistentArithmetic: "exact" or "tensor"), the cost model's estimated seconds a step of
  // the per-step and the persistent loop (0 where no launch was planned), and why the per-step
  // path runs when it does.
  bool persistent = false;
  unsigned persistentBlocks = 0, persistentThreadsPerBlock = 0;
  std::size_t persistentSharedBytes = 0; // a block's: staged h_(t-1), and the weights if there
  // Where the weights stay: all in the warps' registers (the tensor variant), or in shared
  // memory (the exact variant's floats; the tensor variant's fragments past the registers).
  bool persistentWeightsInSharedMemory = false;
  bool persistentWeightsInRegisters = false;
  std::string persistentArithmetic = "exact";
  double perStepSecondsEstimate = 0, persistentSecondsEstimate = 0;
  std::string persistentRefusal;

  // {"numShards": 1, "codeReuse": false, "preCalcWeights": true, "stepsPerWU": 0,
  //  "recomputation": "none", "partialsType": "float", "availableMemoryProportion": 0.6,
  //  "persistent": {"use": false, "blocks": 0, "threadsPerBlock": 0, "sharedBytes": 0,
  //                 "weightsInSharedMemory": false, "weightsInRegisters": false,
  //                 "arithmetic": "exact",
  //                 "stepSeconds": {"perStep": 1.2e-05, "persistent": 3.4e-06},
  //                 "refusal": "..."}}
  std::string toJson() const;
};

namespace lstm {
ASPEN_API RecurrentPlan getPlan(const Graph &graph, const LstmParams &params,
                                const OptionFlags &options = {});
} // namespace lstm

namespace gru {
ASPEN_API RecurrentPlan getPlan(const Graph &graph, const GruParams &params,
                                const OptionFlags &options = {});
} // namespace gru

} // namespace aspen::nn
