// The main function of every test program: Catch2's, except that with ASPEN_TEST_DEVICE=gpu on
// a machine without a GPU it prints the skip marker and runs no test at all (CTest then reports
// each such test as skipped through SKIP_REGULAR_EXPRESSION). Listing tests always works, so that
// test discovery at build time needs no GPU.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "TestDevice.hpp"

#include <cstdio>
#include <cstring>
#include <exception>

namespace {
bool listsTests(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--list", 6) == 0 || std::strcmp(argv[i], "-l") == 0)
      return true;
  return false;
}
} // namespace

int main(int argc, char **argv) {
  try {
    if (!listsTests(argc, argv) && aspen::test::gpuRequested() && aspen::Device::gpuCount() == 0) {
      std::printf("%s: no GPU (ASPEN_TEST_DEVICE=gpu but Device::gpuCount() == 0)\n",
                  aspen::test::kSkipMarker);
      return 0;
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return Catch::Session().run(argc, argv);
}
