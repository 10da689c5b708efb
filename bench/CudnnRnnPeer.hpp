// cuDNN's RNN forward called directly, with its algorithm forced (standard, persistent static,
// persistent static for small H, persistent dynamic): the peers bench_gpu_persistent measures
// Aspen's persistent kernels against where PyTorch would pick one algorithm by its own rules.
// cuDNN is opened at run time (ASPEN_CUDNN_LIBRARY, as libaspen does, else libcudnn.so.9), so
// the benchmark builds and runs where cuDNN is missing and says so; cudnn.h gives the
// declarations only. A configuration cuDNN refuses (an algorithm's limits on type, H or
// batch) is reported with cuDNN's status string, not as a failure.
#pragma once

#include "GpuBenchSupport.hpp"

#include <aspen/HalfFloat.hpp>

#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace aspen::bench::cudnn {

// The cuDNN functions the peer calls, resolved once.
struct Api {
  void *library = nullptr;
  std::string error; // why cuDNN could not be opened, when library is null
#define ASPEN_CUDNN_FUNCTION(name) decltype(&::name) name = nullptr;
  ASPEN_CUDNN_FUNCTION(cudnnCreate)
  ASPEN_CUDNN_FUNCTION(cudnnDestroy)
  ASPEN_CUDNN_FUNCTION(cudnnGetErrorString)
  ASPEN_CUDNN_FUNCTION(cudnnGetVersion)
  ASPEN_CUDNN_FUNCTION(cudnnCreateRNNDescriptor)
  ASPEN_CUDNN_FUNCTION(cudnnDestroyRNNDescriptor)
  ASPEN_CUDNN_FUNCTION(cudnnSetRNNDescriptor_v8)
  ASPEN_CUDNN_FUNCTION(cudnnBuildRNNDynamic)
  ASPEN_CUDNN_FUNCTION(cudnnCreateRNNDataDescriptor)
  ASPEN_CUDNN_FUNCTION(cudnnDestroyRNNDataDescriptor)
  ASPEN_CUDNN_FUNCTION(cudnnSetRNNDataDescriptor)
  ASPEN_CUDNN_FUNCTION(cudnnCreateTensorDescriptor)
  ASPEN_CUDNN_FUNCTION(cudnnDestroyTensorDescriptor)
  ASPEN_CUDNN_FUNCTION(cudnnSetTensorNdDescriptor)
  ASPEN_CUDNN_FUNCTION(cudnnCreateDropoutDescriptor)
  ASPEN_CUDNN_FUNCTION(cudnnDestroyDropoutDescriptor)
  ASPEN_CUDNN_FUNCTION(cudnnDropoutGetStatesSize)
  ASPEN_CUDNN_FUNCTION(cudnnSetDropoutDescriptor)
  ASPEN_CUDNN_FUNCTION(cudnnGetRNNWeightSpaceSize)
  ASPEN_CUDNN_FUNCTION(cudnnGetRNNTempSpaceSizes)
  ASPEN_CUDNN_FUNCTION(cudnnRNNForward)
#undef ASPEN_CUDNN_FUNCTION

  Api() {
    const char *named = std::getenv("ASPEN_CUDNN_LIBRARY");
    const std::string path = named && *named ? named : "libcudnn.so.9";
    library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char *why = dlerror();
      error = path + ": " + (why ? why : "cannot be opened");
      return;
    }
    bool complete = true;
    auto resolve = [&](auto &f, const char *name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(library, name));
      if (!f && complete) {
        complete = false;
        error = path + " has no " + name;
      }
    };
#define ASPEN_CUDNN_RESOLVE(name) resolve(name, #name);
    ASPEN_CUDNN_RESOLVE(cudnnCreate)
    ASPEN_CUDNN_RESOLVE(cudnnDestroy)
    ASPEN_CUDNN_RESOLVE(cudnnGetErrorString)
    ASPEN_CUDNN_RESOLVE(cudnnGetVersion)
    ASPEN_CUDNN_RESOLVE(cudnnCreateRNNDescriptor)
    ASPEN_CUDNN_RESOLVE(cudnnDestroyRNNDescriptor)
    ASPEN_CUDNN_RESOLVE(cudnnSetRNNDescriptor_v8)
    ASPEN_CUDNN_RESOLVE(cudnnBuildRNNDynamic)
    ASPEN_CUDNN_RESOLVE(cudnnCreateRNNDataDescriptor)
    ASPEN_CUDNN_RESOLVE(cudnnDestroyRNNDataDescriptor)
    ASPEN_CUDNN_RESOLVE(cudnnSetRNNDataDescriptor)
    ASPEN_CUDNN_RESOLVE(cudnnCreateTensorDescriptor)
    ASPEN_CUDNN_RESOLVE(cudnnDestroyTensorDescriptor)
    ASPEN_CUDNN_RESOLVE(cudnnSetTensorNdDescriptor)
    ASPEN_CUDNN_RESOLVE(cudnnCreateDropoutDescriptor)
    ASPEN_CUDNN_RESOLVE(cudnnDestroyDropoutDescriptor)
    ASPEN_CUDNN_RESOLVE(cudnnDropoutGetStatesSize)
    ASPEN_CUDNN_RESOLVE(cudnnSetDropoutDescriptor)
    ASPEN_CUDNN_RESOLVE(cudnnGetRNNWeightSpaceSize)
    ASPEN_CUDNN_RESOLVE(cudnnGetRNNTempSpaceSizes)
    ASPEN_CUDNN_RESOLVE(cudnnRNNForward)
#undef ASPEN_CUDNN_RESOLVE
    if (!complete) {
      dlclose(library);
      library = nullptr;
    }
  }
  ~Api() {
    if (library)
      dlclose(library);
  }
  Api(const Api &) = delete;
  Api &operator=(const Api &) = delete;
};

struct Algorithm {
  cudnnRNNAlgo_t algo;
  const char *name;
};
inline const Algorithm kAlgorithms[] = {
    {CUDNN_RNN_ALGO_STANDARD, "standard"},
    {CUDNN_RNN_ALGO_PERSIST_STATIC, "persistent static"},
    {CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H, "persistent static small-H"},
    {CUDNN_RNN_ALGO_PERSIST_DYNAMIC, "persistent dynamic"},
};

// One algorithm's result: ms a forward (median of `reps`, CUDA events), or why cuDNN refused.
struct Timing {
  double ms = -1;
  std::string refused;
};

// The forward (inference) of a one-layer unidirectional LSTM or GRU, I = H, every row T steps,
// zero initial state, weights and input uniform in +-1/sqrt(H) and +-1, with `algorithm`;
// FLOAT computes in float without TF32, HALF in half on tensor cores with float accumulation
// (PyTorch's settings).
inline Timing forward(const Api &api, bool gru, bool half, int H, int B, int T,
                      const Algorithm &algorithm, int reps = 5, int repeats = 5) {
  Timing timing;
  cudnnHandle_t handle = nullptr;
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnRNNDataDescriptor_t xDesc = nullptr, yDesc = nullptr;
  cudnnTensorDescriptor_t hDesc = nullptr;
  cudnnDropoutDescriptor_t dropout = nullptr;
  void *states = nullptr, *weights = nullptr, *work = nullptr, *x = nullptr, *y = nullptr;
  int *lengths = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  // Any cuDNN status but success ends the measurement with its name.
  auto failed = [&](cudnnStatus_t status, const char *call) {
    if (status == CUDNN_STATUS_SUCCESS)
      return false;
    timing.refused = std::string(call) + ": " + api.cudnnGetErrorString(status);
    return true;
  };
  const cudnnDataType_t dataType = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const std::size_t element = half ? 2 : 4;
  do {
    if (failed(api.cudnnCreate(&handle), "cudnnCreate") ||
        failed(api.cudnnCreateDropoutDescriptor(&dropout), "cudnnCreateDropoutDescriptor"))
      break;
    std::size_t stateBytes = 0;
    if (failed(api.cudnnDropoutGetStatesSize(handle, &stateBytes), "cudnnDropoutGetStatesSize"))
      break;
    BENCH_CUDA_CHECK(cudaMalloc(&states, std::max<std::size_t>(stateBytes, 1)));
    if (failed(api.cudnnSetDropoutDescriptor(dropout, handle, 0.0f, states, stateBytes, 0),
               "cudnnSetDropoutDescriptor") ||
        failed(api.cudnnCreateRNNDescriptor(&rnn), "cudnnCreateRNNDescriptor") ||
        failed(api.cudnnSetRNNDescriptor_v8(
                   rnn, algorithm.algo, gru ? CUDNN_GRU : CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
                   CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, dataType, CUDNN_DATA_FLOAT,
                   half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH, H, H, H, 1, dropout,
                   CUDNN_RNN_PADDED_IO_DISABLED),
               "cudnnSetRNNDescriptor_v8"))
      break;
    if (algorithm.algo == CUDNN_RNN_ALGO_PERSIST_DYNAMIC &&
        failed(api.cudnnBuildRNNDynamic(handle, rnn, B), "cudnnBuildRNNDynamic"))
      break;
    const std::vector<int> hostLengths(B, T);
    if (failed(api.cudnnCreateRNNDataDescriptor(&xDesc), "cudnnCreateRNNDataDescriptor") ||
        failed(api.cudnnCreateRNNDataDescriptor(&yDesc), "cudnnCreateRNNDataDescriptor") ||
        failed(api.cudnnSetRNNDataDescriptor(xDesc, dataType,
                                             CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, T, B, H,
                                             hostLengths.data(), nullptr),
               "cudnnSetRNNDataDescriptor") ||
        failed(api.cudnnSetRNNDataDescriptor(yDesc, dataType,
                                             CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, T, B, H,
                                             hostLengths.data(), nullptr),
               "cudnnSetRNNDataDescriptor"))
      break;
    const int dims[3] = {1, B, H}, strides[3] = {B * H, H, 1};
    if (failed(api.cudnnCreateTensorDescriptor(&hDesc), "cudnnCreateTensorDescriptor") ||
        failed(api.cudnnSetTensorNdDescriptor(hDesc, dataType, 3, dims, strides),
               "cudnnSetTensorNdDescriptor"))
      break;
    std::size_t weightBytes = 0, workBytes = 0, reserveBytes = 0;
    if (failed(api.cudnnGetRNNWeightSpaceSize(handle, rnn, &weightBytes),
               "cudnnGetRNNWeightSpaceSize") ||
        failed(api.cudnnGetRNNTempSpaceSizes(handle, rnn, CUDNN_FWD_MODE_INFERENCE, xDesc,
                                             &workBytes, &reserveBytes),
               "cudnnGetRNNTempSpaceSizes"))
      break;
    // Weights and input from the host, uniform in +-1/sqrt(H) and +-1.
    std::mt19937 rng(11);
    auto upload = [&](void **to, std::size_t count, float scale) {
      std::uniform_real_distribution<float> d(-scale, scale);
      std::vector<unsigned char> bytes(count * element);
      for (std::size_t i = 0; i < count; ++i) {
        const float v = d(rng);
        if (half) {
          const aspen::half h(v);
          std::memcpy(bytes.data() + 2 * i, &h, 2);
        } else {
          std::memcpy(bytes.data() + 4 * i, &v, 4);
        }
      }
      BENCH_CUDA_CHECK(cudaMalloc(to, std::max<std::size_t>(bytes.size(), 1)));
      BENCH_CUDA_CHECK(cudaMemcpy(*to, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    };
    upload(&weights, weightBytes / element, 1.0f / std::sqrt(float(H)));
    upload(&x, std::size_t(T) * B * H, 1.0f);
    BENCH_CUDA_CHECK(cudaMalloc(&y, std::size_t(T) * B * H * element));
    BENCH_CUDA_CHECK(cudaMalloc(&work, std::max<std::size_t>(workBytes, 1)));
    BENCH_CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&lengths), B * sizeof(int)));
    BENCH_CUDA_CHECK(
        cudaMemcpy(lengths, hostLengths.data(), B * sizeof(int), cudaMemcpyHostToDevice));
    auto run = [&] {
      return api.cudnnRNNForward(handle, rnn, CUDNN_FWD_MODE_INFERENCE, lengths, xDesc, x,
                                 yDesc, y, hDesc, nullptr, nullptr, hDesc, nullptr, nullptr,
                                 weightBytes, weights, workBytes, work, 0, nullptr);
    };
    if (failed(run(), "cudnnRNNForward"))
      break;
    BENCH_CUDA_CHECK(cudaDeviceSynchronize());
    BENCH_CUDA_CHECK(cudaEventCreate(&start));
    BENCH_CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<double> times;
    for (int r = 0; r < reps && timing.refused.empty(); ++r) {
      BENCH_CUDA_CHECK(cudaEventRecord(start));
      for (int i = 0; i < repeats && timing.refused.empty(); ++i)
        failed(run(), "cudnnRNNForward");
      BENCH_CUDA_CHECK(cudaEventRecord(stop));
      BENCH_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      times.push_back(double(ms) / repeats);
    }
    if (timing.refused.empty()) {
      std::sort(times.begin(), times.end());
      timing.ms = times[times.size() / 2];
    }
  } while (false);
  if (start)
    cudaEventDestroy(start);
  if (stop)
    cudaEventDestroy(stop);
  for (void *p : {states, weights, work, x, y, static_cast<void *>(lengths)})
    if (p)
      cudaFree(p);
  if (hDesc)
    api.cudnnDestroyTensorDescriptor(hDesc);
  if (xDesc)
    api.cudnnDestroyRNNDataDescriptor(xDesc);
  if (yDesc)
    api.cudnnDestroyRNNDataDescriptor(yDesc);
  if (rnn)
    api.cudnnDestroyRNNDescriptor(rnn);
  if (dropout)
    api.cudnnDestroyDropoutDescriptor(dropout);
  if (handle)
    api.cudnnDestroy(handle);
  return timing;
}

} // namespace aspen::bench::cudnn
