// The backend's own errors: a valid request Aspen does not support yet (Unsupported:
// ASPEN_ERROR_UNSUPPORTED) and a CUDA runtime call on the caller's buffers that failed
// (CudaFailure: ASPEN_ERROR_RUNTIME). Every other failure is an aspen::error subclass, mapped
// to a status in Backend.cpp.
#pragma once

#include <stdexcept>

namespace aspen::backend {

struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CudaFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace aspen::backend
