// The C backend (aspen/backend.h): every result against the independent double-precision host
// models of the layer drivers (tools/rnnref: Lstm, Gru, Vanilla) or a host product; the
// layer cache's counts, its bound and its compile-once under concurrent first calls; and the
// error codes and messages of bad arguments, before anything compiles.
#include <aspen/backend.h>
#include <aspen/Device.hpp>
#include <aspen/HalfFloat.hpp>

#include "TestDevice.hpp"

// The layer drivers' double-precision host models.
#include "rnnref/Gru.hpp"
#include "rnnref/Lstm.hpp"
#include "rnnref/Vanilla.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Backend {
  aspen_backend *handle = nullptr;
  explicit Backend(const char *device = "cpu", std::size_t capacity = 0) {
    REQUIRE(aspen_backend_create(device, capacity, &handle) == ASPEN_OK);
  }
  ~Backend() { aspen_backend_destroy(handle); }
  aspen_cache_stats stats() const {
    aspen_cache_stats s{};
    REQUIRE(aspen_backend_cache_stats(handle, &s) == ASPEN_OK);
    return s;
  }
};

std::vector<float> randomFloats(std::mt19937 &rng, std::size_t n, double scale) {
  std::uniform_real_distribution<double> u(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = static_cast<float>(u(rng));
  return v;
}
std::vector<double> widen(const std::vector<float> &v) { return {v.begin(), v.end()}; }

void requireClose(const char *what, const std::vector<float> &got, const std::vector<double> &want,
                  double rel = 2e-4, double abs = 1e-5) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= abs + rel * std::abs(want[i])) && bad++ == 0)
      first = i;
  INFO("first mismatch at " << first << ": " << got[first] << " vs " << want[first]);
  CHECK(bad == 0);
}

// Aspen's [G, n, H] weights (x.W per gate) as PyTorch's [G*H, n] (W.x, rows gate-major).
template <class T>
std::vector<T> torchWeights(const std::vector<T> &w, std::size_t G, std::size_t n, std::size_t H) {
  std::vector<T> out(w.size());
  for (std::size_t g = 0; g < G; ++g)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < n; ++i)
        out[(g * H + h) * n + i] = w[(g * n + i) * H + h];
  return out;
}

template <class T> std::vector<T> concat(const std::vector<T> &a, const std::vector<T> &b) {
  std::vector<T> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// A reset-after GRU's [G, 2, H] biases (input, recurrent per gate) as PyTorch's [2, G*H].
template <class T> std::vector<T> torchGruBiases(const std::vector<T> &b, std::size_t G,
                                                 std::size_t H) {
  std::vector<T> out(b.size());
  for (std::size_t row = 0; row < 2; ++row)
    for (std::size_t g = 0; g < G; ++g)
      for (std::size_t h = 0; h < H; ++h)
        out[(row * G + g) * H + h] = b[(g * 2 + row) * H + h];
  return out;
}

// The host model of an LSTM with PyTorch's gate order (lstmDesc's cell_order).
lstmref::LstmModel torchOrderModel(std::size_t T, std::size_t B, std::size_t I, std::size_t H) {
  lstmref::LstmModel model;
  model.T = T, model.B = B, model.I = I, model.H = H;
  model.cellOrder = {lstmref::kInput, lstmref::kForget, lstmref::kCandidate, lstmref::kOutput};
  return model;
}

aspen_rnn_desc lstmDesc(std::size_t T, std::size_t B, std::size_t I, std::size_t H,
                        bool variable, aspen_weights_layout layout = ASPEN_WEIGHTS_ASPEN) {
  aspen_rnn_desc d{};
  d.weights_layout = layout;
  d.cell = ASPEN_RNN_LSTM;
  d.dtype = ASPEN_DTYPE_FLOAT32;
  d.seq_len = T, d.batch = B, d.input_size = I, d.hidden_size = H;
  d.variable_lengths = variable;
  d.cell_order = "input,forget,cell,output"; // PyTorch's gate order
  return d;
}

// An LSTM trained through the backend against lstmref: forward (training and inference) and
// backward with incoming gradients of y, hn and cn.
// torchLayout: the weights, biases and their gradients in PyTorch's layout
// (ASPEN_WEIGHTS_PYTORCH): weight_ih [4H, I], weight_hh [4H, H], biases [2, 4H] whose sum is the
// model's bias (each row gets the model's bias gradient).
// reverse: options has "direction": "reverse"; the model runs each row's steps reversed on the
// host (rnnref::reverseRowSteps), from its last step back to its first.
// clip: options set cellClipMin -0.25 and cellClipMax 0.5, which the model applies too.
// P: options set projSize P, which the model applies too: h is P wide, output_weights hold the
// recurrent weights then the projection (weight_hh then weight_hr in PyTorch's layout).
// activationClip: options set activationClip to it, which the model applies too.
void checkLstm(const std::vector<unsigned> &lengths, bool torchLayout = false,
               const char *device = "cpu", const char *options = nullptr,
               bool reverse = false, bool clip = false, std::size_t P = 0,
               double activationClip = 0.0) {
  const std::size_t T = 5, B = 3, I = 4, H = 6, W = P ? P : H;
  const bool variable = !lengths.empty();
  INFO("PyTorch's layout: " << torchLayout << ", device " << device << ", options "
                             << (options ? options : "none") << ", reverse " << reverse);
  Backend backend(device);
  aspen_rnn_desc desc =
      lstmDesc(T, B, I, H, variable, torchLayout ? ASPEN_WEIGHTS_PYTORCH : ASPEN_WEIGHTS_ASPEN);
  desc.options = options;
  std::mt19937 rng(7);
  const double ws = 1.0 / std::sqrt(double(H));
  const auto x = randomFloats(rng, T * B * I, 1), h0 = randomFloats(rng, B * W, 1),
             c0 = randomFloats(rng, B * H, 1), wi = randomFloats(rng, 4 * I * H, ws),
             wo = randomFloats(rng, 4 * W * H, ws), bIh = randomFloats(rng, 4 * H, 0.5),
             bHh = randomFloats(rng, 4 * H, 0.5), dy = randomFloats(rng, T * B * W, 1),
             dhn = randomFloats(rng, B * W, 1);
  const std::vector<float> dcn = randomFloats(rng, B * H, 1);
  const std::vector<float> wp = randomFloats(rng, H * P, ws); // [H, P]
  std::vector<float> b(4 * H);
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = bIh[i] + bHh[i];
  // What the caller passes.
  const std::vector<float> callerWi = torchLayout ? torchWeights(wi, 4, I, H) : wi;
  // weight_hh [4H, W] (then weight_hr [P, H]), or Aspen's [4, W, H] (then Wp [H, P]).
  const std::vector<float> callerWo =
      torchLayout ? concat(torchWeights(wo, 4, W, H), torchWeights(wp, 1, H, P)) : concat(wo, wp);
  const std::vector<float> callerB = torchLayout ? concat(bIh, bHh) : b;

  lstmref::LstmModel model = torchOrderModel(T, B, I, H);
  model.timeSteps = lengths;
  model.cellClip = clip;
  model.cellClipMin = -0.25, model.cellClipMax = 0.5;
  model.P = P;
  model.activationClip = activationClip;
  // In the order the layer runs the steps; the sequences come back to the caller's order below.
  const auto runOrder = [&](const std::vector<double> &v) {
    return reverse ? rnnref::reverseRowSteps(v, lengths, T, B) : v;
  };
  lstmref::LstmData data{runOrder(widen(x)), widen(h0), widen(c0), widen(wi), widen(wo),
                         widen(b)};
  data.projection = widen(wp);
  lstmref::LstmForward fwd = lstmref::forward(model, data);
  lstmref::LstmGrads grads =
      lstmref::backward(model, data, fwd, runOrder(widen(dy)), {widen(dhn), widen(dcn)});
  fwd.output = runOrder(fwd.output);
  grads.inputGrad = runOrder(grads.inputGrad);

  std::size_t reserveBytes = 0;
  REQUIRE(aspen_rnn_reserve_bytes(backend.handle, &desc, &reserveBytes) == ASPEN_OK);
  REQUIRE(reserveBytes > 0);
  std::vector<std::uint8_t> reserve(reserveBytes);
  std::vector<float> y(T * B * W), hn(B * W), cn(B * H);
  const std::uint32_t *lens = variable ? lengths.data() : nullptr;
  REQUIRE(aspen_rnn_forward(backend.handle, &desc, x.data(), h0.data(), c0.data(), callerWi.data(),
                            callerWo.data(), callerB.data(), lens, y.data(), hn.data(), cn.data(),
                            reserve.data(), nullptr) == ASPEN_OK);
  requireClose("y", y, fwd.output);
  requireClose("hn", hn, fwd.finalOutput);
  requireClose("cn", cn, fwd.finalCellState);

  std::vector<float> dx(T * B * I), dh0(B * W), dc0(B * H), dwi(4 * I * H), dwo(callerWo.size()),
      db(callerB.size());
  const aspen_status status = aspen_rnn_backward(
      backend.handle, &desc, x.data(), h0.data(), c0.data(), callerWi.data(), callerWo.data(),
      callerB.data(), lens, y.data(), reserve.data(), dy.data(), dhn.data(), dcn.data(),
      dx.data(), dh0.data(), dc0.data(), dwi.data(), dwo.data(), db.data(), nullptr);
  INFO(aspen_last_error());
  REQUIRE(status == ASPEN_OK);
  requireClose("dx", dx, grads.inputGrad);
  requireClose("dh0", dh0, grads.initialOutputGrad);
  requireClose("dc0", dc0, grads.initialCellStateGrad);
  if (torchLayout) {
    requireClose("dWi", dwi, torchWeights(grads.inputWeightsGrad, 4, I, H));
    requireClose("dWo", dwo,
                 concat(torchWeights(grads.outputWeightsGrad, 4, W, H),
                        torchWeights(grads.projectionGrad, 1, H, P)));
    requireClose("db", db, concat(grads.biasesGrad, grads.biasesGrad));
  } else {
    requireClose("dWi", dwi, grads.inputWeightsGrad);
    requireClose("dWo", dwo, concat(grads.outputWeightsGrad, grads.projectionGrad));
    requireClose("db", db, grads.biasesGrad);
  }

  // Inference: the same outputs from the inference engine.
  std::vector<float> yi(T * B * W), hni(B * W), cni(B * H);
  REQUIRE(aspen_rnn_forward(backend.handle, &desc, x.data(), h0.data(), c0.data(), callerWi.data(),
                            callerWo.data(), callerB.data(), lens, yi.data(), hni.data(),
                            cni.data(), nullptr, nullptr) == ASPEN_OK);
  requireClose("y (inference)", yi, fwd.output);
  requireClose("cn (inference)", cni, fwd.finalCellState);
  // Two engines (training, inference); the backward and reserve_bytes reused the training one.
  const aspen_cache_stats s = backend.stats();
  CHECK(s.compiles == 2);
  CHECK(s.misses == 2);
  CHECK(s.hits == 2);
}

} // namespace

TEST_CASE("backend LSTM forward and backward match the host model", "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkLstm({});
}

TEST_CASE("backend LSTM with variable lengths matches the host model", "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkLstm({5, 0, 3});
}

TEST_CASE("backend LSTM on one tile and on three (cpu:N)", "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkLstm({}, false, "cpu:1");
  checkLstm({5, 0, 3}, true, "cpu:3");
}

TEST_CASE("backend LSTM runs the persistent kernels when its options JSON asks",
          "[correctness][backend][persistent]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkLstm({}, false, "cpu", R"({"rnnPersistentKernel": "true"})");
  checkLstm({5, 0, 3}, true, "cpu", R"({"rnnPersistentKernel": "true", "rnnPersistentBlocks": 3})");
}

TEST_CASE("backend LSTM clips its cell state when its options ask, and refuses bad clips",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkLstm({5, 0, 3}, true, "cpu", R"({"cellClipMin": -0.25, "cellClipMax": 0.5})", false,
            true);
  checkLstm({}, false, "cpu",
            R"({"cellClipMin": "-0.25", "cellClipMax": 0.5, "cellClipNan": "min",
                "direction": "reverse"})",
            true, true);
  Backend backend;
  aspen_rnn_desc desc = lstmDesc(2, 1, 2, 2, false);
  std::size_t bytes = 0;
  for (const auto &[options, message] :
       {std::pair{R"({"cellClipMin": -1})", "cellClipMin and cellClipMax come together"},
        {R"({"cellClipMin": 1, "cellClipMax": -1})", "min < max"},
        {R"({"cellClipMin": "low", "cellClipMax": 1})", "cellClipMin 'low' is not a number"},
        {R"({"cellClipMin": 0, "cellClipMax": 1, "cellClipNan": "zero"})",
         "cellClipNan 'zero' is not"}}) {
    desc.options = options;
    CHECK(aspen_rnn_reserve_bytes(backend.handle, &desc, &bytes) == ASPEN_ERROR_INVALID_OPTION);
    CHECK_THAT(aspen_last_error(), Catch::Contains(message));
  }
  desc.cell = ASPEN_RNN_GRU;
  desc.cell_order = nullptr;
  desc.options = R"({"cellClipMin": 0, "cellClipMax": 1})";
  CHECK(aspen_rnn_reserve_bytes(backend.handle, &desc, &bytes) == ASPEN_ERROR_INVALID_OPTION);
  CHECK_THAT(aspen_last_error(), Catch::Contains("a GRU has no cell state"));
}

TEST_CASE("backend LSTM projects its output when its options set projSize, and refuses bad "
          "sizes",
          "[correctness][backend][projection]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkLstm({}, false, "cpu", R"({"projSize": 2})", false, false, 2);
  checkLstm({5, 0, 3}, true, "cpu", R"({"projSize": "5"})", false, false, 5);
  checkLstm({5, 0, 3}, true, "cpu:3", R"({"projSize": 1, "direction": "reverse"})", true, false,
            1);
  checkLstm({2, 5, 0}, false, "cpu",
            R"({"projSize": 3, "cellClipMin": -0.25, "cellClipMax": 0.5,
                "recomputationMode": "cellAndTanh"})",
            false, true, 3);
  Backend backend;
  aspen_rnn_desc desc = lstmDesc(2, 1, 2, 4, false);
  std::size_t bytes = 0;
  for (const auto &[options, message] :
       {std::pair{R"({"projSize": 4})", "projSize 4 must be less than hidden_size 4"},
        {R"({"projSize": -1})", "projSize '-1' is not a whole number"},
        {R"({"projSize": 1.5})", "projSize '1.5' is not a whole number"},
        {R"({"projSize": 2, "stepMethod": "fused"})",
         "stepMethod fused does not apply to a projected layer"}}) {
    desc.options = options;
    CHECK(aspen_rnn_reserve_bytes(backend.handle, &desc, &bytes) == ASPEN_ERROR_INVALID_OPTION);
    CHECK_THAT(aspen_last_error(), Catch::Contains(message));
  }
  desc.cell = ASPEN_RNN_GRU;
  desc.cell_order = nullptr;
  desc.options = R"({"projSize": 2})";
  CHECK(aspen_rnn_reserve_bytes(backend.handle, &desc, &bytes) == ASPEN_ERROR_INVALID_OPTION);
  CHECK_THAT(aspen_last_error(), Catch::Contains("a GRU has no projection"));
}

TEST_CASE("backend LSTM clips its activations' inputs when its options set activationClip",
          "[correctness][backend][clip]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkLstm({}, false, "cpu", R"({"activationClip": 0.5})", false, false, 0, 0.5);
  checkLstm({5, 0, 3}, true, "cpu:3",
            R"({"activationClip": "0.5", "direction": "reverse", "projSize": 2,
                "recomputationMode": "cellAndTanh"})",
            true, false, 2, 0.5);
  Backend backend;
  aspen_rnn_desc desc = lstmDesc(2, 1, 2, 4, false);
  std::size_t bytes = 0;
  for (const char *options : {R"({"activationClip": 0})", R"({"activationClip": -2})",
                              R"({"activationClip": "wide"})"}) {
    desc.options = options;
    CHECK(aspen_rnn_reserve_bytes(backend.handle, &desc, &bytes) == ASPEN_ERROR_INVALID_OPTION);
    CHECK_THAT(aspen_last_error(), Catch::Contains("is not a finite number above 0"));
  }
  desc.options = R"({"activationClip": 1, "rnnPersistentKernel": "true"})";
  CHECK(aspen_rnn_reserve_bytes(backend.handle, &desc, &bytes) == ASPEN_ERROR_INVALID_OPTION);
  CHECK_THAT(aspen_last_error(), Catch::Contains("does not apply to a layer with activationClip"));
}

TEST_CASE("backend LSTM in reverse runs each row from its own last step",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  const char *reverse = R"({"direction": "reverse"})";
  checkLstm({}, false, "cpu", reverse, true);
  checkLstm({5, 0, 3}, true, "cpu", reverse, true);
  checkLstm({1, 4, 2}, true, "cpu:3", reverse, true);
  checkLstm({5, 0, 3}, true, "cpu",
            R"({"direction": "reverse", "stepMethod": "productThenCell", "numShards": 2})", true);
  checkLstm({2, 5, 0}, false, "cpu", R"({"direction": "reverse", "rnnPersistentKernel": "true"})",
            true);
}

TEST_CASE("backend LSTM takes PyTorch's weight layout", "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkLstm({}, true);
  checkLstm({5, 0, 3}, true);
}

TEST_CASE("backend sees every change to PyTorch-layout weights in the same buffers",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  // The backend skips converting weights that are bit for bit those of its last call: a change
  // to one element of any of the three buffers, in place, must reach the result.
  const std::size_t T = 3, B = 2, I = 3, H = 4;
  Backend backend;
  aspen_rnn_desc desc = lstmDesc(T, B, I, H, false, ASPEN_WEIGHTS_PYTORCH);
  std::mt19937 rng(21);
  const auto x = randomFloats(rng, T * B * I, 1), h0 = randomFloats(rng, B * H, 1),
             c0 = randomFloats(rng, B * H, 1);
  auto wi = randomFloats(rng, 4 * I * H, 0.5), wo = randomFloats(rng, 4 * H * H, 0.5),
       bIh = randomFloats(rng, 4 * H, 0.5), bHh = randomFloats(rng, 4 * H, 0.5);
  std::vector<float> callerWi = torchWeights(wi, 4, I, H), callerWo = torchWeights(wo, 4, H, H),
                     callerB = concat(bIh, bHh);
  const auto expected = [&] {
    lstmref::LstmModel model = torchOrderModel(T, B, I, H);
    std::vector<double> b(4 * H);
    for (std::size_t i = 0; i < b.size(); ++i)
      b[i] = double(float(callerB[i] + callerB[4 * H + i]));
    // Back from PyTorch's layout to the model's, element by element.
    std::vector<double> mi(4 * I * H), mo(4 * H * H);
    for (std::size_t g = 0; g < 4; ++g)
      for (std::size_t h = 0; h < H; ++h) {
        for (std::size_t i = 0; i < I; ++i)
          mi[(g * I + i) * H + h] = callerWi[(g * H + h) * I + i];
        for (std::size_t i = 0; i < H; ++i)
          mo[(g * H + i) * H + h] = callerWo[(g * H + h) * H + i];
      }
    return lstmref::forward(model, {widen(x), widen(h0), widen(c0), mi, mo, b}).output;
  };
  const auto run = [&] {
    std::vector<float> y(T * B * H), hn(B * H), cn(B * H);
    REQUIRE(aspen_rnn_forward(backend.handle, &desc, x.data(), h0.data(), c0.data(),
                              callerWi.data(), callerWo.data(), callerB.data(), nullptr, y.data(),
                              hn.data(), cn.data(), nullptr, nullptr) == ASPEN_OK);
    return y;
  };
  const std::vector<float> first = run();
  requireClose("y", first, expected());
  requireClose("y, the same weights again", run(), expected());
  callerWi[5] += 0.25f;
  const std::vector<float> second = run();
  CHECK(second != first);
  requireClose("y after weight_ih changed", second, expected());
  callerWo[17] -= 0.5f;
  requireClose("y after weight_hh changed", run(), expected());
  callerB[4 * H + 2] += 1.0f; // bias_hh
  requireClose("y after bias_hh changed", run(), expected());
  callerWi[5] -= 0.25f, callerWo[17] += 0.5f, callerB[4 * H + 2] -= 1.0f;
  requireClose("y with the first weights back", run(), expected());
}

TEST_CASE("backend LSTM in float16 matches the host model", "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  // Every input rounded to binary16 first, so the double-precision model sees exactly what the
  // layer sees; the tolerance is binary16's (11-bit significand) over a few steps.
  const std::size_t T = 4, B = 2, I = 3, H = 5;
  Backend backend;
  aspen_rnn_desc desc = lstmDesc(T, B, I, H, false, ASPEN_WEIGHTS_PYTORCH);
  desc.dtype = ASPEN_DTYPE_FLOAT16;
  std::mt19937 rng(5);
  const auto toHalf = [](const std::vector<float> &v) {
    std::vector<std::uint16_t> bits(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      bits[i] = aspen::detail::floatToHalfBits(v[i]);
    return bits;
  };
  const auto fromHalf = [](const std::vector<std::uint16_t> &bits) {
    std::vector<float> v(bits.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = aspen::detail::halfBitsToFloat(bits[i]);
    return v;
  };
  const auto rounded = [&](std::size_t n, double scale) {
    return fromHalf(toHalf(randomFloats(rng, n, scale)));
  };
  const double ws = 1.0 / std::sqrt(double(H));
  const auto x = rounded(T * B * I, 1), h0 = rounded(B * H, 1), c0 = rounded(B * H, 1),
             wi = rounded(4 * I * H, ws), wo = rounded(4 * H * H, ws), bIh = rounded(4 * H, 0.5);
  const std::vector<float> bHh(4 * H, 0.0f); // the sum stays exact in binary16
  lstmref::LstmModel model = torchOrderModel(T, B, I, H);
  const lstmref::LstmData data{widen(x), widen(h0), widen(c0), widen(wi), widen(wo), widen(bIh)};
  const lstmref::LstmForward fwd = lstmref::forward(model, data);

  const auto hx = toHalf(x), hh0 = toHalf(h0), hc0 = toHalf(c0),
             hwi = toHalf(torchWeights(wi, 4, I, H)), hwo = toHalf(torchWeights(wo, 4, H, H)),
             hb = toHalf(concat(bIh, bHh));
  std::vector<std::uint16_t> y(T * B * H), hn(B * H), cn(B * H);
  const aspen_status status =
      aspen_rnn_forward(backend.handle, &desc, hx.data(), hh0.data(), hc0.data(), hwi.data(),
                        hwo.data(), hb.data(), nullptr, y.data(), hn.data(), cn.data(), nullptr,
                        nullptr);
  INFO(aspen_last_error());
  REQUIRE(status == ASPEN_OK);
  requireClose("y", fromHalf(y), fwd.output, 1e-2, 4e-3);
  requireClose("hn", fromHalf(hn), fwd.finalOutput, 1e-2, 4e-3);
  requireClose("cn", fromHalf(cn), fwd.finalCellState, 1e-2, 4e-3);
}

namespace {

// One layer in one direction of a stack's double reference, in the order it runs its steps:
// forward(x) gives y [T,B,H] and the final states; backward(dy, dhn, dcn) the gradients.
struct RefLayerResult {
  std::vector<double> y, hn, cn;
};
struct RefLayerGrads {
  std::vector<double> dx, dh0, dc0, dwi, dwo, db;
  std::vector<double> dwp = {}; // an LSTM's projection
};
struct RefLayer {
  virtual ~RefLayer() = default;
  virtual RefLayerResult forward(const std::vector<double> &x) = 0;
  virtual RefLayerGrads backward(const std::vector<double> &dy, const std::vector<double> &dhn,
                                 const std::vector<double> &dcn) = 0;
};

struct LstmRef : RefLayer {
  lstmref::LstmModel model;
  lstmref::LstmData data;
  lstmref::LstmForward fwd;
  RefLayerResult forward(const std::vector<double> &x) override {
    data.input = x;
    fwd = lstmref::forward(model, data);
    return {fwd.output, fwd.finalOutput, fwd.finalCellState};
  }
  RefLayerGrads backward(const std::vector<double> &dy, const std::vector<double> &dhn,
                         const std::vector<double> &dcn) override {
    const lstmref::LstmGrads g = lstmref::backward(model, data, fwd, dy, {dhn, dcn});
    return {g.inputGrad,        g.initialOutputGrad, g.initialCellStateGrad,
            g.inputWeightsGrad, g.outputWeightsGrad, g.biasesGrad,
            g.projectionGrad};
  }
};

struct GruRef : RefLayer {
  gruref::GruModel model;
  gruref::GruData data;
  gruref::GruForward fwd;
  RefLayerResult forward(const std::vector<double> &x) override {
    data.input = x;
    fwd = gruref::forward(model, data);
    return {fwd.output, fwd.finalOutput, {}};
  }
  // hn is each row's output at its last step run: its gradient joins dy there (or h0's).
  RefLayerGrads backward(const std::vector<double> &dy, const std::vector<double> &dhn,
                         const std::vector<double> &) override {
    const std::size_t B = model.B, H = model.H;
    std::vector<double> outputGrad = dy, direct(B * H, 0.0);
    for (std::size_t r = 0; r < B; ++r) {
      const std::size_t n = model.timeSteps.empty() ? model.T : model.timeSteps[r];
      for (std::size_t h = 0; h < H; ++h)
        (n ? outputGrad[((n - 1) * B + r) * H + h] : direct[r * H + h]) += dhn[r * H + h];
    }
    gruref::GruGrads g = gruref::backward(model, data, fwd, outputGrad);
    for (std::size_t i = 0; i < B * H; ++i)
      g.initialOutputGrad[i] += direct[i];
    return {g.inputGrad, g.initialOutputGrad, {}, g.inputWeightsGrad, g.outputWeightsGrad,
            g.biasesGrad};
  }
};

// The vanilla RNN's (ASPEN_RNN_TANH, ASPEN_RNN_RELU): one gate, its final state's gradient
// taken by the model.
struct VanillaRef : RefLayer {
  rnnlayerref::RnnModel model;
  rnnlayerref::RnnData data;
  rnnlayerref::RnnForward fwd;
  RefLayerResult forward(const std::vector<double> &x) override {
    data.input = x;
    fwd = rnnlayerref::forward(model, data);
    return {fwd.output, fwd.finalOutput, {}};
  }
  RefLayerGrads backward(const std::vector<double> &dy, const std::vector<double> &dhn,
                         const std::vector<double> &) override {
    const rnnlayerref::RnnGrads g = rnnlayerref::backward(model, data, fwd, dy, dhn);
    return {g.inputGrad, g.initialOutputGrad, {}, g.inputWeightsGrad, g.outputWeightsGrad,
            g.biasesGrad};
  }
};

std::unique_ptr<VanillaRef> vanillaRef(bool relu, std::size_t T, std::size_t B, std::size_t I,
                                       std::size_t H, const std::vector<unsigned> &lengths,
                                       const std::vector<float> &h0, const std::vector<float> &wi,
                                       const std::vector<float> &wo, const std::vector<float> &b) {
  auto ref = std::make_unique<VanillaRef>();
  ref->model.T = T, ref->model.B = B, ref->model.I = I, ref->model.H = H;
  ref->model.nl = relu ? rnnref::Activation::relu : rnnref::Activation::tanh;
  ref->model.timeSteps = lengths;
  ref->data = {{}, widen(h0), widen(wi), widen(wo), widen(b)};
  return ref;
}

// One vanilla RNN layer (aspen_rnn_forward / _backward with ASPEN_RNN_TANH or _RELU) against
// rnnlayerref: training forward, backward with dy and dhn, inference.
void checkVanillaLayer(bool relu, const std::vector<unsigned> &lengths, bool torchLayout,
                       bool reverse) {
  const std::size_t T = 5, B = 3, I = 4, H = 6;
  const bool variable = !lengths.empty();
  INFO((relu ? "relu" : "tanh") << ", lengths " << variable << ", PyTorch's layout "
                                << torchLayout << ", reverse " << reverse);
  Backend backend;
  aspen_rnn_desc desc{};
  desc.cell = relu ? ASPEN_RNN_RELU : ASPEN_RNN_TANH;
  desc.dtype = ASPEN_DTYPE_FLOAT32;
  desc.seq_len = T, desc.batch = B, desc.input_size = I, desc.hidden_size = H;
  desc.variable_lengths = variable;
  desc.weights_layout = torchLayout ? ASPEN_WEIGHTS_PYTORCH : ASPEN_WEIGHTS_ASPEN;
  desc.options = reverse ? "{\"direction\": \"reverse\"}" : nullptr;
  std::mt19937 rng(5);
  const double ws = 1.0 / std::sqrt(double(H));
  const auto x = randomFloats(rng, T * B * I, 1), h0 = randomFloats(rng, B * H, 1),
             wi = randomFloats(rng, I * H, ws), wo = randomFloats(rng, H * H, ws),
             bIh = randomFloats(rng, H, 0.5), bHh = randomFloats(rng, H, 0.5),
             dy = randomFloats(rng, T * B * H, 1), dhn = randomFloats(rng, B * H, 1);
  std::vector<float> b(H);
  for (std::size_t j = 0; j < H; ++j)
    b[j] = bIh[j] + bHh[j];
  const std::vector<float> callerWi = torchLayout ? torchWeights(wi, 1, I, H) : wi;
  const std::vector<float> callerWo = torchLayout ? torchWeights(wo, 1, H, H) : wo;
  const std::vector<float> callerB = torchLayout ? concat(bIh, bHh) : b;
  const auto runOrder = [&](const std::vector<double> &v) {
    return reverse ? rnnref::reverseRowSteps(v, lengths, T, B) : v;
  };
  const auto ref = vanillaRef(relu, T, B, I, H, lengths, h0, wi, wo, b);
  const RefLayerResult fwd = ref->forward(runOrder(widen(x)));
  RefLayerGrads g = ref->backward(runOrder(widen(dy)), widen(dhn), {});
  const std::vector<double> wantY = runOrder(fwd.y);
  g.dx = runOrder(g.dx);

  std::size_t bytes = 0;
  REQUIRE(aspen_rnn_reserve_bytes(backend.handle, &desc, &bytes) == ASPEN_OK);
  std::vector<std::uint8_t> reserve(bytes);
  std::vector<float> y(T * B * H), hn(B * H);
  const std::uint32_t *lens = variable ? lengths.data() : nullptr;
  aspen_status status =
      aspen_rnn_forward(backend.handle, &desc, x.data(), h0.data(), nullptr, callerWi.data(),
                        callerWo.data(), callerB.data(), lens, y.data(), hn.data(), nullptr,
                        reserve.data(), nullptr);
  INFO(aspen_last_error());
  REQUIRE(status == ASPEN_OK);
  requireClose("y", y, wantY);
  requireClose("hn", hn, fwd.hn);
  std::vector<float> dx(T * B * I), dh0(B * H), dwi(I * H), dwo(H * H), db(callerB.size());
  status = aspen_rnn_backward(backend.handle, &desc, x.data(), h0.data(), nullptr,
                              callerWi.data(), callerWo.data(), callerB.data(), lens, y.data(),
                              reserve.data(), dy.data(), dhn.data(), nullptr, dx.data(),
                              dh0.data(), nullptr, dwi.data(), dwo.data(), db.data(), nullptr);
  INFO(aspen_last_error());
  REQUIRE(status == ASPEN_OK);
  requireClose("dx", dx, g.dx);
  requireClose("dh0", dh0, g.dh0);
  requireClose("dWi", dwi, torchLayout ? torchWeights(g.dwi, 1, I, H) : g.dwi);
  requireClose("dWo", dwo, torchLayout ? torchWeights(g.dwo, 1, H, H) : g.dwo);
  requireClose("db", db, torchLayout ? concat(g.db, g.db) : g.db);
  std::vector<float> yi(T * B * H), hni(B * H);
  status = aspen_rnn_forward(backend.handle, &desc, x.data(), h0.data(), nullptr,
                             callerWi.data(), callerWo.data(), callerB.data(), lens, yi.data(),
                             hni.data(), nullptr, nullptr, nullptr);
  REQUIRE(status == ASPEN_OK);
  requireClose("y (inference)", yi, wantY);
  requireClose("hn (inference)", hni, fwd.hn);
}

} // namespace

TEST_CASE("backend vanilla RNN layers (tanh, relu) match the host model in both directions",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkVanillaLayer(false, {}, false, false);
  checkVanillaLayer(true, {5, 0, 1}, true, false);
  checkVanillaLayer(false, {2, 5, 0}, true, true);
  checkVanillaLayer(true, {}, false, true);
}

TEST_CASE("backend GRU (reset after, PyTorch's layout) matches the host model",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  const std::size_t T = 4, B = 3, I = 5, H = 4;
  for (const std::vector<unsigned> &lengths :
       {std::vector<unsigned>{}, std::vector<unsigned>{2, 4, 0}})
  for (const bool torchLayout : {false, true})
  for (const bool reverse : {false, true})
  for (const bool clip : {false, true}) { // the options' activationClip 0.4
    const bool variable = !lengths.empty();
    INFO("variable lengths: " << variable << ", PyTorch's weight layout: " << torchLayout
                              << ", reverse: " << reverse << ", activation clip: " << clip);
    Backend backend;
    aspen_rnn_desc desc{};
    desc.cell = ASPEN_RNN_GRU;
    desc.dtype = ASPEN_DTYPE_FLOAT32;
    desc.seq_len = T, desc.batch = B, desc.input_size = I, desc.hidden_size = H;
    desc.variable_lengths = variable;
    desc.gru_reset_after = 1;
    desc.cell_order = "reset,update,cell";
    const std::string options = std::string(R"({"availableMemoryProportion": 0.5)") +
                                (reverse ? R"(, "direction": "reverse")" : "") +
                                (clip ? R"(, "activationClip": 0.4)" : "") + "}";
    desc.options = options.c_str();
    desc.weights_layout = torchLayout ? ASPEN_WEIGHTS_PYTORCH : ASPEN_WEIGHTS_ASPEN;
    std::mt19937 rng(11);
    const double ws = 1.0 / std::sqrt(double(H));
    const auto x = randomFloats(rng, T * B * I, 1), h0 = randomFloats(rng, B * H, 1),
               wi = randomFloats(rng, 3 * I * H, ws), wo = randomFloats(rng, 3 * H * H, ws),
               b = randomFloats(rng, 3 * 2 * H, 1), dy = randomFloats(rng, T * B * H, 1),
               dhn = randomFloats(rng, B * H, 1);
    const std::vector<float> callerWi = torchLayout ? torchWeights(wi, 3, I, H) : wi;
    const std::vector<float> callerWo = torchLayout ? torchWeights(wo, 3, H, H) : wo;
    const std::vector<float> callerB = torchLayout ? torchGruBiases(b, 3, H) : b;
    GruRef ref;
    ref.model.T = T, ref.model.B = B, ref.model.I = I, ref.model.H = H;
    ref.model.resetAfter = true;
    ref.model.timeSteps = lengths;
    ref.model.activationClip = clip ? 0.4 : 0.0;
    ref.data = {{}, widen(h0), widen(wi), widen(wo), widen(b), {}};
    // In the order the layer runs the steps (rnnref::reverseRowSteps); back to the caller's
    // order.
    const auto runOrder = [&](const std::vector<double> &v) {
      return reverse ? rnnref::reverseRowSteps(v, lengths, T, B) : v;
    };
    const RefLayerResult fwd = ref.forward(runOrder(widen(x)));
    RefLayerGrads grads = ref.backward(runOrder(widen(dy)), widen(dhn), {});
    const std::vector<double> wantY = runOrder(fwd.y);
    grads.dx = runOrder(grads.dx);

    std::size_t bytes = 0;
    REQUIRE(aspen_rnn_reserve_bytes(backend.handle, &desc, &bytes) == ASPEN_OK);
    std::vector<std::uint8_t> reserve(bytes);
    std::vector<float> y(T * B * H), hn(B * H);
    const std::uint32_t *lens = variable ? lengths.data() : nullptr;
    REQUIRE(aspen_rnn_forward(backend.handle, &desc, x.data(), h0.data(), nullptr,
                              callerWi.data(), callerWo.data(), callerB.data(), lens, y.data(),
                              hn.data(), nullptr,
                              reserve.data(), nullptr) == ASPEN_OK);
    requireClose("y", y, wantY);
    requireClose("hn", hn, fwd.hn);
    std::vector<float> dx(T * B * I), dh0(B * H), dwi(3 * I * H), dwo(3 * H * H), db(3 * 2 * H);
    const aspen_status status = aspen_rnn_backward(
        backend.handle, &desc, x.data(), h0.data(), nullptr, callerWi.data(), callerWo.data(),
        callerB.data(), lens, y.data(), reserve.data(), dy.data(), dhn.data(), nullptr,
        dx.data(), dh0.data(), nullptr, dwi.data(), dwo.data(), db.data(), nullptr);
    INFO(aspen_last_error());
    REQUIRE(status == ASPEN_OK);
    requireClose("dx", dx, grads.dx);
    requireClose("dh0", dh0, grads.dh0);
    if (torchLayout) {
      requireClose("dWi", dwi, torchWeights(grads.dwi, 3, I, H));
      requireClose("dWo", dwo, torchWeights(grads.dwo, 3, H, H));
      requireClose("db", db, torchGruBiases(grads.db, 3, H));
    } else {
      requireClose("dWi", dwi, grads.dwi);
      requireClose("dWo", dwo, grads.dwo);
      requireClose("db", db, grads.db);
    }
  }
}

namespace {

// Columns [d*H, (d+1)*H) of every row of a [rows, D*H] sequence, and back.
std::vector<double> directionOf(const std::vector<double> &v, std::size_t D, std::size_t d,
                                std::size_t H) {
  std::vector<double> out(v.size() / D);
  for (std::size_t r = 0; r < out.size() / H; ++r)
    std::copy_n(v.begin() + (r * D + d) * H, H, out.begin() + r * H);
  return out;
}
void setDirection(std::vector<double> &v, const std::vector<double> &part, std::size_t D,
                  std::size_t d, std::size_t H) {
  for (std::size_t r = 0; r < part.size() / H; ++r)
    std::copy_n(part.begin() + r * H, H, v.begin() + (r * D + d) * H);
}
// Entry i of n elements.
std::vector<float> part(const std::vector<float> &v, std::size_t i, std::size_t n) {
  return {v.begin() + i * n, v.begin() + (i + 1) * n};
}

struct StackCase {
  bool lstm;
  std::size_t L;
  aspen_rnn_direction direction;
  std::vector<unsigned> lengths;
  bool torchLayout;
  double dropout = 0.0;
  std::uint64_t seed = 0;
  std::size_t P = 0;     // an LSTM's projection (layer.options projSize)
  bool vanilla = false;  // the vanilla RNN (lstm false): ASPEN_RNN_TANH, or _RELU with relu
  bool relu = false;
};

// docs/backend.md's dropout mask, written here from that text: whether element i of layer l's
// output is kept.
std::uint64_t splitMix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
bool documentedKeep(std::uint64_t seed, std::size_t l, std::size_t i, double dropout) {
  const std::uint64_t key = splitMix(seed ^ ((l + 1) * 0xD1B54A32D192ED03ull));
  return double(splitMix(key + i) >> 11) * 0x1.0p-53 >= dropout;
}
// v (layer l's output or its gradient) times the mask and 1 / (1 - dropout).
void dropLikeDocs(std::vector<double> &v, std::uint64_t seed, std::size_t l, double dropout) {
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = documentedKeep(seed, l, i, dropout) ? v[i] / (1.0 - dropout) : 0.0;
}

// A stack through aspen_rnn_stack_* against the double reference composed layer by layer
// (reverse directions on each row's steps reversed on the host, the directions' outputs
// concatenated per step, going back each direction's share of dy and the input gradients of
// both added): training forward, backward with every gradient, and inference.
void checkStack(const StackCase &k) {
  const std::size_t T = 5, B = 3, I = 4, H = 6, G = k.vanilla ? 1 : k.lstm ? 4 : 3;
  const std::size_t W = k.P ? k.P : H; // the width of h
  const std::size_t D = k.direction == ASPEN_RNN_BIDIRECTIONAL ? 2 : 1, count = k.L * D;
  const bool variable = !k.lengths.empty();
  INFO((k.vanilla ? "vanilla RNN" : k.lstm ? "LSTM" : "GRU") << ", " << k.L << " layers, direction " << k.direction
                                 << ", variable lengths " << variable << ", PyTorch's layout "
                                 << k.torchLayout << ", projection " << k.P);
  Backend backend;
  aspen_rnn_stack_desc desc = aspen_rnn_stack_desc_init();
  desc.layer.cell = k.vanilla ? (k.relu ? ASPEN_RNN_RELU : ASPEN_RNN_TANH)
                    : k.lstm  ? ASPEN_RNN_LSTM
                              : ASPEN_RNN_GRU;
  desc.layer.dtype = ASPEN_DTYPE_FLOAT32;
  desc.layer.seq_len = T, desc.layer.batch = B, desc.layer.input_size = I;
  desc.layer.hidden_size = H;
  desc.layer.variable_lengths = variable;
  desc.layer.gru_reset_after = !k.lstm && !k.vanilla;
  desc.layer.cell_order = k.vanilla ? nullptr
                          : k.lstm  ? "input,forget,cell,output"
                                    : "reset,update,cell";
  desc.layer.weights_layout = k.torchLayout ? ASPEN_WEIGHTS_PYTORCH : ASPEN_WEIGHTS_ASPEN;
  desc.num_layers = k.L;
  desc.direction = k.direction;
  desc.dropout = k.dropout;
  desc.dropout_seed = k.seed;
  const std::string projection = "{\"projSize\": " + std::to_string(k.P) + "}";
  desc.layer.options = k.P ? projection.c_str() : nullptr;
  const std::size_t biasElements = k.lstm || k.vanilla ? G * H : G * 2 * H;
  std::mt19937 rng(21);
  const double ws = 1.0 / std::sqrt(double(H));
  const auto x = randomFloats(rng, T * B * I, 1), h0 = randomFloats(rng, count * B * W, 1),
             c0 = randomFloats(rng, count * B * H, 1),
             dy = randomFloats(rng, T * B * D * W, 1),
             dhn = randomFloats(rng, count * B * W, 1), dcn = randomFloats(rng, count * B * H, 1);
  std::vector<std::vector<float>> wi, wo, wp, b, callerWi, callerWo, callerB;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t in = i < D ? I : D * W;
    wi.push_back(randomFloats(rng, G * in * H, ws));
    wo.push_back(randomFloats(rng, G * W * H, ws));
    b.push_back(randomFloats(rng, biasElements, 0.5));
    wp.push_back(randomFloats(rng, H * k.P, ws)); // [H, P]; none without a projection
    callerWi.push_back(k.torchLayout ? torchWeights(wi[i], G, in, H) : wi[i]);
    callerWo.push_back(k.torchLayout
                           ? concat(torchWeights(wo[i], G, W, H), torchWeights(wp[i], 1, H, k.P))
                           : concat(wo[i], wp[i]));
    std::vector<float> bias = b[i];
    if (k.torchLayout && (k.lstm || k.vanilla)) // [2, G*H] whose rows add up to the model's
      bias = concat(std::vector<float>(b[i].size(), 0.0f), b[i]);
    else if (k.torchLayout)
      bias = torchGruBiases(b[i], G, H);
    callerB.push_back(bias);
  }

  // The reference.
  std::vector<std::unique_ptr<RefLayer>> layers;
  const auto reversed = [&](std::size_t i) {
    return k.direction == ASPEN_RNN_REVERSE || i % D == 1;
  };
  const auto runOrder = [&](std::size_t i, const std::vector<double> &v) {
    return reversed(i) ? rnnref::reverseRowSteps(v, k.lengths, T, B) : v;
  };
  std::vector<double> input, wantHn, wantCn;
  // The forward, dropping between layers at `dropout` (0 in inference); it leaves the layers'
  // references ready for the backward, and the last layer's output in `input`.
  const auto referenceForward = [&](double dropout) {
    layers.clear();
    wantHn.clear();
    wantCn.clear();
    input = widen(x);
    for (std::size_t l = 0; l < k.L; ++l) {
      std::vector<double> out(T * B * D * W);
      for (std::size_t d = 0; d < D; ++d) {
        const std::size_t i = l * D + d, in = l == 0 ? I : D * W;
        std::unique_ptr<RefLayer> layer;
        if (k.vanilla) {
          layer = vanillaRef(k.relu, T, B, in, H, k.lengths, part(h0, i, B * H), wi[i], wo[i],
                             b[i]);
        } else if (k.lstm) {
          auto ref = std::make_unique<LstmRef>();
          ref->model = torchOrderModel(T, B, in, H);
          ref->model.timeSteps = k.lengths;
          ref->model.P = k.P;
          ref->data = {{},           widen(part(h0, i, B * W)), widen(part(c0, i, B * H)),
                       widen(wi[i]), widen(wo[i]),              widen(b[i]),
                       widen(wp[i])};
          layer = std::move(ref);
        } else {
          auto ref = std::make_unique<GruRef>();
          ref->model.T = T, ref->model.B = B, ref->model.I = in, ref->model.H = H;
          ref->model.resetAfter = true;
          ref->model.timeSteps = k.lengths;
          ref->data = {{}, widen(part(h0, i, B * H)), widen(wi[i]), widen(wo[i]), widen(b[i]), {}};
          layer = std::move(ref);
        }
        const RefLayerResult r = layer->forward(runOrder(i, input));
        setDirection(out, runOrder(i, r.y), D, d, W);
        wantHn.insert(wantHn.end(), r.hn.begin(), r.hn.end());
        wantCn.insert(wantCn.end(), r.cn.begin(), r.cn.end());
        layers.push_back(std::move(layer));
      }
      if (dropout > 0 && l + 1 < k.L)
        dropLikeDocs(out, k.seed, l, dropout);
      input = out;
    }
  };
  referenceForward(k.dropout);
  const std::vector<double> wantY = input;
  std::vector<RefLayerGrads> wantGrads(count);
  std::vector<double> dyLayer = widen(dy);
  for (std::size_t l = k.L; l-- > 0;) {
    if (k.dropout > 0 && l + 1 < k.L)
      dropLikeDocs(dyLayer, k.seed, l, k.dropout);
    std::vector<double> dxSum(T * B * (l == 0 ? I : D * W), 0.0);
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t i = l * D + d;
      RefLayerGrads g = layers[i]->backward(runOrder(i, directionOf(dyLayer, D, d, W)),
                                            widen(part(dhn, i, B * W)),
                                            k.lstm ? widen(part(dcn, i, B * H))
                                                   : std::vector<double>{});
      g.dx = runOrder(i, g.dx);
      for (std::size_t e = 0; e < dxSum.size(); ++e)
        dxSum[e] += g.dx[e];
      wantGrads[i] = g;
    }
    dyLayer = dxSum;
  }

  // Aspen.
  std::size_t workspaceBytes = 0, reserveBytes = 0;
  REQUIRE(aspen_rnn_stack_sizes(backend.handle, &desc, &workspaceBytes, &reserveBytes) ==
          ASPEN_OK);
  CHECK(workspaceBytes == 0); // one engine: the layers' outputs stay in it
  std::vector<std::uint8_t> workspace(workspaceBytes), reserve(reserveBytes);
  std::vector<const void *> wiP, woP, bP;
  for (std::size_t i = 0; i < count; ++i) {
    wiP.push_back(callerWi[i].data());
    woP.push_back(callerWo[i].data());
    bP.push_back(callerB[i].data());
  }
  std::vector<float> y(T * B * D * W), hn(count * B * W), cn(count * B * H);
  const std::uint32_t *lens = variable ? k.lengths.data() : nullptr;
  const auto forward = [&](void *res, const std::vector<double> &want) {
    const aspen_status status = aspen_rnn_stack_forward(
        backend.handle, &desc, x.data(), h0.data(), k.lstm ? c0.data() : nullptr, wiP.data(),
        woP.data(), bP.data(), lens, y.data(), hn.data(), k.lstm ? cn.data() : nullptr,
        workspace.empty() ? nullptr : workspace.data(), res, nullptr);
    INFO(aspen_last_error());
    REQUIRE(status == ASPEN_OK);
    requireClose("y", y, want);
    requireClose("hn", hn, wantHn);
    if (k.lstm)
      requireClose("cn", cn, wantCn);
  };
  forward(reserve.data(), wantY);
  std::vector<float> dx(T * B * I), dh0(count * B * W), dc0(count * B * H);
  std::vector<std::vector<float>> dwi, dwo, db;
  std::vector<void *> dwiP, dwoP, dbP;
  for (std::size_t i = 0; i < count; ++i) {
    dwi.emplace_back(wi[i].size());
    dwo.emplace_back(callerWo[i].size());
    db.emplace_back(callerB[i].size());
  }
  for (std::size_t i = 0; i < count; ++i) {
    dwiP.push_back(dwi[i].data());
    dwoP.push_back(dwo[i].data());
    dbP.push_back(db[i].data());
  }
  const aspen_status status = aspen_rnn_stack_backward(
      backend.handle, &desc, x.data(), h0.data(), k.lstm ? c0.data() : nullptr, wiP.data(),
      woP.data(), bP.data(), lens, y.data(), workspace.empty() ? nullptr : workspace.data(),
      reserve.data(), dy.data(), dhn.data(), k.lstm ? dcn.data() : nullptr, dx.data(),
      dh0.data(), k.lstm ? dc0.data() : nullptr, dwiP.data(), dwoP.data(), dbP.data(), nullptr);
  INFO(aspen_last_error());
  REQUIRE(status == ASPEN_OK);
  requireClose("dx", dx, dyLayer);
  for (std::size_t i = 0; i < count; ++i) {
    INFO("layer " << i / D << ", direction " << i % D);
    const RefLayerGrads &g = wantGrads[i];
    const std::size_t in = i < D ? I : D * W;
    requireClose("dh0", part(dh0, i, B * W), g.dh0);
    if (k.lstm)
      requireClose("dc0", part(dc0, i, B * H), g.dc0);
    requireClose("dWi", dwi[i], k.torchLayout ? torchWeights(g.dwi, G, in, H) : g.dwi);
    const std::vector<double> torchDwo =
        concat(torchWeights(g.dwo, G, W, H), torchWeights(g.dwp, 1, H, k.P));
    requireClose("dWo", dwo[i], k.torchLayout ? torchDwo : concat(g.dwo, g.dwp));
    if (!k.torchLayout)
      requireClose("db", db[i], g.db);
    else
      requireClose("db", db[i],
                   k.lstm || k.vanilla ? concat(g.db, g.db) : torchGruBiases(g.db, G, H));
  }
  // Inference: the same outputs, without dropout.
  referenceForward(0.0);
  const std::vector<double> wantInference = input;
  forward(nullptr, wantInference);
}

} // namespace

TEST_CASE("backend stacks of LSTM and GRU layers in either or both directions match the "
          "composed host model",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkStack({true, 2, ASPEN_RNN_BIDIRECTIONAL, {5, 0, 1}, true});
  checkStack({true, 3, ASPEN_RNN_BIDIRECTIONAL, {}, false});
  checkStack({true, 1, ASPEN_RNN_BIDIRECTIONAL, {2, 5, 3}, false});
  checkStack({true, 2, ASPEN_RNN_REVERSE, {5, 0, 3}, true});
  checkStack({true, 3, ASPEN_RNN_FORWARD, {1, 4, 0}, false});
  checkStack({true, 1, ASPEN_RNN_FORWARD, {}, true});
  checkStack({false, 2, ASPEN_RNN_BIDIRECTIONAL, {5, 0, 1}, true});
  checkStack({false, 2, ASPEN_RNN_FORWARD, {}, false});
  checkStack({false, 1, ASPEN_RNN_REVERSE, {3, 5, 0}, true});
}

TEST_CASE("backend stacks of vanilla RNN layers (tanh, relu) in either or both directions match "
          "the composed host model",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  const auto vanilla = [](std::size_t L, aspen_rnn_direction direction,
                          std::vector<unsigned> lengths, bool torchLayout, double dropout,
                          bool relu) {
    StackCase k{false, L, direction, std::move(lengths), torchLayout, dropout, 17};
    k.vanilla = true, k.relu = relu;
    return k;
  };
  checkStack(vanilla(2, ASPEN_RNN_BIDIRECTIONAL, {5, 0, 1}, true, 0.0, false));
  checkStack(vanilla(3, ASPEN_RNN_BIDIRECTIONAL, {}, false, 0.3, true));
  checkStack(vanilla(2, ASPEN_RNN_REVERSE, {2, 5, 3}, true, 0.25, false));
  checkStack(vanilla(1, ASPEN_RNN_FORWARD, {}, true, 0.0, true));
}

TEST_CASE("backend stacks of projected LSTM layers (projSize) match the composed host model",
          "[correctness][backend][projection]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkStack({true, 2, ASPEN_RNN_BIDIRECTIONAL, {5, 0, 1}, true, 0.0, 0, 3});
  checkStack({true, 3, ASPEN_RNN_FORWARD, {}, false, 0.0, 0, 2});
  checkStack({true, 2, ASPEN_RNN_REVERSE, {2, 5, 3}, true, 0.5, 11, 1});
  checkStack({true, 2, ASPEN_RNN_BIDIRECTIONAL, {}, false, 0.25, 7, 5});
}

TEST_CASE("backend stacks drop between layers in training with the documented mask",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  checkStack({true, 3, ASPEN_RNN_BIDIRECTIONAL, {5, 0, 1}, true, 0.3, 12345});
  checkStack({true, 2, ASPEN_RNN_FORWARD, {}, false, 0.5, 7});
  checkStack({false, 2, ASPEN_RNN_REVERSE, {2, 5, 3}, true, 0.25, 99});
  // The mask itself: about `dropout` of the elements dropped, and other seeds and layers draw
  // other masks.
  const std::size_t n = 200000;
  for (const double p : {0.1, 0.5, 0.9}) {
    std::size_t dropped = 0, sameAsOtherSeed = 0, sameAsOtherLayer = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const bool keep = documentedKeep(1, 0, i, p);
      dropped += !keep;
      sameAsOtherSeed += keep == documentedKeep(2, 0, i, p);
      sameAsOtherLayer += keep == documentedKeep(1, 1, i, p);
    }
    const double sigma = std::sqrt(n * p * (1 - p));
    CHECK(std::abs(double(dropped) - p * n) < 5 * sigma);
    // Independent masks agree on a fraction p^2 + (1 - p)^2 of the elements.
    const double agree = (p * p + (1 - p) * (1 - p)) * n;
    CHECK(std::abs(double(sameAsOtherSeed) - agree) < 5 * std::sqrt(n * 0.25));
    CHECK(std::abs(double(sameAsOtherLayer) - agree) < 5 * std::sqrt(n * 0.25));
  }
}

TEST_CASE("backend matmul and non-linearities match host models", "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Backend backend;
  const std::size_t m = 7, k = 9, n = 5;
  std::mt19937 rng(3);
  const auto a = randomFloats(rng, m * k, 1), b = randomFloats(rng, k * n, 1);
  std::vector<float> c(m * n);
  REQUIRE(aspen_matmul(backend.handle, ASPEN_DTYPE_FLOAT32, m, k, n, a.data(), b.data(), c.data(),
                       nullptr) == ASPEN_OK);
  std::vector<double> want(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t l = 0; l < k; ++l)
        want[i * n + j] += double(a[i * k + l]) * b[l * n + j];
  requireClose("c", c, want);

  const std::size_t rows = 3, cols = 4;
  const auto in = randomFloats(rng, rows * cols, 3);
  std::vector<float> out(rows * cols);
  REQUIRE(aspen_nonlinearity_forward(backend.handle, ASPEN_NONLINEARITY_SIGMOID,
                                     ASPEN_DTYPE_FLOAT32, rows, rows * cols, in.data(), out.data(),
                                     nullptr) == ASPEN_OK);
  std::vector<double> sigmoid(rows * cols);
  for (std::size_t i = 0; i < in.size(); ++i)
    sigmoid[i] = 1.0 / (1.0 + std::exp(-double(in[i])));
  requireClose("sigmoid", out, sigmoid);
  REQUIRE(aspen_nonlinearity_forward(backend.handle, ASPEN_NONLINEARITY_SOFTMAX,
                                     ASPEN_DTYPE_FLOAT32, rows, rows * cols, in.data(), out.data(),
                                     nullptr) == ASPEN_OK);
  std::vector<double> softmax(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::size_t j = 0; j < cols; ++j)
      sum += std::exp(double(in[r * cols + j]));
    for (std::size_t j = 0; j < cols; ++j)
      softmax[r * cols + j] = std::exp(double(in[r * cols + j])) / sum;
  }
  requireClose("softmax over each row", out, softmax);
}

namespace {
// An aspen_parallel_for_fn that runs the iterations in reverse order on the calling thread and
// counts its loops.
void reverseLoop(void *context, size_t n, void (*task)(void *, size_t), void *taskContext) {
  ++*static_cast<std::size_t *>(context);
  for (size_t i = n; i-- > 0;)
    task(taskContext, i);
}
} // namespace

TEST_CASE("backend calls run on the caller's parallel loop when given one, with the same bits",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Backend backend("cpu:3");
  std::mt19937 rng(5);
  // Large enough for the executor to split (a compute set of under 16384 elements runs on the
  // calling thread).
  const std::size_t m = 40, k = 33, n = 24, rows = 6, cols = 5000;
  const auto a = randomFloats(rng, m * k, 1), b = randomFloats(rng, k * n, 1);
  const auto in = randomFloats(rng, rows * cols, 3);
  const auto calls = [&] {
    std::vector<float> c(m * n), out(rows * cols);
    REQUIRE(aspen_matmul(backend.handle, ASPEN_DTYPE_FLOAT32, m, k, n, a.data(), b.data(),
                         c.data(), nullptr) == ASPEN_OK);
    REQUIRE(aspen_nonlinearity_forward(backend.handle, ASPEN_NONLINEARITY_TANH,
                                       ASPEN_DTYPE_FLOAT32, rows, rows * cols, in.data(),
                                       out.data(), nullptr) == ASPEN_OK);
    c.insert(c.end(), out.begin(), out.end());
    return c;
  };
  const std::vector<float> own = calls(); // compiles both layers, on their engines' threads
  std::size_t loops = 0;
  REQUIRE(aspen_backend_set_parallel_for(backend.handle, reverseLoop, &loops) == ASPEN_OK);
  const std::vector<float> mine = calls();
  // The non-linearity's compute set over 3 tiles (a small product may be one call).
  CHECK(loops >= 1);
  CHECK(std::memcmp(mine.data(), own.data(), own.size() * sizeof(float)) == 0);
  // A layer compiled after the loop was set takes it too.
  std::vector<float> out(4 * cols), want(4 * cols);
  const std::size_t before = loops;
  REQUIRE(aspen_nonlinearity_forward(backend.handle, ASPEN_NONLINEARITY_RELU,
                                     ASPEN_DTYPE_FLOAT32, 4, 4 * cols, in.data(), out.data(),
                                     nullptr) == ASPEN_OK);
  CHECK(loops > before);
  for (std::size_t i = 0; i < want.size(); ++i)
    want[i] = std::max(in[i], 0.0f);
  CHECK(out == want);
  // A small call runs on the calling thread: no loop.
  const std::size_t beforeSmall = loops;
  std::vector<float> small(2 * 50);
  REQUIRE(aspen_nonlinearity_forward(backend.handle, ASPEN_NONLINEARITY_RELU,
                                     ASPEN_DTYPE_FLOAT32, 2, 2 * 50, in.data(), small.data(),
                                     nullptr) == ASPEN_OK);
  CHECK(loops == beforeSmall);
  for (std::size_t i = 0; i < small.size(); ++i)
    CHECK(small[i] == std::max(in[i], 0.0f));
  // NULL gives the engines their own threads back.
  REQUIRE(aspen_backend_set_parallel_for(backend.handle, nullptr, nullptr) == ASPEN_OK);
  const std::size_t after = loops;
  const std::vector<float> again = calls();
  CHECK(loops == after);
  CHECK(std::memcmp(again.data(), own.data(), own.size() * sizeof(float)) == 0);
  CHECK(aspen_backend_set_parallel_for(nullptr, reverseLoop, &loops) ==
        ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(aspen_last_error()).find("backend") != std::string::npos);
}

TEST_CASE("backend cache: hits, misses, its bound, and one compile for concurrent first calls",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Backend backend("cpu", 2);
  std::vector<float> a(4 * 3, 1.0f), b(3 * 2, 2.0f), c(4 * 2);
  const auto call = [&](std::size_t m) {
    return aspen_matmul(backend.handle, ASPEN_DTYPE_FLOAT32, m, 3, 2, a.data(), b.data(),
                        c.data(), nullptr);
  };
  for (int i = 0; i < 3; ++i)
    REQUIRE(call(4) == ASPEN_OK);
  aspen_cache_stats s = backend.stats();
  CHECK(s.misses == 1);
  CHECK(s.hits == 2);
  CHECK(s.compiles == 1);
  CHECK(s.entries == 1);
  CHECK(s.capacity == 2);
  CHECK(c[0] == 6.0f); // 1*2 summed over k = 3
  REQUIRE(call(3) == ASPEN_OK);
  REQUIRE(call(2) == ASPEN_OK); // a third configuration: the least recently used (m = 4) goes
  s = backend.stats();
  CHECK(s.misses == 3);
  CHECK(s.evictions == 1);
  CHECK(s.entries == 2);
  REQUIRE(call(4) == ASPEN_OK); // compiled again
  CHECK(backend.stats().compiles == 4);
  REQUIRE(aspen_backend_clear_cache(backend.handle) == ASPEN_OK);
  CHECK(backend.stats().entries == 0);

  // Eight threads make the same first call at once: one compiles, seven wait for it.
  Backend shared;
  constexpr int kThreads = 8;
  std::latch start(kThreads);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> mine(4 * 2, -1.0f);
      const std::vector<float> left(4 * 3, float(t));
      start.arrive_and_wait();
      if (aspen_matmul(shared.handle, ASPEN_DTYPE_FLOAT32, 4, 3, 2, left.data(), b.data(),
                       mine.data(), nullptr) == ASPEN_OK &&
          mine[7] == 6.0f * t)
        ++ok;
    });
  for (std::thread &t : threads)
    t.join();
  CHECK(ok == kThreads);
  s = shared.stats();
  CHECK(s.compiles == 1);
  CHECK(s.misses == 1);
  CHECK(s.hits == kThreads - 1);
}

TEST_CASE("backend errors are codes with messages, and nothing compiles for bad arguments",
          "[error][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  aspen_backend *none = nullptr;
  if (aspen::Device::gpuCount() == 0) { // else tests/gpu/test_gpu_backend.cpp uses it
    CHECK(aspen_backend_create("gpu", 0, &none) == ASPEN_ERROR_RUNTIME);
    CHECK(none == nullptr);
    CHECK_THAT(aspen_last_error(), Catch::Contains("device 'gpu'"));
    CHECK_THAT(aspen_last_error(), Catch::Contains("no CUDA GPU with ordinal 0"));
  }
  CHECK(aspen_backend_create("gpu:x", 0, &none) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("the GPU ordinal must be a whole number"));
  CHECK(aspen_backend_create("tpu", 0, &none) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("device 'tpu'"));
  CHECK(aspen_backend_create(nullptr, 0, &none) == ASPEN_ERROR_INVALID_ARGUMENT);
  for (const char *bad : {"cpu:0", "cpu:", "cpu:x", "cpu:-2", "cpu:99999"}) {
    CHECK(aspen_backend_create(bad, 0, &none) == ASPEN_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(aspen_last_error(), Catch::Contains("the tile count must be a whole number from 1 "
                                                   "to 4096"));
  }
  { // "cpu" sizes itself from ASPEN_CPU_THREADS when it is set: a bad value is named
    const char *set = std::getenv("ASPEN_CPU_THREADS");
    const std::string old = set ? set : "";
    setenv("ASPEN_CPU_THREADS", "many", 1);
    CHECK(aspen_backend_create("cpu", 0, &none) == ASPEN_ERROR_INVALID_OPTION);
    CHECK(none == nullptr);
    CHECK_THAT(aspen_last_error(), Catch::Contains("aspen_backend_create") &&
                                       Catch::Contains("ASPEN_CPU_THREADS='many'"));
    if (set)
      setenv("ASPEN_CPU_THREADS", old.c_str(), 1);
    else
      unsetenv("ASPEN_CPU_THREADS");
  }
  CHECK(std::string(aspen_status_string(ASPEN_ERROR_UNSUPPORTED)) == "ASPEN_ERROR_UNSUPPORTED");

  Backend backend;
  const std::size_t T = 2, B = 2, I = 3, H = 4;
  std::vector<float> x(T * B * I), s(B * H), wi(4 * I * H), wo(4 * H * H), b(4 * H),
      y(T * B * H), hn(B * H), cn(B * H);
  const auto forward = [&](const aspen_rnn_desc &d, const void *xp, const std::uint32_t *lens,
                           const void *c0) {
    return aspen_rnn_forward(backend.handle, &d, xp, s.data(), c0, wi.data(), wo.data(), b.data(),
                             lens, y.data(), hn.data(), cn.data(), nullptr, nullptr);
  };
  aspen_rnn_desc d = lstmDesc(T, B, I, H, false);
  CHECK(forward(d, nullptr, nullptr, s.data()) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("aspen_rnn_forward: x is NULL"));
  CHECK(forward(d, x.data(), nullptr, nullptr) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("c0"));
  aspen_rnn_desc zero = d;
  zero.batch = 0;
  CHECK(forward(zero, x.data(), nullptr, s.data()) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("desc->batch is 0"));
  aspen_rnn_desc huge = d;
  huge.seq_len = std::size_t(1) << 62;
  CHECK(forward(huge, x.data(), nullptr, s.data()) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("overflow"));
  aspen_rnn_desc badType = d;
  badType.dtype = static_cast<aspen_dtype>(7);
  CHECK(forward(badType, x.data(), nullptr, s.data()) == ASPEN_ERROR_INVALID_ARGUMENT);
  aspen_rnn_desc variable = lstmDesc(T, B, I, H, true);
  CHECK(forward(variable, x.data(), nullptr, s.data()) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("lengths"));
  const std::vector<std::uint32_t> tooLong = {1, 3};
  CHECK(forward(variable, x.data(), tooLong.data(), s.data()) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("lengths[1] = 3 is more than seq_len = 2"));
  aspen_rnn_desc order = d;
  order.cell_order = "input,forget,cell";
  CHECK(forward(order, x.data(), nullptr, s.data()) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("names 3 gates"));
  aspen_rnn_desc notJson = d;
  notJson.options = "{numShards: 1}";
  CHECK(forward(notJson, x.data(), nullptr, s.data()) == ASPEN_ERROR_INVALID_OPTION);
  aspen_rnn_desc layout = d;
  layout.weights_layout = static_cast<aspen_weights_layout>(2);
  CHECK(forward(layout, x.data(), nullptr, s.data()) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("desc->weights_layout 2 is not"));
  CHECK(backend.stats().misses == 0); // nothing compiled for any of these

  aspen_rnn_desc unknown = d;
  unknown.options = R"({"noSuchOption": "1"})";
  CHECK(forward(unknown, x.data(), nullptr, s.data()) == ASPEN_ERROR_INVALID_OPTION);
  CHECK_THAT(aspen_last_error(), Catch::Contains("noSuchOption"));
  CHECK(backend.stats().compile_failures == 1); // refused while building; not cached
  int stream = 0;
  CHECK(aspen_rnn_forward(backend.handle, &d, x.data(), s.data(), s.data(), wi.data(), wo.data(),
                          b.data(), nullptr, y.data(), hn.data(), cn.data(), nullptr,
                          &stream) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("stream is given, but device 'cpu' is not a "
                                                 "GPU"));
  CHECK(aspen_matmul(backend.handle, ASPEN_DTYPE_FLOAT32, 0, 1, 1, x.data(), x.data(), y.data(),
                     nullptr) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK(aspen_nonlinearity_forward(backend.handle, ASPEN_NONLINEARITY_TANH, ASPEN_DTYPE_FLOAT32,
                                   3, 4, x.data(), y.data(), nullptr) ==
        ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("must be at least 1 and divide n"));
  // The vanilla RNN's: one gate, no cell state, no clips or projection, its own options only.
  aspen_rnn_desc vanilla{};
  vanilla.cell = ASPEN_RNN_TANH;
  vanilla.dtype = ASPEN_DTYPE_FLOAT32;
  vanilla.seq_len = T, vanilla.batch = B, vanilla.input_size = I, vanilla.hidden_size = H;
  const auto vanillaForward = [&](const aspen_rnn_desc &v, const void *c0, void *cnp) {
    return aspen_rnn_forward(backend.handle, &v, x.data(), s.data(), c0, wi.data(), wo.data(),
                             b.data(), nullptr, y.data(), hn.data(), cnp, nullptr, nullptr);
  };
  CHECK(vanillaForward(vanilla, s.data(), nullptr) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("c0 is given, but a vanilla RNN has no cell"));
  CHECK(vanillaForward(vanilla, nullptr, cn.data()) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("cn is given, but a vanilla RNN"));
  aspen_rnn_desc vanillaOrder = vanilla;
  vanillaOrder.cell_order = "cell";
  CHECK(vanillaForward(vanillaOrder, nullptr, nullptr) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("a vanilla RNN has one gate"));
  aspen_rnn_desc vanillaReset = vanilla;
  vanillaReset.gru_reset_after = 1;
  CHECK(vanillaForward(vanillaReset, nullptr, nullptr) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("is for a GRU, not a vanilla RNN"));
  for (const char *options : {R"({"projSize": "2"})", R"({"activationClip": "0.5"})",
                              R"({"cellClipMin": "-1", "cellClipMax": "1"})"}) {
    aspen_rnn_desc bad = vanilla;
    bad.options = options;
    INFO(options);
    CHECK(vanillaForward(bad, nullptr, nullptr) == ASPEN_ERROR_INVALID_OPTION);
    CHECK_THAT(aspen_last_error(), Catch::Contains("vanilla RNN"));
  }
  aspen_rnn_desc badCell = vanilla;
  badCell.cell = static_cast<aspen_rnn_cell>(4);
  CHECK(vanillaForward(badCell, nullptr, nullptr) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("ASPEN_RNN_RELU (3)"));
  aspen_rnn_desc lstmOption = vanilla;
  lstmOption.options = R"({"stepMethod": "fused"})";
  CHECK(vanillaForward(lstmOption, nullptr, nullptr) == ASPEN_ERROR_INVALID_OPTION);
  CHECK_THAT(aspen_last_error(), Catch::Contains("stepMethod"));
  CHECK(vanillaForward(vanilla, nullptr, nullptr) == ASPEN_OK);

  // A good call after all of that works, and clears the message.
  REQUIRE(forward(d, x.data(), nullptr, s.data()) == ASPEN_OK);
  CHECK(std::string(aspen_last_error()).empty());
}

TEST_CASE("backend stack calls refuse bad descriptors and buffers by name, and read an older "
          "caller's descriptor",
          "[error][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Backend backend;
  const std::size_t T = 2, B = 2, I = 3, H = 4;
  aspen_rnn_stack_desc desc = aspen_rnn_stack_desc_init();
  desc.layer = lstmDesc(T, B, I, H, false);
  desc.num_layers = 2;
  desc.direction = ASPEN_RNN_BIDIRECTIONAL;
  std::vector<float> x(T * B * I, 0.5f), s(4 * B * H, 0.1f), y(T * B * 2 * H), hn(4 * B * H),
      cn(4 * B * H), wi0(4 * I * H, 0.1f), wi1(4 * 2 * H * H, 0.1f), wo(4 * H * H, 0.1f),
      b(4 * H, 0.1f);
  std::vector<const void *> wis = {wi0.data(), wi0.data(), wi1.data(), wi1.data()},
                            wos(4, wo.data()), bs(4, b.data());
  std::size_t workspaceBytes = 0;
  const auto sizes = [&](const aspen_rnn_stack_desc &d) {
    return aspen_rnn_stack_sizes(backend.handle, &d, &workspaceBytes, nullptr);
  };
  REQUIRE(sizes(desc) == ASPEN_OK);
  std::vector<std::uint8_t> workspace(workspaceBytes);
  const auto forward = [&](const aspen_rnn_stack_desc &d, void *ws) {
    return aspen_rnn_stack_forward(backend.handle, &d, x.data(), s.data(), s.data(), wis.data(),
                                   wos.data(), bs.data(), nullptr, y.data(), hn.data(),
                                   cn.data(), ws, nullptr, nullptr);
  };
  aspen_rnn_stack_desc small = desc;
  small.struct_size = sizeof(aspen_rnn_desc);
  CHECK(sizes(small) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("desc->struct_size is") &&
                                     Catch::Contains("aspen_rnn_stack_desc_init()"));
  aspen_rnn_stack_desc direction = desc;
  direction.direction = static_cast<aspen_rnn_direction>(3);
  CHECK(sizes(direction) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("desc->direction 3 is not"));
  for (const double dropout : {1.0, -0.5, double(NAN)}) {
    aspen_rnn_stack_desc drop = desc;
    drop.dropout = dropout;
    CHECK(sizes(drop) == ASPEN_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(aspen_last_error(), Catch::Contains("desc->dropout") &&
                                       Catch::Contains("is not in [0, 1)"));
  }
  aspen_rnn_stack_desc options = desc;
  options.layer.options = R"({"direction": "reverse"})";
  CHECK(sizes(options) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("a stack takes its direction from "
                                                 "desc->direction"));
  // A newer caller's descriptor: fields this library does not know are refused unless zero.
  struct Newer {
    aspen_rnn_stack_desc known;
    std::uint64_t future;
  } newer{desc, 0};
  newer.known.struct_size = sizeof newer;
  CHECK(sizes(newer.known) == ASPEN_OK);
  newer.future = 7;
  CHECK(sizes(newer.known) == ASPEN_ERROR_UNSUPPORTED);
  CHECK_THAT(aspen_last_error(), Catch::Contains("does not know"));
  // An older caller's: the fields after its struct_size read as zero (one forward layer).
  aspen_rnn_stack_desc older = desc;
  older.struct_size = offsetof(aspen_rnn_stack_desc, layer) + sizeof(aspen_rnn_desc);
  std::size_t olderWorkspace = 1;
  REQUIRE(aspen_rnn_stack_sizes(backend.handle, &older, &olderWorkspace, nullptr) == ASPEN_OK);
  CHECK(olderWorkspace == 0);
  CHECK(backend.stats().misses == 0); // nothing compiled for any of these

  // A stack is one engine: it needs no workspace.
  CHECK(workspaceBytes == 0);
  wis[3] = nullptr;
  CHECK(forward(desc, workspace.data()) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("input_weights[3] (layer 1, reverse) is NULL"));
  wis[3] = wi1.data();
  REQUIRE(forward(desc, workspace.data()) == ASPEN_OK);
  CHECK(std::string(aspen_last_error()).empty());
}
