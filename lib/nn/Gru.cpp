// aspen::nn::gru: parameters, options, tensor creation, FLOP counts and the forward pass.
//
// The input is weighted for all steps in one product before the loop, XW = X . Wi ([T, B, 3H]).
// A forward step (rnn loop, state h):
//   resetAfter false: [h.Wo_r | h.Wo_u] (one product), GruCellA -> r, u, r*h; (r*h).Wo_c;
//                     GruCellB -> c, h
//   resetAfter true:  h.Wo (one product), GruCellResetAfter -> r, u, n, c, h
// or, with stepMethod fused (GruFused.cpp), the same cells with the products fused into them
// on weights packed once (program::Cached).
#include "CellSteps.hpp"
#include "GruInternal.hpp"

#include "NnWork.hpp"
#include "support/OptionParsing.hpp"

#include <aspen/Error.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/Zero.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include <functional>
#include <istream>
#include <optional>
#include <ostream>

namespace aspen::nn::gru {

using program::Copy;
using program::Execute;
using program::Sequence;

namespace {
const std::vector<std::string> kGateNames{"reset", "update", "cell"};
}

std::string asString(BasicGruCellUnit unit) {
  return nn::work::gateName(kGateNames, static_cast<int>(unit), "BasicGruCellUnit");
}

BasicGruCellUnit parseBasicGruCellUnit(const std::string &name) {
  return static_cast<BasicGruCellUnit>(nn::work::parseGateName(kGateNames, name, "GRU"));
}

std::vector<BasicGruCellUnit> getDefaultBasicGruCellOrder() {
  return {BASIC_GRU_CELL_RESET_GATE, BASIC_GRU_CELL_UPDATE_GATE, BASIC_GRU_CELL_CANDIDATE};
}

GruParams::GruParams(Type dataType, std::size_t batchSize, std::size_t timeSteps,
                     std::vector<std::size_t> layerSizes, NonLinearityType activation,
                     NonLinearityType recurrentActivation)
    : rnn(dataType, batchSize, timeSteps, layerSizes), dataType(dataType), batchSize(batchSize),
      timeSteps(timeSteps), layerSizes(std::move(layerSizes)), activation(activation),
      recurrentActivation(recurrentActivation) {}

GruParams::GruParams(Type dataType, std::size_t batchSize, std::size_t maxTimeSteps,
                     const Tensor &timeSteps, std::vector<std::size_t> layerSizes,
                     NonLinearityType activation, NonLinearityType recurrentActivation)
    : rnn(dataType, batchSize, maxTimeSteps, timeSteps, layerSizes), dataType(dataType),
      batchSize(batchSize), timeSteps(maxTimeSteps), layerSizes(std::move(layerSizes)),
      activation(activation), recurrentActivation(recurrentActivation) {}

namespace detail {

void checkParams(const GruParams &params, const std::string &what) {
  rnn::detail::checkParams(params.rnn, what);
  if (params.cellOrder.size() != BASIC_GRU_CELL_NUM_UNITS)
    throw invalid_option(fmt::format("{}: cellOrder must name each of the 3 gates (reset, update, "
                                     "cell) once, but has {} entries",
                                     what, params.cellOrder.size()));
  bool seen[3] = {false, false, false};
  for (BasicGruCellUnit u : params.cellOrder) {
    const int i = static_cast<int>(u);
    if (i < 0 || i >= BASIC_GRU_CELL_NUM_UNITS || seen[i])
      throw invalid_option(fmt::format("{}: cellOrder must name each of the 3 gates (reset, "
                                       "update, cell) once; gate {} is {}",
                                       what, i,
                                       i < 0 || i >= BASIC_GRU_CELL_NUM_UNITS ? "not a gate"
                                                                              : "repeated"));
    seen[i] = true;
  }
  const NonLinearityType rec = params.recurrentActivation;
  if (!(rec == NonLinearityType::SIGMOID || rec == NonLinearityType::HARD_SIGMOID ||
        rec == NonLinearityType::TANH || rec == NonLinearityType::SOFTMAX ||
        rec == NonLinearityType::SOFTMAX_STABLE))
    throw invalid_option(fmt::format("{}: recurrentActivation {} is not allowed: a gate activation "
                                     "must be bounded (SIGMOID, HARD_SIGMOID, TANH, SOFTMAX or "
                                     "SOFTMAX_STABLE)",
                                     what, nn::asString(rec)));
  if (params.activation == NonLinearityType::SOFTMAX_SCALED)
    throw invalid_option(fmt::format("{}: activation SOFTMAX_SCALED is not allowed (its outputs are "
                                     "scaled); use SOFTMAX or SOFTMAX_STABLE",
                                     what));
  rnn::detail::checkActivationClip(params.activationClip.enabled,
                                   params.activationClip.threshold, params.activation, rec, what);
  if (params.dataType != params.rnn.dataType || params.batchSize != params.rnn.batchSize ||
      params.timeSteps != params.rnn.maxTimeSteps || params.layerSizes != params.rnn.layerSizes)
    throw invalid_option(fmt::format("{}: GruParams' deprecated fields (dataType, batchSize, "
                                     "timeSteps, layerSizes) differ from params.rnn's; set both "
                                     "or use the constructors",
                                     what));
}

GruOptions parseOptions(const Graph &graph, const GruParams &params, const OptionFlags &options,
                        const std::string &what) {
  checkParams(params, what);
  GruOptions o;
  std::optional<unsigned> numShards;
  std::optional<bool> codeReuse;
  const unsigned maxShards = static_cast<unsigned>(params.rnn.getMaxShards(graph));
  aspen::detail::OptionSpec spec(what);
  spec.boolean("inferenceOnly", o.inferenceOnly)
      .enumeration("partialsType", o.partialsType, {{"float", FLOAT}, {"half", HALF}})
      .number("availableMemoryProportion", o.availableMemoryProportion, 1e-9, 1.0);
  rnn::detail::addShardOptions(spec, maxShards, numShards, codeReuse);
  rnn::detail::addStepsPerWUOption(spec, o.stepsPerWU);
  rnn::detail::addHardSigmoidGradientOption(spec, o.hardSigmoidGradient);
  rnn::detail::addStepMethodOption(spec, o.stepMethod);
  rnn::detail::addPersistentOptions(spec, o.persistent);
  rnn::detail::addDirectionOption(spec, o.reverse);
  spec.boolean("preCalcWeights", o.preCalcWeights);
  spec.parse(options);
  if (o.partialsType == HALF && params.dataType == FLOAT)
    throw invalid_option(fmt::format("{}: partialsType half needs half data, but dataType is float",
                                     what));
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  o.numShards = numShards ? *numShards
                          : rnn::detail::estimateShards(graph, params.rnn, I + 8 * H,
                                                        o.availableMemoryProportion);
  o.codeReuse = codeReuse ? *codeReuse : o.numShards > 1;
  rnn::detail::refuseFusedForms(perStepOnly(params), o.stepMethod, o.persistent, what);
  usesFusedStep(graph, params, o, what); // stepMethod fused where it does not apply: refused
  persistentChoice(graph, params, o, what); // rnnPersistentKernel true where it cannot: refused
  return o;
}

OptionFlags matMulOptions(const GruOptions &opts, const char *pass) {
  return {{"partialsType", opts.partialsType == HALF ? "half" : "float"},
          {"availableMemoryProportion", fmt::format("{}", opts.availableMemoryProportion)},
          {"fullyConnectedPass", opts.inferenceOnly ? "INFERENCE_FWD" : pass}};
}

GruParams withRealTimeSteps(const GruParams &params, const Tensor &realTimeSteps,
                            const OptionFlags &options, const std::string &what) {
  if (params.rnn.varTimeSteps.valid())
    throw invalid_option(what + ": realTimeSteps was given, but params already has timeSteps; "
                                "give the lengths once");
  const std::string *direction = options.find("direction");
  if (direction && *direction == "reverse")
    throw invalid_option(what + ": direction reverse takes the lengths in params (GruParams' "
                                "timeSteps), not as realTimeSteps: gruWU and auGruWU, which have "
                                "no realTimeSteps argument, need them to pair each row's steps");
  GruParams p = params;
  p.rnn.varTimeSteps = realTimeSteps;
  return p;
}

std::array<unsigned, 3> slotsOf(const GruParams &params) {
  std::array<unsigned, 3> slot{};
  for (unsigned s = 0; s < 3; ++s)
    slot[static_cast<unsigned>(params.cellOrder[s])] = s;
  return slot;
}

Tensor canonicalGates(const GruParams &params, const Tensor &t) {
  const auto slot = slotsOf(params);
  return concat({t.slice(slot[0], slot[0] + 1, 0), t.slice(slot[1], slot[1] + 1, 0),
                 t.slice(slot[2], slot[2] + 1, 0)},
                0);
}

Tensor slotGates(const GruParams &params, const Tensor &t) {
  std::vector<Tensor> parts;
  for (BasicGruCellUnit u : params.cellOrder) {
    const unsigned g = static_cast<unsigned>(u);
    parts.push_back(t.slice(g, g + 1, 0));
  }
  return concat(parts, 0);
}

Tensor canonicalMatrix(Graph &graph, const GruParams &params, const Tensor &weights,
                       bool transposed, Sequence &prog, const DebugContext &debug) {
  const Tensor canon = canonicalGates(params, weights); // [3, n, H]
  const std::size_t n = weights.dim(1), H = weights.dim(2);
  const Tensor matrix = canon.dimShuffle({1, 0, 2}).reshape({n, 3 * H}); // [n, 3H]
  Tensor out = graph.addVariable(weights.elementType(),
                                 transposed ? std::vector<std::size_t>{3 * H, n}
                                            : std::vector<std::size_t>{n, 3 * H},
                                 debug);
  util::mapTensorLinearly(graph, out);
  prog.add(Copy(transposed ? matrix.transpose() : matrix, out));
  return out;
}

InterLayout interLayout(const GruParams &params) {
  return {!params.outputFullSequence, params.resetAfter, params.activationClip.enabled};
}

bool rawCandidate(const GruParams &params) {
  return gradientTakesInput(params.activation) || params.activationClip.enabled;
}

std::string perStepOnly(const GruParams &params) {
  return params.activationClip.enabled ? "a layer with activationClip" : "";
}

float activationClipOf(const GruParams &params) {
  return params.activationClip.enabled
             ? rnn::detail::roundedTo(params.rnn.dataType, params.activationClip.threshold)
             : 0.0f;
}

void checkTensor(const Tensor &t, const std::vector<std::size_t> &shape, Type type,
                 const std::string &what) {
  if (!t.valid())
    throw shape_error(what + " is not a valid tensor");
  if (t.shape() != shape)
    throw shape_error(fmt::format("{} must have shape {{{}}}, not {}", what, fmt::join(shape, ","),
                                  t.shapeToString()));
  if (t.elementType() != type)
    throw type_error(fmt::format("{} must be of type {}, not {}", what, type.toString(),
                                 t.elementType().toString()));
}

void checkWeights(const GruParams &params, const GruWeights &w, const std::string &what) {
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const Type t = params.rnn.dataType;
  checkTensor(w.inputWeights, {3, I, H}, t, what + ": weights.inputWeights");
  checkTensor(w.outputWeights, {3, H, H}, t, what + ": weights.outputWeights");
  checkTensor(w.biases,
              params.resetAfter ? std::vector<std::size_t>{3, 2, H}
                                : std::vector<std::size_t>{3, H},
              t, what + ": weights.biases");
}

} // namespace detail

std::uint64_t getBasicGruCellFwdFlops(const GruParams &params) {
  const std::uint64_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::uint64_t I = params.rnn.layerSizes.at(0), H = params.rnn.layerSizes.at(1);
  return T * B * (2 * 3 * H * (I + H) + 3 * H + 4 * H);
}

std::uint64_t getBasicGruCellBwdFlops(const GruParams &params) {
  const std::uint64_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::uint64_t I = params.rnn.layerSizes.at(0), H = params.rnn.layerSizes.at(1);
  return T * B * (2 * 3 * H * (H + (params.calcInputGradients ? I : 0)) + 10 * H);
}

std::uint64_t getBasicGruCellWuFlops(const GruParams &params) {
  const std::uint64_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::uint64_t I = params.rnn.layerSizes.at(0), H = params.rnn.layerSizes.at(1);
  return T * B * (2 * 3 * H * (I + H) + (params.resetAfter ? 6 : 3) * H);
}

Tensor createInput(Graph &graph, const GruParams &params, const DebugContext &debug,
                   const OptionFlags &options, linalg::PlanningCache *) {
  const auto opts = detail::parseOptions(graph, params, options, "gru::createInput");
  return rnn::createInputTensor(graph, params.rnn, opts.numShards, debug);
}

Tensor createInitialState(Graph &graph, const GruParams &params, const DebugContext &debug,
                          const OptionFlags &options, linalg::PlanningCache *) {
  const auto opts = detail::parseOptions(graph, params, options, "gru::createInitialState");
  return rnn::createInitialState(graph, params.rnn, true, 1, opts.numShards, debug)[0];
}

void zeroInitialState(Graph &graph, const Tensor &initialState, Sequence &prog,
                      const DebugContext &debug) {
  ops::zero(graph, initialState, prog, debug);
}

std::pair<Tensor, Tensor> createWeightsKernel(Graph &graph, const GruParams &params,
                                              const DebugContext &debug,
                                              const OptionFlags &options,
                                              linalg::PlanningCache *) {
  detail::parseOptions(graph, params, options, "gru::createWeightsKernel");
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  Tensor wi = graph.addVariable(params.rnn.dataType, {3, I, H}, {debug, "inputWeights"});
  Tensor wo = graph.addVariable(params.rnn.dataType, {3, H, H}, {debug, "outputWeights"});
  util::mapTensorLinearly(graph, wi);
  util::mapTensorLinearly(graph, wo);
  return {wi, wo};
}

Tensor createWeightsBiases(Graph &graph, const GruParams &params, const DebugContext &debug,
                           const OptionFlags &options, linalg::PlanningCache *) {
  detail::parseOptions(graph, params, options, "gru::createWeightsBiases");
  const std::size_t H = params.rnn.layerSizes[1];
  Tensor b = graph.addVariable(params.rnn.dataType,
                               params.resetAfter ? std::vector<std::size_t>{3, 2, H}
                                                 : std::vector<std::size_t>{3, H},
                               {debug, "biases"});
  util::mapTensorLinearly(graph, b);
  return b;
}

GruWeights createWeights(Graph &graph, const GruParams &params, const DebugContext &debug,
                         const OptionFlags &options, linalg::PlanningCache *cache) {
  auto [wi, wo] = createWeightsKernel(graph, params, debug, options, cache);
  return {wi, wo, createWeightsBiases(graph, params, debug, options, cache)};
}

Tensor createAttention(Graph &graph, const GruParams &params, const DebugContext &debug,
                       const OptionFlags &options) {
  detail::parseOptions(graph, params, options, "gru::createAttention");
  Tensor a = graph.addVariable(params.rnn.dataType,
                               {params.rnn.batchSize, params.rnn.maxTimeSteps}, debug);
  util::mapTensorLinearly(graph, a);
  return a;
}

namespace detail {

namespace {

using rnn::detail::addStep;

// [B, 3H] canonical columns as [3, B, H].
Tensor gatesOf(const Tensor &rows3) {
  return rows3.reshape({rows3.dim(0), 3, rows3.dim(1) / 3}).dimShuffle({1, 0, 2});
}

} // namespace

// Adds one cell vertex per tile owning rows of `state`; connect(v, the tile's rows).
void addCellVertices(Graph &graph, ComputeSet cs, const std::string &type, const Tensor &state,
                     const std::function<void(VertexRef, const std::vector<Interval> &)> &connect) {
  nn::work::addRowVertices(graph, cs, type, nn::work::rowsByTile(graph, state), connect);
}

FwdPlan prepareForward(Graph &graph, const GruParams &params, const GruOptions &opts,
                       const Tensor &in, const GruWeights &weights, Tensor *intermediates,
                       const Tensor *attention, Sequence &prog, const DebugContext &debug,
                       linalg::PlanningCache *cache) {
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const Type t = params.rnn.dataType;
  FwdPlan p;
  p.mmOptions = matMulOptions(opts, "TRAINING_FWD");
  p.layout = interLayout(params);
  p.xw = rnn::detail::addSequence(graph, t, T, B, 3 * H, opts.numShards, {debug, "xw"});
  if (weighsInStep(graph, params, opts)) { // the fused steps write xw step by step
    p.stepInput = in;
  } else {
    const Tensor wi = canonicalMatrix(graph, params, weights.inputWeights, false, prog,
                                      {debug, "inputWeights"});
    linalg::matMulWithOutput(graph, in.reshape({T * B, I}), wi, p.xw.reshape({T * B, 3 * H}),
                             prog, {debug, "weighInput"}, p.mmOptions, cache);
  }
  const Tensor canonBias = canonicalGates(params, weights.biases);
  p.bias = params.resetAfter ? concat(canonBias.dimShuffle({1, 0, 2})[0],
                                      canonBias.dimShuffle({1, 0, 2})[1], 0)
                             : canonBias;
  if (attention) {
    p.attSeq = graph.addVariable(t, {T, B}, {debug, "attention"});
    rnn::detail::mapSequence(graph, p.attSeq.reshape({T, 1, B}), opts.numShards);
    prog.add(Copy(attention->transpose(), p.attSeq));
  }
  if (params.outputFullSequence)
    p.outSeq = rnn::createOutputTensor(graph, params.rnn, opts.numShards, {debug, "output"});
  if (intermediates) { // kept for the backward pass; an inference pass keeps one step only
    p.interSeq = rnn::detail::addSequence(graph, t, T * p.layout.count(), B, H, opts.numShards,
                                          {debug, "intermediates"})
                     .reshape({T, p.layout.count(), B, H});
    *intermediates = p.interSeq;
  }
  return p;
}

// A forward cell's `pre` field: the slots of a_r and a_u with the activation clip, else none.
void connectPre(Graph &g, VertexRef v, const InterLayout &layout, const Tensor &inter,
                const std::vector<Interval> &rows) {
  g.connect(v["pre"], layout.savePre
                          ? nn::work::gateSegments(inter, rows,
                                                   {layout.preSlot(), layout.preSlot() + 1})
                          : std::vector<Tensor>{});
}

// The GRU's side of the forward step builder (rnn::detail::forwardStepBody): the step's
// tensors, and the fields of GruCellA and GruCellB (reset before) or GruCellResetAfter.
class FwdCell final : public rnn::detail::CellSteps {
public:
  FwdCell(const GruParams &params, const FwdPlan &p, Tensor scratchOut)
      : params_(params), p_(p), scratchOut_(std::move(scratchOut)) {}

  rnn::detail::StepTensors begin(Graph &g, std::vector<Tensor> &state, const rnn::RnnSlice &slice,
                                 const rnn::RnnBatchwiseFlags &flags,
                                 const DebugContext &dbg) const override {
    const std::size_t B = params_.rnn.batchSize, H = params_.rnn.layerSizes[1];
    const Type t = params_.rnn.dataType;
    rnn::detail::StepTensors s;
    s.state = state[0];
    s.out = params_.outputFullSequence ? slice.outputs[0] : scratchOut_;
    s.own.resize(kOwn);
    s.own[kXw] = gatesOf(slice.interimIn);
    s.own[kInter] = slice.interimOut.valid()
                        ? slice.interimOut
                        : rnn::detail::addSequence(g, t, p_.layout.count(), B, H, 1,
                                                   {dbg, "intermediates"});
    s.own[kMask] = flags.mask;
    s.own[kAtt] = p_.attSeq.valid() ? slice.inputs[0] : flags.mask;
    if (!params_.resetAfter)
      s.scratch = {addStep(g, t, B, H, {dbg, "rh"}), Tensor()}; // r*h, GruCellA's
    return s;
  }

  void connect(unsigned phase, Graph &g, VertexRef v, const std::vector<Interval> &rows,
               const rnn::detail::StepTensors &s) const override {
    if (params_.resetAfter)
      connectResetAfter(g, v, rows, s);
    else if (phase == 0)
      connectA(g, v, rows, s);
    else
      connectB(g, v, rows, s);
  }

private:
  // StepTensors::own: the step's xw as [3, B, H], its intermediates [n, B, H], mask, attention.
  enum Own { kXw, kInter, kMask, kAtt, kOwn };

  // The fields every forward cell has.
  void common(Graph &g, VertexRef v, const std::vector<Interval> &rows,
              const rnn::detail::StepTensors &s) const {
    g.connect(v["h"], nn::work::rowList(s.state, rows));
    g.connect(v["mask"], nn::work::rowElements(s.own[kMask], rows));
    g.setInitialValue(v["activationClip"], activationClipOf(params_));
    g.setInitialValue(v["activation"], static_cast<unsigned>(params_.activation));
  }
  void gateFields(Graph &g, VertexRef v, const std::vector<Interval> &rows,
                  const rnn::detail::StepTensors &s) const {
    g.connect(v["attention"], nn::work::rowElements(s.own[kAtt], rows));
    connectPre(g, v, p_.layout, s.own[kInter], rows);
    g.setInitialValue(v["recurrentActivation"],
                      static_cast<unsigned>(params_.recurrentActivation));
    g.setInitialValue(v["hasAttention"], p_.attSeq.valid());
  }
  void connectA(Graph &g, VertexRef v, const std::vector<Interval> &rows,
                const rnn::detail::StepTensors &s) const {
    const std::size_t B = params_.rnn.batchSize, H = params_.rnn.layerSizes[1];
    const Tensor hwGates = s.product[0].reshape({B, 2, H}).dimShuffle({1, 0, 2});
    g.connect(v["xw"], nn::work::gateSegments(s.own[kXw], rows, {0, 1, 2}));
    g.connect(v["hw"], nn::work::gateSegments(hwGates, rows, {0, 1}));
    g.connect(v["bias"], std::vector<Tensor>{p_.bias[0], p_.bias[1], p_.bias[2]});
    g.connect(v["gates"], nn::work::gateSegments(s.own[kInter], rows, {0, 1}));
    g.connect(v["rh"], nn::work::rowList(s.scratch[0], rows));
    gateFields(g, v, rows, s);
    common(g, v, rows, s);
  }
  void connectB(Graph &g, VertexRef v, const std::vector<Interval> &rows,
                const rnn::detail::StepTensors &s) const {
    const InterLayout &layout = p_.layout;
    g.connect(v["xw"], nn::work::gateSegments(s.own[kXw], rows, {2}));
    g.connect(v["chw"], nn::work::rowList(s.product[1], rows));
    g.connect(v["bias"], std::vector<Tensor>{p_.bias[2]});
    g.connect(v["u"], nn::work::gateSegments(s.own[kInter], rows, {1}));
    g.connect(v["c"], nn::work::gateSegments(s.own[kInter], rows, {2}));
    g.connect(v["out"], nn::work::rowList(s.out, rows));
    g.connect(v["hSave"], layout.saveH ? nn::work::gateSegments(s.own[kInter], rows, {layout.hSlot()})
                                       : std::vector<Tensor>{});
    g.setInitialValue(v["rawCandidate"], rawCandidate(params_));
    g.setInitialValue(v["saveH"], layout.saveH);
    common(g, v, rows, s);
  }
  void connectResetAfter(Graph &g, VertexRef v, const std::vector<Interval> &rows,
                         const rnn::detail::StepTensors &s) const {
    const InterLayout &layout = p_.layout;
    g.connect(v["xw"], nn::work::gateSegments(s.own[kXw], rows, {0, 1, 2}));
    g.connect(v["hw"], nn::work::gateSegments(gatesOf(s.product[0]), rows, {0, 1, 2}));
    g.connect(v["bias"], std::vector<Tensor>{p_.bias[0], p_.bias[1], p_.bias[2], p_.bias[3],
                                             p_.bias[4], p_.bias[5]});
    std::vector<unsigned> slots(layout.preSlot()); // all but a_r, a_u
    for (unsigned j = 0; j < layout.preSlot(); ++j)
      slots[j] = j;
    g.connect(v["inter"], nn::work::gateSegments(s.own[kInter], rows, slots));
    g.connect(v["out"], nn::work::rowList(s.out, rows));
    g.setInitialValue(v["rawCandidate"], rawCandidate(params_));
    g.setInitialValue(v["saveH"], layout.saveH);
    gateFields(g, v, rows, s);
    common(g, v, rows, s);
  }

  const GruParams &params_;
  const FwdPlan &p_;
  Tensor scratchOut_;
};

// The per-step loop (rnn::Rnn) of the forward step builder on the GRU's table row.
ForwardResult stepLoop(Graph &graph, const GruParams &params, const GruOptions &opts,
                       const FwdPlan &p, const Tensor &stateInit, const GruWeights &weights,
                       Tensor *intermediates, Sequence &prog, const DebugContext &debug,
                       linalg::PlanningCache *cache) {
  const std::size_t B = params.rnn.batchSize, H = params.rnn.layerSizes[1];
  const Type t = params.rnn.dataType;
  const bool full = params.outputFullSequence;
  // The unfused step multiplies by a canonical copy of Wo (the fused loop packs it instead).
  const Tensor wo = canonicalMatrix(graph, params, weights.outputWeights, false, prog,
                                    {debug, "outputWeights"});
  const FwdCell cell(params, p, full ? Tensor() : addStep(graph, t, B, H, {debug, "stepOutput"}));
  rnn::detail::LoopSpec spec{params.rnn};
  spec.initState = {stateInit};
  if (p.attSeq.valid())
    spec.inputs.push_back(p.attSeq);
  spec.interimIn = &p.xw;
  Tensor interSeq = p.interSeq;
  spec.interimOut = intermediates ? &interSeq : nullptr;
  if (full)
    spec.outputs.push_back(p.outSeq);
  spec.numShards = opts.numShards;
  spec.codeReuse = opts.codeReuse;
  const auto finalState = rnn::detail::forwardCellLoop(
      graph,
      rnn::detail::cellTable(params.resetAfter ? rnn::detail::CellKind::GruResetAfter
                                               : rnn::detail::CellKind::GruResetBefore),
      spec, {{wo, {}, {}}, p.mmOptions, cache}, cell, prog, debug);
  return {full ? p.outSeq : finalState[0], finalState[0]};
}

ForwardResult forward(Graph &graph, const GruParams &params, const GruOptions &opts,
                      const Tensor &stateInit, const Tensor &in, const GruWeights &weights,
                      Tensor *intermediates, const Tensor *attention, Sequence &prog,
                      const DebugContext &debug, linalg::PlanningCache *cache) {
  const bool full = params.outputFullSequence;
  const FwdPlan p = prepareForward(graph, params, opts, in, weights, intermediates, attention,
                                   prog, debug, cache);
  if (const PersistentChoice persistent = persistentChoice(graph, params, opts, "gru");
      persistent.use) {
    const Tensor out = persistentForward(graph, params, persistent, stateInit, weights, p.xw,
                                         p.bias, p.attSeq, p.outSeq, p.interSeq, p.layout, prog,
                                         debug);
    return {out, full ? Tensor() : out};
  }
  if (usesFusedStep(graph, params, opts, "gru")) {
    const Tensor out = fusedForward(graph, params, opts, stateInit, weights, p.xw, p.bias,
                                    p.attSeq, p.outSeq, p.interSeq, p.layout, prog, debug,
                                    p.stepInput);
    return {out, full ? Tensor() : out};
  }
  return stepLoop(graph, params, opts, p, stateInit, weights, intermediates, prog, debug, cache);
}

} // namespace detail

namespace {

Tensor fwdEntry(Graph &graph, const GruParams &params, const Tensor &stateInit, const Tensor &in,
                const GruWeights &weights, Tensor *intermediates, const Tensor *attention,
                Sequence &prog, const DebugContext &debug, const OptionFlags &options,
                linalg::PlanningCache *cache, const std::string &what) {
  const auto opts = detail::parseOptions(graph, params, options, what);
  const std::size_t T = params.rnn.maxTimeSteps, B = params.rnn.batchSize;
  const std::size_t I = params.rnn.layerSizes[0], H = params.rnn.layerSizes[1];
  const Type t = params.rnn.dataType;
  detail::checkTensor(stateInit, {B, H}, t, what + ": stateInit");
  detail::checkTensor(in, {T, B, I}, t, what + ": input");
  detail::checkWeights(params, weights, what);
  if (attention)
    detail::checkTensor(*attention, {B, T}, t, what + ": attention");
  if (opts.inferenceOnly && intermediates)
    throw invalid_option(what + ": intermediates were asked for, but the option inferenceOnly is "
                                "true (an inference pass keeps none)");
  // The reverse direction is the forward machinery on each row's steps in reverse order.
  const rnn::detail::RunOrder order{graph, params.rnn, opts.reverse, prog, debug};
  const Tensor runIn = order(in, "in");
  const Tensor runAttention = attention ? order.rows(*attention, "attention") : Tensor();
  const Tensor out = detail::forward(graph, params, opts, stateInit, runIn, weights,
                                     intermediates, attention ? &runAttention : nullptr, prog,
                                     debug, cache)
                         .output;
  return order.output(out, params.outputFullSequence, "out");
}

} // namespace

Tensor gruFwd(Graph &graph, const GruParams &params, const Tensor &stateInit, const Tensor &in,
              const GruWeights &weights, Tensor *intermediates, Sequence &prog,
              const DebugContext &debug, const OptionFlags &options,
              linalg::PlanningCache *cache) {
  return fwdEntry(graph, params, stateInit, in, weights, intermediates, nullptr, prog, debug,
                  options, cache, "gru::gruFwd");
}

Tensor gruFwd(Graph &graph, const GruParams &params, const Tensor &stateInit, const Tensor &in,
              const Tensor &realTimeSteps, const GruWeights &weights, Tensor *intermediates,
              Sequence &prog, const DebugContext &debug, const OptionFlags &options,
              linalg::PlanningCache *cache) {
  return fwdEntry(graph, detail::withRealTimeSteps(params, realTimeSteps, options, "gru::gruFwd"),
                  stateInit, in, weights, intermediates, nullptr, prog, debug, options, cache,
                  "gru::gruFwd");
}

Tensor auGruFwd(Graph &graph, const GruParams &params, const Tensor &stateInit, const Tensor &in,
                const GruWeights &weights, Tensor *intermediates, const Tensor &attention,
                Sequence &prog, const DebugContext &debug, const OptionFlags &options,
                linalg::PlanningCache *cache) {
  return fwdEntry(graph, params, stateInit, in, weights, intermediates, &attention, prog, debug,
                  options, cache, "gru::auGruFwd");
}

Tensor auGruFwd(Graph &graph, const GruParams &params, const Tensor &stateInit, const Tensor &in,
                const Tensor &realTimeSteps, const GruWeights &weights, Tensor *intermediates,
                const Tensor &attention, Sequence &prog, const DebugContext &debug,
                const OptionFlags &options, linalg::PlanningCache *cache) {
  return fwdEntry(graph, detail::withRealTimeSteps(params, realTimeSteps, options, "gru::auGruFwd"),
                  stateInit, in, weights, intermediates, &attention, prog, debug, options, cache,
                  "gru::auGruFwd");
}

} // namespace aspen::nn::gru
