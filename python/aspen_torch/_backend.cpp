// aspen_torch._backend: the C backend (aspen/backend.h) for Python. Buffers are passed as
// addresses (torch.Tensor.data_ptr(), 0 for none; on a GPU backend, device addresses and the
// cudaStream_t of torch's current stream): the Python side (aspen_torch/_layers.py)
// owns the tensors, checks their types and layouts and keeps them alive during a call. A
// failed call raises ValueError (bad arguments), NotImplementedError (unsupported), MemoryError
// or RuntimeError with the backend's message.
#include <aspen/backend.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

void check(aspen_status status) {
  if (status == ASPEN_OK)
    return;
  const std::string message = aspen_last_error();
  switch (status) {
  case ASPEN_ERROR_INVALID_ARGUMENT:
  case ASPEN_ERROR_INVALID_OPTION: throw py::value_error(message);
  case ASPEN_ERROR_UNSUPPORTED:
    PyErr_SetString(PyExc_NotImplementedError, message.c_str());
    throw py::error_already_set();
  case ASPEN_ERROR_OUT_OF_MEMORY:
    PyErr_SetString(PyExc_MemoryError, message.c_str());
    throw py::error_already_set();
  default: throw std::runtime_error(message);
  }
}

// Runs a backend call without the GIL (other Python threads go on while Aspen works), then
// raises its error, if any, with the GIL held.
template <class F> void callWithoutGil(F &&call) {
  aspen_status status;
  {
    py::gil_scoped_release release;
    status = call();
  }
  check(status);
}

const void *in(std::uintptr_t p) { return reinterpret_cast<const void *>(p); }
void *out(std::uintptr_t p) { return reinterpret_cast<void *>(p); }

// aspen_rnn_desc from keyword-style fields; the strings live as long as the Desc.
struct Desc {
  std::string cell, dtype;
  std::size_t seqLen, batch, inputSize, hiddenSize;
  bool variableLengths, resetAfter;
  std::optional<std::string> cellOrder, options;
  std::string weightsLayout = "aspen";

  aspen_rnn_desc get() const {
    aspen_rnn_desc d{};
    static const std::pair<const char *, aspen_rnn_cell> cells[] = {
        {"lstm", ASPEN_RNN_LSTM},
        {"gru", ASPEN_RNN_GRU},
        {"rnn_tanh", ASPEN_RNN_TANH},
        {"rnn_relu", ASPEN_RNN_RELU}};
    const auto found = std::find_if(std::begin(cells), std::end(cells),
                                    [&](const auto &c) { return cell == c.first; });
    if (found == std::end(cells))
      throw py::value_error("cell '" + cell + "' is not 'lstm', 'gru', 'rnn_tanh' or 'rnn_relu'");
    if (dtype != "float32" && dtype != "float16")
      throw py::value_error("dtype '" + dtype + "' is not 'float32' or 'float16'");
    d.cell = found->second;
    d.dtype = dtype == "float32" ? ASPEN_DTYPE_FLOAT32 : ASPEN_DTYPE_FLOAT16;
    d.seq_len = seqLen, d.batch = batch, d.input_size = inputSize, d.hidden_size = hiddenSize;
    d.variable_lengths = variableLengths;
    d.gru_reset_after = resetAfter;
    d.cell_order = cellOrder ? cellOrder->c_str() : nullptr;
    d.options = options ? options->c_str() : nullptr;
    if (weightsLayout != "aspen" && weightsLayout != "pytorch")
      throw py::value_error("weights_layout '" + weightsLayout + "' is not 'aspen' or 'pytorch'");
    d.weights_layout = weightsLayout == "aspen" ? ASPEN_WEIGHTS_ASPEN : ASPEN_WEIGHTS_PYTORCH;
    return d;
  }
};

// aspen_rnn_stack_desc: a layer's Desc, the number of layers, the direction ("forward",
// "reverse", "bidirectional") and the dropout between layers.
struct StackDesc {
  Desc layer;
  std::size_t numLayers;
  std::string direction;
  double dropout;
  std::uint64_t seed;
  aspen_rnn_stack_desc get() const {
    aspen_rnn_stack_desc d = aspen_rnn_stack_desc_init();
    d.layer = layer.get();
    d.num_layers = numLayers;
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
      throw py::value_error("direction '" + direction +
                            "' is not 'forward', 'reverse' or 'bidirectional'");
    d.direction = direction == "forward"   ? ASPEN_RNN_FORWARD
                  : direction == "reverse" ? ASPEN_RNN_REVERSE
                                           : ASPEN_RNN_BIDIRECTIONAL;
    d.dropout = dropout;
    d.dropout_seed = seed;
    return d;
  }
};

using Pointers = std::vector<std::uintptr_t>;
std::vector<const void *> ins(const Pointers &p) {
  std::vector<const void *> v;
  for (std::uintptr_t a : p)
    v.push_back(in(a));
  return v;
}
std::vector<void *> outs(const Pointers &p) {
  std::vector<void *> v;
  for (std::uintptr_t a : p)
    v.push_back(out(a));
  return v;
}

aspen_dtype dtypeOf(const std::string &dtype) {
  if (dtype == "float32")
    return ASPEN_DTYPE_FLOAT32;
  if (dtype == "float16")
    return ASPEN_DTYPE_FLOAT16;
  if (dtype == "float64")
    return ASPEN_DTYPE_FLOAT64; // refused by the backend, with its message
  throw py::value_error("dtype '" + dtype + "' is not 'float32', 'float16' or 'float64'");
}

using Pair = std::pair<std::size_t, std::size_t>;

// aspen_conv2d_desc: (height, width) pairs for the kernel, padding, stride and dilation.
struct ConvDesc {
  std::string dtype;
  std::size_t batch, inChannels, height, width, outChannels;
  Pair kernel, padding, stride, dilation;
  std::size_t groups;
  std::optional<std::string> options;
  aspen_conv2d_desc get() const {
    return {dtypeOf(dtype), batch, inChannels, height, width, outChannels, kernel.first,
            kernel.second, padding.first, padding.second, stride.first, stride.second,
            dilation.first, dilation.second, groups, options ? options->c_str() : nullptr};
  }
};

struct PoolDesc {
  std::string dtype, mode;
  std::size_t batch, channels, height, width;
  Pair kernel, padding, stride;
  bool ceilMode, avgIncludePadding, maxGradAll;
  std::optional<std::string> options;
  aspen_pool2d_desc get() const {
    if (mode != "max" && mode != "avg")
      throw py::value_error("mode '" + mode + "' is not 'max' or 'avg'");
    return {dtypeOf(dtype), mode == "max" ? ASPEN_POOL_MAX : ASPEN_POOL_AVG, batch, channels,
            height, width, kernel.first, kernel.second, padding.first, padding.second,
            stride.first, stride.second, ceilMode, avgIncludePadding, maxGradAll,
            options ? options->c_str() : nullptr};
  }
};

struct BatchNormDesc {
  std::string dtype;
  std::size_t batch, channels, height, width;
  double epsilon, momentum;
  aspen_batchnorm_desc get() const {
    return {dtypeOf(dtype), batch, channels, height, width, epsilon, momentum, nullptr};
  }
};

#ifdef _OPENMP
// aspen_backend_set_parallel_for's loop on OpenMP's threads: the calling thread's team, which
// for torch's own thread is torch's intra-op team (the same libgomp), torch.get_num_threads()
// threads that spin between torch's operations and would otherwise compete with Aspen's.
// schedule(static): each thread takes the same contiguous block of the tiles on every call, as
// torch's loops split their ranges, so its part of the activations is still in its core's cache
// from the operation before (dynamic scheduling: batch norm inference between torch calls 10%
// slower, and the torch calls after it too; docs/backend.md).
void openMpFor(void *, std::size_t n, void (*task)(void *, std::size_t), void *taskContext) {
  const long long count = static_cast<long long>(n);
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < count; ++i)
    task(taskContext, static_cast<std::size_t>(i));
}
#endif

const float *inF(std::uintptr_t p) { return reinterpret_cast<const float *>(p); }
float *outF(std::uintptr_t p) { return reinterpret_cast<float *>(p); }

class Backend {
public:
  Backend(const std::string &device, std::size_t maxLayers) {
    check(aspen_backend_create(device.c_str(), maxLayers, &handle_));
  }
  ~Backend() { aspen_backend_destroy(handle_); }

  // Whether the backend's CPU work runs on OpenMP's threads (torch's intra-op team) rather than
  // each Aspen engine's own; false where this module was built without OpenMP.
  bool useOpenMp(bool on) {
#ifdef _OPENMP
    check(aspen_backend_set_parallel_for(handle_, on ? &openMpFor : nullptr, nullptr));
    return on;
#else
    if (on)
      return false;
    check(aspen_backend_set_parallel_for(handle_, nullptr, nullptr));
    return false;
#endif
  }
  Backend(const Backend &) = delete;
  Backend &operator=(const Backend &) = delete;

  std::size_t reserveBytes(const Desc &desc) {
    const aspen_rnn_desc d = desc.get();
    std::size_t bytes = 0;
    callWithoutGil([&] { return aspen_rnn_reserve_bytes(handle_, &d, &bytes); });
    return bytes;
  }

  void forward(const Desc &desc, std::uintptr_t x, std::uintptr_t h0, std::uintptr_t c0,
               std::uintptr_t wi, std::uintptr_t wo, std::uintptr_t b, std::uintptr_t lengths,
               std::uintptr_t y, std::uintptr_t hn, std::uintptr_t cn, std::uintptr_t reserve,
               std::uintptr_t stream) {
    const aspen_rnn_desc d = desc.get();
    callWithoutGil([&] {
      return aspen_rnn_forward(handle_, &d, in(x), in(h0), in(c0), in(wi), in(wo), in(b),
                               static_cast<const std::uint32_t *>(in(lengths)), out(y), out(hn),
                               out(cn), out(reserve), out(stream));
    });
  }

  void backward(const Desc &desc, std::uintptr_t x, std::uintptr_t h0, std::uintptr_t c0,
                std::uintptr_t wi, std::uintptr_t wo, std::uintptr_t b, std::uintptr_t lengths,
                std::uintptr_t y, std::uintptr_t reserve, std::uintptr_t dy, std::uintptr_t dhn,
                std::uintptr_t dcn, std::uintptr_t dx, std::uintptr_t dh0, std::uintptr_t dc0,
                std::uintptr_t dwi, std::uintptr_t dwo, std::uintptr_t db, std::uintptr_t stream) {
    const aspen_rnn_desc d = desc.get();
    callWithoutGil([&] {
      return aspen_rnn_backward(handle_, &d, in(x), in(h0), in(c0), in(wi), in(wo), in(b),
                                static_cast<const std::uint32_t *>(in(lengths)), in(y),
                                in(reserve), in(dy), in(dhn), in(dcn), out(dx), out(dh0), out(dc0),
                                out(dwi), out(dwo), out(db), out(stream));
    });
  }

  // A stack in one call (aspen_rnn_stack_*): the weights as lists of addresses, one a layer
  // and direction; dwi, dwo and db empty for no weight update.
  std::size_t stackReserveBytes(const StackDesc &desc) {
    const aspen_rnn_stack_desc d = desc.get();
    std::size_t bytes = 0;
    callWithoutGil([&] { return aspen_rnn_stack_sizes(handle_, &d, nullptr, &bytes); });
    return bytes;
  }

  void stackForward(const StackDesc &desc, std::uintptr_t x, std::uintptr_t h0,
                    std::uintptr_t c0, const Pointers &wi, const Pointers &wo, const Pointers &b,
                    std::uintptr_t lengths, std::uintptr_t y, std::uintptr_t hn,
                    std::uintptr_t cn, std::uintptr_t reserve, std::uintptr_t stream) {
    const aspen_rnn_stack_desc d = desc.get();
    const auto wis = ins(wi), wos = ins(wo), bs = ins(b);
    callWithoutGil([&] {
      return aspen_rnn_stack_forward(handle_, &d, in(x), in(h0), in(c0), wis.data(), wos.data(),
                                     bs.data(), static_cast<const std::uint32_t *>(in(lengths)),
                                     out(y), out(hn), out(cn), nullptr, out(reserve),
                                     out(stream));
    });
  }

  void stackBackward(const StackDesc &desc, std::uintptr_t x, std::uintptr_t h0,
                     std::uintptr_t c0, const Pointers &wi, const Pointers &wo,
                     const Pointers &b, std::uintptr_t lengths, std::uintptr_t y,
                     std::uintptr_t reserve, std::uintptr_t dy, std::uintptr_t dhn,
                     std::uintptr_t dcn, std::uintptr_t dx, std::uintptr_t dh0,
                     std::uintptr_t dc0, const Pointers &dwi, const Pointers &dwo,
                     const Pointers &db, std::uintptr_t stream) {
    const aspen_rnn_stack_desc d = desc.get();
    const auto wis = ins(wi), wos = ins(wo), bs = ins(b);
    auto dwis = outs(dwi), dwos = outs(dwo), dbs = outs(db);
    callWithoutGil([&] {
      return aspen_rnn_stack_backward(
          handle_, &d, in(x), in(h0), in(c0), wis.data(), wos.data(), bs.data(),
          static_cast<const std::uint32_t *>(in(lengths)), in(y), nullptr, in(reserve), in(dy),
          in(dhn), in(dcn), out(dx), out(dh0), out(dc0), dwis.empty() ? nullptr : dwis.data(),
          dwos.empty() ? nullptr : dwos.data(), dbs.empty() ? nullptr : dbs.data(),
          out(stream));
    });
  }

  py::dict cacheStats() {
    aspen_cache_stats s{};
    check(aspen_backend_cache_stats(handle_, &s));
    py::dict d;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["compiles"] = s.compiles;
    d["compile_failures"] = s.compile_failures;
    d["evictions"] = s.evictions;
    d["entries"] = s.entries;
    d["capacity"] = s.capacity;
    d["compile_seconds"] = s.compile_seconds;
    return d;
  }

  void clearCache() { check(aspen_backend_clear_cache(handle_)); }

  Pair convOutputShape(const ConvDesc &desc) {
    const aspen_conv2d_desc d = desc.get();
    Pair pq;
    check(aspen_conv2d_output_shape(&d, &pq.first, &pq.second));
    return pq;
  }
  void convForward(const ConvDesc &desc, std::uintptr_t x, std::uintptr_t w, std::uintptr_t b,
                   std::uintptr_t y, std::uintptr_t stream) {
    const aspen_conv2d_desc d = desc.get();
    callWithoutGil(
        [&] { return aspen_conv2d_forward(handle_, &d, in(x), in(w), in(b), out(y), out(stream)); });
  }
  void convBackwardData(const ConvDesc &desc, std::uintptr_t w, std::uintptr_t dy,
                        std::uintptr_t dx, std::uintptr_t stream) {
    const aspen_conv2d_desc d = desc.get();
    callWithoutGil([&] {
      return aspen_conv2d_backward_data(handle_, &d, in(w), in(dy), out(dx), out(stream));
    });
  }
  void convBackwardFilter(const ConvDesc &desc, std::uintptr_t x, std::uintptr_t dy,
                          std::uintptr_t dw, std::uintptr_t db, std::uintptr_t stream) {
    const aspen_conv2d_desc d = desc.get();
    callWithoutGil([&] {
      return aspen_conv2d_backward_filter(handle_, &d, in(x), in(dy), out(dw), out(db),
                                          out(stream));
    });
  }
  Pair poolOutputShape(const PoolDesc &desc) {
    const aspen_pool2d_desc d = desc.get();
    Pair pq;
    check(aspen_pool2d_output_shape(&d, &pq.first, &pq.second));
    return pq;
  }
  void poolForward(const PoolDesc &desc, std::uintptr_t x, std::uintptr_t y,
                   std::uintptr_t stream) {
    const aspen_pool2d_desc d = desc.get();
    callWithoutGil([&] { return aspen_pool2d_forward(handle_, &d, in(x), out(y), out(stream)); });
  }
  void poolBackward(const PoolDesc &desc, std::uintptr_t x, std::uintptr_t y, std::uintptr_t dy,
                    std::uintptr_t dx, std::uintptr_t stream) {
    const aspen_pool2d_desc d = desc.get();
    callWithoutGil([&] {
      return aspen_pool2d_backward(handle_, &d, in(x), in(y), in(dy), out(dx), out(stream));
    });
  }
  void batchNormTraining(const BatchNormDesc &desc, std::uintptr_t x, std::uintptr_t gamma,
                         std::uintptr_t beta, std::uintptr_t y, std::uintptr_t runningMean,
                         std::uintptr_t runningVar, std::uintptr_t saveMean,
                         std::uintptr_t saveInvStd, std::uintptr_t stream) {
    const aspen_batchnorm_desc d = desc.get();
    callWithoutGil([&] {
      return aspen_batchnorm_forward_training(handle_, &d, in(x), inF(gamma), inF(beta), out(y),
                                              outF(runningMean), outF(runningVar),
                                              outF(saveMean), outF(saveInvStd), out(stream));
    });
  }
  void batchNormInference(const BatchNormDesc &desc, std::uintptr_t x, std::uintptr_t gamma,
                          std::uintptr_t beta, std::uintptr_t runningMean,
                          std::uintptr_t runningVar, std::uintptr_t y, std::uintptr_t stream) {
    const aspen_batchnorm_desc d = desc.get();
    callWithoutGil([&] {
      return aspen_batchnorm_forward_inference(handle_, &d, in(x), inF(gamma), inF(beta),
                                               inF(runningMean), inF(runningVar), out(y),
                                               out(stream));
    });
  }
  void batchNormBackward(const BatchNormDesc &desc, std::uintptr_t x, std::uintptr_t dy,
                         std::uintptr_t gamma, std::uintptr_t saveMean, std::uintptr_t saveInvStd,
                         std::uintptr_t dx, std::uintptr_t dgamma, std::uintptr_t dbeta,
                         std::uintptr_t stream) {
    const aspen_batchnorm_desc d = desc.get();
    callWithoutGil([&] {
      return aspen_batchnorm_backward(handle_, &d, in(x), in(dy), inF(gamma), inF(saveMean),
                                      inF(saveInvStd), out(dx), outF(dgamma), outF(dbeta),
                                      out(stream));
    });
  }
  void nonLinearityBackward(const std::string &kind, const std::string &dtype, std::size_t rows,
                            std::size_t n, std::uintptr_t act, bool actIsInput, std::uintptr_t dy,
                            std::uintptr_t dx, std::uintptr_t stream) {
    static const std::map<std::string, aspen_nonlinearity> kinds = {
        {"relu", ASPEN_NONLINEARITY_RELU},
        {"sigmoid", ASPEN_NONLINEARITY_SIGMOID},
        {"tanh", ASPEN_NONLINEARITY_TANH},
        {"softmax", ASPEN_NONLINEARITY_SOFTMAX}};
    const auto found = kinds.find(kind);
    if (found == kinds.end())
      throw py::value_error("kind '" + kind + "' is not relu, sigmoid, tanh or softmax");
    const aspen_dtype t = dtypeOf(dtype);
    callWithoutGil([&] {
      return aspen_nonlinearity_backward(handle_, found->second, t, rows, n, in(act), actIsInput,
                                         in(dy), out(dx), out(stream));
    });
  }

private:
  aspen_backend *handle_ = nullptr;
};

} // namespace

PYBIND11_MODULE(_backend, m) {
  m.doc() = "Aspen's layer backend (aspen/backend.h) for aspen_torch";
  py::class_<Desc>(m, "Desc")
      .def(py::init<std::string, std::string, std::size_t, std::size_t, std::size_t, std::size_t,
                    bool, bool, std::optional<std::string>, std::optional<std::string>,
                    std::string>(),
           py::arg("cell"), py::arg("dtype"), py::arg("seq_len"), py::arg("batch"),
           py::arg("input_size"), py::arg("hidden_size"), py::arg("variable_lengths") = false,
           py::arg("reset_after") = false, py::arg("cell_order") = py::none(),
           py::arg("options") = py::none(), py::arg("weights_layout") = "aspen");
  py::class_<StackDesc>(m, "StackDesc")
      .def(py::init<Desc, std::size_t, std::string, double, std::uint64_t>(), py::arg("layer"),
           py::arg("num_layers"), py::arg("direction") = "forward", py::arg("dropout") = 0.0,
           py::arg("seed") = 0);
  py::class_<ConvDesc>(m, "ConvDesc")
      .def(py::init<std::string, std::size_t, std::size_t, std::size_t, std::size_t,
                    std::size_t, Pair, Pair, Pair, Pair, std::size_t,
                    std::optional<std::string>>(),
           py::arg("dtype"), py::arg("batch"), py::arg("in_channels"), py::arg("height"),
           py::arg("width"), py::arg("out_channels"), py::arg("kernel"), py::arg("padding"),
           py::arg("stride"), py::arg("dilation"), py::arg("groups"),
           py::arg("options") = py::none());
  py::class_<PoolDesc>(m, "PoolDesc")
      .def(py::init<std::string, std::string, std::size_t, std::size_t, std::size_t,
                    std::size_t, Pair, Pair, Pair, bool, bool, bool,
                    std::optional<std::string>>(),
           py::arg("dtype"), py::arg("mode"), py::arg("batch"), py::arg("channels"),
           py::arg("height"), py::arg("width"), py::arg("kernel"), py::arg("padding"),
           py::arg("stride"), py::arg("ceil_mode"), py::arg("avg_include_padding"),
           py::arg("max_grad_all") = false, py::arg("options") = py::none());
  py::class_<BatchNormDesc>(m, "BatchNormDesc")
      .def(py::init<std::string, std::size_t, std::size_t, std::size_t, std::size_t, double,
                    double>(),
           py::arg("dtype"), py::arg("batch"), py::arg("channels"), py::arg("height"),
           py::arg("width"), py::arg("epsilon"), py::arg("momentum"));
  py::class_<Backend>(m, "Backend")
      .def("conv2d_output_shape", &Backend::convOutputShape)
      .def("conv2d_forward", &Backend::convForward)
      .def("conv2d_backward_data", &Backend::convBackwardData)
      .def("conv2d_backward_filter", &Backend::convBackwardFilter)
      .def("pool2d_output_shape", &Backend::poolOutputShape)
      .def("pool2d_forward", &Backend::poolForward)
      .def("pool2d_backward", &Backend::poolBackward)
      .def("batchnorm_forward_training", &Backend::batchNormTraining)
      .def("batchnorm_forward_inference", &Backend::batchNormInference)
      .def("batchnorm_backward", &Backend::batchNormBackward)
      .def("nonlinearity_backward", &Backend::nonLinearityBackward)
      .def(py::init<const std::string &, std::size_t>(), py::arg("device") = "cpu",
           py::arg("max_layers") = 0)
      .def("reserve_bytes", &Backend::reserveBytes)
      .def("forward", &Backend::forward)
      .def("backward", &Backend::backward)
      .def("stack_reserve_bytes", &Backend::stackReserveBytes)
      .def("stack_forward", &Backend::stackForward)
      .def("stack_backward", &Backend::stackBackward)
      .def("use_openmp", &Backend::useOpenMp, py::arg("on") = true)
      .def("cache_stats", &Backend::cacheStats)
      .def("clear_cache", &Backend::clearCache);
}
