// The GPU translation unit of a codelet library (the device counterpart of the host wrapper in
// lib/codelets/WrapperGenerator.hpp).
//
// It contains the codelet source under `#line 1 "<source name>"` (so NVRTC's diagnostics point
// into the user's file), then for vertex class k a `__device__ int aspen_gpu_vertex_<k>(const
// FieldDesc *, unsigned workerId)` in the class's scope that binds each field in place
// (GpuWrapper.hpp) and calls compute(), the dispatch kernel ASPEN_GPU_KERNEL_NAME of GpuAbi.hpp
// switching on the vertex record's type (= k, the index in CodeletLibrary::vertexTypes()), and
// the device string kGpuHashMarker + content hash that identifies a precompiled image.
// The unit is compiled with unannotated functions as device code (NVRTC's -default-device).
#pragma once

#include "codelets/CodeletLibrary.hpp"

#include <string>

namespace aspen::detail {

// Precedes the library's content hash in every image compiled from generateGpuWrapper.
inline constexpr const char *kGpuHashMarker = "aspen-codelets-content-hash:";

std::string generateGpuWrapper(const CodeletLibrary &library);

} // namespace aspen::detail
