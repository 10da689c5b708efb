// Running out of host memory, in a process of its own with a bounded address space
// (aspen_memory_worker, tests/process/memory_worker.cpp): building a graph, compiling one and
// loading one each end in graph_memory_allocation_error naming what was being done, and the
// process then builds, compiles and runs a small graph correctly. (Tile memory: see
// test_engine_errors.cpp; the disk cache: test_cache_processes.cpp; time limits:
// test_time_limit.cpp; GPU memory: tests/gpu.) Not under AddressSanitizer or ThreadSanitizer,
// which reserve terabytes of address space for their shadow memory.
#include "TestDevice.hpp"
#include "TestPaths.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <string>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ASPEN_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ASPEN_TEST_SANITIZED 1
#endif
#endif

TEST_CASE("running out of host memory ends in clear errors and the process carries on",
          "[correctness][limits]") {
  if (aspen::test::skipOnGpuRun())
    return;
#ifdef ASPEN_TEST_SANITIZED
  SUCCEED("skipped under a sanitizer");
  return;
#endif
  const std::string command = aspen::test::memoryWorker() + " '" +
                              aspen::test::codelet("time_limit.cpp") + "' " +
                              std::to_string(std::size_t(384) << 20) + " 2>&1";
  FILE *pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string output;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe))
    output.append(buffer, n);
  const int status = pclose(pipe);
  INFO(output);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(output.find("build: ") != std::string::npos);
  CHECK(output.find("out of host memory") != std::string::npos);
  CHECK(output.find("the graph is unchanged") != std::string::npos);
  CHECK(output.find("compile: ") != std::string::npos);
  CHECK(output.find("load: cannot allocate") != std::string::npos);
  CHECK(output.find("\nok\n") != std::string::npos);
}
