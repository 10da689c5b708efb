// A process that compiles a codelet file through the disk cache and runs one vertex of it, for
// test_cache_processes.cpp: several of these share a cache directory, crash in the middle of a
// write or run out of file space.
//
// Usage: aspen_cache_worker CODELET_FILE [FILE_SIZE_LIMIT_BYTES]
//   The codelet file defines Affine (x = x * 3 + 1). With a limit, files this process and its
//   compilers write are cut at that size (RLIMIT_FSIZE, the write failing as on a full disk).
// Prints "ok <x>" and exits 0 when x = 7 after one run from x = 2; an aspen::error prints
// "aspen error: <message>" and exits 3.
#include "OneVertex.hpp"

#include <aspen/Error.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sys/resource.h>

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  if (argc > 2) {
    std::signal(SIGXFSZ, SIG_IGN); // a write past the limit fails with EFBIG instead
    const rlim_t limit = std::strtoull(argv[2], nullptr, 10);
    const rlimit r{limit, limit};
    if (setrlimit(RLIMIT_FSIZE, &r) != 0)
      return 2;
  }
  return aspen::test::exitCodeOf([&] {
    const float value = aspen::test::runOneVertex(argv[1], "Affine", "x", aspen::FLOAT, 2.0f);
    std::printf("ok %g\n", value);
    return value == 7 ? 0 : 1;
  });
}
