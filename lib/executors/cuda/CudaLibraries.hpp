// Opening the CUDA libraries the executor uses only sometimes (cuBLASLt, cuDNN, NCCL): they are
// large, so they are opened with dlopen when a graph needs them, never linked.
#pragma once

#include "support/Logging.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

namespace aspen::detail {

// Where to look for library `name`: the loader's path (LD_LIBRARY_PATH, its cache), then
// $VAR/lib and $VAR/lib64 for each environment variable of `homes` that is set, then the
// toolkit Aspen was built with.
inline std::vector<std::string> cudaLibraryCandidates(const std::string &name,
                                                      std::initializer_list<const char *> homes) {
  std::vector<std::string> candidates = {name};
  for (const char *home : homes)
    if (const char *dir = std::getenv(home); dir && *dir)
      for (const char *lib : {"/lib/", "/lib64/"})
        candidates.push_back(std::string(dir) + lib + name);
  candidates.push_back(std::string(ASPEN_CUDA_LIBRARY_DIR) + "/" + name);
  return candidates;
}

// The first of `candidates` that opens (RTLD_NOW | RTLD_LOCAL), logged as `what`'s; null, with
// every failure in `tried`, when none does.
inline void *openFirstLibrary(const std::vector<std::string> &candidates, const char *what,
                              std::string &tried) {
  for (const std::string &candidate : candidates) {
    if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      logger().debug("CUDA executor: {} from {}", what, candidate);
      return handle;
    }
    tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
  }
  return nullptr;
}

// Points `fn` at `symbol` of the library `handle` opened (`library` in messages); the first
// symbol a library lacks is named in `failure` (left as it is once set).
template <class Fn>
void resolveSymbol(void *handle, Fn &fn, const char *symbol, const std::string &library,
                   std::string &failure) {
  fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (!fn && failure.empty())
    failure = library + " has no " + symbol;
}

} // namespace aspen::detail
