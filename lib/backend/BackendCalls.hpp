// What the C entry points of aspen/backend.h share (Backend.cpp, BackendCnn.cpp): the backend
// object, the call guard that turns exceptions into a status and a message, and the argument
// checks. Internal.
#pragma once

#include <aspen/backend.h>

#include "BackendError.hpp"
#include "BackendMemory.hpp"
#include "LayerCache.hpp"
#include "Layers.hpp"

#include <aspen/Device.hpp>
#include <aspen/Error.hpp>
#include <aspen/OptionFlags.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

struct aspen_backend {
  aspen_backend(aspen::Device d, std::string name, std::size_t capacity, int gpuOrdinal)
      : device(std::move(d)), deviceName(std::move(name)), gpuOrdinal(gpuOrdinal),
        layers(capacity) {}
  aspen::Device device;
  std::string deviceName;
  int gpuOrdinal; // the CUDA device of a GPU backend (its buffers are device memory), else -1
  // Recurrent layers and the simple ones share one bound: each entry is one engine.
  using Layer = std::variant<std::shared_ptr<aspen::backend::RnnLayer>,
                             std::shared_ptr<aspen::backend::SimpleLayer>>;
  aspen::backend::LayerCache<Layer> layers;
  // aspen_backend_set_parallel_for's loop (empty: each engine's own threads) and how many times
  // it was set; a layer's engine takes the loop at its next call (withHostLoop).
  std::mutex hostLoopMutex;
  aspen::HostParallelFor hostLoop;
  std::atomic<std::uint64_t> hostLoopVersion{0};
};

namespace aspen::backend::calls {

// The layer, its engine running on the backend's host loop as last set.
template <class L>
std::shared_ptr<L> withHostLoop(aspen_backend *backend, std::shared_ptr<L> layer) {
  const std::uint64_t version = backend->hostLoopVersion.load(std::memory_order_acquire);
  if (layer->hostLoopVersion.load(std::memory_order_acquire) != version) {
    std::lock_guard lock(backend->hostLoopMutex);
    layer->engine.setHostParallelFor(backend->hostLoop);
    layer->hostLoopVersion.store(backend->hostLoopVersion.load(std::memory_order_relaxed),
                                 std::memory_order_release);
  }
  return layer;
}

// The cached layer of type L under `key` (built by build() on a miss), on the backend's host
// loop.
template <class L, class Build>
std::shared_ptr<L> cachedLayer(aspen_backend *backend, const std::string &key, Build &&build) {
  const auto layer = backend->layers.get(
      key, [&] { return std::make_shared<aspen_backend::Layer>(build()); });
  return withHostLoop(backend, std::get<std::shared_ptr<L>>(*layer));
}

// The message of this thread's last failed call.
std::string &lastErrorSlot();


// A bad argument: ASPEN_ERROR_INVALID_ARGUMENT with the message.
struct BadArgument : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs f, turning what it throws into a status and lastError.
template <class F> aspen_status guarded(const char *function, F &&f) {
  try {
    f();
    lastErrorSlot().clear();
    return ASPEN_OK;
  } catch (const BadArgument &e) {
    lastErrorSlot() = std::string(function) + ": " + e.what();
    return ASPEN_ERROR_INVALID_ARGUMENT;
  } catch (const aspen::backend::Unsupported &e) {
    lastErrorSlot() = e.what();
    return ASPEN_ERROR_UNSUPPORTED;
  } catch (const aspen::backend::CudaFailure &e) {
    lastErrorSlot() = std::string(function) + ": " + e.what();
    return ASPEN_ERROR_RUNTIME;
  } catch (const aspen::invalid_option &e) {
    lastErrorSlot() = std::string(function) + ": " + e.what();
    return ASPEN_ERROR_INVALID_OPTION;
  } catch (const aspen::graph_memory_allocation_error &e) {
    lastErrorSlot() = std::string(function) + ": " + e.what();
    return ASPEN_ERROR_OUT_OF_MEMORY;
  } catch (const std::bad_alloc &) {
    lastErrorSlot() = std::string(function) + ": out of host memory";
    return ASPEN_ERROR_OUT_OF_MEMORY;
  } catch (const aspen::runtime_error &e) {
    lastErrorSlot() = std::string(function) + ": " + e.what();
    return ASPEN_ERROR_RUNTIME;
  } catch (const aspen::error &e) {
    lastErrorSlot() = std::string(function) + ": " + e.what();
    return ASPEN_ERROR_INVALID_ARGUMENT;
  } catch (const std::exception &e) {
    lastErrorSlot() = std::string(function) + ": internal error: " + e.what();
    return ASPEN_ERROR_INTERNAL;
  } catch (...) {
    lastErrorSlot() = std::string(function) + ": internal error: an unknown exception";
    return ASPEN_ERROR_INTERNAL;
  }
}

inline void need(bool condition, const std::string &message) {
  if (!condition)
    throw BadArgument(message);
}

inline void needBuffer(const void *p, const char *name) {
  need(p != nullptr, fmt::format("{} is NULL", name));
}

inline void checkBackend(const aspen_backend *backend) { needBuffer(backend, "backend"); }

// Where a call's buffers are: device memory ordered with `stream` on a GPU backend, host memory
// (and no stream) otherwise.
inline aspen::backend::Memory memoryFor(const aspen_backend *backend, const void *stream) {
  if (backend->gpuOrdinal >= 0)
    return aspen::backend::Memory::device(backend->gpuOrdinal, const_cast<void *>(stream));
  need(stream == nullptr, fmt::format("stream is given, but device '{}' is not a GPU: its "
                                      "buffers are host memory and it takes no CUDA stream",
                                      backend->deviceName));
  return {};
}

// Where a call runs: the backend checked, its buffers' memory (memoryFor) and, for a GPU
// backend, the caller's current CUDA device restored when the call returns.
struct CallPlace {
  CallPlace(const aspen_backend *backend, const void *stream)
      : memory((checkBackend(backend), memoryFor(backend, stream))), keep(memory.onDevice()) {}
  const aspen::backend::Memory memory;
  const aspen::backend::CurrentDeviceGuard keep;
};

// Each buffer (NULL ones skipped) in the memory its backend takes: device memory on a GPU
// backend, host memory on the others.
inline void checkPlaces(const aspen_backend *backend,
                 std::initializer_list<std::pair<const char *, const void *>> buffers) {
  const bool gpu = backend->gpuOrdinal >= 0;
  for (const auto &[name, p] : buffers)
    if (p && aspen::backend::isDeviceMemory(p) != gpu)
      throw BadArgument(
          gpu ? fmt::format("{} is host memory, but device '{}' takes device memory "
                            "(cudaMalloc'd or managed)",
                            name, backend->deviceName)
              : fmt::format("{} is device memory, but device '{}' takes host memory", name,
                            backend->deviceName));
}

inline aspen::Type typeOf(aspen_dtype dtype) {
  switch (dtype) {
  case ASPEN_DTYPE_FLOAT32: return aspen::FLOAT;
  case ASPEN_DTYPE_FLOAT16: return aspen::HALF;
  case ASPEN_DTYPE_FLOAT64:
    throw aspen::backend::Unsupported("dtype ASPEN_DTYPE_FLOAT64: Aspen has no double path; "
                                      "pass float32 or float16 data");
  }
  throw BadArgument(fmt::format("dtype {} is not ASPEN_DTYPE_FLOAT32 (0) or "
                                "ASPEN_DTYPE_FLOAT16 (1)",
                                static_cast<int>(dtype)));
}

// a * b * ..., refused when it does not fit size_t (so no buffer size wraps).
inline std::size_t product(std::initializer_list<std::size_t> factors, const char *what) {
  std::size_t result = 1;
  for (std::size_t f : factors)
    need(!__builtin_mul_overflow(result, f, &result),
         fmt::format("the sizes of {} overflow a size_t", what));
  return result;
}


// A JSON object of options (strings, numbers, booleans) into `options`, and its sorted
// key=value text (part of a cache key). invalid_option naming `what` otherwise.
void parseOptionsJson(const char *text, const char *what, aspen::OptionFlags &options,
                      std::string &sortedText);

// The recurrent calls' checks and layers (Backend.cpp), shared with the stack calls
// (BackendStack.cpp).
// lengths: host memory on every device (the backend reads them to find each row's last step).
void checkLengthsOnHost(const std::uint32_t *lengths);
// A layer's configuration from its descriptor, checked.
aspen::backend::RnnConfig rnnConfig(const aspen_rnn_desc *desc);
// lengths present exactly when the config has variable lengths, each at most T.
void checkLengths(const aspen::backend::RnnConfig &c, const std::uint32_t *lengths);
// The inputs every forward needs (and c0 only for an LSTM), and the lengths.
void checkForwardBuffers(const aspen::backend::RnnConfig &c,
                         const aspen::backend::RnnForwardCall &call);
// A backward's buffers beyond the forward's: reserve, dh0 (and dc0 for an LSTM; dcn and dc0
// NULL for the other cells), the weight gradients all given or all NULL. Returns whether they
// are given.
bool checkBackwardBuffers(const aspen::backend::RnnConfig &c, const void *reserve,
                          const void *dcn, const void *dh0, const void *dc0,
                          const void *dInputWeights, const void *dOutputWeights,
                          const void *dBiases);
// The layer's engine from the backend's cache (compiled on first use): training or inference.
std::shared_ptr<aspen::backend::RnnLayer> rnnLayer(aspen_backend *backend,
                                                   const aspen::backend::RnnConfig &c,
                                                   bool training);

} // namespace aspen::backend::calls
