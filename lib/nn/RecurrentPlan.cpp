#include <aspen/nn/RecurrentPlan.hpp>

#include "GruInternal.hpp"
#include "LstmInternal.hpp"

#include <fmt/format.h>

namespace aspen::nn {

std::string RecurrentPlan::toJson() const {
  return fmt::format("{{\"numShards\": {}, \"codeReuse\": {}, \"preCalcWeights\": {}, "
                     "\"stepsPerWU\": {}, \"recomputation\": \"{}\", \"partialsType\": \"{}\", "
                     "\"availableMemoryProportion\": {}}}",
                     numShards, codeReuse, preCalcWeights, stepsPerWU, recomputation,
                     partialsType, availableMemoryProportion);
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
  return plan;
}
} // namespace lstm

namespace gru {
RecurrentPlan getPlan(const Graph &graph, const GruParams &params, const OptionFlags &options) {
  const detail::GruOptions o = detail::parseOptions(graph, params, options, "gru::getPlan");
  RecurrentPlan plan = commonPlan(o);
  plan.stepsPerWU = detail::chooseStepsPerWU(graph, params, o);
  return plan;
}
} // namespace gru

} // namespace aspen::nn
