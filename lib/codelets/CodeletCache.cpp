// Cache directory selection and atomic file writes for compiled codelet libraries.
#include "CodeletCache.hpp"
#include "support/Logging.hpp"

#include <aspen/Error.hpp>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace aspen::detail {

namespace fs = std::filesystem;

namespace {

fs::path configuredDir() {
  if (const char *env = std::getenv("ASPEN_CACHE_DIR"); env && *env)
    return env;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "aspen";
  if (const char *home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "aspen";
  std::error_code ec;
  const fs::path temp = fs::temp_directory_path(ec);
  return (ec ? fs::path("/tmp") : temp) / "aspen-cache";
}

// Empty when `dir` exists (or was made) and can be written; else why not.
std::string unusableBecause(const fs::path &dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return ec.message();
  if (!fs::is_directory(dir, ec))
    return "not a directory";
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    return std::strerror(errno);
  return {};
}

// Removes what processes that died left in `dir` and `dir`/tmp: temporary files (".tmp" in the
// name, or anything in tmp/) untouched for an hour. Younger ones may be another process's.
void removeStaleTemporaries(const fs::path &dir) {
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const fs::path &d : {dir, dir / "tmp", dir / "binaries", dir / "gpu"}) {
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      const bool temporary = d.filename() == "tmp" ||
                             it->path().filename().string().find(".tmp") != std::string::npos;
      std::error_code statError;
      if (temporary && it->is_regular_file(statError) &&
          fs::last_write_time(it->path(), statError) < cutoff && !statError) {
        std::error_code removeError;
        fs::remove(it->path(), removeError);
      }
    }
  }
}

std::string systemError(int error) { return std::strerror(error); }

} // namespace

fs::path codeletCacheDir() {
  static std::mutex mutex;
  static std::set<std::string> swept, warned;
  const fs::path dir = configuredDir();
  std::string why = unusableBecause(dir);
  fs::path chosen = dir;
  if (!why.empty()) {
    std::error_code ec;
    const fs::path temp = fs::temp_directory_path(ec);
    const fs::path fallback =
        (ec ? fs::path(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") : temp) /
        ("aspen-cache-" + std::to_string(getuid()));
    const std::string fallbackWhy = ec ? ec.message() : unusableBecause(fallback);
    if (!fallbackWhy.empty())
      throw codelet_error("cannot use the codelet cache directory '" + dir.string() + "' (" + why +
                          ") nor the fallback '" + fallback.string() + "' (" + fallbackWhy +
                          "); set ASPEN_CACHE_DIR to a writable directory");
    chosen = fallback;
    std::lock_guard lock(mutex);
    if (warned.insert(dir.string()).second)
      logger().warn("the codelet cache directory '{}' cannot be used ({}); using '{}' instead "
                    "(set ASPEN_CACHE_DIR to choose another)",
                    dir.string(), why, fallback.string());
  }
  std::lock_guard lock(mutex);
  if (swept.insert(chosen.string()).second)
    removeStaleTemporaries(chosen);
  return chosen;
}

fs::path uniqueTempPath(const fs::path &dir, std::string_view stem, std::string_view extension) {
  static std::atomic<unsigned> counter{0};
  return dir / (std::string(stem) + "-" + std::to_string(getpid()) + "-" +
                std::to_string(counter++) + ".tmp" + std::string(extension));
}

void writeFileAtomically(const fs::path &target, std::string_view bytes) {
  const fs::path temp = uniqueTempPath(target.parent_path(), target.filename().string(), "");
  const auto fail = [&](const std::string &step, int error) {
    ::unlink(temp.c_str());
    throw codelet_error("cannot write the cache file '" + target.string() + "' (" + step +
                        " of '" + temp.string() + "' failed: " + systemError(error) + ")");
  };
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    throw codelet_error("cannot write the cache file '" + target.string() + "' (creating '" +
                        temp.string() + "' failed: " + systemError(error) + ")");
  }
  // Fault injection for the tests (test_cache_processes.cpp): ASPEN_FAULT_CACHE_WRITE=n makes
  // the n-th cache write of the process stop half way and kill the process, as a crash would.
  static const long faultAt = [] {
    const char *v = std::getenv("ASPEN_FAULT_CACHE_WRITE");
    return v ? std::atol(v) : 0L;
  }();
  static std::atomic<long> writes{0};
  if (faultAt > 0 && ++writes == faultAt) {
    [[maybe_unused]] const ssize_t n = ::write(fd, bytes.data(), bytes.size() / 2);
    ::kill(::getpid(), SIGKILL);
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;
      ::close(fd);
      fail("writing", error);
    }
    done += std::size_t(n);
  }
  // On the disk before the rename: a crash after it leaves the whole file, never an empty one.
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    fail("flushing", error);
  }
  if (::close(fd) != 0)
    fail("closing", errno);
  if (::rename(temp.c_str(), target.c_str()) != 0)
    fail("renaming", errno);
}

std::string readWholeFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw codelet_error("cannot read '" + path.string() + "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad())
    throw codelet_error("cannot read '" + path.string() + "'");
  return bytes.str();
}

} // namespace aspen::detail
