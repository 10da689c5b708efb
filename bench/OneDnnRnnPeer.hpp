// oneDNN's RNN primitives as the second CPU peer of bench_lstm and bench_gru (RnnBench.hpp), the
// strongest one on the CPU: the same layer, weights and inputs as Aspen's side, timed the same way
// (bench::medianSeconds, one warm-up run) in the same run.
//
// Peer::run(problem, repetitions) builds, for a Problem (a cell at H, B, T with I = H, float, its
// data in Aspen's layout), oneDNN's primitives, unidirectional left to right:
//   inference: lstm_forward / lbr_gru_forward with forward_inference;
//   training:  the same with forward_training (the workspace kept for the backward), then
//              lstm_backward / lbr_gru_backward from diff_dst_layer = problem.outputGrad: the input
//              gradient (diff_src_layer) and the weight and bias gradients, which are zeroed each
//              step (oneDNN 2.6 accumulates into them and has no flag to overwrite them).
// src_layer and dst_layer are [T, B, C] (tnc), the initial states left out (zero). The weights
// are given in the format each primitive prefers (format_tag::any) and reordered into it once,
// before timing, as oneDNN's users do; the training step's backward gets its own copy in its own
// format. (Aspen and PyTorch also keep the weights from step to step: no peer applies an update.)
//
// The layouts: oneDNN's weights are ldigo [1, 1, C, G, H] with the gates in its order (LSTM: i, f,
// c~, o; LBR GRU: u (update), r (reset), o (the candidate)), Aspen's [G, C, H] in its cellOrder,
// so ldigo[c][g][h] = aspen[gateSlots[g]][c][h] (a stack of L layers, bench_lstm_stack: [L, 1,
// ...], every layer the same weights and biases). oneDNN's biases are ldgo [1, 1, Gb, H]: the
// LSTM's one a gate; the LBR GRU's four, u and r the sums of Aspen's input and recurrent biases
// (both are added before the sigmoid), o the candidate's input bias and u' its recurrent bias (the
// one inside the reset gate's product: o = tanh(W_o x + b_o + r * (U_o h + b_u'))).
//
// Threads: Debian's libdnnl2 (2.6.3) is threaded with OpenMP (libgomp; DNNL_CPU_THREADING_RUNTIME
// in dnnl_config.h) and 2.6 has no dnnl::set_max_threads, so Peer's constructor calls
// omp_set_num_threads(threads) on the benchmark's thread before it creates anything of oneDNN's
// (a primitive takes its thread count when it is created). Setting OMP_NUM_THREADS from main
// would be too late: libgomp reads it when it is loaded. threads() reports omp_get_max_threads();
// DNNL_VERBOSE=1 shows the count the primitives run with. bench/CMakeLists.txt enables the peer
// (ASPEN_BENCH_HAVE_ONEDNN) only for an OpenMP-threaded oneDNN; without it Peer is a stand-in
// whose available() is false, and the benchmarks time the other peers as before.
#pragma once

#include "BenchSupport.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef ASPEN_BENCH_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <fmt/core.h>

#include <cstring>
#include <unordered_map>

#if DNNL_CPU_THREADING_RUNTIME != DNNL_RUNTIME_OMP
#error "OneDnnRnnPeer.hpp sets oneDNN's threads through OpenMP: it needs an OpenMP-threaded oneDNN"
#endif
#endif

namespace aspen::bench::rnn::onednn {

enum class Cell { Lstm, LbrGru };

// The name of the cell's primitives without _forward / _backward: "lstm", "lbr_gru".
inline const char *primitiveName(Cell cell) { return cell == Cell::Lstm ? "lstm" : "lbr_gru"; }

// A layer's problem, its data in Aspen's layout (RnnBenchLayers.hpp), I = H.
struct Problem {
  Cell cell = Cell::Lstm;
  std::size_t H = 0, B = 0, T = 0;
  std::size_t layers = 1; // a stack: every layer has these weights and biases
  // For each of oneDNN's gates in its order, the slot of dimension 0 that holds it in Aspen's
  // weights and biases.
  std::vector<std::size_t> gateSlots;
  std::vector<float> input;                       // [T, B, H]
  std::vector<float> inputWeights, outputWeights; // [G, H, H]
  std::vector<float> biases; // LSTM: [4, H]; GRU: [3, 2, H], [g][0] input, [g][1] recurrent bias
  std::vector<float> outputGrad; // [T, B, H]; empty for inference
};

struct Result {
  double ms = 0;             // median of the timed runs
  std::vector<float> output; // the forward's dst_layer, [T, B, H]
};

#ifdef ASPEN_BENCH_HAVE_ONEDNN

namespace detail {

// oneDNN's ldigo weights [1, 1, C, G, H] from Aspen's [G, C, H].
inline std::vector<float> ldigoWeights(const std::vector<float> &aspen,
                                       const std::vector<std::size_t> &gateSlots, std::size_t C,
                                       std::size_t H) {
  const std::size_t G = gateSlots.size();
  std::vector<float> ldigo(C * G * H);
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t g = 0; g < G; ++g)
      for (std::size_t h = 0; h < H; ++h)
        ldigo[(c * G + g) * H + h] = aspen[(gateSlots[g] * C + c) * H + h];
  return ldigo;
}

// oneDNN's ldgo biases [1, 1, Gb, H] from Aspen's (see the top of this file).
inline std::vector<float> ldgoBiases(const Problem &p) {
  const std::size_t H = p.H;
  std::vector<float> ldgo;
  if (p.cell == Cell::Lstm) {
    for (std::size_t slot : p.gateSlots)
      ldgo.insert(ldgo.end(), p.biases.begin() + slot * H, p.biases.begin() + (slot + 1) * H);
    return ldgo;
  }
  // Aspen's bias [slot][k], k = 0 input, 1 recurrent.
  auto aspen = [&](std::size_t slot, std::size_t k) {
    return p.biases.begin() + (slot * 2 + k) * H;
  };
  const std::size_t update = p.gateSlots[0], reset = p.gateSlots[1], candidate = p.gateSlots[2];
  for (std::size_t slot : {update, reset})
    for (std::size_t h = 0; h < H; ++h)
      ldgo.push_back(aspen(slot, 0)[h] + aspen(slot, 1)[h]);
  ldgo.insert(ldgo.end(), aspen(candidate, 0), aspen(candidate, 0) + H);
  ldgo.insert(ldgo.end(), aspen(candidate, 1), aspen(candidate, 1) + H);
  return ldgo;
}

// A cell's primitives and their descriptors; the backward ones for training only.
struct Primitives {
  dnnl::primitive forward, backward;
  dnnl::rnn_primitive_desc_base forwardDesc, backwardDesc;
};

// `layer` describes src_layer, dst_layer and their gradients (I = H), `weights` both weights and
// their gradients.
inline Primitives makePrimitives(Cell cell, bool training, const dnnl::memory::desc &layer,
                                 const dnnl::memory::desc &weights,
                                 const dnnl::memory::desc &bias, const dnnl::engine &engine) {
  const dnnl::prop_kind forwardKind =
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const auto direction = dnnl::rnn_direction::unidirectional_left2right;
  const dnnl::memory::desc none; // a state left out: zero
  Primitives p;
  if (cell == Cell::Lstm) {
    const dnnl::lstm_forward::primitive_desc forward(
        dnnl::lstm_forward::desc(forwardKind, direction, layer, none, none, weights, weights, bias,
                                 layer, none, none),
        engine);
    p.forward = dnnl::lstm_forward(forward);
    p.forwardDesc = forward;
    if (training) {
      const dnnl::lstm_backward::primitive_desc backward(
          dnnl::lstm_backward::desc(dnnl::prop_kind::backward, direction, layer, none, none,
                                    weights, weights, bias, layer, none, none, layer, none, none,
                                    weights, weights, bias, layer, none, none),
          engine, forward);
      p.backward = dnnl::lstm_backward(backward);
      p.backwardDesc = backward;
    }
  } else {
    const dnnl::lbr_gru_forward::primitive_desc forward(
        dnnl::lbr_gru_forward::desc(forwardKind, direction, layer, none, weights, weights, bias,
                                    layer, none),
        engine);
    p.forward = dnnl::lbr_gru_forward(forward);
    p.forwardDesc = forward;
    if (training) {
      const dnnl::lbr_gru_backward::primitive_desc backward(
          dnnl::lbr_gru_backward::desc(dnnl::prop_kind::backward, direction, layer, none, weights,
                                       weights, bias, layer, none, layer, none, weights, weights,
                                       bias, layer, none),
          engine, forward);
      p.backward = dnnl::lbr_gru_backward(backward);
      p.backwardDesc = backward;
    }
  }
  return p;
}

} // namespace detail

class Peer {
public:
  // Sets oneDNN's thread count (see the top of this file), then makes its CPU engine and stream.
  explicit Peer(unsigned threads) {
    omp_set_num_threads(int(threads));
    engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
    stream_ = dnnl::stream(engine_);
  }

  static constexpr bool available() { return true; }
  unsigned threads() const { return unsigned(omp_get_max_threads()); }
  static std::string version() {
    const dnnl_version_t *v = dnnl::version();
    return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
  }

  // The problem's primitives built, timed over `repetitions` runs after a warm-up, and the
  // forward's output.
  Result run(const Problem &p, unsigned repetitions) {
    using dnnl::memory;
    using tag = memory::format_tag;
    const bool training = !p.outputGrad.empty();
    const memory::dim T = p.T, B = p.B, H = p.H, gates = memory::dim(p.gateSlots.size());
    const memory::dim biasGates = p.cell == Cell::LbrGru ? gates + 1 : gates;
    const auto f32 = memory::data_type::f32;
    const memory::desc layer({T, B, H}, f32, tag::tnc);
    const memory::dim L = memory::dim(p.layers);
    const memory::desc plainWeights({L, 1, H, gates, H}, f32, tag::ldigo);
    const memory::desc bias({L, 1, biasGates, H}, f32, tag::ldgo);
    const detail::Primitives primitives = detail::makePrimitives(
        p.cell, training, layer, memory::desc({L, 1, H, gates, H}, f32, tag::any), bias, engine_);
    auto everyLayer = [&](const std::vector<float> &one) {
      std::vector<float> all;
      for (memory::dim l = 0; l < L; ++l)
        all.insert(all.end(), one.begin(), one.end());
      return all;
    };

    const memory src = filled(layer, p.input);
    const memory inputWeights = filled(
        plainWeights, everyLayer(detail::ldigoWeights(p.inputWeights, p.gateSlots, p.H, p.H)));
    const memory outputWeights = filled(
        plainWeights, everyLayer(detail::ldigoWeights(p.outputWeights, p.gateSlots, p.H, p.H)));
    const memory biases = filled(bias, everyLayer(detail::ldgoBiases(p)));
    const memory dst(layer, engine_);
    std::unordered_map<int, memory> forwardArgs{
        {DNNL_ARG_SRC_LAYER, src},
        {DNNL_ARG_WEIGHTS_LAYER,
         reordered(inputWeights, primitives.forwardDesc.weights_layer_desc())},
        {DNNL_ARG_WEIGHTS_ITER,
         reordered(outputWeights, primitives.forwardDesc.weights_iter_desc())},
        {DNNL_ARG_BIAS, biases},
        {DNNL_ARG_DST_LAYER, dst}};
    std::unordered_map<int, memory> backwardArgs;
    std::vector<memory> gradients; // accumulated into by the backward: zeroed each step
    if (training) {
      const dnnl::rnn_primitive_desc_base &d = primitives.backwardDesc;
      const memory workspace(primitives.forwardDesc.workspace_desc(), engine_);
      forwardArgs.emplace(DNNL_ARG_WORKSPACE, workspace);
      gradients = {memory(d.diff_weights_layer_desc(), engine_),
                   memory(d.diff_weights_iter_desc(), engine_),
                   memory(d.diff_bias_desc(), engine_)};
      backwardArgs = {{DNNL_ARG_SRC_LAYER, src},
                      {DNNL_ARG_WEIGHTS_LAYER, reordered(inputWeights, d.weights_layer_desc())},
                      {DNNL_ARG_WEIGHTS_ITER, reordered(outputWeights, d.weights_iter_desc())},
                      {DNNL_ARG_BIAS, biases},
                      {DNNL_ARG_DST_LAYER, dst},
                      {DNNL_ARG_DIFF_DST_LAYER, filled(layer, p.outputGrad)},
                      {DNNL_ARG_WORKSPACE, workspace},
                      {DNNL_ARG_DIFF_SRC_LAYER, memory(d.diff_src_layer_desc(), engine_)},
                      {DNNL_ARG_DIFF_WEIGHTS_LAYER, gradients[0]},
                      {DNNL_ARG_DIFF_WEIGHTS_ITER, gradients[1]},
                      {DNNL_ARG_DIFF_BIAS, gradients[2]}};
    }
    stream_.wait();

    Result result;
    result.ms = 1e3 * bench::medianSeconds(repetitions, [&] {
      for (const memory &g : gradients)
        std::memset(g.get_data_handle(), 0, g.get_desc().get_size());
      primitives.forward.execute(stream_, forwardArgs);
      if (training)
        primitives.backward.execute(stream_, backwardArgs);
      stream_.wait();
    });
    const float *y = static_cast<const float *>(dst.get_data_handle());
    result.output.assign(y, y + p.T * p.B * p.H);
    return result;
  }

private:
  // A new memory of `md` (a plain format) holding v.
  dnnl::memory filled(const dnnl::memory::desc &md, const std::vector<float> &v) const {
    if (md.get_size() != v.size() * sizeof(float))
      throw std::logic_error(fmt::format("oneDNN peer: {} floats for a memory of {} bytes",
                                         v.size(), md.get_size()));
    dnnl::memory m(md, engine_);
    std::memcpy(m.get_data_handle(), v.data(), md.get_size());
    return m;
  }

  // A new memory of `md` holding `from` reordered.
  dnnl::memory reordered(dnnl::memory from, const dnnl::memory::desc &md) {
    dnnl::memory to(md, engine_);
    dnnl::reorder(from, to).execute(stream_, from, to);
    return to;
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
};

#else

// oneDNN was not found when bench/ was configured: nothing to time.
class Peer {
public:
  explicit Peer(unsigned) {}
  static constexpr bool available() { return false; }
  unsigned threads() const { return 0; }
  static std::string version() { return {}; }
  Result run(const Problem &, unsigned) {
    throw std::logic_error("the oneDNN peer is not built (libdnnl-dev missing)");
  }
};

#endif

} // namespace aspen::bench::rnn::onednn
