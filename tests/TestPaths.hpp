// Where the test programs find their codelet sources and put their scratch files. The build
// compiles in its own folders; the environment overrides them, so that a bundle of the test
// programs (scripts/gpu-bundle.sh) runs from any folder on a machine without the source tree:
//   ASPEN_TEST_CODELETS_DIR          tests/codelets (the tests' codelet sources)
//   ASPEN_TEST_BINARY_DIR            a writable folder for dumps and PTX the tests write
//   ASPEN_TEST_PRECOMPILED_CODELETS  the cc_fields.gp that aspen-cc wrote at build time
//   ASPEN_TEST_CACHE_WORKER          the aspen_cache_worker program (test_cache_processes.cpp)
//   ASPEN_TEST_MEMORY_WORKER         the aspen_memory_worker program (test_resource_limits.cpp)
#pragma once

#include <cstdlib>
#include <string>

namespace aspen::test {

inline std::string envOr(const char *name, const char *fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::string(value) : std::string(fallback);
}

#ifdef ASPEN_TEST_CODELETS_DIR
inline std::string codeletsDir() { return envOr("ASPEN_TEST_CODELETS_DIR", ASPEN_TEST_CODELETS_DIR); }

// A file of tests/codelets, by name.
inline std::string codelet(const std::string &name) { return codeletsDir() + "/" + name; }
#endif

#ifdef ASPEN_TEST_BINARY_DIR
inline std::string binaryDir() { return envOr("ASPEN_TEST_BINARY_DIR", ASPEN_TEST_BINARY_DIR); }
#endif

#ifdef ASPEN_TEST_PRECOMPILED_CODELETS
inline std::string precompiledCodelets() {
  return envOr("ASPEN_TEST_PRECOMPILED_CODELETS", ASPEN_TEST_PRECOMPILED_CODELETS);
}
#endif

#ifdef ASPEN_TEST_CACHE_WORKER
inline std::string cacheWorker() { return envOr("ASPEN_TEST_CACHE_WORKER", ASPEN_TEST_CACHE_WORKER); }
#endif

#ifdef ASPEN_TEST_MEMORY_WORKER
inline std::string memoryWorker() {
  return envOr("ASPEN_TEST_MEMORY_WORKER", ASPEN_TEST_MEMORY_WORKER);
}
#endif

} // namespace aspen::test
