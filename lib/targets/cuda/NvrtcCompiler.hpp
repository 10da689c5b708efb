// Compiling a CUDA translation unit of codelets with NVRTC (needs the toolkit's NVRTC library at
// run time, never a GPU).
//
// Also compiles Aspen's own CUDA code (the CUDA executor's kernels).
//
// Options: C++20, unannotated functions and namespace-scope variables as device code (codelets
// are plain C++), no FMA contraction (so GPU float results follow the host's operation order),
// __ASPEN_CODELET__ and __POPC__ defined, and the include folders of host codelet compilation
// (HostCompiler: Aspen's headers, Poplar's header names, the codelet file's folder, or when that
// folder is gone the one of the same name under $ASPEN_CODELETS_SOURCE_DIR) plus the
// CUDA toolkit's, and the -I/-D/-U of the library's compile flags. Every nvrtc* call is checked;
// a failure names the call. A compile error raises codelet_error naming the codelet file, with
// NVRTC's log (file:line of the codelet file, through the unit's #line directives).
#pragma once

#include "codelets/CodeletLibrary.hpp"

#include <string>
#include <vector>

namespace aspen::detail {

// What one compile for sm_XX gives: SASS, and the PTX it was assembled from (loadable on later
// architectures).
struct NvrtcImages {
  std::string cubin;
  std::string ptx;
};

// The options of every codelet compile of `library` (the architecture comes separately).
std::vector<std::string> nvrtcCodeletOptions(const CodeletLibrary &library);

// Compiles `unit` (the library's GPU translation unit) for compute capability `cc` (90 =
// sm_90). `codeletFile` names the source in messages.
NvrtcImages nvrtcCompile(const std::string &codeletFile, const std::string &unit,
                         const std::vector<std::string> &options, unsigned cc);

// Compiles Aspen's own CUDA source (not a codelet file: a compile error is an internal_error
// with NVRTC's log) for compute capability `cc`; its cubin.
std::string nvrtcCompileInternal(const std::string &name, const std::string &source,
                                 const std::vector<std::string> &options, unsigned cc);

// "13.0": the NVRTC library's version, part of every cache key.
std::string nvrtcVersion();

// The CUDA toolkit's include and bin folders: $ASPEN_CUDA_INCLUDE_DIR (include only), else
// $CUDA_HOME's, else the toolkit Aspen was built with. The environment serves a machine whose
// toolkit lives elsewhere than the build machine's (a GPU machine running a bundle).
std::string cudaToolkitIncludeDir();
std::string cudaToolkitBinDir();

} // namespace aspen::detail
