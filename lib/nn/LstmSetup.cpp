// LSTM parameters, options, layouts and the cell vertices (see LstmInternal.hpp).
#include "LstmInternal.hpp"

#include "NnWork.hpp"
#include "support/OptionParsing.hpp"

#include <aspen/Error.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

#include <cmath>

#include <algorithm>
#include <istream>
#include <ostream>

namespace aspen::nn::lstm {

namespace {
const std::vector<std::string> kGateNames{"forget", "input", "cell", "output"};
}

std::string asString(BasicLstmCellUnit unit) {
  return nn::work::gateName(kGateNames, static_cast<int>(unit), "BasicLstmCellUnit");
}

BasicLstmCellUnit parseBasicLstmCellUnit(const std::string &name) {
  return static_cast<BasicLstmCellUnit>(nn::work::parseGateName(kGateNames, name, "LSTM"));
}

std::vector<BasicLstmCellUnit> getDefaultBasicLstmCellOrder() {
  return {BASIC_LSTM_CELL_FORGET_GATE, BASIC_LSTM_CELL_INPUT_GATE, BASIC_LSTM_CELL_CANDIDATE,
          BASIC_LSTM_CELL_OUTPUT_GATE};
}

LstmParams::LstmParams(Type dataType, std::size_t batchSize, std::size_t timeSteps,
                       std::vector<std::size_t> layerSizes, NonLinearityType activation,
                       NonLinearityType recurrentActivation)
    : rnn(dataType, batchSize, timeSteps, layerSizes), dataType(dataType), batchSize(batchSize),
      timeSteps(timeSteps), layerSizes(std::move(layerSizes)), activation(activation),
      recurrentActivation(recurrentActivation) {}

LstmParams::LstmParams(Type dataType, std::size_t batchSize, std::size_t maxTimeSteps,
                       const Tensor &timeSteps, std::vector<std::size_t> layerSizes,
                       NonLinearityType activation, NonLinearityType recurrentActivation)
    : rnn(dataType, batchSize, maxTimeSteps, timeSteps, layerSizes), dataType(dataType),
      batchSize(batchSize), timeSteps(maxTimeSteps), layerSizes(std::move(layerSizes)),
      activation(activation), recurrentActivation(recurrentActivation) {}

Tensor LstmState::getAsTensor() const { return concat({output.expand({0}), cellState.expand({0})}, 0); }

namespace detail {

namespace {

bool isSoftmaxKind(NonLinearityType t) {
  return t == NonLinearityType::SOFTMAX || t == NonLinearityType::SOFTMAX_STABLE;
}

} // namespace

void checkParams(const LstmParams &params, const std::string &what) {
  rnn::detail::checkParams(params.rnn, what);
  if (params.cellOrder.size() != BASIC_LSTM_CELL_NUM_UNITS)
    throw invalid_option(fmt::format("{}: cellOrder must name each of the 4 gates (forget, input, "
                                     "cell, output) once, but has {} entries",
                                     what, params.cellOrder.size()));
  bool seen[4] = {false, false, false, false};
  for (BasicLstmCellUnit u : params.cellOrder) {
    const int i = static_cast<int>(u);
    if (i < 0 || i >= BASIC_LSTM_CELL_NUM_UNITS || seen[i])
      throw invalid_option(fmt::format("{}: cellOrder must name each of the 4 gates (forget, input, "
                                       "cell, output) once; gate {} is {}",
                                       what, i,
                                       i < 0 || i >= BASIC_LSTM_CELL_NUM_UNITS ? "not a gate"
                                                                               : "repeated"));
    seen[i] = true;
  }
  const NonLinearityType rec = params.recurrentActivation;
  if (!(rec == NonLinearityType::SIGMOID || rec == NonLinearityType::HARD_SIGMOID ||
        rec == NonLinearityType::TANH || isSoftmaxKind(rec)))
    throw invalid_option(fmt::format("{}: recurrentActivation {} is not allowed: a gate activation "
                                     "must be bounded (SIGMOID, HARD_SIGMOID, TANH, SOFTMAX or "
                                     "SOFTMAX_STABLE)",
                                     what, nn::asString(rec)));
  if (params.activation == NonLinearityType::SOFTMAX_SCALED)
    throw invalid_option(fmt::format("{}: activation SOFTMAX_SCALED is not allowed (its outputs are "
                                     "scaled); use SOFTMAX or SOFTMAX_STABLE",
                                     what));
  if (static_cast<int>(params.activation) < 0 ||
      static_cast<int>(params.activation) >= static_cast<int>(kNumNonLinearityTypes))
    throw invalid_option(fmt::format("{}: activation {} is not a NonLinearityType", what,
                                     static_cast<int>(params.activation)));
  const LstmParams::CellClip &clip = params.cellClip;
  if (clip.enabled && !(clip.min < clip.max))
    throw invalid_option(fmt::format("{}: cellClip's bounds must have min < max (neither NaN), "
                                     "not [{}, {}]",
                                     what, clip.min, clip.max));
  if (clip.enabled && (isSoftmaxKind(params.activation) || isSoftmaxKind(rec)))
    throw invalid_option(fmt::format("{}: cellClip needs element-wise activations, not {} and {}",
                                     what, nn::asString(params.activation), nn::asString(rec)));
  rnn::detail::checkActivationClip(params.activationClip.enabled,
                                   params.activationClip.threshold, params.activation, rec, what);
  const std::size_t H = params.rnn.layerSizes.size() > 1 ? params.rnn.layerSizes[1] : 0;
  if (params.projSize != 0 && params.projSize >= H)
    throw invalid_option(fmt::format("{}: projSize ({}) must be less than the hidden size H ({}); "
                                     "0 for no projection",
                                     what, params.projSize, H));
  if (params.dataType != params.rnn.dataType || params.batchSize != params.rnn.batchSize ||
      params.timeSteps != params.rnn.maxTimeSteps || params.layerSizes != params.rnn.layerSizes)
    throw invalid_option(fmt::format("{}: LstmParams' deprecated fields (dataType, batchSize, "
                                     "timeSteps, layerSizes) differ from params.rnn's; set both "
                                     "or use the constructors",
                                     what));
}

namespace {

// The options given or, for those not given, the layer's choices: shards from the memory the
// sequences need, code reuse with more than one shard, the input weighed before the loop when
// its [T, B, 4H] result fits the budget.
void chooseDefaults(const Graph &graph, const LstmParams &params,
                    std::optional<unsigned> numShards, std::optional<bool> codeReuse,
                    std::optional<bool> preCalcWeights, LstmOptions &o) {
  if (numShards) {
    o.numShards = *numShards;
  } else {
    const std::size_t H = params.rnn.layerSizes[1];
    o.numShards = rnn::detail::estimateShards(graph, params.rnn, params.rnn.layerSizes[0] + 8 * H,
                                              o.availableMemoryProportion);
  }
  o.codeReuse = codeReuse ? *codeReuse : o.numShards > 1;
  if (preCalcWeights) {
    o.preCalcWeights = *preCalcWeights;
    return;
  }
  // Weigh the whole input sequence in one product when its result, [T, B, 4H], fits the memory
  // budget: each step then multiplies by Wo alone, half the weights a step reads.
  const Target &target = graph.getTarget();
  const double weighted = double(params.rnn.maxTimeSteps) * params.rnn.batchSize * 4 *
                          params.rnn.layerSizes[1] * target.getTypeSize(params.dataType);
  const double budget =
      double(target.getNumTiles()) * target.getBytesPerTile() * o.availableMemoryProportion;
  o.preCalcWeights = params.doInputWeightCalc && weighted <= budget;
}

} // namespace

LstmOptions parseOptions(const Graph &graph, const LstmParams &params, const OptionFlags &options,
                         const std::string &what) {
  checkParams(params, what);
  LstmOptions o;
  o.accumulatorsType = params.dataType;
  std::optional<unsigned> numShards;
  std::optional<bool> codeReuse;
  const unsigned maxShards = static_cast<unsigned>(params.rnn.getMaxShards(graph));
  aspen::detail::OptionSpec spec(what);
  auto floatOrHalf = [](Type &target) {
    return [&target](const std::string &v) {
      if (v == "float")
        target = FLOAT;
      else if (v == "half")
        target = HALF;
      else
        return false;
      return true;
    };
  };
  std::optional<bool> preCalcWeights;
  spec.boolean("inferenceOnly", o.inferenceOnly)
      .add("preCalcWeights", "true or false",
           [&](const std::string &v) {
             if (v != "true" && v != "false" && v != "1" && v != "0")
               return false;
             preCalcWeights = v == "true" || v == "1";
             return true;
           })
      .add("partialsType", "float or half", floatOrHalf(o.partialsType))
      .add("weightAccumulatorsType", "float or half", floatOrHalf(o.accumulatorsType))
      .enumeration("recomputationMode", o.recomputation,
                   {{"none", Recomputation::None},
                    {"cellAndTanh", Recomputation::CellAndTanh},
                    {"full", Recomputation::Full}})
      .number("availableMemoryProportion", o.availableMemoryProportion, 1e-9, 1.0)
      .boolean("disableWUPartialInterleaving", o.disableWUPartialInterleaving);
  rnn::detail::addShardOptions(spec, maxShards, numShards, codeReuse);
  rnn::detail::addStepMethodOption(spec, o.stepMethod);
  rnn::detail::addPersistentOptions(spec, o.persistent);
  rnn::detail::addDirectionOption(spec, o.reverse);
  rnn::detail::addStepsPerWUOption(spec, o.stepsPerWU);
  rnn::detail::addHardSigmoidGradientOption(spec, o.hardSigmoidGradient);
  spec.parse(options);
  if (o.partialsType == HALF && params.dataType == FLOAT)
    throw invalid_option(fmt::format("{}: partialsType half needs half data, but dataType is float",
                                     what));
  chooseDefaults(graph, params, numShards, codeReuse, preCalcWeights, o);
  rnn::detail::refuseFusedForms(perStepOnly(params), o.stepMethod, o.persistent, what);
  usesFusedStep(graph, params, o, what); // stepMethod fused where it does not apply: refused
  // rnnPersistentKernel true where the forward cannot run persistently: refused (the backward
  // functions check their loop's own limits).
  persistentChoice(graph, params, o, what);
  return o;
}

OptionFlags matMulOptions(const LstmOptions &opts, const char *pass) {
  return {{"partialsType", opts.partialsType == HALF ? "half" : "float"},
          {"availableMemoryProportion", fmt::format("{}", opts.availableMemoryProportion)},
          {"fullyConnectedPass", opts.inferenceOnly ? "INFERENCE_FWD" : pass}};
}

std::array<unsigned, 4> slotsOf(const LstmParams &params) {
  std::array<unsigned, 4> slot{};
  for (unsigned s = 0; s < 4; ++s)
    slot[static_cast<unsigned>(params.cellOrder[s])] = s;
  return slot;
}

InterLayout interLayout(const LstmParams &params, Recomputation mode) {
  InterLayout l;
  l.saveMode = mode == Recomputation::None ? 2 : mode == Recomputation::CellAndTanh ? 1 : 0;
  l.saveM = params.projSize != 0; // the projection's gradient needs m_t
  l.saveH = !params.outputFullSequence;
  return l;
}

bool rawCandidate(const LstmParams &params) {
  return gradientTakesInput(params.activation) || params.cellClip.enabled ||
         params.activationClip.enabled;
}

std::string perStepOnly(const LstmParams &params) {
  if (params.projSize != 0)
    return fmt::format("a projected layer (projSize {})", params.projSize);
  if (params.activationClip.enabled)
    return "a layer with activationClip";
  return {};
}

void setRawAndClip(Graph &graph, const VertexRef &v, const LstmParams &params) {
  graph.setInitialValue(v["rawCandidate"], rawCandidate(params));
  const LstmParams::CellClip &clip = params.cellClip;
  const Type type = params.rnn.dataType;
  graph.setInitialValue(v["cellClipMode"], !clip.enabled ? 0u : clip.propagateNan ? 1u : 2u);
  graph.setInitialValue(v["cellClipMin"], clip.enabled ? rnn::detail::roundedTo(type, clip.min)
                                                      : 0.0f);
  graph.setInitialValue(v["cellClipMax"], clip.enabled ? rnn::detail::roundedTo(type, clip.max)
                                                      : 0.0f);
}

namespace {

// The activationClip field of the cell vertices (LstmCellFwd, Bwd, Recompute): 0 for none.
void setActivationClip(Graph &graph, const VertexRef &v, const LstmParams &params) {
  const LstmParams::ActivationClip &act = params.activationClip;
  graph.setInitialValue(v["activationClip"],
                        act.enabled ? rnn::detail::roundedTo(params.rnn.dataType, act.threshold)
                                    : 0.0f);
}

} // namespace

Tensor asMatrix(const Tensor &weights) {
  return weights.dimShuffle({1, 0, 2}).reshape({weights.dim(1), 4 * weights.dim(2)});
}

Tensor fromMatrix(const Tensor &matrix) {
  return matrix.reshape({matrix.dim(0), 4, matrix.dim(1) / 4}).dimShuffle({1, 0, 2});
}

namespace {

// 0, 1, ..., n-1: every saved intermediate of a row.
std::vector<unsigned> allSlots(unsigned n) {
  std::vector<unsigned> v(n);
  for (unsigned i = 0; i < n; ++i)
    v[i] = i;
  return v;
}

// Per tile, the rows of `rows` ([B, H]) the tile's vertex works on.
std::vector<std::vector<Interval>> cellRows(const Graph &graph, const Tensor &rows) {
  return nn::work::rowsByTile(graph, rows);
}

} // namespace

void connectCellFwd(Graph &graph, const LstmParams &params, VertexRef v,
                    const std::vector<Interval> &rows, const Tensor &pre, const Tensor &preIn,
                    const Tensor &bias, const Tensor &cState, const Tensor &hState,
                    const Tensor &out, const Tensor &inter, const InterLayout &layout,
                    const Tensor &mask) {
  const auto slot = slotsOf(params);
  const std::size_t H = params.rnn.layerSizes[1];
  const Tensor preGates = pre.reshape({pre.dim(0), 4, H}).dimShuffle({1, 0, 2}); // [4, B, H]
  const std::vector<unsigned> slotOrder{slot[0], slot[1], slot[2], slot[3]};
  graph.connect(v["gates"], nn::work::gateSegments(preGates, rows, slotOrder));
  graph.connect(v["gatesIn"],
                preIn.valid() ? nn::work::gateSegments(
                                    preIn.reshape({pre.dim(0), 4, H}).dimShuffle({1, 0, 2}), rows,
                                    slotOrder)
                              : nn::work::gateSegments(preGates, rows, slotOrder));
  graph.setInitialValue(v["hasGatesIn"], preIn.valid());
  std::vector<Tensor> biasSegments;
  for (unsigned u = 0; u < 4; ++u)
    biasSegments.push_back(bias[slot[u]]);
  graph.connect(v["bias"], biasSegments);
  graph.connect(v["cState"], nn::work::rowList(cState, rows));
  graph.connect(v["hState"], nn::work::rowList(hState, rows));
  graph.connect(v["out"], nn::work::rowList(out, rows));
  graph.connect(v["inter"], layout.count() == 0
                                ? std::vector<Tensor>{}
                                : nn::work::gateSegments(inter, rows, allSlots(layout.count())));
  graph.connect(v["mask"], nn::work::rowElements(mask, rows));
  graph.setInitialValue(v["activation"], static_cast<unsigned>(params.activation));
  graph.setInitialValue(v["recurrentActivation"],
                        static_cast<unsigned>(params.recurrentActivation));
  graph.setInitialValue(v["saveMode"], layout.saveMode);
  graph.setInitialValue(v["saveH"], layout.saveH);
  setRawAndClip(graph, v, params);
  setActivationClip(graph, v, params);
}

void connectCellBwd(Graph &graph, const LstmParams &params, const LstmOptions &opts, VertexRef v,
                    const std::vector<Interval> &rows, const Tensor &fwd, const Tensor &cell,
                    bool rawCell, const Tensor &outGrad, const Tensor &dhMM,
                    const Tensor &dhCarry, const Tensor &dcState, const Tensor &delta,
                    const Tensor &mask) {
  const auto slot = slotsOf(params);
  const std::vector<unsigned> slotOrder{slot[0], slot[1], slot[2], slot[3]};
  graph.connect(v["fwd"], nn::work::gateSegments(fwd, rows, std::vector<unsigned>{0, 1, 2, 3}));
  graph.connect(v["cell"], nn::work::gateSegments(cell, rows, std::vector<unsigned>{0, 1}));
  graph.connect(v["outGrad"], nn::work::rowList(outGrad.valid() ? outGrad : dhCarry, rows));
  graph.connect(v["dhMM"], nn::work::rowList(dhMM, rows));
  graph.connect(v["dhCarry"], nn::work::rowList(dhCarry, rows));
  graph.connect(v["dcState"], nn::work::rowList(dcState, rows));
  graph.connect(v["delta"], nn::work::gateSegments(delta, rows, slotOrder));
  graph.connect(v["mask"], nn::work::rowElements(mask, rows));
  graph.setInitialValue(v["activation"], static_cast<unsigned>(params.activation));
  graph.setInitialValue(v["recurrentActivation"],
                        static_cast<unsigned>(params.recurrentActivation));
  graph.setInitialValue(v["rawCell"], rawCell);
  setRawAndClip(graph, v, params);
  setActivationClip(graph, v, params);
  graph.setInitialValue(v["hasOutGrad"], outGrad.valid());
  graph.setInitialValue(v["popnnHardSigmoidGrad"],
                        opts.hardSigmoidGradient == NonLinearityGradient::Popnn);
}

void connectMaskedRows(Graph &graph, VertexRef v, const std::vector<Interval> &rows,
                       const Tensor &from, const Tensor &to, const Tensor &mask) {
  graph.connect(v["from"], nn::work::rowList(from, rows));
  graph.connect(v["to"], nn::work::rowList(to, rows));
  graph.connect(v["mask"], nn::work::rowElements(mask, rows));
}

void connectProjectionGrad(Graph &graph, VertexRef v, const std::vector<Interval> &rows,
                           const Tensor &outGrad, const Tensor &dhMM, const Tensor &dhCarry,
                           const Tensor &dh, const Tensor &mask) {
  graph.connect(v["outGrad"], nn::work::rowList(outGrad.valid() ? outGrad : dhMM, rows));
  graph.connect(v["dhMM"], nn::work::rowList(dhMM, rows));
  graph.connect(v["dhCarry"], nn::work::rowList(dhCarry, rows));
  graph.connect(v["dh"], nn::work::rowList(dh, rows));
  graph.connect(v["mask"], nn::work::rowElements(mask, rows));
  graph.setInitialValue(v["hasOutGrad"], outGrad.valid());
}

void addCellRecompute(Graph &graph, const LstmParams &params, ComputeSet cs, const Tensor &fwd,
                      const Tensor &cState, const Tensor &cPrev, const Tensor &cOut,
                      const Tensor &mask) {
  const auto tiles = cellRows(graph, cState);
  const std::string type = util::templateVertex("aspen::nn::LstmCellRecompute", params.dataType);
  nn::work::addRowVertices(graph, cs, type, tiles, [&](VertexRef v, const std::vector<Interval> &rows) {
    graph.connect(v["fwd"], nn::work::gateSegments(fwd, rows, std::vector<unsigned>{0, 1, 2, 3}));
    graph.connect(v["cState"], nn::work::rowList(cState, rows));
    graph.connect(v["cPrev"], nn::work::rowList(cPrev, rows));
    graph.connect(v["cOut"], nn::work::rowList(cOut, rows));
    graph.connect(v["mask"], nn::work::rowElements(mask, rows));
    graph.setInitialValue(v["activation"], static_cast<unsigned>(params.activation));
    graph.setInitialValue(v["recurrentActivation"],
                          static_cast<unsigned>(params.recurrentActivation));
    setRawAndClip(graph, v, params);
    setActivationClip(graph, v, params);
  });
}

} // namespace detail
} // namespace aspen::nn::lstm
