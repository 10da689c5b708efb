// The layer backend (aspen/backend.h) on a GPU device: buffers in device memory, ordered with
// the caller's CUDA stream, against the same calls on the CPU backend with host buffers (whose
// results tests/correctness/test_backend.cpp checks against double-precision host models); and
// Engine::writeTensor / readTensor with device memory, for tensors that are one contiguous
// stretch of the arena and for scattered ones, against the values written from the host. Every
// test here needs a GPU and prints ASPEN-SKIPPED without one.
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/backend.h>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#if ASPEN_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using aspen::test::skipWithoutGpu;

#if ASPEN_TEST_HAVE_CUDA

namespace {

// One cudaMalloc'd buffer.
class DeviceBuffer {
public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    REQUIRE(cudaMalloc(&p_, bytes ? bytes : 1) == cudaSuccess);
  }
  template <class T>
  explicit DeviceBuffer(const std::vector<T> &host) : DeviceBuffer(host.size() * sizeof(T)) {
    REQUIRE(cudaMemcpy(p_, host.data(), bytes_, cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void *get() const { return p_; }
  template <class T> std::vector<T> read() const {
    std::vector<T> host(bytes_ / sizeof(T));
    REQUIRE(cudaMemcpy(host.data(), p_, bytes_, cudaMemcpyDeviceToHost) == cudaSuccess);
    return host;
  }

private:
  void *p_ = nullptr;
  std::size_t bytes_;
};

std::vector<float> randomFloats(std::mt19937 &rng, std::size_t n, double scale) {
  std::uniform_real_distribution<double> u(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = float(u(rng));
  return v;
}

void requireClose(const char *what, const std::vector<float> &got, const std::vector<float> &want) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= 1e-5 + 1e-4 * std::abs(want[i])) && bad++ == 0)
      first = i;
  INFO("first mismatch at " << first << ": " << got[first] << " vs " << want[first]);
  CHECK(bad == 0);
}

struct Backend {
  aspen_backend *handle = nullptr;
  explicit Backend(const char *device) {
    const aspen_status status = aspen_backend_create(device, 0, &handle);
    INFO(aspen_last_error());
    REQUIRE(status == ASPEN_OK);
  }
  ~Backend() { aspen_backend_destroy(handle); }
};

// One training step (forward, then backward with dy, dhn, dcn) of an LSTM or GRU, all buffers
// given by `place` (host vectors' data or device copies).
struct RnnResults {
  std::vector<float> y, hn, cn, dx, dh0, dc0, dwi, dwo, db, yInference;
};

// A training step's results on the GPU against the CPU backend's (cn, dc0: an LSTM's).
void requireSameResults(const RnnResults &got, const RnnResults &want, bool lstm) {
  requireClose("y", got.y, want.y);
  requireClose("hn", got.hn, want.hn);
  requireClose("dx", got.dx, want.dx);
  requireClose("dh0", got.dh0, want.dh0);
  requireClose("dWi", got.dwi, want.dwi);
  requireClose("dWo", got.dwo, want.dwo);
  requireClose("db", got.db, want.db);
  if (lstm) {
    requireClose("cn", got.cn, want.cn);
    requireClose("dc0", got.dc0, want.dc0);
  }
}

RnnResults runRnn(const char *device, bool lstm, bool torchLayout,
                  const std::vector<std::uint32_t> &lengths, cudaStream_t stream) {
  const std::size_t T = 6, B = 3, I = 5, H = 8, G = lstm ? 4 : 3;
  const bool gpu = std::string(device).rfind("gpu", 0) == 0;
  aspen_rnn_desc d{};
  d.cell = lstm ? ASPEN_RNN_LSTM : ASPEN_RNN_GRU;
  d.dtype = ASPEN_DTYPE_FLOAT32;
  d.seq_len = T, d.batch = B, d.input_size = I, d.hidden_size = H;
  d.variable_lengths = !lengths.empty();
  d.gru_reset_after = !lstm;
  d.cell_order = lstm ? "input,forget,cell,output" : "reset,update,cell";
  d.weights_layout = torchLayout ? ASPEN_WEIGHTS_PYTORCH : ASPEN_WEIGHTS_ASPEN;
  std::mt19937 rng(lstm ? 3 : 4);
  const double ws = 1.0 / std::sqrt(double(H));
  const std::size_t biasElements = torchLayout || !lstm ? 2 * G * H : G * H;
  const std::vector<float> x = randomFloats(rng, T * B * I, 1), h0 = randomFloats(rng, B * H, 1),
                           c0 = randomFloats(rng, B * H, 1), wi = randomFloats(rng, G * I * H, ws),
                           wo = randomFloats(rng, G * H * H, ws),
                           b = randomFloats(rng, biasElements, 0.5),
                           dy = randomFloats(rng, T * B * H, 1), dhn = randomFloats(rng, B * H, 1),
                           dcn = randomFloats(rng, B * H, 1);
  Backend backend(device);
  std::size_t reserveBytes = 0;
  REQUIRE(aspen_rnn_reserve_bytes(backend.handle, &d, &reserveBytes) == ASPEN_OK);
  RnnResults r;
  r.y.resize(T * B * H), r.hn.resize(B * H), r.cn.resize(B * H), r.dx.resize(T * B * I);
  r.dh0.resize(B * H), r.dc0.resize(B * H), r.dwi.resize(G * I * H), r.dwo.resize(G * H * H);
  r.db.resize(biasElements), r.yInference.resize(T * B * H);
  std::vector<std::uint8_t> hostReserve(reserveBytes);
  const std::uint32_t *lens = lengths.empty() ? nullptr : lengths.data();

  if (!gpu) {
    auto *c0p = lstm ? c0.data() : nullptr;
    auto *cnp = lstm ? r.cn.data() : nullptr;
    REQUIRE(aspen_rnn_forward(backend.handle, &d, x.data(), h0.data(), c0p, wi.data(), wo.data(),
                              b.data(), lens, r.y.data(), r.hn.data(), cnp, hostReserve.data(),
                              nullptr) == ASPEN_OK);
    REQUIRE(aspen_rnn_backward(backend.handle, &d, x.data(), h0.data(), c0p, wi.data(), wo.data(),
                               b.data(), lens, r.y.data(), hostReserve.data(), dy.data(),
                               dhn.data(), lstm ? dcn.data() : nullptr, r.dx.data(),
                               r.dh0.data(), lstm ? r.dc0.data() : nullptr, r.dwi.data(),
                               r.dwo.data(), r.db.data(), nullptr) == ASPEN_OK);
    std::vector<float> hn(B * H), cn(B * H);
    REQUIRE(aspen_rnn_forward(backend.handle, &d, x.data(), h0.data(), c0p, wi.data(), wo.data(),
                              b.data(), lens, r.yInference.data(), hn.data(),
                              lstm ? cn.data() : nullptr, nullptr, nullptr) == ASPEN_OK);
    return r;
  }
  // The inputs go up on `stream` without a wait: the call must order itself after them.
  const DeviceBuffer gx(x.size() * 4), gh0(h0.size() * 4), gc0(c0.size() * 4),
      gwi(wi.size() * 4), gwo(wo.size() * 4), gb(b.size() * 4), gdy(dy.size() * 4),
      gdhn(dhn.size() * 4), gdcn(dcn.size() * 4);
  for (const auto &[buffer, host] :
       {std::pair{&gx, &x}, {&gh0, &h0}, {&gc0, &c0}, {&gwi, &wi}, {&gwo, &wo}, {&gb, &b},
        {&gdy, &dy}, {&gdhn, &dhn}, {&gdcn, &dcn}})
    REQUIRE(cudaMemcpyAsync(buffer->get(), host->data(), host->size() * 4,
                            cudaMemcpyHostToDevice, stream) == cudaSuccess);
  const DeviceBuffer gy(r.y.size() * 4), ghn(r.hn.size() * 4), gcn(r.cn.size() * 4),
      gdx(r.dx.size() * 4), gdh0(r.dh0.size() * 4), gdc0(r.dc0.size() * 4),
      gdwi(r.dwi.size() * 4), gdwo(r.dwo.size() * 4), gdb(r.db.size() * 4),
      gyi(r.y.size() * 4), ghni(r.hn.size() * 4), gcni(r.cn.size() * 4),
      reserve(reserveBytes);
  void *c0p = lstm ? gc0.get() : nullptr;
  aspen_status status = aspen_rnn_forward(
      backend.handle, &d, gx.get(), gh0.get(), c0p, gwi.get(), gwo.get(), gb.get(), lens,
      gy.get(), ghn.get(), lstm ? gcn.get() : nullptr, reserve.get(), stream);
  INFO(aspen_last_error());
  REQUIRE(status == ASPEN_OK);
  status = aspen_rnn_backward(backend.handle, &d, gx.get(), gh0.get(), c0p, gwi.get(), gwo.get(),
                              gb.get(), lens, gy.get(), reserve.get(), gdy.get(), gdhn.get(),
                              lstm ? gdcn.get() : nullptr, gdx.get(), gdh0.get(),
                              lstm ? gdc0.get() : nullptr, gdwi.get(), gdwo.get(), gdb.get(),
                              stream);
  INFO(aspen_last_error());
  REQUIRE(status == ASPEN_OK);
  status = aspen_rnn_forward(backend.handle, &d, gx.get(), gh0.get(), c0p, gwi.get(), gwo.get(),
                             gb.get(), lens, gyi.get(), ghni.get(), lstm ? gcni.get() : nullptr,
                             nullptr, stream);
  INFO(aspen_last_error());
  REQUIRE(status == ASPEN_OK);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  r.y = gy.read<float>(), r.hn = ghn.read<float>(), r.dx = gdx.read<float>();
  r.dh0 = gdh0.read<float>(), r.dwi = gdwi.read<float>(), r.dwo = gdwo.read<float>();
  r.db = gdb.read<float>(), r.yInference = gyi.read<float>();
  if (lstm)
    r.cn = gcn.read<float>(), r.dc0 = gdc0.read<float>();
  return r;
}

} // namespace

TEST_CASE("backend on a GPU: device buffers and a stream give the CPU backend's results",
          "[gpu][backend]") {
  if (skipWithoutGpu())
    return;
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  for (const bool lstm : {true, false})
    for (const bool torchLayout : {false, true})
      for (const std::vector<std::uint32_t> &lengths :
           {std::vector<std::uint32_t>{}, std::vector<std::uint32_t>{6, 0, 3}}) {
        INFO((lstm ? "LSTM" : "GRU") << ", PyTorch's layout " << torchLayout
                                     << ", variable lengths " << !lengths.empty());
        const RnnResults want = runRnn("cpu", lstm, torchLayout, lengths, nullptr);
        const RnnResults got = runRnn("gpu", lstm, torchLayout, lengths, stream);
        requireSameResults(got, want, lstm);
        requireClose("y (inference)", got.yInference, want.yInference);
      }
  cudaStreamDestroy(stream);
}

// A bidirectional 2-layer stack (aspen_rnn_stack_*: one engine, the library's stack),
// training and backward, on `device`. P: an LSTM's
// projection (options projSize; its output_weights then hold weight_hh and weight_hr), with
// ONNX's activation clip at 0.8.
RnnResults runStack(const char *device, bool lstm, const std::vector<std::uint32_t> &lengths,
                    cudaStream_t stream, std::size_t P = 0) {
  const std::size_t T = 5, B = 3, I = 4, H = 8, G = lstm ? 4 : 3, L = 2, D = 2, n = L * D;
  const std::size_t W = P ? P : H; // the width of h
  const bool gpu = std::string(device).rfind("gpu", 0) == 0;
  aspen_rnn_stack_desc d = aspen_rnn_stack_desc_init();
  d.layer.cell = lstm ? ASPEN_RNN_LSTM : ASPEN_RNN_GRU;
  d.layer.dtype = ASPEN_DTYPE_FLOAT32;
  d.layer.seq_len = T, d.layer.batch = B, d.layer.input_size = I, d.layer.hidden_size = H;
  d.layer.variable_lengths = !lengths.empty();
  d.layer.gru_reset_after = !lstm;
  d.layer.weights_layout = ASPEN_WEIGHTS_PYTORCH;
  d.num_layers = L;
  d.direction = ASPEN_RNN_BIDIRECTIONAL;
  const std::string options =
      "{\"projSize\": " + std::to_string(P) + ", \"activationClip\": 0.8}";
  d.layer.options = P ? options.c_str() : nullptr;
  Backend backend(device);
  std::mt19937 rng(5);
  const auto x = randomFloats(rng, T * B * I, 1), h0 = randomFloats(rng, n * B * W, 1),
             c0 = randomFloats(rng, n * B * H, 1), dy = randomFloats(rng, T * B * D * W, 1),
             dhn = randomFloats(rng, n * B * W, 1);
  std::vector<std::vector<float>> wi, wo, b;
  for (std::size_t i = 0; i < n; ++i) {
    wi.push_back(randomFloats(rng, G * H * (i < D ? I : D * W), 0.3));
    wo.push_back(randomFloats(rng, G * H * W + H * P, 0.3));
    b.push_back(randomFloats(rng, 2 * G * H, 0.3));
  }
  std::size_t wsBytes = 0, resBytes = 0;
  REQUIRE(aspen_rnn_stack_sizes(backend.handle, &d, &wsBytes, &resBytes) == ASPEN_OK);
  // Every buffer on the device for "gpu", on the host for "cpu".
  std::vector<std::unique_ptr<DeviceBuffer>> owned;
  std::vector<std::vector<float>> hostOwned;
  const auto place = [&](const std::vector<float> &v) -> void * {
    if (gpu) {
      owned.push_back(std::make_unique<DeviceBuffer>(v));
      return owned.back()->get();
    }
    hostOwned.push_back(v);
    return hostOwned.back().data();
  };
  hostOwned.reserve(64);
  const auto fetch = [&](void *p, std::size_t count) {
    std::vector<float> out(count);
    if (gpu)
      REQUIRE(cudaMemcpy(out.data(), p, count * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    else
      std::memcpy(out.data(), p, count * 4);
    return out;
  };
  std::vector<const void *> wiP, woP, bP;
  std::vector<void *> dwiP, dwoP, dbP;
  for (std::size_t i = 0; i < n; ++i) {
    wiP.push_back(place(wi[i]));
    woP.push_back(place(wo[i]));
    bP.push_back(place(b[i]));
    dwiP.push_back(place(std::vector<float>(wi[i].size())));
    dwoP.push_back(place(std::vector<float>(wo[i].size())));
    dbP.push_back(place(std::vector<float>(b[i].size())));
  }
  void *gx = place(x), *gh0 = place(h0), *gc0 = lstm ? place(c0) : nullptr;
  void *gy = place(std::vector<float>(T * B * D * W)), *ghn = place(std::vector<float>(n * B * W));
  void *gcn = lstm ? place(std::vector<float>(n * B * H)) : nullptr;
  void *ws = place(std::vector<float>(wsBytes / 4 + 1));
  void *res = place(std::vector<float>(resBytes / 4 + 1));
  void *gdy = place(dy), *gdhn = place(dhn), *gdx = place(std::vector<float>(T * B * I));
  void *gdh0 = place(std::vector<float>(n * B * W));
  void *gdc0 = lstm ? place(std::vector<float>(n * B * H)) : nullptr;
  const std::uint32_t *lens = lengths.empty() ? nullptr : lengths.data();
  aspen_status status = aspen_rnn_stack_forward(backend.handle, &d, gx, gh0, gc0, wiP.data(),
                                                woP.data(), bP.data(), lens, gy, ghn, gcn, ws,
                                                res, gpu ? stream : nullptr);
  INFO(aspen_last_error());
  REQUIRE(status == ASPEN_OK);
  status = aspen_rnn_stack_backward(backend.handle, &d, gx, gh0, gc0, wiP.data(), woP.data(),
                                    bP.data(), lens, gy, ws, res, gdy, gdhn, nullptr, gdx, gdh0,
                                    gdc0, dwiP.data(), dwoP.data(), dbP.data(),
                                    gpu ? stream : nullptr);
  REQUIRE(status == ASPEN_OK);
  RnnResults r;
  r.y = fetch(gy, T * B * D * W);
  r.hn = fetch(ghn, n * B * W);
  r.dx = fetch(gdx, T * B * I);
  r.dh0 = fetch(gdh0, n * B * W);
  for (std::size_t i = 0; i < n; ++i) {
    const auto w = fetch(dwiP[i], wi[i].size()), u = fetch(dwoP[i], wo[i].size()),
               c = fetch(dbP[i], b[i].size());
    r.dwi.insert(r.dwi.end(), w.begin(), w.end());
    r.dwo.insert(r.dwo.end(), u.begin(), u.end());
    r.db.insert(r.db.end(), c.begin(), c.end());
  }
  if (lstm) {
    r.cn = fetch(gcn, n * B * H);
    r.dc0 = fetch(gdc0, n * B * H);
  }
  return r;
}

TEST_CASE("backend on a GPU: a bidirectional stack gives the CPU backend's results",
          "[gpu][backend]") {
  if (skipWithoutGpu())
    return;
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  for (const bool lstm : {true, false}) {
    INFO((lstm ? "LSTM" : "GRU"));
    const std::vector<std::uint32_t> lengths{5, 0, 2};
    const RnnResults want = runStack("cpu", lstm, lengths, nullptr);
    const RnnResults got = runStack("gpu", lstm, lengths, stream);
    requireSameResults(got, want, lstm);
  }
  // A projected LSTM stack (projSize 3) with the activation clip.
  const std::vector<std::uint32_t> lengths{2, 5, 0};
  const RnnResults want = runStack("cpu", true, lengths, nullptr, 3);
  const RnnResults got = runStack("gpu", true, lengths, stream, 3);
  requireSameResults(got, want, true);
  cudaStreamDestroy(stream);
}

TEST_CASE("backend on a GPU: matmul on device buffers, and buffers in the wrong memory",
          "[gpu][backend]") {
  if (skipWithoutGpu())
    return;
  Backend gpu("gpu");
  const std::size_t m = 7, k = 9, n = 5;
  std::vector<float> a(m * k), b(k * n), want(m * n, 0.0f);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = float(int(i % 7) - 3) * 0.5f;
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i % 5) - 2) * 0.25f;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t l = 0; l < k; ++l)
        want[i * n + j] += a[i * k + l] * b[l * n + j]; // exact: quarters and halves
  const DeviceBuffer ga(a), gb(b), gc(m * n * 4);
  REQUIRE(aspen_matmul(gpu.handle, ASPEN_DTYPE_FLOAT32, m, k, n, ga.get(), gb.get(), gc.get(),
                       nullptr) == ASPEN_OK);
  CHECK(gc.read<float>() == want);
  std::vector<float> hostC(m * n);
  CHECK(aspen_matmul(gpu.handle, ASPEN_DTYPE_FLOAT32, m, k, n, ga.get(), gb.get(), hostC.data(),
                     nullptr) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("c is host memory, but device 'gpu' takes "
                                                 "device memory"));
  Backend cpu("cpu");
  CHECK(aspen_matmul(cpu.handle, ASPEN_DTYPE_FLOAT32, m, k, n, ga.get(), b.data(), hostC.data(),
                     nullptr) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("a is device memory, but device 'cpu' takes "
                                                 "host memory"));
  // Lengths stay on the host on every device.
  aspen_rnn_desc d{};
  d.cell = ASPEN_RNN_GRU, d.seq_len = 2, d.batch = 2, d.input_size = 2, d.hidden_size = 2;
  d.variable_lengths = 1, d.gru_reset_after = 1;
  const std::vector<std::uint32_t> lengths = {1, 2};
  const DeviceBuffer gl(lengths), buffer(1024);
  CHECK(aspen_rnn_forward(gpu.handle, &d, buffer.get(), buffer.get(), nullptr, buffer.get(),
                          buffer.get(), buffer.get(), static_cast<const std::uint32_t *>(gl.get()),
                          buffer.get(), buffer.get(), nullptr, nullptr,
                          nullptr) == ASPEN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(aspen_last_error(), Catch::Contains("lengths is device memory"));
}

TEST_CASE("Engine::writeTensor and readTensor take device memory on a GPU device",
          "[gpu][engine]") {
  if (skipWithoutGpu())
    return;
  using namespace aspen;
  const aspen::Device device = aspen::Device::createGpuDevice(0);
  Graph graph(device.getTarget());
  ops::addCodelets(graph);
  // A contiguous tensor, and a transposed view of one (scattered: the copy kernel's path).
  const Tensor flat = graph.addVariable(FLOAT, {64}, "flat");
  util::mapTensorLinearly(graph, flat);
  const Tensor square = graph.addVariable(FLOAT, {16, 12}, "square");
  util::mapTensorLinearly(graph, square);
  const Tensor view = square.transpose();
  program::Sequence prog;
  ops::mulInPlace(graph, flat, 2.0f, prog, "double");
  ops::mulInPlace(graph, square, 3.0f, prog, "triple");
  graph.createHostWrite("flat-in", flat);
  graph.createHostRead("flat", flat);
  graph.createHostWrite("view-in", view);
  graph.createHostRead("view", view);
  Engine engine(graph, prog);
  engine.load(device);
  std::vector<float> f(64), v(16 * 12);
  for (std::size_t i = 0; i < f.size(); ++i)
    f[i] = float(i) - 20.0f;
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = float(i % 13) * 0.5f;
  const DeviceBuffer gf(f), gv(v), outF(f.size() * 4), outV(v.size() * 4);
  const auto *pf = static_cast<const std::uint8_t *>(gf.get());
  const auto *pv = static_cast<const std::uint8_t *>(gv.get());
  engine.writeTensor("flat-in", pf, pf + f.size() * 4);
  engine.writeTensor("view-in", pv, pv + v.size() * 4);
  engine.run(0);
  auto *of = static_cast<std::uint8_t *>(outF.get());
  auto *ov = static_cast<std::uint8_t *>(outV.get());
  engine.readTensor("flat", of, of + f.size() * 4);
  engine.readTensor("view", ov, ov + v.size() * 4);
  const std::vector<float> gotF = outF.read<float>(), gotV = outV.read<float>();
  for (std::size_t i = 0; i < f.size(); ++i)
    CHECK(gotF[i] == 2.0f * f[i]);
  for (std::size_t i = 0; i < v.size(); ++i)
    CHECK(gotV[i] == 3.0f * v[i]); // element order of the view both ways
  // The same handles from host memory still work.
  std::vector<float> hostV(v.size());
  engine.readTensor("view", hostV.data(), hostV.data() + hostV.size());
  CHECK(hostV == gotV);
}

#else

TEST_CASE("backend on a GPU: device buffers and a stream give the CPU backend's results",
          "[gpu][backend]") {
  std::printf("%s: this build has no CUDA\n", aspen::test::kSkipMarker);
}

TEST_CASE("backend on a GPU: a bidirectional stack gives the CPU backend's results",
          "[gpu][backend]") {
  std::printf("%s: this build has no CUDA\n", aspen::test::kSkipMarker);
}

#endif
