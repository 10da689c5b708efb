// ASPEN_CUDA_CHECK(call): every CUDA runtime call of the executor goes through it. A failure
// raises aspen::runtime_error naming the call as written, file:line, the current device ordinal
// and CUDA's description of the error, e.g.
//   cudaMalloc(&arena, bytes) failed at CudaExecutor.cpp:42 on GPU 0: out of memory
#pragma once

#include <aspen/Error.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace aspen::detail {

[[noreturn]] inline void throwCudaError(cudaError_t status, const char *call, const char *file,
                                        int line) {
  int device = -1;
  const bool known = cudaGetDevice(&device) == cudaSuccess;
  cudaGetLastError(); // a failed call must not be reported again by the next one
  throw runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                      " on " + (known ? "GPU " + std::to_string(device) : "no current GPU") +
                      ": " + cudaGetErrorString(status) + " (" + cudaGetErrorName(status) + ")");
}

} // namespace aspen::detail

#define ASPEN_CUDA_CHECK(call)                                                                   \
  do {                                                                                           \
    if (const cudaError_t aspenCudaStatus = (call); aspenCudaStatus != cudaSuccess)              \
      ::aspen::detail::throwCudaError(aspenCudaStatus, #call, __FILE__, __LINE__);               \
  } while (0)
