#include <aspen/nn/RecurrentPlan.hpp>

#include "GruInternal.hpp"
#include "LstmInternal.hpp"

#include <fmt/format.h>

namespace aspen::nn {

std::string RecurrentPlan::toJson() const {
  std::string refusal; // a JSON string's contents
  for (char ch : persistentRefusal) {
    if (ch == '"' || ch == '\\')
      refusal += '\\';
    refusal += ch;
  }
  return fmt::format("{{\"numShards\": {}, \"codeReuse\": {}, \"preCalcWeights\": {}, "
                     "\"stepsPerWU\": {}, \"recomputation\": \"{}\", \"partialsType\": \"{}\", "
                     "\"availableMemoryProportion\": {}, \"persistent\": {{\"use\": {}, "
                     "\"blocks\": {}, \"threadsPerBlock\": {}, \"sharedBytes\": {}, "
                     "\"weightsInSharedMemory\": {}, \"weightsInRegisters\": {}, "
                     "\"arithmetic\": \"{}\", "
                     "\"stepSeconds\": {{\"perStep\": {:.6g}, \"persistent\": {:.6g}}}, "
                     "\"refusal\": \"{}\"}}}}",
                     numShards, codeReuse, preCalcWeights, stepsPerWU, recomputation,
                     partialsType, availableMemoryProportion, persistent, persistentBlocks,
                     persistentThreadsPerBlock, persistentSharedBytes,
                     persistentWeightsInSharedMemory, persistentWeightsInRegisters,
                     persistentArithmetic,
                     perStepSecondsEstimate, persistentSecondsEstimate, refusal);
}

namespace {
// What the LSTM's and the GRU's options have in common.
template <class Options> RecurrentPlan commonPlan(const Options &o) {
  RecurrentPlan plan;
  plan.numShards = o.numShards;
  plan.codeReuse = o.codeReuse;
  plan.partialsType = o.partialsType == HALF ? "half" : "float";
  plan.availableMemoryProportion = o.availableMemoryProportion;
  return plan;
}
// What the persistent loop's choice says, for the LSTM's and the GRU's plans alike.
void setPersistent(RecurrentPlan &plan, const nn::rnn::detail::PersistentChoice &persistent) {
  plan.persistent = persistent.use;
  plan.persistentBlocks = persistent.launch.blocks;
  plan.persistentThreadsPerBlock = persistent.launch.threadsPerBlock;
  plan.persistentSharedBytes = persistent.launch.sharedBytes;
  // The tensor variant's fragments past the registers are in shared memory too.
  plan.persistentWeightsInSharedMemory =
      persistent.weightsInShared ||
      (persistent.tensor && !persistent.weightsInRegisters && persistent.launch.blocks != 0);
  plan.persistentWeightsInRegisters = persistent.weightsInRegisters;
  plan.persistentArithmetic = persistent.tensor ? "tensor" : "exact";
  plan.perStepSecondsEstimate = persistent.perStepSeconds;
  plan.persistentSecondsEstimate = persistent.persistentSeconds;
  plan.persistentRefusal = persistent.refusal;
}
} // namespace

namespace lstm {
RecurrentPlan getPlan(const Graph &graph, const LstmParams &params, const OptionFlags &options) {
  const detail::LstmOptions o = detail::parseOptions(graph, params, options, "lstm::getPlan");
  RecurrentPlan plan = commonPlan(o);
  plan.preCalcWeights = o.preCalcWeights;
  plan.stepsPerWU = detail::chooseStepsPerWU(graph, params, o);
  plan.recomputation = o.recomputation == detail::Recomputation::None          ? "none"
                       : o.recomputation == detail::Recomputation::CellAndTanh ? "cellAndTanh"
                                                                               : "full";
  const detail::PersistentChoice persistent =
      detail::persistentChoice(graph, params, o, "lstm::getPlan");
  setPersistent(plan, persistent);
  if (persistent.use) // the kernel weighs the input before its launch
    plan.preCalcWeights = params.doInputWeightCalc;
  return plan;
}
} // namespace lstm

namespace gru {
RecurrentPlan getPlan(const Graph &graph, const GruParams &params, const OptionFlags &options) {
  const detail::GruOptions o = detail::parseOptions(graph, params, options, "gru::getPlan");
  RecurrentPlan plan = commonPlan(o);
  plan.stepsPerWU = detail::chooseStepsPerWU(graph, params, o);
  const detail::PersistentChoice persistent =
      detail::persistentChoice(graph, params, o, "gru::getPlan");
  setPersistent(plan, persistent);
  return plan;
}
} // namespace gru

} // namespace aspen::nn
