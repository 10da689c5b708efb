// The C backend's CNN calls (aspen/backend.h) on the CPU device against double-precision models:
// convolution (the conv model, tests/ConvReference.hpp), pooling and batch normalisation with
// PyTorch's and cuDNN's semantics (written here as window loops), the non-linearities'
// gradients; the batch split a memory limit forces gives the same results; and the errors.
#include <aspen/backend.h>
#include <aspen/HalfFloat.hpp>
#include <aspen/linalg/ConvParams.hpp>

#include "ConvReference.hpp"
#include "TestDevice.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

struct Backend {
  aspen_backend *handle = nullptr;
  Backend() { REQUIRE(aspen_backend_create("cpu", 0, &handle) == ASPEN_OK); }
  ~Backend() { aspen_backend_destroy(handle); }
};

std::vector<float> uniform(std::mt19937 &rng, std::size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = float(u(rng));
  return v;
}
std::vector<double> widen(const std::vector<float> &v) { return {v.begin(), v.end()}; }

void requireClose(const char *what, const std::vector<float> &got, const std::vector<double> &want,
                  double tol = 2e-5) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("[" << i << "] Aspen " << got[i] << ", model " << want[i]);
    REQUIRE(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

void requireOk(aspen_status status) {
  INFO(aspen_last_error());
  REQUIRE(status == ASPEN_OK);
}

// --- convolution ----------------------------------------------------------------------------

aspen::linalg::ConvParams paramsOf(const aspen_conv2d_desc &d) {
  const auto one = [](std::size_t v) { return unsigned(v == 0 ? 1 : v); };
  const std::size_t g = d.groups ? d.groups : 1;
  const std::vector<unsigned> zeros(2, 0), ones(2, 1);
  const std::vector<bool> noFlip(2, false);
  const std::vector<unsigned> pad = {unsigned(d.pad_h), unsigned(d.pad_w)};
  return aspen::linalg::ConvParams(
      aspen::FLOAT, aspen::FLOAT, d.batch, {d.height, d.width}, {d.kernel_h, d.kernel_w},
      d.in_channels / g, d.out_channels / g, g, {zeros, zeros, ones, pad, pad, noFlip},
      {zeros, zeros, {one(d.dilation_h), one(d.dilation_w)}, zeros, zeros, noFlip},
      {zeros, zeros, {one(d.stride_h), one(d.stride_w)}, zeros, zeros});
}

struct ConvRun {
  std::vector<float> y, dx, dw, db;
};

ConvRun runConv(Backend &b, const aspen_conv2d_desc &d, const std::vector<float> &x,
                const std::vector<float> &w, const std::vector<float> &bias,
                const std::vector<float> &dy) {
  size_t p = 0, q = 0;
  requireOk(aspen_conv2d_output_shape(&d, &p, &q));
  ConvRun r;
  r.y.resize(d.batch * d.out_channels * p * q);
  r.dx.resize(x.size()), r.dw.resize(w.size()), r.db.resize(d.out_channels);
  requireOk(aspen_conv2d_forward(b.handle, &d, x.data(), w.data(), bias.data(), r.y.data(),
                                 nullptr));
  requireOk(aspen_conv2d_backward_data(b.handle, &d, w.data(), dy.data(), r.dx.data(), nullptr));
  requireOk(aspen_conv2d_backward_filter(b.handle, &d, x.data(), dy.data(), r.dw.data(),
                                         r.db.data(), nullptr));
  return r;
}

void checkConv(Backend &b, aspen_conv2d_desc d, unsigned seed) {
  INFO("N " << d.batch << " C " << d.in_channels << " " << d.height << "x" << d.width << " K "
            << d.out_channels << " kernel " << d.kernel_h << "x" << d.kernel_w << " pad "
            << d.pad_h << "," << d.pad_w << " stride " << d.stride_h << " dilation "
            << d.dilation_h << " groups " << d.groups);
  const aspen::linalg::ConvParams p = paramsOf(d);
  std::mt19937 rng(seed);
  const std::vector<float> x = uniform(rng, convref::inputElements(p), -1, 1);
  const std::vector<float> w = uniform(rng, convref::weightElements(p), -1, 1);
  const std::vector<float> bias = uniform(rng, d.out_channels, -1, 1);
  const std::vector<float> dy = uniform(rng, convref::outputElements(p), -1, 1);
  const ConvRun r = runConv(b, d, x, w, bias, dy);
  std::vector<double> y = convref::forward(p, widen(x), widen(w));
  const std::size_t perChannel = y.size() / (d.batch * d.out_channels);
  std::vector<double> db(d.out_channels, 0.0);
  for (std::size_t i = 0; i < y.size(); ++i) {
    y[i] += bias[(i / perChannel) % d.out_channels];
    db[(i / perChannel) % d.out_channels] += dy[i];
  }
  requireClose("y", r.y, y, 1e-5);
  requireClose("dx", r.dx, convref::backwardData(p, widen(dy), widen(w)), 1e-5);
  requireClose("dw", r.dw, convref::weightDeltas(p, widen(dy), widen(x)), 1e-5);
  requireClose("dbias", r.db, db, 1e-5);
  // The same through slices of one image (a 1-byte memory limit): the same results.
  aspen_conv2d_desc sliced = d;
  sliced.options = R"({"memoryLimitBytes": 1})";
  const ConvRun s = runConv(b, sliced, x, w, bias, dy);
  requireClose("y, sliced", s.y, widen(r.y), 1e-6);
  requireClose("dx, sliced", s.dx, widen(r.dx), 1e-6);
  requireClose("dw, sliced", s.dw, widen(r.dw), 1e-5);
  requireClose("dbias, sliced", s.db, widen(r.db), 1e-5);
}

// --- pooling ---------------------------------------------------------------------------------

struct PoolModel {
  std::size_t P = 0, Q = 0;
  std::vector<double> y, dx;
};

// PyTorch's max_pool2d / avg_pool2d and their gradients, by their documented formulas.
PoolModel poolModel(const aspen_pool2d_desc &d, const std::vector<float> &x,
                    const std::vector<float> &dy) {
  const std::size_t sH = d.stride_h ? d.stride_h : d.kernel_h,
                    sW = d.stride_w ? d.stride_w : d.kernel_w;
  const auto outSize = [&](std::size_t in, std::size_t k, std::size_t pad, std::size_t s) {
    const double span = double(in + 2 * pad - k) / double(s);
    std::size_t o = std::size_t(d.ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
    if (d.ceil_mode && (o - 1) * s >= in + pad)
      --o;
    return o;
  };
  PoolModel m;
  m.P = outSize(d.height, d.kernel_h, d.pad_h, sH), m.Q = outSize(d.width, d.kernel_w, d.pad_w, sW);
  const std::size_t planes = d.batch * d.channels, H = d.height, W = d.width;
  m.y.assign(planes * m.P * m.Q, 0.0);
  m.dx.assign(planes * H * W, 0.0);
  for (std::size_t pl = 0; pl < planes; ++pl)
    for (std::size_t i = 0; i < m.P; ++i)
      for (std::size_t j = 0; j < m.Q; ++j) {
        const long h0 = long(i * sH) - long(d.pad_h), w0 = long(j * sW) - long(d.pad_w);
        const long h1 = std::min(h0 + long(d.kernel_h), long(H + d.pad_h)),
                   w1 = std::min(w0 + long(d.kernel_w), long(W + d.pad_w));
        const long padded = (h1 - h0) * (w1 - w0);
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        long bestAt = -1, count = 0;
        for (long h = std::max(h0, 0L); h < std::min(h1, long(H)); ++h)
          for (long w = std::max(w0, 0L); w < std::min(w1, long(W)); ++w) {
            const double v = x[pl * H * W + std::size_t(h) * W + std::size_t(w)];
            if (v > best)
              best = v, bestAt = h * long(W) + w;
            sum += v, ++count;
          }
        const std::size_t o = pl * m.P * m.Q + i * m.Q + j;
        const double g = dy[o];
        if (d.mode == ASPEN_POOL_MAX) {
          m.y[o] = best;
          m.dx[pl * H * W + std::size_t(bestAt)] += g;
        } else {
          const double divisor = double(d.avg_include_padding ? padded : count);
          m.y[o] = sum / divisor;
          for (long h = std::max(h0, 0L); h < std::min(h1, long(H)); ++h)
            for (long w = std::max(w0, 0L); w < std::min(w1, long(W)); ++w)
              m.dx[pl * H * W + std::size_t(h) * W + std::size_t(w)] += g / divisor;
        }
      }
  return m;
}

void checkPool(Backend &b, aspen_pool2d_desc d, unsigned seed) {
  INFO((d.mode == ASPEN_POOL_MAX ? "max" : "avg")
       << " " << d.height << "x" << d.width << " kernel " << d.kernel_h << "x" << d.kernel_w
       << " pad " << d.pad_h << " stride " << d.stride_h << " ceil " << d.ceil_mode
       << " include padding " << d.avg_include_padding);
  std::mt19937 rng(seed);
  const std::vector<float> x = uniform(rng, d.batch * d.channels * d.height * d.width, -1, 1);
  size_t p = 0, q = 0;
  requireOk(aspen_pool2d_output_shape(&d, &p, &q));
  const std::vector<float> dy = uniform(rng, d.batch * d.channels * p * q, -1, 1);
  const PoolModel m = poolModel(d, x, dy);
  REQUIRE(p == m.P);
  REQUIRE(q == m.Q);
  std::vector<float> y(dy.size()), dx(x.size()), dxRecomputed(x.size());
  requireOk(aspen_pool2d_forward(b.handle, &d, x.data(), y.data(), nullptr));
  requireClose("y", y, m.y);
  requireOk(aspen_pool2d_backward(b.handle, &d, x.data(), y.data(), dy.data(), dx.data(), nullptr));
  requireClose("dx", dx, m.dx);
  requireOk(aspen_pool2d_backward(b.handle, &d, x.data(), nullptr, dy.data(), dxRecomputed.data(),
                                  nullptr));
  requireClose("dx, y recomputed", dxRecomputed, m.dx);
  aspen_pool2d_desc sliced = d;
  sliced.options = R"({"memoryLimitBytes": 1})";
  std::vector<float> ys(y.size());
  requireOk(aspen_pool2d_forward(b.handle, &sliced, x.data(), ys.data(), nullptr));
  requireClose("y, sliced", ys, m.y);
}

} // namespace

TEST_CASE("backend conv2d calls match the conv model: padding, stride, dilation, groups, bias",
          "[correctness][backend][conv]") {
  if (aspen::test::skipOnGpuRun()) // the CPU device's buffers
    return;
  Backend b;
  unsigned seed = 1;
  //                      dtype  N  C   H  W   K  R  S  ph pw sh sw dh dw g
  checkConv(b, {ASPEN_DTYPE_FLOAT32, 2, 3, 9, 8, 4, 3, 3, 1, 1, 2, 2, 1, 1, 1, nullptr}, seed++);
  checkConv(b, {ASPEN_DTYPE_FLOAT32, 3, 4, 7, 7, 6, 3, 2, 2, 0, 1, 1, 2, 1, 2, nullptr}, seed++);
  checkConv(b, {ASPEN_DTYPE_FLOAT32, 1, 4, 6, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4, nullptr}, seed++);
  checkConv(b, {ASPEN_DTYPE_FLOAT32, 2, 5, 5, 5, 3, 1, 1, 0, 0, 0, 0, 0, 0, 0, nullptr}, seed++);
}

TEST_CASE("backend pool2d calls follow PyTorch: max to the first maximum, averages with and "
          "without padding, ceil mode",
          "[correctness][backend][pooling]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Backend b;
  unsigned seed = 10;
  for (const aspen_pool_mode mode : {ASPEN_POOL_MAX, ASPEN_POOL_AVG})
    for (const int ceil : {0, 1})
      for (const int include : {0, 1}) {
        if (mode == ASPEN_POOL_MAX && include)
          continue;
        //                         mode  N  C  H  W  kh kw ph pw sh sw
        checkPool(b, {ASPEN_DTYPE_FLOAT32, mode, 2, 3, 9, 8, 3, 3, 1, 1, 2, 2, ceil, include, 0,
                      nullptr},
                  seed++);
        checkPool(b, {ASPEN_DTYPE_FLOAT32, mode, 1, 2, 7, 6, 2, 2, 0, 1, 0, 0, ceil, include, 0,
                      nullptr},
                  seed++);
      }
  // Ties after a ReLU: an all-zero window gives its gradient to its first position only.
  aspen_pool2d_desc d{ASPEN_DTYPE_FLOAT32, ASPEN_POOL_MAX, 1, 1, 4, 4, 2, 2, 0, 0, 0, 0, 0, 0, 0,
                      nullptr};
  const std::vector<float> zeros(16, 0.0f), ones(4, 1.0f);
  std::vector<float> dx(16, -1.0f);
  requireOk(aspen_pool2d_backward(b.handle, &d, zeros.data(), nullptr, ones.data(), dx.data(),
                                  nullptr));
  for (std::size_t i = 0; i < 16; ++i)
    CHECK(dx[i] == ((i / 4) % 2 == 0 && i % 2 == 0 ? 1.0f : 0.0f));
  d.max_grad_all = 1; // popnn's rule: every tied position
  requireOk(aspen_pool2d_backward(b.handle, &d, zeros.data(), nullptr, ones.data(), dx.data(),
                                  nullptr));
  for (float v : dx)
    CHECK(v == 1.0f);
}

TEST_CASE("backend batch norm calls: training with running statistics, inference, backward",
          "[correctness][backend][norms]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Backend b;
  const std::size_t N = 3, C = 2, H = 2, W = 3, HW = H * W, n = N * HW;
  const aspen_batchnorm_desc d{ASPEN_DTYPE_FLOAT32, N, C, H, W, 1e-3, 0.25, nullptr};
  std::mt19937 rng(5);
  const std::vector<float> x = uniform(rng, N * C * HW, -1, 3), dy = uniform(rng, N * C * HW, -1, 1);
  const std::vector<float> gamma = uniform(rng, C, 0.5, 1.5), beta = uniform(rng, C, -1, 1);
  std::vector<float> runningMean = {0.5f, -0.5f}, runningVar = {2.0f, 1.0f};
  std::vector<float> y(x.size()), saveMean(C), saveInv(C);
  requireOk(aspen_batchnorm_forward_training(b.handle, &d, x.data(), gamma.data(), beta.data(),
                                             y.data(), runningMean.data(), runningVar.data(),
                                             saveMean.data(), saveInv.data(), nullptr));
  // The model: per channel mean, biased variance; the running variance takes the unbiased one.
  std::vector<double> mean(C, 0), var(C, 0), yModel(x.size()), dxModel(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    mean[(i / HW) % C] += x[i] / double(n);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = x[i] - mean[(i / HW) % C];
    var[(i / HW) % C] += e * e / double(n);
  }
  std::vector<double> inv(C), dgamma(C, 0), dbeta(C, 0), meanD(C, 0), meanDX(C, 0);
  for (std::size_t c = 0; c < C; ++c)
    inv[c] = 1 / std::sqrt(var[c] + 1e-3);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t c = (i / HW) % C;
    const double xh = (x[i] - mean[c]) * inv[c];
    yModel[i] = gamma[c] * xh + beta[c];
    dgamma[c] += dy[i] * xh, dbeta[c] += dy[i];
    meanD[c] += gamma[c] * dy[i] / double(n), meanDX[c] += gamma[c] * dy[i] * xh / double(n);
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t c = (i / HW) % C;
    const double xh = (x[i] - mean[c]) * inv[c];
    dxModel[i] = inv[c] * (gamma[c] * dy[i] - meanD[c] - xh * meanDX[c]);
  }
  requireClose("y", y, yModel, 1e-5);
  requireClose("save_mean", saveMean, mean, 1e-6);
  requireClose("save_inv_std", saveInv, inv, 1e-5);
  requireClose("running_mean", runningMean, {0.75 * 0.5 + 0.25 * mean[0], -0.75 * 0.5 + 0.25 * mean[1]},
               1e-6);
  requireClose("running_var", runningVar,
               {0.75 * 2 + 0.25 * var[0] * n / (n - 1.0), 0.75 * 1 + 0.25 * var[1] * n / (n - 1.0)},
               1e-5);
  std::vector<float> dx(x.size()), dg(C), dbt(C);
  requireOk(aspen_batchnorm_backward(b.handle, &d, x.data(), dy.data(), gamma.data(),
                                     saveMean.data(), saveInv.data(), dx.data(), dg.data(),
                                     dbt.data(), nullptr));
  requireClose("dx", dx, dxModel, 1e-4);
  requireClose("dgamma", dg, dgamma, 1e-5);
  requireClose("dbeta", dbt, dbeta, 1e-5);
  // Inference from the running statistics.
  std::vector<float> yi(x.size());
  requireOk(aspen_batchnorm_forward_inference(b.handle, &d, x.data(), gamma.data(), beta.data(),
                                              runningMean.data(), runningVar.data(), yi.data(),
                                              nullptr));
  std::vector<double> yiModel(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t c = (i / HW) % C;
    yiModel[i] = gamma[c] * (x[i] - runningMean[c]) / std::sqrt(runningVar[c] + 1e-3) + beta[c];
  }
  requireClose("y (inference)", yi, yiModel, 1e-5);
}

TEST_CASE("backend non-linearity gradients: relu from input or output, sigmoid, tanh, softmax",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Backend b;
  const std::size_t rows = 3, cols = 5, n = rows * cols;
  std::mt19937 rng(8);
  const std::vector<float> x = uniform(rng, n, -2, 2), dy = uniform(rng, n, -1, 1);
  std::vector<double> relu(n), sig(n), th(n), soft(n);
  std::vector<float> sy(n), ty(n), smy(n);
  for (std::size_t r = 0; r < rows; ++r) {
    double mx = -1e30, sum = 0, dot = 0;
    for (std::size_t c = 0; c < cols; ++c)
      mx = std::max(mx, double(x[r * cols + c]));
    for (std::size_t c = 0; c < cols; ++c)
      sum += std::exp(x[r * cols + c] - mx);
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      sy[i] = float(1 / (1 + std::exp(-double(x[i]))));
      ty[i] = float(std::tanh(double(x[i])));
      smy[i] = float(std::exp(x[i] - mx) / sum);
      dot += double(dy[i]) * smy[i];
    }
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      relu[i] = x[i] > 0 ? dy[i] : 0.0;
      sig[i] = dy[i] * double(sy[i]) * (1 - double(sy[i]));
      th[i] = dy[i] * (1 - double(ty[i]) * ty[i]);
      soft[i] = double(smy[i]) * (dy[i] - dot);
    }
  }
  std::vector<float> dx(n);
  requireOk(aspen_nonlinearity_backward(b.handle, ASPEN_NONLINEARITY_RELU, ASPEN_DTYPE_FLOAT32,
                                        rows, n, x.data(), 1, dy.data(), dx.data(), nullptr));
  requireClose("relu from its input", dx, relu, 1e-6);
  std::vector<float> yRelu(n);
  for (std::size_t i = 0; i < n; ++i)
    yRelu[i] = std::max(x[i], 0.0f);
  requireOk(aspen_nonlinearity_backward(b.handle, ASPEN_NONLINEARITY_RELU, ASPEN_DTYPE_FLOAT32,
                                        rows, n, yRelu.data(), 0, dy.data(), dx.data(), nullptr));
  requireClose("relu from its output", dx, relu, 1e-6);
  const std::pair<aspen_nonlinearity, std::pair<const std::vector<float> *,
                                                const std::vector<double> *>>
      fromOutput[] = {{ASPEN_NONLINEARITY_SIGMOID, {&sy, &sig}},
                      {ASPEN_NONLINEARITY_TANH, {&ty, &th}},
                      {ASPEN_NONLINEARITY_SOFTMAX, {&smy, &soft}}};
  for (const auto &[kind, io] : fromOutput) {
    INFO("kind " << int(kind));
    requireOk(aspen_nonlinearity_backward(b.handle, kind, ASPEN_DTYPE_FLOAT32, rows, n,
                                          io.first->data(), 0, dy.data(), dx.data(), nullptr));
    requireClose("gradient", dx, *io.second, 1e-5);
  }
}

TEST_CASE("backend CNN calls refuse bad arguments with the status and a message",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Backend b;
  const auto expect = [](aspen_status got, aspen_status want, std::vector<const char *> parts) {
    const std::string message = aspen_last_error();
    INFO(message);
    REQUIRE(got == want);
    for (const char *p : parts)
      REQUIRE(message.find(p) != std::string::npos);
  };
  std::vector<float> buf(4096, 0.0f);
  aspen_conv2d_desc conv{ASPEN_DTYPE_FLOAT32, 1, 4, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 4, nullptr};
  conv.dtype = ASPEN_DTYPE_FLOAT64;
  expect(aspen_conv2d_forward(b.handle, &conv, buf.data(), buf.data(), nullptr, buf.data(), nullptr),
         ASPEN_ERROR_UNSUPPORTED, {"FLOAT64", "no double path"});
  conv.dtype = ASPEN_DTYPE_FLOAT32;
  expect(aspen_conv2d_forward(b.handle, &conv, buf.data(), buf.data(), nullptr, buf.data(), nullptr),
         ASPEN_ERROR_INVALID_ARGUMENT, {"aspen_conv2d_forward", "groups = 4", "out_channels = 6"});
  conv.groups = 2;
  expect(aspen_conv2d_forward(b.handle, &conv, nullptr, buf.data(), nullptr, buf.data(), nullptr),
         ASPEN_ERROR_INVALID_ARGUMENT, {"x is NULL"});
  conv.options = R"({"partialsTyp": "float"})";
  expect(aspen_conv2d_forward(b.handle, &conv, buf.data(), buf.data(), nullptr, buf.data(), nullptr),
         ASPEN_ERROR_INVALID_OPTION, {"partialsTyp"});
  conv.options = R"({"memoryLimitBytes": "lots"})";
  expect(aspen_conv2d_forward(b.handle, &conv, buf.data(), buf.data(), nullptr, buf.data(), nullptr),
         ASPEN_ERROR_INVALID_OPTION, {"memoryLimitBytes", "lots"});
  conv.options = nullptr;
  conv.kernel_h = 9;
  expect(aspen_conv2d_forward(b.handle, &conv, buf.data(), buf.data(), nullptr, buf.data(), nullptr),
         ASPEN_ERROR_INVALID_ARGUMENT, {"larger than the padded input"});
  aspen_pool2d_desc pool{ASPEN_DTYPE_FLOAT32, ASPEN_POOL_MAX, 1, 1, 4, 4, 2, 2, 2, 0, 0, 0, 0, 0,
                         0, nullptr};
  expect(aspen_pool2d_forward(b.handle, &pool, buf.data(), buf.data(), nullptr),
         ASPEN_ERROR_INVALID_ARGUMENT, {"at most half the kernel"});
  pool.pad_h = 0;
  pool.mode = static_cast<aspen_pool_mode>(7);
  expect(aspen_pool2d_forward(b.handle, &pool, buf.data(), buf.data(), nullptr),
         ASPEN_ERROR_INVALID_ARGUMENT, {"desc->mode 7"});
  pool.mode = ASPEN_POOL_MAX;
  expect(aspen_pool2d_backward(b.handle, &pool, nullptr, nullptr, buf.data(), buf.data(), nullptr),
         ASPEN_ERROR_INVALID_ARGUMENT, {"x", "forward's input"});
  aspen_batchnorm_desc bn{ASPEN_DTYPE_FLOAT32, 2, 2, 1, 1, 1e-5, 1.5, nullptr};
  expect(aspen_batchnorm_forward_training(b.handle, &bn, buf.data(), buf.data(), buf.data(),
                                          buf.data(), nullptr, nullptr, nullptr, nullptr, nullptr),
         ASPEN_ERROR_INVALID_ARGUMENT, {"momentum = 1.5"});
  bn.momentum = 0.1;
  expect(aspen_batchnorm_forward_training(b.handle, &bn, buf.data(), buf.data(), buf.data(),
                                          buf.data(), buf.data(), nullptr, nullptr, nullptr,
                                          nullptr),
         ASPEN_ERROR_INVALID_ARGUMENT, {"running_mean and running_var"});
  expect(aspen_nonlinearity_backward(b.handle, ASPEN_NONLINEARITY_GELU, ASPEN_DTYPE_FLOAT32, 1, 4,
                                     buf.data(), 0, buf.data(), buf.data(), nullptr),
         ASPEN_ERROR_UNSUPPORTED, {"relu, sigmoid, tanh"});
  expect(aspen_nonlinearity_backward(b.handle, ASPEN_NONLINEARITY_TANH, ASPEN_DTYPE_FLOAT32, 1, 4,
                                     buf.data(), 1, buf.data(), buf.data(), nullptr),
         ASPEN_ERROR_INVALID_ARGUMENT, {"act_is_input", "tanh"});
}

namespace {

// A copy of `values` at a 64-byte boundary (shift 0: the CPU engine binds the buffer in place)
// or `shift` floats past one (copied in and out).
struct Placed {
  std::vector<float> storage;
  float *p = nullptr;
  std::size_t n = 0;
  Placed(const std::vector<float> &values, std::size_t shift)
      : storage(values.size() + 32), n(values.size()) {
    const auto base = reinterpret_cast<std::uintptr_t>(storage.data());
    p = reinterpret_cast<float *>((base + 63) / 64 * 64) + shift;
    std::copy(values.begin(), values.end(), p);
  }
  std::vector<float> values() const { return {p, p + n}; }
};

// Every activation result of the CNN calls, with the inputs placed `shift` floats past 64-byte
// boundaries; each input is checked unchanged.
std::vector<std::vector<float>> cnnResults(Backend &b, std::size_t shift) {
  std::mt19937 rng(77);
  const std::size_t N = 2, C = 3, H = 9, W = 9, n = N * C * H * W;
  const std::vector<float> xv = uniform(rng, n, -1, 1), dyv = uniform(rng, n, -1, 1);
  const Placed x(xv, shift), dy(dyv, shift), gamma(uniform(rng, C, 0.5, 1.5), 0),
      beta(uniform(rng, C, -1, 1), 0);
  std::vector<std::vector<float>> results;
  std::vector<std::unique_ptr<Placed>> outputs;
  const auto output = [&](std::size_t size) -> Placed & {
    outputs.push_back(std::make_unique<Placed>(std::vector<float>(size, -7.0f), shift));
    return *outputs.back();
  };
  // Pooling, max 3x3 / 2 with padding 1, forward and backward.
  const aspen_pool2d_desc pd{ASPEN_DTYPE_FLOAT32, ASPEN_POOL_MAX, N, C, H, W, 3, 3, 1, 1, 2, 2,
                             0, 0, 0, nullptr};
  size_t p = 0, q = 0;
  requireOk(aspen_pool2d_output_shape(&pd, &p, &q));
  Placed &y = output(N * C * p * q);
  requireOk(aspen_pool2d_forward(b.handle, &pd, x.p, y.p, nullptr));
  const Placed dyPool(std::vector<float>(dyv.begin(), dyv.begin() + long(y.n)), shift);
  Placed &dxPool = output(n);
  requireOk(aspen_pool2d_backward(b.handle, &pd, x.p, y.p, dyPool.p, dxPool.p, nullptr));
  results.push_back(y.values());
  results.push_back(dxPool.values());
  // Batch norm: training, backward, inference.
  const aspen_batchnorm_desc bd{ASPEN_DTYPE_FLOAT32, N, C, H, W, 1e-3, 0.25, nullptr};
  std::vector<float> mean(C, 0.1f), var(C, 1.5f), saveMean(C), saveInv(C), dg(C), dbt(C);
  Placed &yTrain = output(n), &dxNorm = output(n), &yInfer = output(n);
  requireOk(aspen_batchnorm_forward_training(b.handle, &bd, x.p, gamma.p, beta.p, yTrain.p,
                                             mean.data(), var.data(), saveMean.data(),
                                             saveInv.data(), nullptr));
  requireOk(aspen_batchnorm_backward(b.handle, &bd, x.p, dy.p, gamma.p, saveMean.data(),
                                     saveInv.data(), dxNorm.p, dg.data(), dbt.data(), nullptr));
  requireOk(aspen_batchnorm_forward_inference(b.handle, &bd, x.p, gamma.p, beta.p, mean.data(),
                                              var.data(), yInfer.p, nullptr));
  for (const Placed *r : {&yTrain, &dxNorm, &yInfer})
    results.push_back(r->values());
  results.push_back(dg);
  results.push_back(mean);
  // relu's gradient from its input.
  Placed &dxRelu = output(n);
  requireOk(aspen_nonlinearity_backward(b.handle, ASPEN_NONLINEARITY_RELU, ASPEN_DTYPE_FLOAT32,
                                        N * C, n, x.p, 1, dy.p, dxRelu.p, nullptr));
  results.push_back(dxRelu.values());
  // Convolution 3x3, padding 1: forward, backward data, backward filter.
  const aspen_conv2d_desc cd{ASPEN_DTYPE_FLOAT32, N, C, H, W, C, 3, 3, 1, 1, 1, 1, 1, 1, 1,
                             nullptr};
  const Placed w(uniform(rng, C * C * 9, -1, 1), 0);
  Placed &yConv = output(n), &dxConv = output(n);
  std::vector<float> dw(C * C * 9);
  requireOk(aspen_conv2d_forward(b.handle, &cd, x.p, w.p, nullptr, yConv.p, nullptr));
  requireOk(aspen_conv2d_backward_data(b.handle, &cd, w.p, dy.p, dxConv.p, nullptr));
  requireOk(aspen_conv2d_backward_filter(b.handle, &cd, x.p, dy.p, dw.data(), nullptr, nullptr));
  results.push_back(yConv.values());
  results.push_back(dxConv.values());
  results.push_back(dw);
  // The inputs are as they were.
  REQUIRE(x.values() == xv);
  REQUIRE(dy.values() == dyv);
  return results;
}

} // namespace

TEST_CASE("backend CNN calls give the same bits on the caller's buffers in place as through "
          "copies, and leave their inputs untouched",
          "[correctness][backend]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Backend b;
  const auto inPlace = cnnResults(b, 0), copied = cnnResults(b, 1);
  REQUIRE(inPlace.size() == copied.size());
  for (std::size_t i = 0; i < inPlace.size(); ++i) {
    INFO("result " << i);
    REQUIRE(inPlace[i].size() == copied[i].size());
    for (std::size_t j = 0; j < inPlace[i].size(); ++j)
      REQUIRE(std::memcmp(&inPlace[i][j], &copied[i][j], sizeof(float)) == 0);
    // A result was written (the -7 fill is gone somewhere).
    CHECK(std::any_of(inPlace[i].begin(), inPlace[i].end(), [](float v) { return v != -7.0f; }));
  }
}
