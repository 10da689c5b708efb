// The CNN calls of aspen/backend.h: convolution, pooling, batch normalisation and the
// non-linearities' gradients. Each call checks its arguments, finds (or compiles) the engine of
// its configuration and a batch slice, and runs the slices one after another over the caller's
// buffers.
#include "BackendCalls.hpp"
#include "CnnLayers.hpp"

#include <aspen/HalfFloat.hpp>
#include <aspen/linalg/Convolution.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace aspen::backend::calls;
using aspen::backend::BatchNormConfig;
using aspen::backend::ConvConfig;
using aspen::backend::PoolConfig;
using aspen::backend::SimpleLayer;

namespace {

using Bytes = std::vector<std::uint8_t>;

const std::uint8_t *at(const void *p, std::size_t offset) {
  return static_cast<const std::uint8_t *>(p) + offset;
}
std::uint8_t *at(void *p, std::size_t offset) { return static_cast<std::uint8_t *>(p) + offset; }

void write(SimpleLayer &layer, const char *handle, const void *p, std::size_t bytes) {
  layer.engine.writeTensor(handle, at(p, 0), at(p, 0) + bytes);
}
void read(SimpleLayer &layer, const char *handle, void *p, std::size_t bytes) {
  layer.engine.readTensor(handle, at(p, 0), at(p, 0) + bytes);
}

// A call's activations, in the caller's buffers: each bound to its tensor in place where the
// engine can (Engine::bindTensor: the CPU executor, 16-byte aligned buffers, tensors in element
// order, inputs the program does not write), else copied in before the run and out after it.
// The handles are tensors of their own (no other handle of the call shares one), and an output
// overlapping a bound input is copied. The bindings end with the object.
class Activations {
public:
  explicit Activations(SimpleLayer &layer) : layer_(layer) {}
  Activations(const Activations &) = delete;
  Activations &operator=(const Activations &) = delete;
  ~Activations() {
    for (const char *handle : bound_)
      layer_.engine.unbindTensor(handle); // known handles: never throws
  }

  void in(const char *handle, const void *p, std::size_t bytes) {
    if (layer_.engine.bindTensor(handle, p, at(p, bytes))) {
      bound_.push_back(handle);
      inputs_.emplace_back(at(p, 0), bytes);
    } else {
      write(layer_, handle, p, bytes);
    }
  }
  void out(const char *handle, void *p, std::size_t bytes) {
    const bool overlaps = std::any_of(inputs_.begin(), inputs_.end(), [&](const auto &input) {
      return at(p, 0) < input.first + input.second && input.first < at(p, bytes);
    });
    if (!overlaps && layer_.engine.bindTensor(handle, p, at(p, bytes)))
      bound_.push_back(handle);
    else
      reads_.push_back({handle, p, bytes});
  }
  // Runs the layer's program and copies out the outputs not bound.
  void run() {
    layer_.engine.run(0);
    for (const Read &r : reads_)
      read(layer_, r.handle, r.p, r.bytes);
  }

private:
  struct Read {
    const char *handle;
    void *p;
    std::size_t bytes;
  };
  SimpleLayer &layer_;
  std::vector<const char *> bound_;
  std::vector<std::pair<const std::uint8_t *, std::size_t>> inputs_;
  std::vector<Read> reads_;
};

std::shared_ptr<SimpleLayer> simpleLayer(aspen_backend *backend, const std::string &key,
                                         const std::function<std::shared_ptr<SimpleLayer>()> &build) {
  return cachedLayer<SimpleLayer>(backend, key + "|" + backend->deviceName, build);
}

// The options JSON of a CNN descriptor: memoryLimitBytes apart, the rest for the layer.
std::size_t splitOptions(const char *text, const char *what, aspen::OptionFlags &layerOptions,
                         std::string &layerText) {
  if (!text)
    return 0;
  aspen::OptionFlags all;
  std::string ignored;
  parseOptionsJson(text, what, all, ignored);
  std::size_t limit = 0;
  for (const auto &[key, value] : all) {
    if (key == "memoryLimitBytes") {
      char *end = nullptr;
      const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || value[0] == '-')
        throw aspen::invalid_option(fmt::format("{}: memoryLimitBytes = {} must be a whole "
                                                "number of bytes",
                                                what, value));
      limit = std::size_t(n);
      continue;
    }
    layerOptions.set(key, value);
    layerText += key + "=" + value + ";";
  }
  return limit;
}

std::size_t orOne(std::size_t v) { return v == 0 ? 1 : v; }

ConvConfig convConfig(const aspen_conv2d_desc *desc) {
  needBuffer(desc, "desc");
  ConvConfig c;
  c.type = typeOf(desc->dtype);
  c.N = desc->batch, c.C = desc->in_channels, c.H = desc->height, c.W = desc->width;
  c.K = desc->out_channels, c.R = desc->kernel_h, c.S = desc->kernel_w;
  for (const auto &[value, name] :
       {std::pair{c.N, "batch"}, {c.C, "in_channels"}, {c.H, "height"}, {c.W, "width"},
        {c.K, "out_channels"}, {c.R, "kernel_h"}, {c.S, "kernel_w"}})
    need(value > 0, fmt::format("desc->{} is 0; every size must be at least 1", name));
  c.padH = desc->pad_h, c.padW = desc->pad_w;
  c.strideH = orOne(desc->stride_h), c.strideW = orOne(desc->stride_w);
  c.dilationH = orOne(desc->dilation_h), c.dilationW = orOne(desc->dilation_w);
  c.groups = orOne(desc->groups);
  need(c.C % c.groups == 0 && c.K % c.groups == 0,
       fmt::format("desc->groups = {} must divide in_channels = {} and out_channels = {}",
                   c.groups, c.C, c.K));
  product({c.N, std::max(c.C, c.K), c.H + 2 * c.padH, c.W + 2 * c.padW, 8}, "x and y");
  need(c.H + 2 * c.padH >= c.dilationH * (c.R - 1) + 1 &&
           c.W + 2 * c.padW >= c.dilationW * (c.S - 1) + 1,
       fmt::format("the dilated kernel ({}x{}) is larger than the padded input ({}x{})",
                   c.dilationH * (c.R - 1) + 1, c.dilationW * (c.S - 1) + 1, c.H + 2 * c.padH,
                   c.W + 2 * c.padW));
  c.memoryLimit = splitOptions(desc->options, "desc->options", c.options, c.optionsText);
  aspen::linalg::convolutionValidateOptions(c.options);
  return c;
}

PoolConfig poolConfig(const aspen_pool2d_desc *desc) {
  needBuffer(desc, "desc");
  PoolConfig c;
  c.type = typeOf(desc->dtype);
  need(desc->mode == ASPEN_POOL_MAX || desc->mode == ASPEN_POOL_AVG,
       fmt::format("desc->mode {} is not ASPEN_POOL_MAX (0) or ASPEN_POOL_AVG (1)",
                   static_cast<int>(desc->mode)));
  c.max = desc->mode == ASPEN_POOL_MAX;
  c.N = desc->batch, c.C = desc->channels, c.H = desc->height, c.W = desc->width;
  c.kH = desc->kernel_h, c.kW = desc->kernel_w;
  for (const auto &[value, name] :
       {std::pair{c.N, "batch"}, {c.C, "channels"}, {c.H, "height"}, {c.W, "width"},
        {c.kH, "kernel_h"}, {c.kW, "kernel_w"}})
    need(value > 0, fmt::format("desc->{} is 0; every size must be at least 1", name));
  c.padH = desc->pad_h, c.padW = desc->pad_w;
  c.strideH = desc->stride_h ? desc->stride_h : c.kH;
  c.strideW = desc->stride_w ? desc->stride_w : c.kW;
  need(2 * c.padH <= c.kH && 2 * c.padW <= c.kW,
       fmt::format("desc->pad ({}, {}) must be at most half the kernel ({}x{}), so that every "
                   "window holds an input element",
                   c.padH, c.padW, c.kH, c.kW));
  need(c.H + 2 * c.padH >= c.kH && c.W + 2 * c.padW >= c.kW,
       fmt::format("the kernel ({}x{}) is larger than the padded input ({}x{})", c.kH, c.kW,
                   c.H + 2 * c.padH, c.W + 2 * c.padW));
  product({c.N, c.C, c.H + 2 * c.padH, c.W + 2 * c.padW, 8}, "x and y");
  c.ceilMode = desc->ceil_mode != 0;
  c.includePadding = desc->avg_include_padding != 0;
  c.gradAll = desc->max_grad_all != 0;
  aspen::OptionFlags unused;
  std::string unusedText;
  c.memoryLimit = splitOptions(desc->options, "desc->options", unused, unusedText);
  if (unused.begin() != unused.end())
    throw aspen::invalid_option(fmt::format("desc->options: '{}' is not a pooling option (the "
                                            "only one is memoryLimitBytes)",
                                            unused.begin()->first));
  return c;
}

BatchNormConfig batchNormConfig(const aspen_batchnorm_desc *desc) {
  needBuffer(desc, "desc");
  BatchNormConfig c;
  c.type = typeOf(desc->dtype);
  c.N = desc->batch, c.C = desc->channels;
  for (const auto &[value, name] : {std::pair{c.N, "batch"}, {c.C, "channels"},
                                     {desc->height, "height"}, {desc->width, "width"}})
    need(value > 0, fmt::format("desc->{} is 0; every size must be at least 1", name));
  c.HW = product({desc->height, desc->width}, "the field");
  product({c.N, c.C, c.HW, 8}, "x and y");
  need(std::isfinite(desc->epsilon) && desc->epsilon >= 0,
       fmt::format("desc->epsilon = {} must be a finite number of at least 0", desc->epsilon));
  need(desc->momentum >= 0 && desc->momentum <= 1,
       fmt::format("desc->momentum = {} must be in [0, 1]", desc->momentum));
  c.eps = float(desc->epsilon), c.momentum = float(desc->momentum);
  aspen::OptionFlags unused;
  std::string unusedText;
  splitOptions(desc->options, "desc->options", unused, unusedText);
  if (unused.begin() != unused.end())
    throw aspen::invalid_option(fmt::format("desc->options: '{}' is not a batch-norm option",
                                            unused.begin()->first));
  return c;
}

// Calls run(layer, first, count, fresh) for each slice of `n` images, `perSlice` a slice;
// slices of perSlice images share one engine, a shorter last slice has its own. `fresh`: the
// engine's first slice in this call (when the slices' shared inputs, the weights, are written).
void forSlices(std::size_t n, std::size_t perSlice,
               const std::function<std::shared_ptr<SimpleLayer>(std::size_t)> &layerOf,
               const std::function<void(SimpleLayer &, std::size_t, std::size_t, bool)> &run) {
  std::shared_ptr<SimpleLayer> full;
  for (std::size_t first = 0; first < n; first += perSlice) {
    const std::size_t count = std::min(perSlice, n - first);
    const bool fresh = count < perSlice || !full;
    const std::shared_ptr<SimpleLayer> layer =
        count == perSlice ? (full ? full : (full = layerOf(count))) : layerOf(count);
    std::lock_guard<std::mutex> lock(layer->mutex);
    run(*layer, first, count, fresh);
  }
}

// Sums of one slice's results, in float: `into` += the `count` elements of type `type` at p.
void accumulate(std::vector<float> &into, const Bytes &bytes, aspen::Type type) {
  for (std::size_t i = 0; i < into.size(); ++i) {
    if (type == aspen::HALF) {
      aspen::half h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      into[i] += float(h);
    } else {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      into[i] += f;
    }
  }
}
Bytes encode(const std::vector<float> &values, aspen::Type type) {
  Bytes bytes(values.size() * type.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (type == aspen::HALF) {
      const aspen::half h(values[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
    }
  }
  return bytes;
}

} // namespace

extern "C" {

aspen_status aspen_conv2d_output_shape(const aspen_conv2d_desc *desc, size_t *p, size_t *q) {
  return guarded("aspen_conv2d_output_shape", [&] {
    needBuffer(p, "p");
    needBuffer(q, "q");
    const ConvConfig c = convConfig(desc);
    *p = c.P(), *q = c.Q();
  });
}

aspen_status aspen_conv2d_forward(aspen_backend *backend, const aspen_conv2d_desc *desc,
                                  const void *x, const void *w, const void *bias, void *y,
                                  void *stream) {
  return guarded("aspen_conv2d_forward", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    const ConvConfig c = convConfig(desc);
    needBuffer(x, "x");
    needBuffer(w, "w");
    needBuffer(y, "y");
    checkPlaces(backend, {{"x", x}, {"w", w}, {"bias", bias}, {"y", y}});
    const std::size_t es = c.type.size();
    memory.waitForCaller();
    forSlices(
        c.N, c.imagesPerSlice(),
        [&](std::size_t images) {
          return simpleLayer(backend, c.key(bias ? "fwd-bias" : "fwd", images), [&] {
            return aspen::backend::buildConvForward(backend->device, c, images, bias != nullptr);
          });
        },
        [&](SimpleLayer &layer, std::size_t first, std::size_t count, bool fresh) {
          if (fresh) {
            write(layer, "w", w, c.wElements() * es);
            if (bias)
              write(layer, "b", bias, c.K * es);
          }
          Activations io(layer);
          io.in("x", at(x, first * c.xElements() * es), count * c.xElements() * es);
          io.out("y", at(y, first * c.yElements() * es), count * c.yElements() * es);
          io.run();
        });
  });
}

aspen_status aspen_conv2d_backward_data(aspen_backend *backend, const aspen_conv2d_desc *desc,
                                        const void *w, const void *dy, void *dx, void *stream) {
  return guarded("aspen_conv2d_backward_data", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    const ConvConfig c = convConfig(desc);
    needBuffer(w, "w");
    needBuffer(dy, "dy");
    needBuffer(dx, "dx");
    checkPlaces(backend, {{"w", w}, {"dy", dy}, {"dx", dx}});
    const std::size_t es = c.type.size();
    memory.waitForCaller();
    forSlices(
        c.N, c.imagesPerSlice(),
        [&](std::size_t images) {
          return simpleLayer(backend, c.key("bwd", images), [&] {
            return aspen::backend::buildConvBackwardData(backend->device, c, images);
          });
        },
        [&](SimpleLayer &layer, std::size_t first, std::size_t count, bool fresh) {
          if (fresh)
            write(layer, "w", w, c.wElements() * es);
          Activations io(layer);
          io.in("dy", at(dy, first * c.yElements() * es), count * c.yElements() * es);
          io.out("dx", at(dx, first * c.xElements() * es), count * c.xElements() * es);
          io.run();
        });
  });
}

aspen_status aspen_conv2d_backward_filter(aspen_backend *backend, const aspen_conv2d_desc *desc,
                                          const void *x, const void *dy, void *dw, void *dbias,
                                          void *stream) {
  return guarded("aspen_conv2d_backward_filter", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    const ConvConfig c = convConfig(desc);
    needBuffer(x, "x");
    needBuffer(dy, "dy");
    needBuffer(dw, "dw");
    checkPlaces(backend, {{"x", x}, {"dy", dy}, {"dw", dw}, {"dbias", dbias}});
    const std::size_t es = c.type.size(), perSlice = c.imagesPerSlice();
    const bool sliced = perSlice < c.N;
    // One slice: straight into dw and dbias. More: each slice's sums added in float.
    std::vector<float> dwSum(sliced ? c.wElements() : 0), dbSum(sliced && dbias ? c.K : 0);
    Bytes scratch;
    memory.waitForCaller();
    forSlices(
        c.N, perSlice,
        [&](std::size_t images) {
          return simpleLayer(backend, c.key(dbias ? "wu-bias" : "wu", images), [&] {
            return aspen::backend::buildConvBackwardFilter(backend->device, c, images,
                                                           dbias != nullptr);
          });
        },
        [&](SimpleLayer &layer, std::size_t first, std::size_t count, bool fresh) {
          Activations io(layer);
          io.in("x", at(x, first * c.xElements() * es), count * c.xElements() * es);
          io.in("dy", at(dy, first * c.yElements() * es), count * c.yElements() * es);
          io.run();
          if (!sliced) {
            read(layer, "dw", dw, c.wElements() * es);
            if (dbias)
              read(layer, "db", dbias, c.K * es);
            return;
          }
          scratch.resize(c.wElements() * es);
          read(layer, "dw", scratch.data(), scratch.size());
          accumulate(dwSum, scratch, c.type);
          if (dbias) {
            scratch.resize(c.K * es);
            read(layer, "db", scratch.data(), scratch.size());
            accumulate(dbSum, scratch, c.type);
          }
        });
    if (sliced) {
      const Bytes dwBytes = encode(dwSum, c.type);
      memory.copy(dw, dwBytes.data(), dwBytes.size());
      if (dbias) {
        const Bytes dbBytes = encode(dbSum, c.type);
        memory.copy(dbias, dbBytes.data(), dbBytes.size());
      }
    }
  });
}

aspen_status aspen_pool2d_output_shape(const aspen_pool2d_desc *desc, size_t *p, size_t *q) {
  return guarded("aspen_pool2d_output_shape", [&] {
    needBuffer(p, "p");
    needBuffer(q, "q");
    const PoolConfig c = poolConfig(desc);
    *p = c.P(), *q = c.Q();
  });
}

aspen_status aspen_pool2d_forward(aspen_backend *backend, const aspen_pool2d_desc *desc,
                                  const void *x, void *y, void *stream) {
  return guarded("aspen_pool2d_forward", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    const PoolConfig c = poolConfig(desc);
    needBuffer(x, "x");
    needBuffer(y, "y");
    checkPlaces(backend, {{"x", x}, {"y", y}});
    const std::size_t es = c.type.size(), xImage = c.C * c.H * c.W * es,
                      yImage = c.C * c.P() * c.Q() * es;
    memory.waitForCaller();
    forSlices(
        c.N, c.imagesPerSlice(),
        [&](std::size_t images) {
          return simpleLayer(backend, c.key("fwd", images), [&] {
            return aspen::backend::buildPoolForward(backend->device, c, images);
          });
        },
        [&](SimpleLayer &layer, std::size_t first, std::size_t count, bool fresh) {
          Activations io(layer);
          io.in("x", at(x, first * xImage), count * xImage);
          io.out("y", at(y, first * yImage), count * yImage);
          io.run();
        });
  });
}

aspen_status aspen_pool2d_backward(aspen_backend *backend, const aspen_pool2d_desc *desc,
                                   const void *x, const void *y, const void *dy, void *dx,
                                   void *stream) {
  return guarded("aspen_pool2d_backward", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    const PoolConfig c = poolConfig(desc);
    if (c.max)
      needBuffer(x, "x (max pooling's gradient reads the forward's input)");
    needBuffer(dy, "dy");
    needBuffer(dx, "dx");
    checkPlaces(backend, {{"x", x}, {"y", y}, {"dy", dy}, {"dx", dx}});
    const bool recompute = c.max && y == nullptr;
    const std::size_t es = c.type.size(), xImage = c.C * c.H * c.W * es,
                      yImage = c.C * c.P() * c.Q() * es;
    memory.waitForCaller();
    forSlices(
        c.N, c.imagesPerSlice(),
        [&](std::size_t images) {
          return simpleLayer(backend, c.key(recompute ? "bwd-recompute" : "bwd", images), [&] {
            return aspen::backend::buildPoolBackward(backend->device, c, images, recompute);
          });
        },
        [&](SimpleLayer &layer, std::size_t first, std::size_t count, bool fresh) {
          Activations io(layer);
          if (c.max) {
            io.in("x", at(x, first * xImage), count * xImage);
            if (!recompute)
              io.in("y-in", at(y, first * yImage), count * yImage);
          }
          io.in("dy", at(dy, first * yImage), count * yImage);
          io.out("dx", at(dx, first * xImage), count * xImage);
          io.run();
        });
  });
}

aspen_status aspen_batchnorm_forward_training(aspen_backend *backend,
                                              const aspen_batchnorm_desc *desc, const void *x,
                                              const float *gamma, const float *beta, void *y,
                                              float *running_mean, float *running_var,
                                              float *save_mean, float *save_inv_std,
                                              void *stream) {
  return guarded("aspen_batchnorm_forward_training", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    const BatchNormConfig c = batchNormConfig(desc);
    needBuffer(x, "x");
    needBuffer(gamma, "gamma");
    needBuffer(beta, "beta");
    needBuffer(y, "y");
    need((running_mean == nullptr) == (running_var == nullptr),
         "running_mean and running_var must be both given or both NULL");
    need((save_mean == nullptr) == (save_inv_std == nullptr),
         "save_mean and save_inv_std must be both given or both NULL");
    checkPlaces(backend, {{"x", x}, {"gamma", gamma}, {"beta", beta}, {"y", y},
                          {"running_mean", running_mean}, {"running_var", running_var},
                          {"save_mean", save_mean}, {"save_inv_std", save_inv_std}});
    const std::size_t bytes = c.N * c.C * c.HW * c.type.size(), params = c.C * sizeof(float);
    const auto layer = simpleLayer(backend, c.key("train"), [&] {
      return aspen::backend::buildBatchNormTraining(backend->device, c);
    });
    std::lock_guard<std::mutex> lock(layer->mutex);
    memory.waitForCaller();
    std::vector<float> running(2 * c.C, 0.0f), saved(2 * c.C);
    if (running_mean) {
      memory.copy(running.data(), running_mean, params);
      memory.copy(running.data() + c.C, running_var, params);
    }
    Activations io(*layer);
    io.in("x", x, bytes);
    write(*layer, "gamma", gamma, params);
    write(*layer, "beta", beta, params);
    write(*layer, "running-in", running.data(), 2 * params);
    io.out("y", y, bytes);
    io.run();
    if (running_mean) {
      read(*layer, "running", running.data(), 2 * params);
      memory.copy(running_mean, running.data(), params);
      memory.copy(running_var, running.data() + c.C, params);
    }
    if (save_mean) {
      read(*layer, "saved", saved.data(), 2 * params);
      memory.copy(save_mean, saved.data(), params);
      memory.copy(save_inv_std, saved.data() + c.C, params);
    }
  });
}

aspen_status aspen_batchnorm_forward_inference(aspen_backend *backend,
                                               const aspen_batchnorm_desc *desc, const void *x,
                                               const float *gamma, const float *beta,
                                               const float *running_mean,
                                               const float *running_var, void *y, void *stream) {
  return guarded("aspen_batchnorm_forward_inference", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    const BatchNormConfig c = batchNormConfig(desc);
    for (const auto &[p, name] : {std::pair<const void *, const char *>{x, "x"},
                                  {gamma, "gamma"},
                                  {beta, "beta"},
                                  {running_mean, "running_mean"},
                                  {running_var, "running_var"},
                                  {y, "y"}})
      needBuffer(p, name);
    checkPlaces(backend, {{"x", x}, {"gamma", gamma}, {"beta", beta},
                          {"running_mean", running_mean}, {"running_var", running_var}, {"y", y}});
    const std::size_t bytes = c.N * c.C * c.HW * c.type.size(), params = c.C * sizeof(float);
    const auto layer = simpleLayer(backend, c.key("infer"), [&] {
      return aspen::backend::buildBatchNormInference(backend->device, c);
    });
    std::lock_guard<std::mutex> lock(layer->mutex);
    memory.waitForCaller();
    // The per-channel scale and shift on the host, in double: C values, where a compute set
    // of their own costs more than the arithmetic.
    std::vector<float> g(c.C), b(c.C), mean(c.C), var(c.C), scaleShift(2 * c.C);
    memory.copy(g.data(), gamma, params);
    memory.copy(b.data(), beta, params);
    memory.copy(mean.data(), running_mean, params);
    memory.copy(var.data(), running_var, params);
    for (std::size_t i = 0; i < c.C; ++i) {
      const double scale = double(g[i]) / std::sqrt(double(var[i]) + double(c.eps));
      scaleShift[i] = float(scale);
      scaleShift[c.C + i] = float(double(b[i]) - scale * double(mean[i]));
    }
    Activations io(*layer);
    io.in("x", x, bytes);
    write(*layer, "scale-shift", scaleShift.data(), 2 * params);
    io.out("y", y, bytes);
    io.run();
  });
}

aspen_status aspen_batchnorm_backward(aspen_backend *backend, const aspen_batchnorm_desc *desc,
                                      const void *x, const void *dy, const float *gamma,
                                      const float *save_mean, const float *save_inv_std, void *dx,
                                      float *dgamma, float *dbeta, void *stream) {
  return guarded("aspen_batchnorm_backward", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    const BatchNormConfig c = batchNormConfig(desc);
    for (const auto &[p, name] : {std::pair<const void *, const char *>{x, "x"},
                                  {dy, "dy"},
                                  {gamma, "gamma"},
                                  {save_mean, "save_mean"},
                                  {save_inv_std, "save_inv_std"},
                                  {dx, "dx"},
                                  {dgamma, "dgamma"},
                                  {dbeta, "dbeta"}})
      needBuffer(p, name);
    checkPlaces(backend, {{"x", x}, {"dy", dy}, {"gamma", gamma}, {"save_mean", save_mean},
                          {"save_inv_std", save_inv_std}, {"dx", dx}, {"dgamma", dgamma},
                          {"dbeta", dbeta}});
    const std::size_t bytes = c.N * c.C * c.HW * c.type.size(), params = c.C * sizeof(float);
    const auto layer = simpleLayer(backend, c.key("bwd"), [&] {
      return aspen::backend::buildBatchNormBackward(backend->device, c);
    });
    std::lock_guard<std::mutex> lock(layer->mutex);
    memory.waitForCaller();
    std::vector<float> saved(2 * c.C), dparams(2 * c.C);
    memory.copy(saved.data(), save_mean, params);
    memory.copy(saved.data() + c.C, save_inv_std, params);
    Activations io(*layer);
    io.in("x", x, bytes);
    io.in("dy", dy, bytes);
    write(*layer, "gamma", gamma, params);
    write(*layer, "saved-in", saved.data(), 2 * params);
    io.out("dx", dx, bytes);
    io.run();
    read(*layer, "dparams", dparams.data(), 2 * params);
    memory.copy(dgamma, dparams.data(), params);
    memory.copy(dbeta, dparams.data() + c.C, params);
  });
}

aspen_status aspen_nonlinearity_backward(aspen_backend *backend, aspen_nonlinearity kind,
                                         aspen_dtype dtype, size_t rows, size_t n,
                                         const void *act, int act_is_input, const void *dy,
                                         void *dx, void *stream) {
  return guarded("aspen_nonlinearity_backward", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    using aspen::nn::NonLinearityType;
    static const std::map<int, std::pair<NonLinearityType, const char *>> kinds = {
        {ASPEN_NONLINEARITY_RELU, {NonLinearityType::RELU, "relu"}},
        {ASPEN_NONLINEARITY_SIGMOID, {NonLinearityType::SIGMOID, "sigmoid"}},
        {ASPEN_NONLINEARITY_TANH, {NonLinearityType::TANH, "tanh"}},
        {ASPEN_NONLINEARITY_SOFTMAX, {NonLinearityType::SOFTMAX_STABLE, "softmax"}}};
    const auto found = kinds.find(static_cast<int>(kind));
    if (found == kinds.end())
      throw aspen::backend::Unsupported(fmt::format(
          "aspen_nonlinearity_backward: kind {} has no backward here (relu, sigmoid, tanh and "
          "softmax do)",
          static_cast<int>(kind)));
    need(!act_is_input || found->second.first == NonLinearityType::RELU,
         fmt::format("act_is_input is set, but {}'s gradient is computed from its output",
                     found->second.second));
    const aspen::Type type = typeOf(dtype);
    need(rows > 0 && n > 0 && n % rows == 0,
         fmt::format("rows = {} must be at least 1 and divide n = {} (at least 1)", rows, n));
    const std::size_t bytes = product({n, type.size()}, "act, dy and dx");
    needBuffer(act, "act");
    needBuffer(dy, "dy");
    needBuffer(dx, "dx");
    checkPlaces(backend, {{"act", act}, {"dy", dy}, {"dx", dx}});
    const std::string key = fmt::format("nonlinearity-bwd|{}|{}|{}|{}", found->second.second,
                                        type.toString(), rows, n / rows);
    const auto layer = simpleLayer(backend, key, [&] {
      return aspen::backend::buildNonLinearityBackward(backend->device, found->second.first,
                                                       type, rows, n / rows);
    });
    std::lock_guard<std::mutex> lock(layer->mutex);
    memory.waitForCaller();
    Activations io(*layer);
    io.in("act", act, bytes);
    io.in("dy", dy, bytes);
    io.out("dx", dx, bytes);
    io.run();
  });
}

} // extern "C"
