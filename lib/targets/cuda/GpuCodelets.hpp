// GPU images of codelet libraries: what the CUDA executor loads for each library a compiled
// graph uses (the kernel contract is in <aspen/detail/GpuAbi.hpp>).
//
// A library codelet family comes precompiled at build time (a fatbin next to its .gp, holding
// sm_XX code for ASPEN_CUDA_ARCHITECTURES plus PTX, compiled by NVRTC through aspen-cc: nvcc has
// no way to treat unannotated codelet methods as device code); any other library (user codelet
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

// The PTX that NVRTC's sm_XX image of `library` was assembled from, compiled and cached with it
// (for checks with ptxas; the fatbin's PTX).
std::string gpuCodeletPtx(const CodeletLibrary &library, unsigned computeCapability);

// The precompiled image of a library codelet family (what aspen-cc --cuda-fatbin writes, at
// build time, for ASPEN_CUDA_ARCHITECTURES): SASS for each compute capability and PTX of the
// last, packed by the toolkit's fatbinary, marked with the library's content hash so that
// gpuCodeletImage never takes a stale one.
std::vector<std::uint8_t> buildGpuFatbin(const CodeletLibrary &library,
                                         const std::vector<unsigned> &computeCapabilities);

// Where gpuCodeletImage looks for the precompiled image of `library`:
// <library codelets folder>/<library>_<family>.fatbin, from the source file
// codelets/<library>/<family>.cpp.
std::string gpuFatbinPath(const CodeletLibrary &library);

} // namespace aspen::detail
