// The layers the C backend (aspen/backend.h) compiles and runs: each one an Engine loaded on the
// backend's device, built from a validated configuration, with named host handles for the
// caller's buffers. A layer runs one call at a time (its mutex); the cache shares it between
// threads.
#pragma once

#include <aspen/Device.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Type.hpp>
#include <aspen/nn/Gru.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/nn/NonLinearityDef.hpp>
#include <aspen/nn/RecurrentStack.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace aspen::backend {

class Memory;

// A graph on the device's target with the ops, linalg and nn codelets; an engine of it, loaded.
Graph makeGraph(const Device &device);
Engine compileAndLoad(const Graph &graph, const std::vector<program::Program> &programs,
                      const Device &device);

// A recurrent layer as aspen_rnn_desc describes it, checked.
struct RnnConfig {
  bool lstm = true;
  // The vanilla RNN (ASPEN_RNN_TANH, ASPEN_RNN_RELU; lstm false): its non-linearity.
  bool vanilla = false;
  nn::NonLinearityType nonLinearity = nn::NonLinearityType::TANH;
  Type type = FLOAT;
  std::size_t T = 0, B = 0, I = 0, H = 0;
  bool variableLengths = false;
  bool resetAfter = false;             // GRU
  std::vector<std::string> cellOrder;  // empty: the layer's default
  OptionFlags options;                 // popnn's keys
  std::string optionsText;             // the options as given, sorted: part of the key
  // The caller's weights, biases and their gradients in PyTorch's layout (aspen/backend.h's
  // ASPEN_WEIGHTS_PYTORCH), converted on the host; not part of the key (the engine is the same).
  bool torchLayout = false;
  // LSTM: the options' cellClipMin, cellClipMax and cellClipNan (LstmParams::cellClip), taken
  // out of `options` (the layer's options do not have them); part of the key through
  // optionsText.
  nn::lstm::LstmParams::CellClip cellClip;
  // LSTM: the options' projSize (LstmParams::projSize, 0 < P < H; 0: none), taken out of
  // `options` like the cell clip. The caller's output_weights then hold the recurrent weights
  // followed by the projection (aspen/backend.h).
  std::size_t P = 0;
  // The options' activationClip (LstmParams' or GruParams' activationClip threshold; 0: none),
  // taken out of `options` like the cell clip.
  double activationClip = 0.0;

  std::size_t gates() const { return vanilla ? 1 : lstm ? 4 : 3; }
  // "an LSTM", "a GRU", "a vanilla RNN": in messages.
  const char *cellName() const { return vanilla ? "a vanilla RNN" : lstm ? "an LSTM" : "a GRU"; }
  // The width of h (h0, y, hn and their gradients): P with a projection, else H.
  std::size_t hWidth() const { return P ? P : H; }
  // options' direction is reverse: each row's final state is its output at step 0
  // (docs/recurrent.md). Any other value is the layer's to refuse.
  bool reverse() const {
    const std::string *direction = options.find("direction");
    return direction && *direction == "reverse";
  }
  // [G, H], or [G, 2, H] for a GRU with resetAfter (input and recurrent biases).
  std::size_t biasElements() const { return gates() * (!lstm && resetAfter ? 2 : 1) * H; }
  // The caller's biases: biasElements(), or [2, G*H] in PyTorch's layout.
  std::size_t callerBiasElements() const { return torchLayout ? 2 * gates() * H : biasElements(); }
  // Bytes of the input and recurrent weights (either layout), the layer's biases and the
  // caller's.
  std::size_t inputWeightBytes() const { return gates() * I * H * elementBytes(); }
  // output_weights: the recurrent weights [G, hWidth, H] (PyTorch: [G*H, hWidth]), then with a
  // projection Wp [H, P] (PyTorch's weight_hr: [P, H]).
  std::size_t recurrentWeightBytes() const { return gates() * hWidth() * H * elementBytes(); }
  std::size_t projectionBytes() const { return H * P * elementBytes(); }
  std::size_t outputWeightBytes() const { return recurrentWeightBytes() + projectionBytes(); }
  std::size_t biasBytes() const { return biasElements() * elementBytes(); }
  std::size_t callerBiasBytes() const { return callerBiasElements() * elementBytes(); }
  // The largest of the layer's weight and bias tensors, in bytes (a conversion's staging).
  std::size_t largestWeightBytes() const {
    return std::max({inputWeightBytes(), outputWeightBytes(), biasBytes()});
  }
  std::size_t elementBytes() const { return type.size(); }
  std::string key(const char *pass) const;
};

// The state of one layer's weights' host handles (suffix: "" for a layer, ".i" for entry i of a
// stack).
struct WeightIo {
  std::vector<std::uint8_t> staging; // layout conversions (PyTorch's weights), reused
  // PyTorch's weights and biases (host buffers) as last converted and written to the engine,
  // which holds them until the next write (no program writes them): a call whose weights are
  // bit for bit the same skips the conversion and the write. Empty: none yet.
  std::vector<std::uint8_t> lastTorchWeights;
};

// What the layers' builders share (Layers.cpp, StackLayers.cpp): host handle transfers of
// `bytes` bytes, the lengths variable (host handle "lengths"; invalid without variable lengths),
// the layer's parameters from its configuration, and its options: the caller's, inferenceOnly
// for a forward without reserve, and hardSigmoidGradient exact (the true derivative, as
// frameworks give it) unless the caller chose.
void write(Engine &engine, const char *handle, const void *data, std::size_t bytes);
void read(Engine &engine, const char *handle, void *data, std::size_t bytes);
Tensor addLengths(Graph &graph, const RnnConfig &c);
nn::lstm::LstmParams lstmParams(const RnnConfig &c, const Tensor &lengths);
nn::gru::GruParams gruParams(const RnnConfig &c, const Tensor &lengths);
nn::rnn::RecurrentParams vanillaParams(const RnnConfig &c, const Tensor &lengths);
OptionFlags layerOptions(const RnnConfig &c, bool training);

struct RnnLayer {
  RnnLayer(Engine e, bool training) : engine(std::move(e)), training(training) {}
  std::mutex mutex;
  Engine engine;
  std::atomic<std::uint64_t> hostLoopVersion{0}; // aspen_backend::hostLoopVersion it runs on
  bool training;
  std::size_t reserveBytes = 0; // the forward's intermediates (training)
  WeightIo weightIo;            // a layer's weights
  // A stack's (buildRnnStack): each layer and direction's weights, and the reserve's parts
  // (host handles "reserve.k" / "reserve-in.k", one after another at 64-byte offsets).
  std::vector<WeightIo> stackWeightIo;
  std::vector<std::size_t> reserveParts; // bytes of part k
};

// Writes a layer's weights (Aspen's or PyTorch's layout, c.torchLayout) to the handles
// inputWeights<suffix>, outputWeights<suffix>, biases<suffix> (projection<suffix>), and reads
// their gradients from dInputWeights<suffix>, ... into the caller's layout.
void writeWeights(Engine &engine, WeightIo &io, const RnnConfig &c, const std::string &suffix,
                  const void *inputWeights, const void *outputWeights, const void *biases,
                  const Memory &memory);
void readWeightGradients(Engine &engine, WeightIo &io, const RnnConfig &c,
                         const std::string &suffix, void *dInputWeights, void *dOutputWeights,
                         void *dBiases, const Memory &memory);

// Compiles and loads the layer: inference (program 0: forward), or training (program 0: the
// forward that saves its intermediates, program 1: backward with the weight update).
std::shared_ptr<RnnLayer> buildRnnLayer(const Device &device, const RnnConfig &config,
                                        bool training);

// The buffers of one call; sizes follow the config (aspen/backend.h's layouts).
struct RnnForwardCall {
  const void *x, *h0, *c0, *inputWeights, *outputWeights, *biases;
  const std::uint32_t *lengths;
  void *y, *hn, *cn, *reserve;
};
// `memory` says where the caller's buffers are (BackendMemory.hpp); lengths are host memory.
void runRnnForward(RnnLayer &layer, const RnnConfig &config, const RnnForwardCall &call,
                   const Memory &memory);

struct RnnBackwardCall {
  RnnForwardCall forward; // y and reserve are read; hn, cn unused
  const void *dy, *dhn, *dcn;
  void *dx, *dh0, *dc0, *dInputWeights, *dOutputWeights, *dBiases;
};
void runRnnBackward(RnnLayer &layer, const RnnConfig &config, const RnnBackwardCall &call,
                    const Memory &memory);

// A stack as aspen_rnn_stack_desc describes it, checked: layer 0's configuration in the forward
// direction (its options without direction), L layers, D directions (a reverse-only stack has
// D = 1), dropout between layers in training.
struct RnnStackConfig {
  RnnConfig base;
  std::size_t L = 1, D = 1;
  bool reverseOnly = false;
  double dropout = 0.0;
  std::uint64_t seed = 0;

  std::size_t count() const { return L * D; } // layers x directions: states, weight sets
  std::size_t W() const { return base.hWidth(); }
  std::size_t inputSize(std::size_t l) const { return l == 0 ? base.I : D * W(); }
  // Layer l in direction d as a single layer (its input size and direction): its weights'
  // sizes and layouts.
  RnnConfig layer(std::size_t l, std::size_t d) const;
  std::string name(std::size_t i) const; // "layer l, forward"
  std::string key(const char *pass) const;
};

// The stack compiled as one engine (lstm::lstmStackFwd, gru::gruStackFwd and their backward):
// inference (program 0), or training (program 0 the forward keeping its intermediates, program
// 1 the backward with the weight update); reserveBytes the intermediates' bytes.
std::shared_ptr<RnnLayer> buildRnnStack(const Device &device, const RnnStackConfig &config,
                                        bool training);

struct RnnStackForwardCall {
  const void *x, *h0, *c0;
  const void *const *inputWeights, *const *outputWeights, *const *biases;
  const std::uint32_t *lengths;
  void *y, *hn, *cn, *reserve;
};
void runRnnStackForward(RnnLayer &layer, const RnnStackConfig &config,
                        const RnnStackForwardCall &call, const Memory &memory);

struct RnnStackBackwardCall {
  RnnStackForwardCall forward; // reserve is read; y, hn, cn unused
  const void *dy, *dhn, *dcn;
  void *dx, *dh0, *dc0;
  void *const *dInputWeights, *const *dOutputWeights, *const *dBiases;
};
void runRnnStackBackward(RnnLayer &layer, const RnnStackConfig &config,
                         const RnnStackBackwardCall &call, const Memory &memory);

// dst[i] += src[i] for n elements of the config's type (host memory), rounded to the type.
void addElements(const RnnConfig &c, std::uint8_t *dst, const std::uint8_t *src, std::size_t n);

struct SimpleLayer {
  explicit SimpleLayer(Engine e) : engine(std::move(e)) {}
  std::mutex mutex;
  Engine engine;
  std::atomic<std::uint64_t> hostLoopVersion{0}; // aspen_backend::hostLoopVersion it runs on
};

// c [m,n] = a [m,k] . b [k,n]: handles "a", "b", "c".
std::shared_ptr<SimpleLayer> buildMatMul(const Device &device, Type type, std::size_t m,
                                         std::size_t k, std::size_t n);
// x [rows, cols] = f(x) in place: handles "x-in", "x".
std::shared_ptr<SimpleLayer> buildNonLinearity(const Device &device, nn::NonLinearityType kind,
                                               Type type, std::size_t rows, std::size_t cols);

} // namespace aspen::backend
