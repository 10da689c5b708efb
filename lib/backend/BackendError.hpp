// The backend's own error: a valid request Aspen does not support yet (ASPEN_ERROR_UNSUPPORTED).
// Every other failure is an aspen::error subclass, mapped to a status in Backend.cpp.
#pragma once

#include <stdexcept>

namespace aspen::backend {

struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace aspen::backend
