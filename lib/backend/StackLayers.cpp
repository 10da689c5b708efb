// The C backend's stacks (aspen_rnn_stack_*) as one engine each: lstm::lstmStackFwd,
// gru::gruStackFwd and rnn::rnnStackFwd (the vanilla RNN) with their backward, so that the library schedules the stack (a wavefront
// of fused layers, a bidirectional layer's directions in one compute set a step) and applies
// the dropout between layers in the graph, with the mask docs/backend.md states. The caller's
// reserve holds the stack's intermediates, part by part.
#include "Layers.hpp"

#include "BackendMemory.hpp"

#include <aspen/nn/GruStack.hpp>
#include <aspen/nn/LstmStack.hpp>
#include <aspen/nn/RecurrentStack.hpp>

#include <fmt/format.h>

namespace aspen::backend {

namespace lstm = nn::lstm;
namespace gru = nn::gru;
using program::Sequence;

namespace {

constexpr std::size_t kAlign = 64;
std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// The stack's tensors for the host handles.
struct StackTensors {
  Tensor x, h0, c0, y, hn, cn;
  std::vector<std::array<Tensor, 4>> weights; // per entry: input, output, biases, projection
  std::vector<Tensor> reserve;                // the intermediates, part by part
  Tensor dy, dhn, dcn, dx, dh0, dc0;
  std::vector<std::array<Tensor, 4>> grads;
};

// The stack's options: every layer's, and the stack's own.
OptionFlags stackOptions(const RnnStackConfig &s, bool training) {
  OptionFlags options = layerOptions(s.base, training);
  options.set("numLayers", std::to_string(s.L));
  options.set("direction", s.D == 2 ? "bidirectional" : s.reverseOnly ? "reverse" : "forward");
  options.set("dropout", fmt::format("{}", s.dropout));
  options.set("dropoutSeed", std::to_string(s.seed));
  return options;
}

std::vector<Tensor> reserveParts(const nn::rnn::StackIntermediates &inter) {
  std::vector<Tensor> parts = inter.layers;
  parts.insert(parts.end(), inter.inputs.begin() + 1, inter.inputs.end()); // [0] is x
  parts.insert(parts.end(), inter.outputs.begin(), inter.outputs.end());
  return parts;
}

void buildLstmStack(Graph &graph, const RnnStackConfig &s, bool training, StackTensors &t,
                    Sequence &fwd, Sequence &bwd) {
  linalg::PlanningCache cache;
  const lstm::LstmParams params = lstmParams(s.base, addLengths(graph, s.base));
  const OptionFlags options = stackOptions(s, training);
  t.x = lstm::createInput(graph, params, "x", layerOptions(s.base, training), &cache);
  const lstm::LstmState init = lstm::createStackInitialState(graph, params, "init", options);
  const auto weights = lstm::createStackWeights(graph, params, "weights", options, &cache);
  t.h0 = init.output, t.c0 = init.cellState;
  for (const lstm::LstmWeights &w : weights)
    t.weights.push_back({w.inputWeights, w.outputWeights, w.biases, w.projection});
  lstm::LstmStackIntermediates inter;
  lstm::LstmState final;
  std::tie(t.y, final) = lstm::lstmStackFwd(graph, params, init, t.x, weights,
                                            training ? &inter : nullptr, fwd, "fwd", options,
                                            &cache);
  t.hn = final.output, t.cn = final.cellState;
  if (!training)
    return;
  t.reserve = reserveParts(inter);
  t.dy = graph.clone(t.y, "dy");
  const lstm::LstmState dFinal{graph.clone(final.output, "dhn"),
                               graph.clone(final.cellState, "dcn")};
  t.dhn = dFinal.output, t.dcn = dFinal.cellState;
  std::vector<lstm::LstmWeights> grads;
  const lstm::LstmState d0 = lstm::lstmStackBwdWithWU(graph, params, bwd, init, inter, weights,
                                                      t.y, t.dy, &dFinal, &t.dx, grads, "bwd",
                                                      options, &cache);
  t.dh0 = d0.output, t.dc0 = d0.cellState;
  for (const lstm::LstmWeights &g : grads)
    t.grads.push_back({g.inputWeights, g.outputWeights, g.biases, g.projection});
}

void buildGruStack(Graph &graph, const RnnStackConfig &s, bool training, StackTensors &t,
                   Sequence &fwd, Sequence &bwd) {
  linalg::PlanningCache cache;
  const gru::GruParams params = gruParams(s.base, addLengths(graph, s.base));
  const OptionFlags options = stackOptions(s, training);
  t.x = gru::createInput(graph, params, "x", layerOptions(s.base, training), &cache);
  t.h0 = gru::createStackInitialState(graph, params, "init", options);
  const auto weights = gru::createStackWeights(graph, params, "weights", options, &cache);
  for (const gru::GruWeights &w : weights)
    t.weights.push_back({w.inputWeights, w.outputWeights, w.biases, Tensor()});
  gru::GruStackIntermediates inter;
  std::tie(t.y, t.hn) = gru::gruStackFwd(graph, params, t.h0, t.x, weights,
                                         training ? &inter : nullptr, fwd, "fwd", options,
                                         &cache);
  if (!training)
    return;
  t.reserve = reserveParts(inter);
  t.dy = graph.clone(t.y, "dy");
  t.dhn = graph.clone(t.hn, "dhn");
  std::vector<gru::GruWeights> grads;
  t.dh0 = gru::gruStackBwdWithWU(graph, params, bwd, t.h0, inter, weights, t.y, t.dy, &t.dhn,
                                 &t.dx, grads, "bwd", options, &cache);
  for (const gru::GruWeights &g : grads)
    t.grads.push_back({g.inputWeights, g.outputWeights, g.biases, Tensor()});
}

void buildVanillaStack(Graph &graph, const RnnStackConfig &s, bool training, StackTensors &t,
                       Sequence &fwd, Sequence &bwd) {
  namespace rnn = nn::rnn;
  linalg::PlanningCache cache;
  const rnn::RecurrentParams params = vanillaParams(s.base, addLengths(graph, s.base));
  const OptionFlags options = stackOptions(s, training);
  t.x = rnn::createInputTensor(graph, params.rnn, 1, "x");
  t.h0 = rnn::createStackInitialState(graph, params, "init", options);
  const auto weights = rnn::createStackWeights(graph, params, "weights", options, &cache);
  for (const rnn::RecurrentWeights &w : weights)
    t.weights.push_back({w.inputWeights, w.feedbackWeights, w.biases, Tensor()});
  rnn::RecurrentStackIntermediates inter;
  std::tie(t.y, t.hn) = rnn::rnnStackFwd(graph, params, t.h0, t.x, weights,
                                         training ? &inter : nullptr, fwd, "fwd", options,
                                         &cache);
  if (!training)
    return;
  t.reserve = reserveParts(inter);
  t.dy = graph.clone(t.y, "dy");
  t.dhn = graph.clone(t.hn, "dhn");
  std::vector<rnn::RecurrentWeights> grads;
  t.dh0 = rnn::rnnStackBwdWithWU(graph, params, bwd, t.h0, inter, weights, t.y, t.dy, &t.dhn,
                                 &t.dx, grads, "bwd", options, &cache);
  for (const rnn::RecurrentWeights &g : grads)
    t.grads.push_back({g.inputWeights, g.feedbackWeights, g.biases, Tensor()});
}

const char *const kWeightNames[4] = {"inputWeights", "outputWeights", "biases", "projection"};
const char *const kGradNames[4] = {"dInputWeights", "dOutputWeights", "dBiases", "dProjection"};

void addHandles(Graph &graph, const StackTensors &t) {
  const std::pair<const char *, const Tensor *> writes[] = {
      {"x", &t.x}, {"h0", &t.h0}, {"c0", &t.c0}, {"dy", &t.dy}, {"dhn", &t.dhn},
      {"dcn", &t.dcn}};
  const std::pair<const char *, const Tensor *> reads[] = {
      {"y", &t.y},   {"hn", &t.hn},   {"cn", &t.cn},  {"dx", &t.dx},
      {"dh0", &t.dh0}, {"dc0", &t.dc0}};
  for (const auto &[name, tensor] : writes)
    if (tensor->valid())
      graph.createHostWrite(name, *tensor);
  for (const auto &[name, tensor] : reads)
    if (tensor->valid())
      graph.createHostRead(name, *tensor);
  for (std::size_t i = 0; i < t.weights.size(); ++i)
    for (unsigned k = 0; k < 4; ++k) {
      if (t.weights[i][k].valid())
        graph.createHostWrite(fmt::format("{}.{}", kWeightNames[k], i), t.weights[i][k]);
      if (i < t.grads.size() && t.grads[i][k].valid())
        graph.createHostRead(fmt::format("{}.{}", kGradNames[k], i), t.grads[i][k]);
    }
  for (std::size_t k = 0; k < t.reserve.size(); ++k) {
    graph.createHostRead(fmt::format("reserve.{}", k), t.reserve[k]);
    graph.createHostWrite(fmt::format("reserve-in.{}", k), t.reserve[k]);
  }
}

void writeInputs(RnnLayer &layer, const RnnStackConfig &s, const RnnStackForwardCall &call,
                 const Memory &memory) {
  const RnnConfig &c = s.base;
  const std::size_t es = c.elementBytes();
  write(layer.engine, "x", call.x, c.T * c.B * c.I * es);
  write(layer.engine, "h0", call.h0, s.count() * c.B * s.W() * es);
  if (c.lstm)
    write(layer.engine, "c0", call.c0, s.count() * c.B * c.H * es);
  for (std::size_t i = 0; i < s.count(); ++i)
    writeWeights(layer.engine, layer.stackWeightIo[i], s.layer(i / s.D, i % s.D),
                 fmt::format(".{}", i), call.inputWeights[i], call.outputWeights[i],
                 call.biases[i], memory);
  if (c.variableLengths)
    write(layer.engine, "lengths", call.lengths, c.B * sizeof(std::uint32_t));
}

// Each part of the reserve, at its offset in `reserve`: read (after a forward) or written.
template <class Transfer>
void eachReservePart(const RnnLayer &layer, Transfer transfer) {
  std::size_t offset = 0;
  for (std::size_t k = 0; k < layer.reserveParts.size(); ++k) {
    transfer(k, offset, layer.reserveParts[k]);
    offset += aligned(layer.reserveParts[k]);
  }
}

} // namespace

RnnConfig RnnStackConfig::layer(std::size_t l, std::size_t d) const {
  RnnConfig c = base;
  c.I = inputSize(l);
  if (reverseOnly || d == 1) {
    c.options.set("direction", "reverse");
    c.optionsText += "|direction=reverse";
  }
  return c;
}

std::string RnnStackConfig::name(std::size_t i) const {
  return fmt::format("layer {}, {}", i / D, i % D == 1 || reverseOnly ? "reverse" : "forward");
}

std::string RnnStackConfig::key(const char *pass) const {
  return fmt::format("stack|L{}|D{}|reverse{}|dropout{}|seed{}|{}", L, D, reverseOnly, dropout,
                     seed, base.key(pass));
}

std::shared_ptr<RnnLayer> buildRnnStack(const Device &device, const RnnStackConfig &s,
                                        bool training) {
  Graph graph = makeGraph(device);
  StackTensors t;
  Sequence fwd, bwd;
  if (s.base.vanilla)
    buildVanillaStack(graph, s, training, t, fwd, bwd);
  else if (s.base.lstm)
    buildLstmStack(graph, s, training, t, fwd, bwd);
  else
    buildGruStack(graph, s, training, t, fwd, bwd);
  addHandles(graph, t);
  std::vector<program::Program> programs = {fwd};
  if (training)
    programs.push_back(bwd);
  auto layer = std::make_shared<RnnLayer>(compileAndLoad(graph, programs, device), training);
  layer->stackWeightIo.resize(s.count());
  for (const Tensor &part : t.reserve) {
    layer->reserveParts.push_back(part.numElements() * s.base.elementBytes());
    layer->reserveBytes += aligned(layer->reserveParts.back());
  }
  return layer;
}

void runRnnStackForward(RnnLayer &layer, const RnnStackConfig &s,
                        const RnnStackForwardCall &call, const Memory &memory) {
  const RnnConfig &c = s.base;
  const std::size_t es = c.elementBytes();
  std::lock_guard<std::mutex> lock(layer.mutex);
  memory.waitForCaller();
  writeInputs(layer, s, call, memory);
  layer.engine.run(0);
  read(layer.engine, "y", call.y, c.T * c.B * s.D * s.W() * es);
  read(layer.engine, "hn", call.hn, s.count() * c.B * s.W() * es);
  if (c.lstm)
    read(layer.engine, "cn", call.cn, s.count() * c.B * c.H * es);
  if (call.reserve)
    eachReservePart(layer, [&](std::size_t k, std::size_t offset, std::size_t bytes) {
      read(layer.engine, fmt::format("reserve.{}", k).c_str(),
           static_cast<std::uint8_t *>(call.reserve) + offset, bytes);
    });
}

void runRnnStackBackward(RnnLayer &layer, const RnnStackConfig &s,
                         const RnnStackBackwardCall &call, const Memory &memory) {
  const RnnConfig &c = s.base;
  const std::size_t es = c.elementBytes();
  const std::size_t dyBytes = c.T * c.B * s.D * s.W() * es;
  const std::size_t hBytes = s.count() * c.B * s.W() * es;
  const std::size_t cellBytes = s.count() * c.B * c.H * es;
  std::lock_guard<std::mutex> lock(layer.mutex);
  memory.waitForCaller();
  Engine &engine = layer.engine;
  writeInputs(layer, s, call.forward, memory);
  eachReservePart(layer, [&](std::size_t k, std::size_t offset, std::size_t bytes) {
    write(engine, fmt::format("reserve-in.{}", k).c_str(),
          static_cast<const std::uint8_t *>(call.forward.reserve) + offset, bytes);
  });
  // A missing gradient is zero: written from host zeros.
  const std::vector<std::uint8_t> zeros(std::max({dyBytes, hBytes, cellBytes}), 0);
  write(engine, "dy", call.dy ? call.dy : zeros.data(), dyBytes);
  write(engine, "dhn", call.dhn ? call.dhn : zeros.data(), hBytes);
  if (c.lstm)
    write(engine, "dcn", call.dcn ? call.dcn : zeros.data(), cellBytes);
  engine.run(1);
  if (call.dx)
    read(engine, "dx", call.dx, c.T * c.B * c.I * es);
  read(engine, "dh0", call.dh0, hBytes);
  if (c.lstm)
    read(engine, "dc0", call.dc0, cellBytes);
  for (std::size_t i = 0; call.dInputWeights && i < s.count(); ++i)
    readWeightGradients(engine, layer.stackWeightIo[i], s.layer(i / s.D, i % s.D),
                        fmt::format(".{}", i), call.dInputWeights[i], call.dOutputWeights[i],
                        call.dBiases[i], memory);
}

} // namespace aspen::backend
