// The stack calls of aspen/backend.h (aspen_rnn_stack_*): a stack of recurrent layers in one or
// both directions, one engine a stack configuration (StackLayers.cpp: the library's
// lstm::lstmStackFwd / gru::gruStackFwd and their backward), cached as the layers are. The
// library schedules it (a wavefront across fused layers, a bidirectional layer's directions in
// one compute set a step) and applies the dropout between layers in the graph, with the mask
// docs/backend.md states; the caller's reserve holds its intermediates. No workspace.
#include <aspen/backend.h>

#include "BackendCalls.hpp"
#include "BackendMemory.hpp"
#include "Layers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

using aspen::backend::Memory;
using aspen::backend::RnnConfig;
using aspen::backend::RnnStackConfig;
using namespace aspen::backend::calls;

namespace {

// The stack's engine from the backend's cache (compiled on first use): training or inference.
std::shared_ptr<aspen::backend::RnnLayer> stackLayer(aspen_backend *backend,
                                                     const RnnStackConfig &s, bool training) {
  return cachedLayer<aspen::backend::RnnLayer>(
      backend, s.key(training ? "train" : "infer") + "|" + backend->deviceName,
      [&] { return aspen::backend::buildRnnStack(backend->device, s, training); });
}

RnnStackConfig readStack(const aspen_rnn_stack_desc *desc) {
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
  RnnStackConfig s;
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
void checkWeightArrays(aspen_backend *backend, const RnnStackConfig &s,
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

struct StackForward {
  const void *x, *h0, *c0;
  const void *const *inputWeights, *const *outputWeights, *const *biases;
  const std::uint32_t *lengths;
  void *y, *hn, *cn, *workspace, *reserve;
};

void checkStackForward(aspen_backend *backend, const RnnStackConfig &s, const StackForward &a,
                       bool backward) {
  needBuffer(a.x, "x");
  needBuffer(a.h0, "h0");
  needBuffer(a.y, backward ? "y (the training forward's output)" : "y");
  if (s.base.lstm)
    needBuffer(a.c0, "c0 (an LSTM's initial cell state)");
  else
    need(a.c0 == nullptr,
         fmt::format("c0 is given, but {} has no cell state", s.base.cellName()));
  if (!backward) {
    needBuffer(a.hn, "hn");
    if (s.base.lstm)
      needBuffer(a.cn, "cn (an LSTM's final cell state)");
    else
      need(a.cn == nullptr,
           fmt::format("cn is given, but {} has no cell state", s.base.cellName()));
  }
  checkWeightArrays(backend, s, {{"input_weights", a.inputWeights},
                                 {"output_weights", a.outputWeights},
                                 {"biases", a.biases}});
  checkPlaces(backend, {{"x", a.x}, {"h0", a.h0}, {"c0", a.c0}, {"y", a.y}, {"hn", a.hn},
                        {"cn", a.cn}, {"workspace", a.workspace}, {"reserve", a.reserve}});
  checkLengthsOnHost(a.lengths);
  checkLengths(s.base, a.lengths);
}

} // namespace

extern "C" {

aspen_status aspen_rnn_stack_sizes(aspen_backend *backend, const aspen_rnn_stack_desc *desc,
                                   size_t *workspace_bytes, size_t *reserve_bytes) {
  return guarded("aspen_rnn_stack_sizes", [&] {
    checkBackend(backend);
    need(workspace_bytes || reserve_bytes, "workspace_bytes and reserve_bytes are both NULL");
    const aspen::backend::CurrentDeviceGuard keepCallersDevice(backend->gpuOrdinal >= 0);
    const RnnStackConfig s = readStack(desc);
    if (workspace_bytes)
      *workspace_bytes = 0;
    if (reserve_bytes) // compiles the training stack, as aspen_rnn_reserve_bytes does
      *reserve_bytes = stackLayer(backend, s, true)->reserveBytes;
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
    const RnnStackConfig s = readStack(desc);
    const StackForward a{x,       h0, c0, input_weights, output_weights, biases,
                         lengths, y,  hn, cn,            workspace,      reserve};
    checkStackForward(backend, s, a, false);
    const auto layer = stackLayer(backend, s, reserve != nullptr);
    aspen::backend::runRnnStackForward(
        *layer, s, {x, h0, c0, input_weights, output_weights, biases, lengths, y, hn, cn, reserve},
        place.memory);
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
    const RnnStackConfig s = readStack(desc);
    const StackForward a{x,       h0,
                         c0,      input_weights,
                         output_weights, biases,
                         lengths, const_cast<void *>(y),
                         nullptr, nullptr,
                         workspace, const_cast<void *>(reserve)};
    checkStackForward(backend, s, a, true);
    if (checkBackwardBuffers(s.base, reserve, dcn, dh0, dc0, d_input_weights,
                             d_output_weights, d_biases))
      checkWeightArrays(backend, s, {{"d_input_weights", d_input_weights},
                                     {"d_output_weights", d_output_weights},
                                     {"d_biases", d_biases}});
    checkPlaces(backend, {{"dy", dy}, {"dhn", dhn}, {"dcn", dcn}, {"dx", dx}, {"dh0", dh0},
                          {"dc0", dc0}});
    const auto layer = stackLayer(backend, s, true);
    const aspen::backend::RnnStackForwardCall forward{
        x,       h0,      c0,      input_weights, output_weights, biases,
        lengths, nullptr, nullptr, nullptr,       const_cast<void *>(reserve)};
    aspen::backend::runRnnStackBackward(*layer, s,
                                        {forward, dy, dhn, dcn, dx, dh0, dc0, d_input_weights,
                                         d_output_weights, d_biases},
                                        place.memory);
  });
}

} // extern "C"
