// The C ABI of aspen/backend.h: checks every argument before anything runs, turns the request
// into a layer configuration and cache key, and every exception into a status and a message.
#include <aspen/backend.h>

#include "BackendError.hpp"
#include "BackendMemory.hpp"
#include "BackendCalls.hpp"
#include "LayerCache.hpp"
#include "Layers.hpp"
#include "support/Json.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <new>
#include <string>
#include <variant>

namespace json = aspen::support::json;
using aspen::backend::RnnConfig;
using namespace aspen::backend::calls;

namespace aspen::backend::calls {

std::string &lastErrorSlot() {
  thread_local std::string message;
  return message;
}

void parseOptionsJson(const char *text, const char *what, aspen::OptionFlags &options,
                      std::string &sortedText) {
  const json::Value parsed = json::parse(text, what);
  if (!parsed.isObject())
    throw aspen::invalid_option(fmt::format("{} '{}' is not a JSON object", what, text));
  std::map<std::string, std::string> sorted;
  for (const auto &[key, value] : parsed.asObject()) {
    if (value.isString())
      sorted[key] = value.asString();
    else if (value.isNumber())
      sorted[key] = value.numberText();
    else if (value.isBool())
      sorted[key] = value.asBool() ? "true" : "false";
    else
      throw aspen::invalid_option(fmt::format("{}: '{}' = {} must be a string, a number or a "
                                              "boolean",
                                              what, key, value.write()));
  }
  for (const auto &[key, value] : sorted) {
    options.set(key, value);
    sortedText += key + "=" + value + ";";
  }
}

} // namespace aspen::backend::calls

namespace {

std::vector<std::string> splitList(const char *text) {
  std::vector<std::string> items;
  std::string item;
  for (const char *p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      const auto begin = item.find_first_not_of(" \t");
      const auto end = item.find_last_not_of(" \t");
      items.push_back(begin == std::string::npos ? "" : item.substr(begin, end - begin + 1));
      item.clear();
      if (*p == '\0')
        return items;
    } else {
      item += *p;
    }
  }
}

} // namespace

namespace aspen::backend::calls {

// lengths: host memory on every device (the backend reads them to find each row's last step).
void checkLengthsOnHost(const std::uint32_t *lengths) {
  need(!lengths || !aspen::backend::isDeviceMemory(lengths),
       "lengths is device memory; lengths are host memory on every device");
}

namespace {

// desc->options' cellClipMin and cellClipMax (both or neither) and cellClipNan ("propagate" or
// "min") as the LSTM's cell clip, taken out of the layer's options.
void readCellClip(RnnConfig &c) {
  const std::string *low = c.options.find("cellClipMin"), *high = c.options.find("cellClipMax"),
                    *nan = c.options.find("cellClipNan");
  if (!low && !high && !nan)
    return;
  if (!c.lstm)
    throw aspen::invalid_option(fmt::format("desc->options: cellClipMin, cellClipMax and "
                                            "cellClipNan are the LSTM's ({} has no cell state)",
                                            c.cellName()));
  if (!low || !high)
    throw aspen::invalid_option("desc->options: cellClipMin and cellClipMax come together");
  const auto number = [](const std::string &key, const std::string &text) {
    char *end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0')
      throw aspen::invalid_option(
          fmt::format("desc->options: {} '{}' is not a number", key, text));
    return v;
  };
  c.cellClip.enabled = true;
  c.cellClip.min = number("cellClipMin", *low);
  c.cellClip.max = number("cellClipMax", *high);
  if (nan) {
    if (*nan != "propagate" && *nan != "min")
      throw aspen::invalid_option(fmt::format("desc->options: cellClipNan '{}' is not "
                                              "'propagate' or 'min'",
                                              *nan));
    c.cellClip.propagateNan = *nan == "propagate";
  }
  for (const char *key : {"cellClipMin", "cellClipMax", "cellClipNan"})
    c.options.remove(key);
}

// desc->options' activationClip (a number above 0) as the layer's clip of its activations'
// inputs (ONNX's clip), taken out of the layer's options.
void readActivationClip(RnnConfig &c) {
  const std::string *text = c.options.find("activationClip");
  if (!text)
    return;
  if (c.vanilla)
    throw aspen::invalid_option("desc->options: activationClip is the LSTM's and the GRU's; a "
                                "vanilla RNN takes no clip");
  char *end = nullptr;
  const double t = std::strtod(text->c_str(), &end);
  if (text->empty() || *end != '\0' || !(t > 0) || !std::isfinite(t))
    throw aspen::invalid_option(fmt::format(
        "desc->options: activationClip '{}' is not a finite number above 0", *text));
  c.activationClip = t;
  c.options.remove("activationClip");
}

// desc->options' projSize as the LSTM's projection (LstmParams::projSize: a whole number below
// hidden_size; 0 is none), taken out of the layer's options.
void readProjection(RnnConfig &c) {
  const std::string *size = c.options.find("projSize");
  if (!size)
    return;
  if (!c.lstm)
    throw aspen::invalid_option(fmt::format("desc->options: projSize is the LSTM's (PyTorch's "
                                            "proj_size); {} has no projection",
                                            c.cellName()));
  const bool digits = !size->empty() && size->size() <= 18 &&
                      std::all_of(size->begin(), size->end(),
                                  [](char ch) { return ch >= '0' && ch <= '9'; });
  if (!digits)
    throw aspen::invalid_option(
        fmt::format("desc->options: projSize '{}' is not a whole number", *size));
  c.P = std::stoull(*size);
  if (c.P >= c.H)
    throw aspen::invalid_option(fmt::format("desc->options: projSize {} must be less than "
                                            "hidden_size {} (0: no projection)",
                                            c.P, c.H));
  c.options.remove("projSize");
}

} // namespace

RnnConfig rnnConfig(const aspen_rnn_desc *desc) {
  needBuffer(desc, "desc");
  need(desc->cell == ASPEN_RNN_LSTM || desc->cell == ASPEN_RNN_GRU ||
           desc->cell == ASPEN_RNN_TANH || desc->cell == ASPEN_RNN_RELU,
       fmt::format("desc->cell {} is not ASPEN_RNN_LSTM (0), ASPEN_RNN_GRU (1), ASPEN_RNN_TANH "
                   "(2) or ASPEN_RNN_RELU (3)",
                   static_cast<int>(desc->cell)));
  RnnConfig c;
  c.lstm = desc->cell == ASPEN_RNN_LSTM;
  c.vanilla = desc->cell == ASPEN_RNN_TANH || desc->cell == ASPEN_RNN_RELU;
  c.nonLinearity = desc->cell == ASPEN_RNN_RELU ? aspen::nn::NonLinearityType::RELU
                                                : aspen::nn::NonLinearityType::TANH;
  c.type = typeOf(desc->dtype);
  c.T = desc->seq_len, c.B = desc->batch, c.I = desc->input_size, c.H = desc->hidden_size;
  for (const auto &[value, name] : {std::pair{c.T, "seq_len"}, {c.B, "batch"},
                                     {c.I, "input_size"}, {c.H, "hidden_size"}})
    need(value > 0, fmt::format("desc->{} is 0; every size must be at least 1", name));
  product({c.T, c.B, std::max(c.I, c.H), 8}, "x and y");
  product({4, std::max(c.I, c.H), c.H, 8}, "the weights");
  c.variableLengths = desc->variable_lengths != 0;
  c.resetAfter = desc->gru_reset_after != 0;
  need(c.lstm || c.vanilla ? !c.resetAfter : true,
       fmt::format("desc->gru_reset_after is for a GRU, not {}", c.cellName()));
  need(desc->weights_layout == ASPEN_WEIGHTS_ASPEN || desc->weights_layout == ASPEN_WEIGHTS_PYTORCH,
       fmt::format("desc->weights_layout {} is not ASPEN_WEIGHTS_ASPEN (0) or "
                   "ASPEN_WEIGHTS_PYTORCH (1)",
                   static_cast<int>(desc->weights_layout)));
  c.torchLayout = desc->weights_layout == ASPEN_WEIGHTS_PYTORCH;
  if (desc->cell_order) {
    need(!c.vanilla, "desc->cell_order is given, but a vanilla RNN has one gate (leave it NULL)");
    c.cellOrder = splitList(desc->cell_order);
    need(c.cellOrder.size() == c.gates(),
         fmt::format("desc->cell_order '{}' names {} gates; {} has {}", desc->cell_order,
                     c.cellOrder.size(), c.cellName(), c.gates()));
  }
  if (desc->options) {
    aspen::backend::calls::parseOptionsJson(desc->options, "desc->options", c.options,
                                            c.optionsText);
    if (c.options.contains("inferenceOnly"))
      throw aspen::invalid_option("desc->options: inferenceOnly is chosen by the call (a "
                                  "forward without reserve is inference)");
    readCellClip(c);
    readProjection(c);
    readActivationClip(c);
  }
  return c;
}

void checkLengths(const RnnConfig &c, const std::uint32_t *lengths) {
  if (!c.variableLengths) {
    need(lengths == nullptr, "lengths given but desc->variable_lengths is 0");
    return;
  }
  needBuffer(lengths, "lengths (desc->variable_lengths is set)");
  for (std::size_t b = 0; b < c.B; ++b)
    need(lengths[b] <= c.T, fmt::format("lengths[{}] = {} is more than seq_len = {}", b,
                                        lengths[b], c.T));
}

void checkForwardBuffers(const RnnConfig &c, const aspen::backend::RnnForwardCall &call) {
  needBuffer(call.x, "x");
  needBuffer(call.h0, "h0");
  needBuffer(call.inputWeights, "input_weights");
  needBuffer(call.outputWeights, "output_weights");
  needBuffer(call.biases, "biases");
  if (c.lstm) {
    needBuffer(call.c0, "c0 (an LSTM's initial cell state)");
  } else {
    need(call.c0 == nullptr, fmt::format("c0 is given, but {} has no cell state", c.cellName()));
  }
  checkLengths(c, call.lengths);
}

bool checkBackwardBuffers(const RnnConfig &c, const void *reserve, const void *dcn,
                          const void *dh0, const void *dc0, const void *dInputWeights,
                          const void *dOutputWeights, const void *dBiases) {
  needBuffer(reserve, "reserve (filled by the training forward)");
  needBuffer(dh0, "dh0");
  if (c.lstm) {
    needBuffer(dc0, "dc0 (the gradient of an LSTM's initial cell state)");
  } else {
    need(dcn == nullptr, fmt::format("dcn is given, but {} has no cell state", c.cellName()));
    need(dc0 == nullptr, fmt::format("dc0 is given, but {} has no cell state", c.cellName()));
  }
  const int weightGrads =
      (dInputWeights != nullptr) + (dOutputWeights != nullptr) + (dBiases != nullptr);
  need(weightGrads == 0 || weightGrads == 3,
       "d_input_weights, d_output_weights and d_biases must be all given or all NULL");
  return weightGrads == 3;
}

std::shared_ptr<aspen::backend::RnnLayer> rnnLayer(aspen_backend *backend, const RnnConfig &c,
                                                   bool training) {
  return cachedLayer<aspen::backend::RnnLayer>(
      backend, c.key(training ? "train" : "infer") + "|" + backend->deviceName,
      [&] { return aspen::backend::buildRnnLayer(backend->device, c, training); });
}

} // namespace aspen::backend::calls

namespace {

const std::vector<std::string> kModels = {"h200", "h100", "ipu2", "ipu21", "ipu1"};

// The N of "<kind>:N" (0 for "<kind>" alone): a whole number from `least` to `most`.
unsigned deviceIndex(const std::string &name, const char *kind, unsigned long most,
                     const char *what, unsigned long least = 0) {
  if (name == kind)
    return 0;
  const std::string count = name.substr(std::string(kind).size() + 1);
  char *end = nullptr;
  const unsigned long n = std::strtoul(count.c_str(), &end, 10);
  need(!count.empty() && *end == '\0' && n >= least && n <= most && count[0] != '-' &&
           count[0] != '+' && count[0] != ' ',
       fmt::format("device '{}': the {} must be a whole number from {} to {}", name, what, least,
                   most));
  return unsigned(n);
}

// "cpu": the CPU executor with one tile per thread of its pool (Device::cpuThreadCount():
// ASPEN_CPU_THREADS, else the CPUs the process may run on), so that the planner spreads each
// layer over the cores and the executor runs the tiles in parallel; "cpu:N": N tiles.
// (Poplar's createCPUDevice is one tile: one core for vertices.) Each tile gets an equal share
// of the host's memory.
aspen::Device hostDevice(const std::string &name) {
  const unsigned tiles = name == "cpu" ? aspen::Device::cpuThreadCount()
                                       : deviceIndex(name, "cpu", 4096, "tile count", 1);
  const double memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  const auto bytesPerTile = static_cast<std::size_t>(
      std::max(double(std::size_t(1) << 30), memory / tiles));
  return aspen::Device::createModelDevice(aspen::Target::createGeneric(tiles, 1, bytesPerTile));
}

} // namespace

extern "C" {

const char *aspen_last_error(void) { return lastErrorSlot().c_str(); }

const char *aspen_status_string(aspen_status status) {
  switch (status) {
  case ASPEN_OK: return "ASPEN_OK";
  case ASPEN_ERROR_INVALID_ARGUMENT: return "ASPEN_ERROR_INVALID_ARGUMENT";
  case ASPEN_ERROR_INVALID_OPTION: return "ASPEN_ERROR_INVALID_OPTION";
  case ASPEN_ERROR_UNSUPPORTED: return "ASPEN_ERROR_UNSUPPORTED";
  case ASPEN_ERROR_OUT_OF_MEMORY: return "ASPEN_ERROR_OUT_OF_MEMORY";
  case ASPEN_ERROR_RUNTIME: return "ASPEN_ERROR_RUNTIME";
  case ASPEN_ERROR_INTERNAL: return "ASPEN_ERROR_INTERNAL";
  }
  return "an unknown aspen_status";
}

aspen_status aspen_backend_create(const char *device, size_t max_layers,
                                  aspen_backend **backend) {
  return guarded("aspen_backend_create", [&] {
    needBuffer(backend, "backend (the result)");
    *backend = nullptr;
    needBuffer(device, "device");
    const std::string name = device;
    aspen::Device d;
    int gpuOrdinal = -1;
    if (name == "gpu" || name.rfind("gpu:", 0) == 0) {
      gpuOrdinal = int(deviceIndex(name, "gpu", 1024, "GPU ordinal"));
      aspen::backend::Memory::device(gpuOrdinal, nullptr); // Unsupported without CUDA
      const aspen::backend::CurrentDeviceGuard keepCallersDevice(true);
      try {
        d = aspen::Device::createGpuDevice(unsigned(gpuOrdinal));
      } catch (const aspen::error &e) {
        throw aspen::backend::CudaFailure(fmt::format("device '{}': {}", name, e.what()));
      }
    } else if (name == "cpu" || name.rfind("cpu:", 0) == 0)
      d = hostDevice(name);
    else if (std::find(kModels.begin(), kModels.end(), name) != kModels.end())
      d = aspen::Device::createModelDevice(aspen::Target::createModel(name));
    else
      throw BadArgument("device '" + name + "' is not \"cpu\", \"cpu:N\", \"gpu\", "
                        "\"gpu:N\" or a model target (h200, h100, ipu2, ipu21, ipu1)");
    *backend = new aspen_backend(std::move(d), name, max_layers ? max_layers : 64, gpuOrdinal);
  });
}

void aspen_backend_destroy(aspen_backend *backend) { delete backend; }

aspen_status aspen_backend_cache_stats(aspen_backend *backend, aspen_cache_stats *stats) {
  return guarded("aspen_backend_cache_stats", [&] {
    checkBackend(backend);
    needBuffer(stats, "stats");
    const aspen::backend::CacheStats s = backend->layers.stats();
    *stats = {s.hits,    s.misses,  s.compiles,       s.compileFailures, s.evictions,
              s.entries, s.capacity, s.compileSeconds};
  });
}

aspen_status aspen_backend_clear_cache(aspen_backend *backend) {
  return guarded("aspen_backend_clear_cache", [&] {
    checkBackend(backend);
    backend->layers.clear();
  });
}

aspen_status aspen_backend_set_parallel_for(aspen_backend *backend,
                                            aspen_parallel_for_fn parallel_for, void *context) {
  return guarded("aspen_backend_set_parallel_for", [&] {
    checkBackend(backend);
    aspen::HostParallelFor loop;
    if (parallel_for)
      loop = [parallel_for, context](std::size_t n, const std::function<void(std::size_t)> &task) {
        parallel_for(
            context, n,
            [](void *taskContext, std::size_t i) {
              (*static_cast<const std::function<void(std::size_t)> *>(taskContext))(i);
            },
            const_cast<std::function<void(std::size_t)> *>(&task));
      };
    std::lock_guard lock(backend->hostLoopMutex);
    backend->hostLoop = std::move(loop);
    backend->hostLoopVersion.fetch_add(1, std::memory_order_acq_rel);
  });
}

aspen_status aspen_rnn_reserve_bytes(aspen_backend *backend, const aspen_rnn_desc *desc,
                                     size_t *bytes) {
  return guarded("aspen_rnn_reserve_bytes", [&] {
    checkBackend(backend);
    needBuffer(bytes, "bytes");
    const aspen::backend::CurrentDeviceGuard keepCallersDevice(backend->gpuOrdinal >= 0);
    *bytes = rnnLayer(backend, rnnConfig(desc), true)->reserveBytes;
  });
}

aspen_status aspen_rnn_forward(aspen_backend *backend, const aspen_rnn_desc *desc, const void *x,
                               const void *h0, const void *c0, const void *input_weights,
                               const void *output_weights, const void *biases,
                               const uint32_t *lengths, void *y, void *hn, void *cn,
                               void *reserve, void *stream) {
  return guarded("aspen_rnn_forward", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    const RnnConfig c = rnnConfig(desc);
    const aspen::backend::RnnForwardCall call{x, h0, c0, input_weights, output_weights, biases,
                                              lengths, y, hn, cn, reserve};
    checkForwardBuffers(c, call);
    needBuffer(y, "y");
    needBuffer(hn, "hn");
    if (c.lstm)
      needBuffer(cn, "cn (an LSTM's final cell state)");
    else
      need(cn == nullptr, fmt::format("cn is given, but {} has no cell state", c.cellName()));
    checkPlaces(backend, {{"x", x}, {"h0", h0}, {"c0", c0}, {"input_weights", input_weights},
                          {"output_weights", output_weights}, {"biases", biases}, {"y", y},
                          {"hn", hn}, {"cn", cn}, {"reserve", reserve}});
    checkLengthsOnHost(lengths);
    const auto layer = rnnLayer(backend, c, reserve != nullptr);
    aspen::backend::runRnnForward(*layer, c, call, memory);
  });
}

aspen_status aspen_rnn_backward(aspen_backend *backend, const aspen_rnn_desc *desc, const void *x,
                                const void *h0, const void *c0, const void *input_weights,
                                const void *output_weights, const void *biases,
                                const uint32_t *lengths, const void *y, const void *reserve,
                                const void *dy, const void *dhn, const void *dcn, void *dx,
                                void *dh0, void *dc0, void *d_input_weights,
                                void *d_output_weights, void *d_biases, void *stream) {
  return guarded("aspen_rnn_backward", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    const RnnConfig c = rnnConfig(desc);
    const aspen::backend::RnnForwardCall forward{
        x, h0, c0, input_weights, output_weights, biases, lengths, const_cast<void *>(y),
        nullptr, nullptr, const_cast<void *>(reserve)};
    checkForwardBuffers(c, forward);
    needBuffer(y, "y (the training forward's output)");
    checkBackwardBuffers(c, reserve, dcn, dh0, dc0, d_input_weights, d_output_weights,
                         d_biases);
    checkPlaces(backend, {{"x", x}, {"h0", h0}, {"c0", c0}, {"input_weights", input_weights},
                          {"output_weights", output_weights}, {"biases", biases}, {"y", y},
                          {"reserve", reserve}, {"dy", dy}, {"dhn", dhn}, {"dcn", dcn},
                          {"dx", dx}, {"dh0", dh0}, {"dc0", dc0},
                          {"d_input_weights", d_input_weights},
                          {"d_output_weights", d_output_weights}, {"d_biases", d_biases}});
    checkLengthsOnHost(lengths);
    const auto layer = rnnLayer(backend, c, true);
    aspen::backend::runRnnBackward(
        *layer, c,
        {forward, dy, dhn, dcn, dx, dh0, dc0, d_input_weights, d_output_weights, d_biases},
        memory);
  });
}

aspen_status aspen_matmul(aspen_backend *backend, aspen_dtype dtype, size_t m, size_t k, size_t n,
                          const void *a, const void *b, void *c, void *stream) {
  return guarded("aspen_matmul", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    const aspen::Type type = typeOf(dtype);
    need(m > 0 && k > 0 && n > 0,
         fmt::format("m, k and n must be at least 1 (got {}, {}, {})", m, k, n));
    const std::size_t es = type.size();
    const std::size_t aBytes = product({m, k, es}, "a"), bBytes = product({k, n, es}, "b"),
                      cBytes = product({m, n, es}, "c");
    needBuffer(a, "a");
    needBuffer(b, "b");
    needBuffer(c, "c");
    checkPlaces(backend, {{"a", a}, {"b", b}, {"c", c}});
    const std::string key = fmt::format("matmul|{}|{}|{}|{}|{}", type.toString(), m, k, n,
                                        backend->deviceName);
    const auto layer = cachedLayer<aspen::backend::SimpleLayer>(
        backend, key, [&] { return aspen::backend::buildMatMul(backend->device, type, m, k, n); });
    std::lock_guard<std::mutex> lock(layer->mutex);
    memory.waitForCaller();
    const auto *pa = static_cast<const std::uint8_t *>(a);
    const auto *pb = static_cast<const std::uint8_t *>(b);
    auto *pc = static_cast<std::uint8_t *>(c);
    layer->engine.writeTensor("a", pa, pa + aBytes);
    layer->engine.writeTensor("b", pb, pb + bBytes);
    layer->engine.run(0);
    layer->engine.readTensor("c", pc, pc + cBytes);
  });
}

aspen_status aspen_nonlinearity_forward(aspen_backend *backend, aspen_nonlinearity kind,
                                        aspen_dtype dtype, size_t rows, size_t n, const void *in,
                                        void *out, void *stream) {
  return guarded("aspen_nonlinearity_forward", [&] {
    const CallPlace place(backend, stream);
    const aspen::backend::Memory &memory = place.memory;
    using aspen::nn::NonLinearityType;
    static const std::map<int, NonLinearityType> kinds = {
        {ASPEN_NONLINEARITY_SIGMOID, NonLinearityType::SIGMOID},
        {ASPEN_NONLINEARITY_HARD_SIGMOID, NonLinearityType::HARD_SIGMOID},
        {ASPEN_NONLINEARITY_RELU, NonLinearityType::RELU},
        {ASPEN_NONLINEARITY_TANH, NonLinearityType::TANH},
        {ASPEN_NONLINEARITY_GELU, NonLinearityType::GELU},
        {ASPEN_NONLINEARITY_GELU_ERF, NonLinearityType::GELU_ERF},
        {ASPEN_NONLINEARITY_SWISH, NonLinearityType::SWISH},
        {ASPEN_NONLINEARITY_SOFTMAX, NonLinearityType::SOFTMAX_STABLE}};
    const auto found = kinds.find(static_cast<int>(kind));
    need(found != kinds.end(),
         fmt::format("kind {} is not an aspen_nonlinearity", static_cast<int>(kind)));
    const aspen::Type type = typeOf(dtype);
    need(rows > 0 && n > 0 && n % rows == 0,
         fmt::format("rows = {} must be at least 1 and divide n = {} (at least 1)", rows, n));
    const std::size_t bytes = product({n, type.size()}, "in and out");
    needBuffer(in, "in");
    needBuffer(out, "out");
    checkPlaces(backend, {{"in", in}, {"out", out}});
    const std::string key = fmt::format("nonlinearity|{}|{}|{}|{}|{}", static_cast<int>(kind),
                                        type.toString(), rows, n / rows, backend->deviceName);
    const auto layer = cachedLayer<aspen::backend::SimpleLayer>(backend, key, [&] {
      return aspen::backend::buildNonLinearity(backend->device, found->second, type, rows,
                                               n / rows);
    });
    std::lock_guard<std::mutex> lock(layer->mutex);
    memory.waitForCaller();
    const auto *p = static_cast<const std::uint8_t *>(in);
    auto *q = static_cast<std::uint8_t *>(out);
    layer->engine.writeTensor("x-in", p, p + bytes);
    layer->engine.run(0);
    layer->engine.readTensor("x", q, q + bytes);
  });
}

} // extern "C"
