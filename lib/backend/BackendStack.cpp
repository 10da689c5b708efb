// The stack calls of aspen/backend.h (aspen_rnn_stack_*): a stack of recurrent layers in one or
// both directions, run as the single-layer calls on the backend's cached layers (one engine per
// layer configuration: a stack's layers past the first share one, and so do its directions'
// where their configurations agree). Between layers the two directions' outputs are
// interleaved per step (a 2-D copy) and, going back, their input gradients added.
#include <aspen/backend.h>

#include "BackendCalls.hpp"
#include "BackendMemory.hpp"
#include "Layers.hpp"

#include <fmt/format.h>

#include <aspen/HalfFloat.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

using aspen::backend::Memory;
using aspen::backend::RnnConfig;
using namespace aspen::backend::calls;

namespace {

constexpr std::size_t kAlign = 64;
std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// The dropout mask between layers (aspen_rnn_stack_desc::dropout; docs/backend.md states it so
// that others can reproduce it): element i of layer l's output is kept when
//   u = (mix(mix(seed ^ (l + 1) * 0xD1B54A32D192ED03) + i) >> 11) * 2^-53  >=  dropout,
// mix being SplitMix64's step (add the golden gamma, then its two xor-shift-multiply rounds).
// A counter-based generator: any element's draw is computed alone, on any device or thread.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool keeps(std::uint64_t layerKey, std::size_t i, double dropout) {
  const double u = double(mix(layerKey + i) >> 11) * 0x1.0p-53;
  return u >= dropout;
}

const char *directionName(std::size_t d, bool reverseOnly) {
  return d == 1 || reverseOnly ? "reverse" : "forward";
}

// The stack as its descriptor gives it, checked; offsets into the caller's workspace and
// reserve.
struct Stack {
  RnnConfig base; // layer 0 in the forward direction
  std::size_t L = 1, D = 1;
  bool reverseOnly = false;
  double dropout = 0.0;
  std::uint64_t seed = 0;

  // Whether layer l's output is dropped before the next layer takes it (training only).
  bool drops(std::size_t l) const { return dropout > 0.0 && l + 1 < L; }
  // Whether a training forward keeps direction d of layer l's own output apart from the layer's
  // output: to interleave two directions, or to keep it whole while the layer's output drops.
  bool separateOutput(std::size_t l) const { return D == 2 || drops(l); }
  std::uint64_t layerKey(std::size_t l) const {
    return mix(seed ^ ((l + 1) * 0xD1B54A32D192ED03ull));
  }

  std::size_t es() const { return base.elementBytes(); }
  std::size_t steps() const { return base.T * base.B; } // rows of a sequence
  // W: the width of h and of each direction's output (the projection's size, or H).
  std::size_t W() const { return base.hWidth(); }
  std::size_t stateBytes() const { return base.B * W() * es(); }         // h0, hn: one entry
  std::size_t cellStateBytes() const { return base.B * base.H * es(); }  // c0, cn: one entry
  std::size_t inputSize(std::size_t l) const { return l == 0 ? base.I : D * W(); }
  std::size_t count() const { return L * D; } // layers x directions: states, weight sets

  // Layer l in direction d: its input size, and the direction option when it runs in reverse.
  RnnConfig config(std::size_t l, std::size_t d) const {
    RnnConfig c = base;
    c.I = inputSize(l);
    if (reverseOnly || d == 1) {
      c.options.set("direction", "reverse");
      c.optionsText += "|direction=reverse";
    }
    return c;
  }
  std::string name(std::size_t i) const {
    return fmt::format("layer {}, {}", i / D, directionName(i % D, reverseOnly));
  }

  // Workspace: two [T,B,D*W] (layer outputs in inference; the summed input gradient of a layer
  // in the backward), then per direction a [T,B,W] (its output or its share of dy) and a
  // [T,B,max(I, D*W)] (its input gradient). A single layer in one direction uses none.
  std::size_t sequenceBytes(std::size_t width) const {
    return aligned(product({steps(), width, es()}, "a stack's sequences"));
  }
  std::size_t outAt(std::size_t k) const { return k * sequenceBytes(D * W()); }
  std::size_t dirAt(std::size_t d) const {
    return 2 * sequenceBytes(D * W()) + d * sequenceBytes(W());
  }
  std::size_t dxAt(std::size_t d) const {
    return dirAt(D) + d * sequenceBytes(std::max(base.I, D * W()));
  }
  std::size_t workspaceBytes() const {
    return D == 1 && L == 1 ? 0 : D == 1 ? dirAt(0) : dxAt(D);
  }
};

// The reserve: per layer and direction its layer's reserve and, bidirectional, its output
// [T,B,W]; per layer but the last its output [T,B,D*W] (the next layer's input).
struct ReserveLayout {
  std::vector<std::size_t> layerAt, yAt, outAt;
  std::size_t bytes = 0;
};

ReserveLayout reserveLayout(aspen_backend *backend, const Stack &s) {
  ReserveLayout r;
  for (std::size_t i = 0; i < s.count(); ++i) {
    r.layerAt.push_back(r.bytes);
    r.bytes += aligned(rnnLayer(backend, s.config(i / s.D, i % s.D), true)->reserveBytes);
    r.yAt.push_back(r.bytes);
    if (s.separateOutput(i / s.D))
      r.bytes += s.sequenceBytes(s.W());
  }
  for (std::size_t l = 0; l + 1 < s.L; ++l) {
    r.outAt.push_back(r.bytes);
    r.bytes += s.sequenceBytes(s.D * s.W());
  }
  return r;
}

Stack readStack(const aspen_rnn_stack_desc *desc) {
  needBuffer(desc, "desc");
  constexpr std::size_t least = offsetof(aspen_rnn_stack_desc, layer) + sizeof(aspen_rnn_desc);
  need(desc->struct_size >= least,
       fmt::format("desc->struct_size is {}, less than the {} bytes of the first version of "
                   "aspen_rnn_stack_desc; set it to sizeof(aspen_rnn_stack_desc) "
                   "(aspen_rnn_stack_desc_init())",
                   desc->struct_size, least));
  aspen_rnn_stack_desc d{};
  std::memcpy(&d, desc, std::min(desc->struct_size, sizeof d));
  // Fields of a newer header than this library's: refused unless they are zero (unset).
  const auto *bytes = reinterpret_cast<const unsigned char *>(desc);
  for (std::size_t at = sizeof d; at < desc->struct_size; ++at)
    if (bytes[at] != 0)
      throw aspen::backend::Unsupported(fmt::format(
          "desc sets a field at byte {} that this version of Aspen does not know "
          "(aspen_rnn_stack_desc is {} bytes here, the caller's {}): a newer header's feature",
          at, sizeof d, desc->struct_size));
  Stack s;
  s.base = rnnConfig(&d.layer);
  need(!s.base.options.contains("direction"),
       "desc->layer.options sets direction; a stack takes its direction from desc->direction");
  need(d.direction == ASPEN_RNN_FORWARD || d.direction == ASPEN_RNN_REVERSE ||
           d.direction == ASPEN_RNN_BIDIRECTIONAL,
       fmt::format("desc->direction {} is not ASPEN_RNN_FORWARD (0), ASPEN_RNN_REVERSE (1) or "
                   "ASPEN_RNN_BIDIRECTIONAL (2)",
                   static_cast<int>(d.direction)));
  s.L = d.num_layers == 0 ? 1 : d.num_layers;
  s.D = d.direction == ASPEN_RNN_BIDIRECTIONAL ? 2 : 1;
  s.reverseOnly = d.direction == ASPEN_RNN_REVERSE;
  need(d.dropout >= 0.0 && d.dropout < 1.0,
       fmt::format("desc->dropout {} is not in [0, 1)", d.dropout));
  s.dropout = d.dropout;
  s.seed = d.dropout_seed;
  product({s.L, s.D, s.base.B, s.base.H, 8}, "the stack's states");
  product({s.base.T, s.base.B, s.D * s.W(), 8}, "the stack's output");
  return s;
}

// The weight arrays: each given, with num_layers * D entries, each in the backend's memory.
void checkWeightArrays(aspen_backend *backend, const Stack &s,
                       std::initializer_list<std::pair<const char *, const void *const *>> arrays) {
  for (const auto &[name, array] : arrays) {
    needBuffer(array, name);
    for (std::size_t i = 0; i < s.count(); ++i) {
      const std::string what = fmt::format("{}[{}] ({})", name, i, s.name(i));
      needBuffer(array[i], what.c_str());
      checkPlaces(backend, {{what.c_str(), array[i]}});
    }
  }
}

const void *at(const void *p, std::size_t offset) {
  return p ? static_cast<const std::uint8_t *>(p) + offset : nullptr;
}
void *at(void *p, std::size_t offset) {
  return p ? static_cast<std::uint8_t *>(p) + offset : nullptr;
}

// edit(bytes) on buffer as host memory: in place for a host buffer, through a copy each way for
// a device one (like the single-layer calls' host steps).
template <class Edit>
void editOnHost(const Memory &memory, void *buffer, std::size_t bytes, Edit edit) {
  if (!memory.onDevice()) {
    edit(static_cast<std::uint8_t *>(buffer));
    return;
  }
  std::vector<std::uint8_t> copy(bytes);
  memory.copy(copy.data(), buffer, bytes);
  edit(copy.data());
  memory.copy(buffer, copy.data(), bytes);
}

// dst = a + b, n elements of the stack's type, in the backend's memory.
void addSequences(const Memory &memory, const RnnConfig &c, void *dst, const void *a,
                  const void *b, std::size_t n) {
  const std::size_t bytes = n * c.elementBytes();
  memory.copy(dst, a, bytes);
  std::vector<std::uint8_t> bCopy;
  const std::uint8_t *bHost = memory.onHost(b, bytes, bCopy);
  editOnHost(memory, dst, bytes,
             [&](std::uint8_t *sum) { aspen::backend::addElements(c, sum, bHost, n); });
}

struct StackForward {
  const void *x, *h0, *c0;
  const void *const *inputWeights, *const *outputWeights, *const *biases;
  const std::uint32_t *lengths;
  void *y, *hn, *cn, *workspace, *reserve;
};

void checkStackForward(aspen_backend *backend, const Stack &s, const StackForward &a,
                       bool backward) {
  needBuffer(a.x, "x");
  needBuffer(a.h0, "h0");
  needBuffer(a.y, backward ? "y (the training forward's output)" : "y");
  if (s.base.lstm)
    needBuffer(a.c0, "c0 (an LSTM's initial cell state)");
  else
    need(a.c0 == nullptr, "c0 is given, but a GRU has no cell state");
  if (!backward) {
    needBuffer(a.hn, "hn");
    if (s.base.lstm)
      needBuffer(a.cn, "cn (an LSTM's final cell state)");
    else
      need(a.cn == nullptr, "cn is given, but a GRU has no cell state");
  }
  if (s.workspaceBytes() > 0)
    needBuffer(a.workspace, fmt::format("workspace ({} bytes: aspen_rnn_stack_sizes)",
                                        s.workspaceBytes())
                                .c_str());
  checkWeightArrays(backend, s, {{"input_weights", a.inputWeights},
                                 {"output_weights", a.outputWeights},
                                 {"biases", a.biases}});
  checkPlaces(backend, {{"x", a.x}, {"h0", a.h0}, {"c0", a.c0}, {"y", a.y}, {"hn", a.hn},
                        {"cn", a.cn}, {"workspace", a.workspace}, {"reserve", a.reserve}});
  checkLengthsOnHost(a.lengths);
  checkLengths(s.base, a.lengths);
}

// Layer l's input: x, or the previous layer's output in the reserve (training) or workspace.
const void *layerInput(const Stack &s, const StackForward &a, const ReserveLayout *r,
                       std::size_t l) {
  if (l == 0)
    return a.x;
  return r ? at(a.reserve, r->outAt[l - 1]) : at(a.workspace, s.outAt((l - 1) % 2));
}

// Layer l's output [T,B,D*W]: y for the last layer, else in the reserve or workspace.
void *layerOutput(const Stack &s, const StackForward &a, const ReserveLayout *r, std::size_t l) {
  if (l + 1 == s.L)
    return a.y;
  return r ? at(a.reserve, r->outAt[l]) : at(a.workspace, s.outAt(l % 2));
}

// Direction d of layer l's own output [T,B,W]: the layer's output when that is the same.
void *directionOutput(const Stack &s, const StackForward &a, const ReserveLayout *r,
                      std::size_t l, std::size_t d) {
  if (r)
    return s.separateOutput(l) ? at(a.reserve, r->yAt[l * s.D + d]) : layerOutput(s, a, r, l);
  return s.D == 1 ? layerOutput(s, a, r, l) : at(a.workspace, s.dirAt(d));
}

// buffer [T,B,D*W] of layer l's output (or its gradient) times the dropout mask and scale, in
// the backend's memory (through the host on a GPU).
void applyDropout(const Stack &s, const Memory &memory, void *buffer, std::size_t l) {
  const std::size_t n = s.steps() * s.D * s.W();
  const std::uint64_t key = s.layerKey(l);
  const auto scale = static_cast<float>(1.0 / (1.0 - s.dropout));
  editOnHost(memory, buffer, n * s.es(), [&](std::uint8_t *values) {
    for (std::size_t i = 0; i < n; ++i) {
      const float factor = keeps(key, i, s.dropout) ? scale : 0.0f;
      if (s.base.type == aspen::FLOAT) {
        float v;
        std::memcpy(&v, values + 4 * i, 4);
        v *= factor;
        std::memcpy(values + 4 * i, &v, 4);
      } else {
        std::uint16_t bits;
        std::memcpy(&bits, values + 2 * i, 2);
        bits = static_cast<std::uint16_t>(aspen::detail::floatToHalfBits(
            aspen::detail::halfBitsToFloat(bits) * factor));
        std::memcpy(values + 2 * i, &bits, 2);
      }
    }
  });
}

aspen::backend::RnnForwardCall layerCall(const Stack &s, const StackForward &a,
                                         const ReserveLayout *r, std::size_t i) {
  const std::size_t l = i / s.D, d = i % s.D, state = i * s.stateBytes();
  const std::size_t cell = i * s.cellStateBytes();
  return {layerInput(s, a, r, l), at(a.h0, state), at(a.c0, cell),
          a.inputWeights[i], a.outputWeights[i], a.biases[i], a.lengths,
          directionOutput(s, a, r, l, d), at(a.hn, state), at(a.cn, cell),
          r ? at(a.reserve, r->layerAt[i]) : nullptr};
}

void runStackForward(aspen_backend *backend, const Stack &s, const StackForward &a,
                     const Memory &memory) {
  const bool training = a.reserve != nullptr;
  const ReserveLayout layout = training ? reserveLayout(backend, s) : ReserveLayout{};
  const ReserveLayout *r = training ? &layout : nullptr;
  const std::size_t rowBytes = s.W() * s.es();
  for (std::size_t l = 0; l < s.L; ++l) {
    for (std::size_t d = 0; d < s.D; ++d) {
      const std::size_t i = l * s.D + d;
      const RnnConfig c = s.config(l, d);
      const auto layer = rnnLayer(backend, c, training);
      aspen::backend::runRnnForward(*layer, c, layerCall(s, a, r, i), memory);
      void *own = directionOutput(s, a, r, l, d), *out = layerOutput(s, a, r, l);
      if (own != out) // this direction's part of every step of the layer's output
        memory.copyRows(at(out, d * rowBytes), s.D * rowBytes, own, rowBytes, rowBytes,
                        s.steps());
    }
    if (training && s.drops(l))
      applyDropout(s, memory, layerOutput(s, a, r, l), l);
  }
}

struct StackGradients {
  const void *dy, *dhn, *dcn;
  void *dx, *dh0, *dc0;
  void *const *dInputWeights, *const *dOutputWeights, *const *dBiases;
};

void runStackBackward(aspen_backend *backend, const Stack &s, const StackForward &a,
                      const StackGradients &g, const Memory &memory) {
  const ReserveLayout r = reserveLayout(backend, s);
  const std::size_t rowBytes = s.W() * s.es();
  const void *dyLayer = g.dy; // the gradient of layer l's output [T,B,D*W]; NULL: zero
  for (std::size_t l = s.L; l-- > 0;) {
    if (s.drops(l)) // dyLayer is the next layer's input gradient, in the workspace
      applyDropout(s, memory, const_cast<void *>(dyLayer), l);
    // Layer l's input gradient, the next layer down's dy (the caller's dx for layer 0).
    void *dxLayer = l > 0 ? at(a.workspace, s.outAt(l % 2)) : g.dx;
    for (std::size_t d = 0; d < s.D; ++d) {
      const std::size_t i = l * s.D + d, state = i * s.stateBytes();
      const std::size_t cell = i * s.cellStateBytes();
      const RnnConfig c = s.config(l, d);
      const void *dy = dyLayer;
      if (s.D == 2 && dyLayer) { // this direction's half of every step
        memory.copyRows(at(a.workspace, s.dirAt(d)), rowBytes, at(dyLayer, d * rowBytes),
                        s.D * rowBytes, rowBytes, s.steps());
        dy = at(a.workspace, s.dirAt(d));
      }
      void *dx = s.D == 2 && dxLayer ? at(a.workspace, s.dxAt(d)) : dxLayer;
      const bool weights = g.dInputWeights != nullptr;
      const auto layer = rnnLayer(backend, c, true);
      aspen::backend::runRnnBackward(
          *layer, c,
          {layerCall(s, a, &r, i), dy, at(g.dhn, state), at(g.dcn, cell), dx,
           at(g.dh0, state), at(g.dc0, cell), weights ? g.dInputWeights[i] : nullptr,
           weights ? g.dOutputWeights[i] : nullptr, weights ? g.dBiases[i] : nullptr},
          memory);
    }
    if (s.D == 2 && dxLayer) // the input feeds both directions: their gradients add up
      addSequences(memory, s.config(l, 0), dxLayer, at(a.workspace, s.dxAt(0)),
                   at(a.workspace, s.dxAt(1)), s.steps() * s.inputSize(l));
    dyLayer = dxLayer;
  }
}

} // namespace

extern "C" {

aspen_status aspen_rnn_stack_sizes(aspen_backend *backend, const aspen_rnn_stack_desc *desc,
                                   size_t *workspace_bytes, size_t *reserve_bytes) {
  return guarded("aspen_rnn_stack_sizes", [&] {
    checkBackend(backend);
    need(workspace_bytes || reserve_bytes, "workspace_bytes and reserve_bytes are both NULL");
    const aspen::backend::CurrentDeviceGuard keepCallersDevice(backend->gpuOrdinal >= 0);
    const Stack s = readStack(desc);
    if (workspace_bytes)
      *workspace_bytes = s.workspaceBytes();
    if (reserve_bytes) // compiles the training layers, as aspen_rnn_reserve_bytes does
      *reserve_bytes = reserveLayout(backend, s).bytes;
  });
}

aspen_status aspen_rnn_stack_forward(aspen_backend *backend, const aspen_rnn_stack_desc *desc,
                                     const void *x, const void *h0, const void *c0,
                                     const void *const *input_weights,
                                     const void *const *output_weights,
                                     const void *const *biases, const uint32_t *lengths, void *y,
                                     void *hn, void *cn, void *workspace, void *reserve,
                                     void *stream) {
  return guarded("aspen_rnn_stack_forward", [&] {
    const CallPlace place(backend, stream);
    const Stack s = readStack(desc);
    const StackForward a{x,       h0, c0, input_weights, output_weights, biases,
                         lengths, y,  hn, cn,            workspace,      reserve};
    checkStackForward(backend, s, a, false);
    runStackForward(backend, s, a, place.memory);
  });
}

aspen_status aspen_rnn_stack_backward(
    aspen_backend *backend, const aspen_rnn_stack_desc *desc, const void *x, const void *h0,
    const void *c0, const void *const *input_weights, const void *const *output_weights,
    const void *const *biases, const uint32_t *lengths, const void *y, void *workspace,
    const void *reserve, const void *dy, const void *dhn, const void *dcn, void *dx, void *dh0,
    void *dc0, void *const *d_input_weights, void *const *d_output_weights,
    void *const *d_biases, void *stream) {
  return guarded("aspen_rnn_stack_backward", [&] {
    const CallPlace place(backend, stream);
    const Stack s = readStack(desc);
    const StackForward a{x,       h0,
                         c0,      input_weights,
                         output_weights, biases,
                         lengths, const_cast<void *>(y),
                         nullptr, nullptr,
                         workspace, const_cast<void *>(reserve)};
    checkStackForward(backend, s, a, true);
    if (checkBackwardBuffers(s.base.lstm, reserve, dcn, dh0, dc0, d_input_weights,
                             d_output_weights, d_biases))
      checkWeightArrays(backend, s, {{"d_input_weights", d_input_weights},
                                     {"d_output_weights", d_output_weights},
                                     {"d_biases", d_biases}});
    checkPlaces(backend, {{"dy", dy}, {"dhn", dhn}, {"dcn", dcn}, {"dx", dx}, {"dh0", dh0},
                          {"dc0", dc0}});
    runStackBackward(backend, s, a,
                     {dy, dhn, dcn, dx, dh0, dc0, d_input_weights, d_output_weights, d_biases},
                     place.memory);
  });
}

} // extern "C"
