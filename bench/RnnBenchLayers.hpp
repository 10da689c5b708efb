// The layers the recurrent benchmarks time (RnnBench.hpp's RnnLayer): lstmLayer() for bench_lstm
// and bench_gpu_lstm, gruLayer() for bench_gru and bench_gpu_gru.
#pragma once

#include "RnnBench.hpp"

#include <aspen/nn/Gru.hpp>
#include <aspen/nn/GruStack.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/nn/LstmStack.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

namespace aspen::bench::rnn {

// For each of a peer's gates in its order, the slot of dimension 0 that holds it in Aspen's
// cellOrder.
template <typename Unit>
std::vector<std::size_t> slotIndices(const std::vector<Unit> &cellOrder,
                                     std::initializer_list<Unit> peerOrder) {
  std::vector<std::size_t> slots;
  for (Unit gate : peerOrder)
    slots.push_back(std::find(cellOrder.begin(), cellOrder.end(), gate) - cellOrder.begin());
  return slots;
}

// slotIndices as a Python list's elements: "a, b, c".
template <typename Unit>
std::string slotsOf(const std::vector<Unit> &cellOrder, std::initializer_list<Unit> peerOrder) {
  std::string slots;
  for (std::size_t slot : slotIndices(cellOrder, peerOrder))
    slots += fmt::format("{}{}", slots.empty() ? "" : ", ", slot);
  return slots;
}

// aspen::nn::lstm against nn.LSTM and oneDNN's lstm. Aspen's weights are [4, I, H] with dimension
// 0 in params.cellOrder (the default), biases [4, H]; torch's are [4H, I] in the order input,
// forget, cell, output, with two biases (the second left zero); oneDNN's gates are in the same
// order, with one bias.
inline RnnLayer lstmLayer() {
  namespace lstm = nn::lstm;
  RnnLayer layer;
  layer.name = "lstm";
  layer.description = "LSTM float (I = H)";
  layer.torchClass = "nn.LSTM";
  layer.fwd = "lstmFwd";
  layer.bwd = "lstmBwdWithWU";
  layer.build = [](Graph &graph, const Shape &s, Mode mode, const OptionFlags &options) {
    const lstm::LstmParams params(FLOAT, s.B, s.T, {s.H, s.H});
    const bool training = mode == Mode::Training;
    linalg::PlanningCache cache;
    Tensor in = lstm::createInput(graph, params, "in", options, &cache);
    lstm::LstmState init = lstm::createInitialState(graph, params, "init", options, &cache);
    lstm::LstmWeights weights = lstm::createWeights(graph, params, "weights", options, &cache);
    LayerProgram p;
    lstm::zeroInitialState(graph, init, p.prog, "zeroState");
    Tensor intermediates;
    Tensor out = lstm::lstmFwd(graph, params, p.prog, init, weights, in,
                               training ? &intermediates : nullptr, "fwd", options, &cache);
    graph.createHostWrite("in", in);
    graph.createHostWrite("inputWeights", weights.inputWeights);
    graph.createHostWrite("outputWeights", weights.outputWeights);
    graph.createHostWrite("biases", weights.biases);
    graph.createHostRead("out", out);
    p.writes.emplace_back("in", data(s.T * s.B * s.H, kInput, 1.0));
    p.writes.emplace_back("inputWeights", data(4 * s.H * s.H, kInputWeights, weightScale(s.H)));
    p.writes.emplace_back("outputWeights", data(4 * s.H * s.H, kOutputWeights, weightScale(s.H)));
    p.writes.emplace_back("biases", data(4 * s.H, kBiases, kBiasScale));
    if (training) {
      Tensor outGrad = graph.clone(out, "outGrad");
      graph.createHostWrite("outGrad", outGrad);
      p.writes.emplace_back("outGrad", data(s.T * s.B * s.H, kOutputGrad, 1.0));
      Tensor inGrad;
      lstm::LstmWeights weightsGrad;
      lstm::lstmBwdWithWU(graph, params, p.prog, init, intermediates, weights, in, out, outGrad,
                          nullptr, &inGrad, weightsGrad, "bwd", options, &cache);
    }
    p.outputSize = s.T * s.B * s.H;
    return p;
  };
  // The gates in the order of torch and oneDNN alike.
  const std::initializer_list<lstm::BasicLstmCellUnit> peerOrder = {
      lstm::BASIC_LSTM_CELL_INPUT_GATE, lstm::BASIC_LSTM_CELL_FORGET_GATE,
      lstm::BASIC_LSTM_CELL_CANDIDATE, lstm::BASIC_LSTM_CELL_OUTPUT_GATE};
  layer.torchModel = fmt::format(
      "perm = [{perm}]\n"
      "m = torch.nn.LSTM(I, H)\n"
      "with torch.no_grad():\n"
      "    m.weight_ih_l0.copy_(data(4 * I * H, {wiSeed}, ws).view(4, I, H)[perm].transpose(1, 2)"
      ".reshape(4 * H, I))\n"
      "    m.weight_hh_l0.copy_(data(4 * H * H, {woSeed}, ws).view(4, H, H)[perm].transpose(1, 2)"
      ".reshape(4 * H, H))\n"
      "    m.bias_ih_l0.copy_(data(4 * H, {bSeed}, {bs}).view(4, H)[perm].reshape(4 * H))\n"
      "    m.bias_hh_l0.zero_()\n",
      fmt::arg("perm", slotsOf(lstm::LstmParams(FLOAT, 1, 1, {1, 1}).cellOrder, peerOrder)),
      fmt::arg("bs", kBiasScale), fmt::arg("wiSeed", unsigned(kInputWeights)),
      fmt::arg("woSeed", unsigned(kOutputWeights)), fmt::arg("bSeed", unsigned(kBiases)));
  layer.onednnCell = onednn::Cell::Lstm;
  layer.onednnGateSlots = slotIndices(lstm::LstmParams(FLOAT, 1, 1, {1, 1}).cellOrder, peerOrder);
  return layer;
}

// aspen::nn::gru with resetAfter (the candidate's recurrent product is taken before the reset gate
// multiplies it, with a bias of its own), which is what nn.GRU and oneDNN's lbr_gru
// (linear-before-reset) compute, against both. Aspen's weights are [3, I, H] with dimension 0 in
// params.cellOrder (the default: reset, update, candidate), biases [3, 2, H] ([g][0] the input bias
// of gate g, [g][1] its recurrent bias); torch's are [3H, I] in the order reset, update, new (the
// candidate), with biases b_ih and b_hh; oneDNN's gates are in the order update, reset, candidate
// (OneDnnRnnPeer.hpp maps the biases).
inline RnnLayer gruLayer() {
  namespace gru = nn::gru;
  RnnLayer layer;
  layer.name = "gru";
  layer.description = "GRU float (I = H, resetAfter)";
  layer.torchClass = "nn.GRU";
  layer.fwd = "gruFwd";
  layer.bwd = "gruBwdWithWU";
  auto paramsOf = [](const Shape &s) {
    gru::GruParams params(FLOAT, s.B, s.T, {s.H, s.H});
    params.resetAfter = true;
    return params;
  };
  layer.build = [paramsOf](Graph &graph, const Shape &s, Mode mode, const OptionFlags &options) {
    const gru::GruParams params = paramsOf(s);
    const bool training = mode == Mode::Training;
    linalg::PlanningCache cache;
    Tensor in = gru::createInput(graph, params, "in", options, &cache);
    Tensor init = gru::createInitialState(graph, params, "init", options, &cache);
    gru::GruWeights weights = gru::createWeights(graph, params, "weights", options, &cache);
    LayerProgram p;
    gru::zeroInitialState(graph, init, p.prog, "zeroState");
    Tensor intermediates;
    Tensor out = gru::gruFwd(graph, params, init, in, weights, training ? &intermediates : nullptr,
                             p.prog, "fwd", options, &cache);
    graph.createHostWrite("in", in);
    graph.createHostWrite("inputWeights", weights.inputWeights);
    graph.createHostWrite("outputWeights", weights.outputWeights);
    graph.createHostWrite("biases", weights.biases);
    graph.createHostRead("out", out);
    p.writes.emplace_back("in", data(s.T * s.B * s.H, kInput, 1.0));
    p.writes.emplace_back("inputWeights", data(3 * s.H * s.H, kInputWeights, weightScale(s.H)));
    p.writes.emplace_back("outputWeights", data(3 * s.H * s.H, kOutputWeights, weightScale(s.H)));
    p.writes.emplace_back("biases", data(3 * 2 * s.H, kBiases, kBiasScale));
    if (training) {
      Tensor outGrad = graph.clone(out, "outGrad");
      graph.createHostWrite("outGrad", outGrad);
      p.writes.emplace_back("outGrad", data(s.T * s.B * s.H, kOutputGrad, 1.0));
      Tensor inGrad;
      gru::GruWeights weightsGrad;
      gru::gruBwdWithWU(graph, params, p.prog, init, intermediates, weights, in, out, outGrad,
                        &inGrad, weightsGrad, "bwd", options, &cache);
    }
    p.outputSize = s.T * s.B * s.H;
    return p;
  };
  layer.torchModel = fmt::format(
      "perm = [{perm}]\n"
      "m = torch.nn.GRU(I, H)\n"
      "with torch.no_grad():\n"
      "    m.weight_ih_l0.copy_(data(3 * I * H, {wiSeed}, ws).view(3, I, H)[perm].transpose(1, 2)"
      ".reshape(3 * H, I))\n"
      "    m.weight_hh_l0.copy_(data(3 * H * H, {woSeed}, ws).view(3, H, H)[perm].transpose(1, 2)"
      ".reshape(3 * H, H))\n"
      "    b = data(3 * 2 * H, {bSeed}, {bs}).view(3, 2, H)[perm]\n"
      "    m.bias_ih_l0.copy_(b[:, 0].reshape(3 * H))\n"
      "    m.bias_hh_l0.copy_(b[:, 1].reshape(3 * H))\n",
      fmt::arg("perm", slotsOf(paramsOf({1, 1, 1}).cellOrder,
                               {gru::BASIC_GRU_CELL_RESET_GATE, gru::BASIC_GRU_CELL_UPDATE_GATE,
                                gru::BASIC_GRU_CELL_CANDIDATE})),
      fmt::arg("bs", kBiasScale), fmt::arg("wiSeed", unsigned(kInputWeights)),
      fmt::arg("woSeed", unsigned(kOutputWeights)), fmt::arg("bSeed", unsigned(kBiases)));
  layer.onednnCell = onednn::Cell::LbrGru;
  layer.onednnGateSlots =
      slotIndices(paramsOf({1, 1, 1}).cellOrder,
                  {gru::BASIC_GRU_CELL_UPDATE_GATE, gru::BASIC_GRU_CELL_RESET_GATE,
                   gru::BASIC_GRU_CELL_CANDIDATE});
  return layer;
}

// A stack of L layers in one call of `cell`'s ("lstm": lstm::lstmStackFwd and
// lstmStackBwdWithWU; "gru": gru::gruStackFwd and gruStackBwdWithWU, resetAfter; option
// numLayers L added to the given ones) against torch.nn's module with num_layers = L and
// oneDNN's primitive with L layers: every layer has the single layer's weights (I = H, so all
// layers' shapes agree).
inline RnnLayer stackLayer(const std::string &cell, std::size_t L) {
  namespace lstm = nn::lstm;
  namespace gru = nn::gru;
  const bool isLstm = cell == "lstm";
  RnnLayer layer = isLstm ? lstmLayer() : gruLayer();
  const std::size_t G = isLstm ? 4 : 3, biases = isLstm ? 4 : 6;
  layer.name = cell + "_stack";
  layer.description =
      fmt::format("{} float, {} layers in one call (I = H)", isLstm ? "LSTM" : "GRU", L);
  layer.torchClass = fmt::format("{}(num_layers={})", layer.torchClass, L);
  layer.fwd = isLstm ? "lstmStackFwd" : "gruStackFwd";
  layer.bwd = isLstm ? "lstmStackBwdWithWU" : "gruStackBwdWithWU";
  layer.layers = L;
  layer.build = [=](Graph &graph, const Shape &s, Mode mode, const OptionFlags &given) {
    const bool training = mode == Mode::Training;
    OptionFlags options = given;
    options.set("numLayers", std::to_string(L));
    linalg::PlanningCache cache;
    LayerProgram p;
    Tensor in, out;
    std::vector<std::array<Tensor, 3>> weights; // per layer: input, output, biases
    std::function<void(const Tensor &)> backward;
    if (isLstm) {
      const lstm::LstmParams params(FLOAT, s.B, s.T, {s.H, s.H});
      in = lstm::createInput(graph, params, "in");
      const lstm::LstmState init =
          lstm::createStackInitialState(graph, params, "init", options, &cache);
      const auto w = lstm::createStackWeights(graph, params, "weights", options, &cache);
      for (const lstm::LstmWeights &x : w)
        weights.push_back({x.inputWeights, x.outputWeights, x.biases});
      lstm::zeroInitialState(graph, init, p.prog, "zeroState");
      auto inter = std::make_shared<lstm::LstmStackIntermediates>();
      out = lstm::lstmStackFwd(graph, params, init, in, w, training ? inter.get() : nullptr,
                               p.prog, "fwd", options, &cache)
                .first;
      backward = [&, params, init, w, inter](const Tensor &outGrad) {
        Tensor inGrad;
        std::vector<lstm::LstmWeights> grads;
        lstm::lstmStackBwdWithWU(graph, params, p.prog, init, *inter, w, out, outGrad, nullptr,
                                 &inGrad, grads, "bwd", options, &cache);
      };
    } else {
      gru::GruParams params(FLOAT, s.B, s.T, {s.H, s.H});
      params.resetAfter = true;
      in = gru::createInput(graph, params, "in");
      const Tensor init = gru::createStackInitialState(graph, params, "init", options, &cache);
      const auto w = gru::createStackWeights(graph, params, "weights", options, &cache);
      for (const gru::GruWeights &x : w)
        weights.push_back({x.inputWeights, x.outputWeights, x.biases});
      gru::zeroInitialState(graph, init, p.prog, "zeroState");
      auto inter = std::make_shared<gru::GruStackIntermediates>();
      out = gru::gruStackFwd(graph, params, init, in, w, training ? inter.get() : nullptr,
                             p.prog, "fwd", options, &cache)
                .first;
      backward = [&, params, init, w, inter](const Tensor &outGrad) {
        Tensor inGrad;
        std::vector<gru::GruWeights> grads;
        gru::gruStackBwdWithWU(graph, params, p.prog, init, *inter, w, out, outGrad, nullptr,
                               &inGrad, grads, "bwd", options, &cache);
      };
    }
    graph.createHostWrite("in", in);
    p.writes.emplace_back("in", data(s.T * s.B * s.H, kInput, 1.0));
    for (std::size_t l = 0; l < L; ++l) {
      const std::string n = std::to_string(l);
      graph.createHostWrite("inputWeights" + n, weights[l][0]);
      graph.createHostWrite("outputWeights" + n, weights[l][1]);
      graph.createHostWrite("biases" + n, weights[l][2]);
      p.writes.emplace_back("inputWeights" + n,
                            data(G * s.H * s.H, kInputWeights, weightScale(s.H)));
      p.writes.emplace_back("outputWeights" + n,
                            data(G * s.H * s.H, kOutputWeights, weightScale(s.H)));
      p.writes.emplace_back("biases" + n, data(biases * s.H, kBiases, kBiasScale));
    }
    graph.createHostRead("out", out);
    if (training) {
      Tensor outGrad = graph.clone(out, "outGrad");
      graph.createHostWrite("outGrad", outGrad);
      p.writes.emplace_back("outGrad", data(s.T * s.B * s.H, kOutputGrad, 1.0));
      backward(outGrad);
    }
    p.outputSize = s.T * s.B * s.H;
    return p;
  };
  // The single layer's module, made L layers deep, each layer given layer 0's weights (no single
  // quotes: bench::pythonResult quotes the script with them).
  std::string model = layer.torchModel;
  const std::string make = isLstm ? "m = torch.nn.LSTM(I, H)\n" : "m = torch.nn.GRU(I, H)\n";
  model.replace(model.find(make), make.size(),
                fmt::format("m = torch.nn.{}(I, H, num_layers={})\n", isLstm ? "LSTM" : "GRU",
                            L));
  model += fmt::format("    for k in range(1, {}):\n"
                       "        for n in (\"weight_ih\", \"weight_hh\", \"bias_ih\", \"bias_hh\"):\n"
                       "            getattr(m, n + \"_l\" + str(k)).copy_(getattr(m, n + \"_l0\"))\n",
                       L);
  layer.torchModel = model;
  return layer;
}

} // namespace aspen::bench::rnn
