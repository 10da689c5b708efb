#include "Layers.hpp"

#include "BackendMemory.hpp"

#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Gru.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/util/TileMapping.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace aspen::backend {

namespace lstm = nn::lstm;
namespace gru = nn::gru;
using program::Sequence;

Graph makeGraph(const Device &device) {
  Graph graph(device.getTarget());
  ops::addCodelets(graph);
  linalg::addCodelets(graph);
  nn::addCodelets(graph);
  return graph;
}

Engine compileAndLoad(const Graph &graph, const std::vector<program::Program> &programs,
                      const Device &device) {
  Engine engine(graph, programs);
  engine.load(device);
  return engine;
}

std::string RnnConfig::key(const char *pass) const {
  std::string order;
  for (const std::string &unit : cellOrder)
    order += unit + ",";
  const char *cell = vanilla ? (nonLinearity == nn::NonLinearityType::RELU ? "rnn_relu" : "rnn_tanh")
                     : lstm  ? "lstm"
                             : "gru";
  return fmt::format("{}|{}|{}|T{}|B{}|I{}|H{}|var{}|ra{}|order{}|options{}", cell,
                     pass, type.toString(), T, B, I, H, variableLengths, resetAfter, order,
                     optionsText);
}

void write(Engine &engine, const char *handle, const void *data, std::size_t bytes) {
  const auto *p = static_cast<const std::uint8_t *>(data);
  engine.writeTensor(handle, p, p + bytes);
}
void read(Engine &engine, const char *handle, void *data, std::size_t bytes) {
  auto *p = static_cast<std::uint8_t *>(data);
  engine.readTensor(handle, p, p + bytes);
}

Tensor addLengths(Graph &graph, const RnnConfig &c) {
  if (!c.variableLengths)
    return {};
  Tensor lengths = graph.addVariable(UNSIGNED_INT, {c.B}, "lengths");
  graph.setTileMapping(lengths, 0);
  graph.createHostWrite("lengths", lengths);
  return lengths;
}

namespace {

template <class Unit>
std::vector<Unit> cellOrderOf(const RnnConfig &c, Unit (*parse)(const std::string &),
                              std::vector<Unit> defaults) {
  if (c.cellOrder.empty())
    return defaults;
  std::vector<Unit> order;
  for (const std::string &name : c.cellOrder)
    order.push_back(parse(name));
  return order;
}

} // namespace

lstm::LstmParams lstmParams(const RnnConfig &c, const Tensor &lengths) {
  lstm::LstmParams params =
      lengths.valid() ? lstm::LstmParams(c.type, c.B, c.T, lengths, {c.I, c.H})
                      : lstm::LstmParams(c.type, c.B, c.T, {c.I, c.H});
  params.cellOrder = cellOrderOf(c, &lstm::parseBasicLstmCellUnit,
                                 lstm::getDefaultBasicLstmCellOrder());
  params.cellClip = c.cellClip;
  params.projSize = c.P;
  params.activationClip = {c.activationClip > 0, c.activationClip};
  return params;
}

gru::GruParams gruParams(const RnnConfig &c, const Tensor &lengths) {
  gru::GruParams params = lengths.valid() ? gru::GruParams(c.type, c.B, c.T, lengths, {c.I, c.H})
                                          : gru::GruParams(c.type, c.B, c.T, {c.I, c.H});
  params.cellOrder = cellOrderOf(c, &gru::parseBasicGruCellUnit,
                                 gru::getDefaultBasicGruCellOrder());
  params.resetAfter = c.resetAfter;
  params.activationClip = {c.activationClip > 0, c.activationClip};
  return params;
}

nn::rnn::RecurrentParams vanillaParams(const RnnConfig &c, const Tensor &lengths) {
  const nn::rnn::RnnParams p = lengths.valid()
                                   ? nn::rnn::RnnParams(c.type, c.B, c.T, lengths, {c.I, c.H})
                                   : nn::rnn::RnnParams(c.type, c.B, c.T, {c.I, c.H});
  return nn::rnn::RecurrentParams(p, c.nonLinearity);
}

namespace {

// The tensors both cells share, for the host handles.
struct RnnTensors {
  Tensor x, h0, c0, inputWeights, outputWeights, biases, projection, y, cn, reserve;
  Tensor dy, dcn, dx, dh0, dc0, dInputWeights, dOutputWeights, dBiases, dProjection;
};

void addHandles(Graph &graph, const RnnTensors &t, bool training) {
  const std::pair<const char *, const Tensor *> writes[] = {
      {"x", &t.x}, {"h0", &t.h0}, {"c0", &t.c0}, {"inputWeights", &t.inputWeights},
      {"outputWeights", &t.outputWeights}, {"biases", &t.biases},
      {"projection", &t.projection}, {"y-in", &t.y},
      {"reserve-in", &t.reserve}, {"dy", &t.dy}, {"dcn", &t.dcn}};
  const std::pair<const char *, const Tensor *> reads[] = {
      {"y", &t.y}, {"cn", &t.cn}, {"reserve", &t.reserve}, {"dx", &t.dx}, {"dh0", &t.dh0},
      {"dc0", &t.dc0}, {"dInputWeights", &t.dInputWeights},
      {"dOutputWeights", &t.dOutputWeights}, {"dBiases", &t.dBiases},
      {"dProjection", &t.dProjection}};
  for (const auto &[name, tensor] : writes)
    if (tensor->valid() && (training || std::string(name).find("-in") == std::string::npos))
      graph.createHostWrite(name, *tensor);
  for (const auto &[name, tensor] : reads)
    if (tensor->valid())
      graph.createHostRead(name, *tensor);
}

// The host handles, the engine compiled and loaded, and the reserve's size.
std::shared_ptr<RnnLayer> finishLayer(Graph &graph, const RnnTensors &t,
                                      const std::vector<program::Program> &programs,
                                      const Device &device, const RnnConfig &c, bool training) {
  addHandles(graph, t, training);
  auto layer = std::make_shared<RnnLayer>(compileAndLoad(graph, programs, device), training);
  if (training)
    layer->reserveBytes = t.reserve.numElements() * c.elementBytes();
  return layer;
}

} // namespace

OptionFlags layerOptions(const RnnConfig &c, bool training) {
  OptionFlags options = c.options;
  if (!training)
    options.set("inferenceOnly", "true");
  if (!c.vanilla && !options.contains("hardSigmoidGradient")) // the vanilla RNN's is exact
    options.set("hardSigmoidGradient", "exact");
  return options;
}

namespace {

std::shared_ptr<RnnLayer> buildLstm(const Device &device, const RnnConfig &c, bool training) {
  Graph graph = makeGraph(device);
  linalg::PlanningCache cache;
  const Tensor lengths = addLengths(graph, c);
  const lstm::LstmParams params = lstmParams(c, lengths);
  OptionFlags options = layerOptions(c, training);

  RnnTensors t;
  t.x = lstm::createInput(graph, params, "x", options, &cache);
  const lstm::LstmState init = lstm::createInitialState(graph, params, "init", options, &cache);
  const lstm::LstmWeights weights = lstm::createWeights(graph, params, "weights", options, &cache);
  t.h0 = init.output, t.c0 = init.cellState;
  t.inputWeights = weights.inputWeights, t.outputWeights = weights.outputWeights,
  t.biases = weights.biases, t.projection = weights.projection;
  Sequence fwd, bwd;
  std::tie(t.y, t.cn) = lstm::lstmFwd(graph, params, init, t.x, weights,
                                      training ? &t.reserve : nullptr, fwd, "fwd", options, &cache);
  std::vector<program::Program> programs = {fwd};
  if (training) {
    t.dy = graph.clone(t.y, "dy");
    // dhn is folded into dy on the host (hn is each row's last output); dcn goes in as the
    // final cell state's gradient, which reaches each row's last step.
    t.dcn = graph.clone(t.cn, "dcn");
    lstm::LstmWeights grads;
    const lstm::LstmState initGrad = lstm::lstmBwdWithWU(
        graph, params, bwd, init, t.reserve, weights, t.x, t.y, t.dy, &t.dcn, &t.dx, grads, "bwd",
        options, &cache);
    t.dh0 = initGrad.output, t.dc0 = initGrad.cellState;
    t.dInputWeights = grads.inputWeights, t.dOutputWeights = grads.outputWeights,
    t.dBiases = grads.biases, t.dProjection = grads.projection;
    programs.push_back(bwd);
  }
  return finishLayer(graph, t, programs, device, c, training);
}

std::shared_ptr<RnnLayer> buildGru(const Device &device, const RnnConfig &c, bool training) {
  Graph graph = makeGraph(device);
  linalg::PlanningCache cache;
  const Tensor lengths = addLengths(graph, c);
  const gru::GruParams params = gruParams(c, lengths);
  OptionFlags options = layerOptions(c, training);

  RnnTensors t;
  t.x = gru::createInput(graph, params, "x", options, &cache);
  t.h0 = gru::createInitialState(graph, params, "init", options, &cache);
  const gru::GruWeights weights = gru::createWeights(graph, params, "weights", options, &cache);
  t.inputWeights = weights.inputWeights, t.outputWeights = weights.outputWeights,
  t.biases = weights.biases;
  Sequence fwd, bwd;
  t.y = gru::gruFwd(graph, params, t.h0, t.x, weights, training ? &t.reserve : nullptr, fwd,
                    "fwd", options, &cache);
  std::vector<program::Program> programs = {fwd};
  if (training) {
    t.dy = graph.clone(t.y, "dy");
    gru::GruWeights grads;
    t.dh0 = gru::gruBwdWithWU(graph, params, bwd, t.h0, t.reserve, weights, t.x, t.y, t.dy, &t.dx,
                              grads, "bwd", options, &cache);
    t.dInputWeights = grads.inputWeights, t.dOutputWeights = grads.outputWeights,
    t.dBiases = grads.biases;
    programs.push_back(bwd);
  }
  return finishLayer(graph, t, programs, device, c, training);
}

// The vanilla RNN (aspen/nn/RecurrentStack.hpp) as a stack of one layer in the options'
// direction: rnn::rnnStackFwd and rnnStackBwdWithWU. The reserve is the layer's own output in
// the order its steps ran (the backward's intermediates): y itself for the forward direction
// (the reserve then holds a copy of y).
std::shared_ptr<RnnLayer> buildVanilla(const Device &device, const RnnConfig &c, bool training) {
  namespace rnn = nn::rnn;
  Graph graph = makeGraph(device);
  linalg::PlanningCache cache;
  const rnn::RecurrentParams params = vanillaParams(c, addLengths(graph, c));
  const OptionFlags options = layerOptions(c, training);
  RnnTensors t;
  t.x = rnn::createInputTensor(graph, params.rnn, 1, "x");
  t.h0 = rnn::createStackInitialState(graph, params, "init", options);
  const rnn::RecurrentWeights weights =
      rnn::createStackWeights(graph, params, "weights", options, &cache)[0];
  t.inputWeights = weights.inputWeights, t.outputWeights = weights.feedbackWeights,
  t.biases = weights.biases;
  Sequence fwd, bwd;
  rnn::RecurrentStackIntermediates inter;
  t.y = rnn::rnnStackFwd(graph, params, t.h0, t.x, {weights}, training ? &inter : nullptr, fwd,
                         "fwd", options, &cache)
            .first;
  std::vector<program::Program> programs = {fwd};
  if (training) {
    t.reserve = inter.layers[0];
    t.dy = graph.clone(t.y, "dy");
    std::vector<rnn::RecurrentWeights> grads;
    t.dh0 = rnn::rnnStackBwdWithWU(graph, params, bwd, t.h0, inter, {weights}, t.y, t.dy, nullptr,
                                   &t.dx, grads, "bwd", options, &cache);
    t.dInputWeights = grads[0].inputWeights, t.dOutputWeights = grads[0].feedbackWeights,
    t.dBiases = grads[0].biases;
    programs.push_back(bwd);
  }
  return finishLayer(graph, t, programs, device, c, training);
}

// Each row's number of steps: its length, or T.
std::vector<std::size_t> rowLengths(const RnnConfig &c, const std::uint32_t *lengths) {
  std::vector<std::size_t> rows(c.B, c.T);
  if (c.variableLengths)
    for (std::size_t b = 0; b < c.B; ++b)
      rows[b] = lengths[b];
  return rows;
}

// The step of y whose row b is that row's final output (hn): its last step forward, step 0 in
// reverse. Only for a row with steps.
std::size_t finalStep(const RnnConfig &c, std::size_t rowLength) {
  return c.reverse() ? 0 : rowLength - 1;
}

} // namespace

void addElements(const RnnConfig &c, std::uint8_t *dst, const std::uint8_t *src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (c.type == FLOAT) {
      float a, b;
      std::memcpy(&a, dst + 4 * i, 4);
      std::memcpy(&b, src + 4 * i, 4);
      a += b;
      std::memcpy(dst + 4 * i, &a, 4);
    } else {
      std::uint16_t a, b;
      std::memcpy(&a, dst + 2 * i, 2);
      std::memcpy(&b, src + 2 * i, 2);
      const auto sum = static_cast<std::uint16_t>(
          detail::floatToHalfBits(detail::halfBitsToFloat(a) + detail::halfBitsToFloat(b)));
      std::memcpy(dst + 2 * i, &sum, 2);
    }
  }
}

namespace {

// dst[g][j][i] = src[g][i][j] for every g < G, i < rows, j < cols: each of G [rows, cols]
// matrices transposed, in square blocks that stay in the cache.
template <class Element>
void transposeEach(void *dstBytes, const void *srcBytes, std::size_t G, std::size_t rows,
                   std::size_t cols) {
  constexpr std::size_t block = 16;
  constexpr std::size_t es = sizeof(Element);
  auto *dst = static_cast<std::uint8_t *>(dstBytes);
  const auto *src = static_cast<const std::uint8_t *>(srcBytes);
  for (std::size_t g = 0; g < G; ++g, dst += rows * cols * es, src += rows * cols * es)
    for (std::size_t i0 = 0; i0 < rows; i0 += block) {
      const std::size_t i1 = std::min(rows, i0 + block);
      for (std::size_t j0 = 0; j0 < cols; j0 += block)
        for (std::size_t j = j0; j < std::min(cols, j0 + block); ++j)
          for (std::size_t i = i0; i < i1; ++i) // memcpy: the caller's bytes, any type
            std::memcpy(dst + (j * rows + i) * es, src + (i * cols + j) * es, es);
    }
}

void transposeEach(const RnnConfig &c, void *dst, const void *src, std::size_t G,
                   std::size_t rows, std::size_t cols) {
  if (c.elementBytes() == 4)
    transposeEach<std::uint32_t>(dst, src, G, rows, cols);
  else
    transposeEach<std::uint16_t>(dst, src, G, rows, cols);
}

// The staging buffer, at least `bytes` long.
std::uint8_t *staging(std::vector<std::uint8_t> &buffer, std::size_t bytes) {
  if (buffer.size() < bytes)
    buffer.resize(bytes);
  return buffer.data();
}

// PyTorch's biases [2, G*H] (input, recurrent) as the layer's: [G, 2, H] for a reset-after GRU
// (each kept apart), else [G, H] (their sum).
void biasesFromTorch(const RnnConfig &c, std::uint8_t *dst, const std::uint8_t *src) {
  const std::size_t es = c.elementBytes(), G = c.gates(), rowBytes = c.H * es;
  const std::uint8_t *input = src, *recurrent = src + G * rowBytes;
  if (c.biasElements() == 2 * G * c.H) {
    for (std::size_t g = 0; g < G; ++g) {
      std::memcpy(dst + (2 * g) * rowBytes, input + g * rowBytes, rowBytes);
      std::memcpy(dst + (2 * g + 1) * rowBytes, recurrent + g * rowBytes, rowBytes);
    }
    return;
  }
  std::memcpy(dst, input, G * rowBytes);
  addElements(c, dst, recurrent, G * c.H);
}

// The inverse for the gradients: both rows get a summed bias's gradient.
void biasesToTorch(const RnnConfig &c, std::uint8_t *dst, const std::uint8_t *src) {
  const std::size_t es = c.elementBytes(), G = c.gates(), rowBytes = c.H * es;
  std::uint8_t *input = dst, *recurrent = dst + G * rowBytes;
  if (c.biasElements() == 2 * G * c.H) {
    for (std::size_t g = 0; g < G; ++g) {
      std::memcpy(input + g * rowBytes, src + (2 * g) * rowBytes, rowBytes);
      std::memcpy(recurrent + g * rowBytes, src + (2 * g + 1) * rowBytes, rowBytes);
    }
    return;
  }
  std::memcpy(input, src, G * rowBytes);
  std::memcpy(recurrent, src, G * rowBytes);
}

// The caller's weights and biases as they lie in its buffers: (address, bytes) each.
using WeightBuffers = std::array<std::pair<const void *, std::size_t>, 3>;
WeightBuffers callerWeights(const RnnConfig &c, const void *inputWeights,
                            const void *outputWeights, const void *biases) {
  return {{{inputWeights, c.inputWeightBytes()},
           {outputWeights, c.outputWeightBytes()},
           {biases, c.callerBiasBytes()}}};
}

// Whether `kept` holds exactly the bytes of `buffers`, one after another.
bool sameBytes(const std::vector<std::uint8_t> &kept, const WeightBuffers &buffers) {
  std::size_t offset = 0;
  for (const auto &[p, bytes] : buffers) {
    if (offset + bytes > kept.size() || std::memcmp(kept.data() + offset, p, bytes) != 0)
      return false;
    offset += bytes;
  }
  return offset == kept.size();
}

// kept = the bytes of `buffers`, one after another.
void keepBytes(std::vector<std::uint8_t> &kept, const WeightBuffers &buffers) {
  kept.clear();
  for (const auto &[p, bytes] : buffers) {
    const auto *at = static_cast<const std::uint8_t *>(p);
    kept.insert(kept.end(), at, at + bytes);
  }
}

} // namespace

void writeWeights(Engine &engine, WeightIo &io, const RnnConfig &c, const std::string &suffix,
                  const void *inputWeights, const void *outputWeights, const void *biases,
                  const Memory &memory) {
  const std::size_t G = c.gates();
  const auto handle = [&](const char *name) { return std::string(name) + suffix; };
  if (!c.torchLayout) {
    write(engine, handle("inputWeights").c_str(), inputWeights, c.inputWeightBytes());
    write(engine, handle("outputWeights").c_str(), outputWeights, c.recurrentWeightBytes());
    write(engine, handle("biases").c_str(), biases, c.biasBytes());
    if (c.P)
      write(engine, handle("projection").c_str(),
            static_cast<const std::uint8_t *>(outputWeights) + c.recurrentWeightBytes(),
            c.projectionBytes());
    return;
  }
  // Converted on the host (device buffers come over first), unless they are bit for bit the
  // host weights the engine holds already.
  const WeightBuffers weights = callerWeights(c, inputWeights, outputWeights, biases);
  const bool keep = !memory.onDevice();
  if (keep && sameBytes(io.lastTorchWeights, weights))
    return;
  io.lastTorchWeights.clear(); // until the writes below succeed
  std::vector<std::uint8_t> callerCopy;
  std::uint8_t *stage = staging(io.staging, c.largestWeightBytes());
  transposeEach(c, stage, memory.onHost(inputWeights, c.inputWeightBytes(), callerCopy), G, c.H,
                c.I);
  write(engine, handle("inputWeights").c_str(), stage, c.inputWeightBytes());
  const std::uint8_t *caller = memory.onHost(outputWeights, c.outputWeightBytes(), callerCopy);
  transposeEach(c, stage, caller, G, c.H, c.hWidth());
  write(engine, handle("outputWeights").c_str(), stage, c.recurrentWeightBytes());
  if (c.P) { // weight_hr [P, H] -> Wp [H, P]
    transposeEach(c, stage, caller + c.recurrentWeightBytes(), 1, c.P, c.H);
    write(engine, handle("projection").c_str(), stage, c.projectionBytes());
  }
  biasesFromTorch(c, stage, memory.onHost(biases, c.callerBiasBytes(), callerCopy));
  write(engine, handle("biases").c_str(), stage, c.biasBytes());
  if (keep)
    keepBytes(io.lastTorchWeights, weights);
}

void readWeightGradients(Engine &engine, WeightIo &io, const RnnConfig &c,
                         const std::string &suffix, void *dInputWeights, void *dOutputWeights,
                         void *dBiases, const Memory &memory) {
  const std::size_t G = c.gates();
  const auto handle = [&](const char *name) { return std::string(name) + suffix; };
  if (!c.torchLayout) {
    read(engine, handle("dInputWeights").c_str(), dInputWeights, c.inputWeightBytes());
    read(engine, handle("dOutputWeights").c_str(), dOutputWeights, c.recurrentWeightBytes());
    read(engine, handle("dBiases").c_str(), dBiases, c.biasBytes());
    if (c.P)
      read(engine, handle("dProjection").c_str(),
           static_cast<std::uint8_t *>(dOutputWeights) + c.recurrentWeightBytes(),
           c.projectionBytes());
    return;
  }
  // Converted on the host, straight into host buffers, through `converted` into device ones.
  std::vector<std::uint8_t> converted;
  const auto target = [&](void *caller, std::size_t bytes) -> void * {
    if (!memory.onDevice())
      return caller;
    converted.resize(bytes);
    return converted.data();
  };
  const auto deliver = [&](void *caller, std::size_t bytes) {
    if (memory.onDevice())
      memory.copy(caller, converted.data(), bytes);
  };
  std::uint8_t *stage = staging(io.staging, c.largestWeightBytes());
  read(engine, handle("dInputWeights").c_str(), stage, c.inputWeightBytes());
  transposeEach(c, target(dInputWeights, c.inputWeightBytes()), stage, G, c.I, c.H);
  deliver(dInputWeights, c.inputWeightBytes());
  read(engine, handle("dOutputWeights").c_str(), stage, c.recurrentWeightBytes());
  auto *dOutput = static_cast<std::uint8_t *>(target(dOutputWeights, c.outputWeightBytes()));
  transposeEach(c, dOutput, stage, G, c.hWidth(), c.H);
  if (c.P) { // dWp [H, P] -> weight_hr's [P, H]
    read(engine, handle("dProjection").c_str(), stage, c.projectionBytes());
    transposeEach(c, dOutput + c.recurrentWeightBytes(), stage, 1, c.H, c.P);
  }
  deliver(dOutputWeights, c.outputWeightBytes());
  read(engine, handle("dBiases").c_str(), stage, c.biasBytes());
  biasesToTorch(c, static_cast<std::uint8_t *>(target(dBiases, c.callerBiasBytes())), stage);
  deliver(dBiases, c.callerBiasBytes());
}

namespace {

void writeInputs(RnnLayer &layer, const RnnConfig &c, const RnnForwardCall &call,
                 const Memory &memory) {
  Engine &engine = layer.engine;
  const std::size_t es = c.elementBytes();
  write(engine, "x", call.x, c.T * c.B * c.I * es);
  write(engine, "h0", call.h0, c.B * c.hWidth() * es);
  if (c.lstm)
    write(engine, "c0", call.c0, c.B * c.H * es);
  writeWeights(engine, layer.weightIo, c, "", call.inputWeights, call.outputWeights, call.biases,
               memory);
  if (c.variableLengths)
    write(engine, "lengths", call.lengths, c.B * sizeof(std::uint32_t));
}

} // namespace

std::shared_ptr<RnnLayer> buildRnnLayer(const Device &device, const RnnConfig &config,
                                        bool training) {
  if (config.vanilla)
    return buildVanilla(device, config, training);
  return config.lstm ? buildLstm(device, config, training) : buildGru(device, config, training);
}

void runRnnForward(RnnLayer &layer, const RnnConfig &c, const RnnForwardCall &call,
                   const Memory &memory) {
  const std::size_t es = c.elementBytes(), rowBytes = c.hWidth() * es;
  std::lock_guard<std::mutex> lock(layer.mutex);
  memory.waitForCaller();
  writeInputs(layer, c, call, memory);
  layer.engine.run(0);
  read(layer.engine, "y", call.y, c.T * c.B * rowBytes);
  if (c.lstm)
    read(layer.engine, "cn", call.cn, c.B * c.H * es);
  if (call.reserve)
    read(layer.engine, "reserve", call.reserve, layer.reserveBytes);
  // hn: each row's output at its final step (finalStep; the initial state when it has none).
  const auto *y = static_cast<const std::uint8_t *>(call.y);
  const auto *h0 = static_cast<const std::uint8_t *>(call.h0);
  auto *hn = static_cast<std::uint8_t *>(call.hn);
  if (!c.variableLengths) {
    memory.copy(hn, y + finalStep(c, c.T) * c.B * rowBytes, c.B * rowBytes);
    return;
  }
  const std::vector<std::size_t> rows = rowLengths(c, call.lengths);
  for (std::size_t b = 0; b < c.B; ++b) {
    const std::uint8_t *from =
        rows[b] ? y + (finalStep(c, rows[b]) * c.B + b) * rowBytes : h0 + b * rowBytes;
    memory.copy(hn + b * rowBytes, from, rowBytes);
  }
}

void runRnnBackward(RnnLayer &layer, const RnnConfig &c, const RnnBackwardCall &call,
                    const Memory &memory) {
  // rowBytes: a row of h (and y, dy, dhn, dh0); a cell row (dcn, dc0) is H wide.
  const std::size_t es = c.elementBytes(), rowBytes = c.hWidth() * es;
  const std::size_t cellBytes = c.B * c.H * es, dyBytes = c.T * c.B * rowBytes;
  const std::vector<std::size_t> rows = rowLengths(c, call.forward.lengths);
  std::lock_guard<std::mutex> lock(layer.mutex);
  memory.waitForCaller();
  Engine &engine = layer.engine;
  writeInputs(layer, c, call.forward, memory);
  write(engine, "y-in", call.forward.y, dyBytes);
  write(engine, "reserve-in", call.forward.reserve, layer.reserveBytes);
  // dy with dhn added at each row's final step (hn is that step's output), on the host; dy
  // as it is when there is no dhn.
  std::vector<std::uint8_t> dhnCopy;
  const std::uint8_t *dhn =
      call.dhn ? memory.onHost(call.dhn, c.B * rowBytes, dhnCopy) : nullptr;
  if (call.dy && !dhn) {
    write(engine, "dy", call.dy, dyBytes);
  } else {
    std::vector<std::uint8_t> dy(dyBytes, 0);
    if (call.dy)
      memory.copy(dy.data(), call.dy, dyBytes);
    for (std::size_t b = 0; b < c.B && dhn; ++b)
      if (rows[b] > 0)
        addElements(c, dy.data() + (finalStep(c, rows[b]) * c.B + b) * rowBytes,
                    dhn + b * rowBytes, c.hWidth());
    write(engine, "dy", dy.data(), dy.size());
  }
  if (c.lstm) {
    const std::vector<std::uint8_t> zeros(call.dcn ? 0 : cellBytes, 0);
    write(engine, "dcn", call.dcn ? call.dcn : zeros.data(), cellBytes);
  }
  engine.run(1);
  if (call.dx)
    read(engine, "dx", call.dx, c.T * c.B * c.I * es);
  read(engine, "dh0", call.dh0, c.B * rowBytes);
  if (c.lstm)
    read(engine, "dc0", call.dc0, cellBytes);
  if (call.dInputWeights)
    readWeightGradients(layer.engine, layer.weightIo, c, "", call.dInputWeights,
                        call.dOutputWeights, call.dBiases, memory);
  // A row without steps has hn = h0: dhn passes straight through (the layer carries dcn).
  for (std::size_t b = 0; b < c.B && dhn; ++b) {
    if (rows[b] != 0)
      continue;
    std::uint8_t *dh0 = static_cast<std::uint8_t *>(call.dh0) + b * rowBytes;
    std::vector<std::uint8_t> rowCopy;
    const std::uint8_t *current = memory.onHost(dh0, rowBytes, rowCopy);
    std::vector<std::uint8_t> sum(current, current + rowBytes);
    addElements(c, sum.data(), dhn + b * rowBytes, c.hWidth());
    memory.copy(dh0, sum.data(), rowBytes);
  }
}

std::shared_ptr<SimpleLayer> buildMatMul(const Device &device, Type type, std::size_t m,
                                         std::size_t k, std::size_t n) {
  Graph graph = makeGraph(device);
  linalg::PlanningCache cache;
  const std::vector<std::size_t> aShape = {m, k}, bShape = {k, n};
  Sequence prog;
  const Tensor a = linalg::createMatMulInputLHS(graph, type, type, aShape, bShape, "a", {}, &cache);
  const Tensor b = linalg::createMatMulInputRHS(graph, type, type, aShape, bShape, "b", {}, &cache);
  const Tensor c = linalg::matMul(graph, a, b, prog, type, "c", {}, &cache);
  graph.createHostWrite("a", a);
  graph.createHostWrite("b", b);
  graph.createHostRead("c", c);
  return std::make_shared<SimpleLayer>(compileAndLoad(graph, {prog}, device));
}

std::shared_ptr<SimpleLayer> buildNonLinearity(const Device &device, nn::NonLinearityType kind,
                                               Type type, std::size_t rows, std::size_t cols) {
  Graph graph = makeGraph(device);
  Sequence prog;
  const Tensor x = graph.addVariable(type, {rows, cols}, "x");
  util::mapTensorLinearly(graph, x);
  nn::nonLinearityInPlace(graph, kind, x, prog, "f");
  graph.createHostWrite("x-in", x);
  graph.createHostRead("x", x);
  return std::make_shared<SimpleLayer>(compileAndLoad(graph, {prog}, device));
}

} // namespace aspen::backend
