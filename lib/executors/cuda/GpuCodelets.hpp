// GPU images of codelet libraries: what the CUDA executor loads for each library a compiled
// graph uses (the kernel contract is in <aspen/detail/GpuAbi.hpp>).
//
// A library codelet family comes precompiled by nvcc at build time (a fatbin next to its .gp,
// holding sm_XX code for ASPEN_CUDA_ARCHITECTURES plus PTX); any other library (user codelet
// files, generated element-wise expressions) is compiled by NVRTC for the card, cached on disk by
// content hash and architecture under ASPEN_CACHE_DIR. Needs the CUDA toolkit at build time only
// (NVRTC at run time), never a GPU: the no-GPU tests compile everything through here.
#pragma once

#include "codelets/CodeletLibrary.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace aspen::detail {

struct GpuCodeletImage {
  enum class Kind : std::uint8_t { Cubin, Ptx, Fatbin };
  Kind kind = Kind::Cubin;
  std::vector<std::uint8_t> bytes; // loadable by cudaLibraryLoadData / cuModuleLoadData
  std::string origin;              // "precompiled <path>", "nvrtc (cached)", "nvrtc" (for logs)
};

// The CUDA translation unit for `library`: its source, a __device__ entry per vertex class and
// the dispatch kernel ASPEN_GPU_KERNEL_NAME.
std::string gpuCodeletSource(const CodeletLibrary &library);

// An image of `library` for compute capability major*10+minor (90 for sm_90). Raises
// codelet_error naming the codelet file, with NVRTC's diagnostics (file:line), when it does not
// compile.
GpuCodeletImage gpuCodeletImage(const CodeletLibrary &library, unsigned computeCapability);

} // namespace aspen::detail
