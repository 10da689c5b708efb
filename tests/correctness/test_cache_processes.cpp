// The codelet disk cache (lib/codelets/CodeletCache.cpp) shared by processes, in trouble:
// several processes compiling the same codelets at once, a process killed in the middle of each
// of its cache writes, a damaged entry, a directory that cannot be used and a disk that fills.
// Each case runs aspen_cache_worker (tests/process/cache_worker.cpp) as separate processes on a
// fresh cache directory, then checks what is left there: only whole entries that load (checked
// with CodeletLibrary::loadPrecompiled), no temporary file, and a later process that succeeds.
#include "TestDevice.hpp"
#include "TestPaths.hpp"
#include "codelets/CodeletLibrary.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const char *const kSource = R"(#include <aspen/Vertex.hpp>
using namespace aspen;
class Affine : public Vertex {
public:
  InOut<float> x;
  bool compute() {
    *x = *x * 3 + 1;
    return true;
  }
};
)";

struct Result {
  int exitCode = -1; // -1 when killed by a signal
  int signal = 0;
  std::string output;
};

// Runs `command` through the shell and collects its output (stdout and stderr).
Result shell(const std::string &command) {
  Result r;
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe);
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe))
    r.output.append(buffer, n);
  const int status = pclose(pipe);
  if (WIFEXITED(status))
    r.exitCode = WEXITSTATUS(status);
  // sh reports a child killed by signal s as exit code 128 + s.
  if (r.exitCode > 128) {
    r.signal = r.exitCode - 128;
    r.exitCode = -1;
  }
  return r;
}

std::string quoted(const fs::path &p) { return "'" + p.string() + "'"; }

struct Scratch {
  fs::path root, cache, codelets;
  Scratch() {
    std::random_device rd;
    root = fs::temp_directory_path() / ("aspen-cache-test-" + std::to_string(rd()));
    cache = root / "cache";
    codelets = root / "affine.cpp";
    fs::create_directories(root);
    std::ofstream(codelets) << kSource;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  Result worker(const std::string &env = "", const std::string &limit = "") const {
    return shell(env + " ASPEN_CACHE_DIR=" + quoted(cache) + " " + aspen::test::cacheWorker() +
                 " " + quoted(codelets) + (limit.empty() ? "" : " " + limit));
  }
  // The cache's finished entries (compiled libraries, named by their hash).
  std::vector<fs::path> entries() const {
    std::vector<fs::path> found;
    if (fs::exists(cache))
      for (const auto &e : fs::directory_iterator(cache))
        if (e.is_regular_file() && e.path().extension() == ".so" &&
            e.path().filename().string().find(".tmp") == std::string::npos)
          found.push_back(e.path());
    return found;
  }
  std::vector<fs::path> temporaries() const {
    std::vector<fs::path> found;
    if (fs::exists(cache))
      for (const auto &e : fs::recursive_directory_iterator(cache))
        if (e.is_regular_file() &&
            (e.path().filename().string().find(".tmp") != std::string::npos ||
             e.path().parent_path().filename() == "tmp"))
          found.push_back(e.path());
    return found;
  }
  // Every entry is a whole codelet library.
  void checkEntriesLoad() const {
    for (const fs::path &p : entries()) {
      INFO(p);
      CHECK_NOTHROW(aspen::detail::CodeletLibrary::loadPrecompiled(p.string()));
    }
  }
};

void requireOk(const Result &r) {
  INFO(r.output);
  REQUIRE(r.exitCode == 0);
  REQUIRE(r.output.find("ok 7") != std::string::npos);
}

} // namespace

TEST_CASE("processes compiling the same codelets at once share one cache entry",
          "[correctness][cache]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Scratch s;
  const Result r = shell("for i in 1 2 3 4; do ASPEN_CACHE_DIR=" + quoted(s.cache) + " " +
                         aspen::test::cacheWorker() + " " + quoted(s.codelets) + " > " +
                         quoted(s.root / "out") + "$i 2>&1 & done; wait");
  REQUIRE(r.exitCode == 0);
  for (int i = 1; i <= 4; ++i) {
    std::ifstream in(s.root / ("out" + std::to_string(i)));
    const std::string out{std::istreambuf_iterator<char>(in), {}};
    INFO("process " << i << ": " << out);
    CHECK(out.find("ok 7") != std::string::npos);
  }
  CHECK(s.entries().size() == 1);
  CHECK(s.temporaries().empty());
  s.checkEntriesLoad();
  requireOk(s.worker()); // and a later process uses the entry
  CHECK(s.entries().size() == 1);
}

TEST_CASE("a process killed in the middle of a cache write leaves no entry behind",
          "[correctness][cache]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Scratch s;
  // Crash at the 1st, 2nd, ... cache write of a compile, until one compile has no more writes.
  int crashes = 0;
  for (int write = 1; write <= 10; ++write) {
    const Result r = s.worker("ASPEN_FAULT_CACHE_WRITE=" + std::to_string(write));
    INFO("crash at write " << write << ": " << r.output);
    if (r.exitCode == 0) {
      CHECK(r.output.find("ok 7") != std::string::npos);
      break;
    }
    REQUIRE(r.signal == 9); // killed half way through that write
    ++crashes;
    CHECK(s.entries().empty());
    s.checkEntriesLoad();
  }
  CHECK(crashes >= 2); // the source for the preprocessor and the generated wrapper
  // What the crashes left: partial temporary files, never an entry. Aged past an hour, they are
  // removed by the next process that uses the directory.
  const std::vector<fs::path> left = s.temporaries();
  CHECK(!left.empty());
  for (const fs::path &p : left)
    fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(2));
  requireOk(s.worker());
  CHECK(s.temporaries().empty());
  CHECK(s.entries().size() == 1);
  s.checkEntriesLoad();
}

TEST_CASE("a damaged cache entry is compiled again", "[correctness][cache]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Scratch s;
  requireOk(s.worker());
  REQUIRE(s.entries().size() == 1);
  const fs::path entry = s.entries()[0];
  const auto size = fs::file_size(entry);
  for (const std::uintmax_t cut : {size / 2, std::uintmax_t(100), std::uintmax_t(0)}) {
    INFO("cut to " << cut);
    fs::resize_file(entry, cut);
    const Result r = s.worker();
    requireOk(r);
    CHECK(r.output.find("cannot be used, so they are compiled again") != std::string::npos);
    CHECK(fs::file_size(entry) == size);
  }
  s.checkEntriesLoad();
}

TEST_CASE("a cache directory that cannot be used is replaced by a private one",
          "[correctness][cache]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Scratch s;
  const fs::path file = s.root / "a-file";
  std::ofstream(file) << "not a directory";
  // ASPEN_CACHE_DIR under a regular file: the fallback in TMPDIR serves, with a warning.
  const fs::path tmp = s.root / "tmp";
  fs::create_directories(tmp);
  const Result r = shell("TMPDIR=" + quoted(tmp) + " ASPEN_CACHE_DIR=" + quoted(file / "cache") +
                         " " + aspen::test::cacheWorker() + " " + quoted(s.codelets));
  requireOk(r);
  CHECK(r.output.find("cannot be used") != std::string::npos);
  CHECK(r.output.find((file / "cache").string()) != std::string::npos);
  CHECK(!fs::is_empty(tmp)); // aspen-cache-<uid> with the entry
  // Neither usable: an aspen error naming both and what to do.
  const Result none =
      shell("TMPDIR=" + quoted(file) + " ASPEN_CACHE_DIR=" + quoted(file / "cache") + " " +
            aspen::test::cacheWorker() + " " + quoted(s.codelets));
  INFO(none.output);
  CHECK(none.exitCode == 3);
  CHECK(none.output.find("cannot use the codelet cache directory") != std::string::npos);
  CHECK(none.output.find("set ASPEN_CACHE_DIR to a writable directory") != std::string::npos);
}

TEST_CASE("a full disk gives a clear error and leaves nothing behind", "[correctness][cache]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Scratch s;
  // RLIMIT_FSIZE makes a write past the limit fail with EFBIG, as ENOSPC does on a full disk:
  // at 100 bytes Aspen's own first write fails, at 20,000 the preprocessor's output does.
  for (const char *limit : {"100", "20000"}) {
    INFO("limit " << limit);
    const Result r = s.worker("", limit);
    INFO(r.output);
    CHECK(r.exitCode == 3);
    CHECK(r.output.find("aspen error:") != std::string::npos);
    CHECK(r.output.find("File too large") != std::string::npos);
    CHECK(s.entries().empty());
    CHECK(s.temporaries().empty());
  }
  requireOk(s.worker()); // with room again, the same compile succeeds
  CHECK(s.entries().size() == 1);
}
