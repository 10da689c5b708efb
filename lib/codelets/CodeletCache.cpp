// Cache directory selection and atomic file writes for compiled codelet libraries.
#include "CodeletCache.hpp"

#include <aspen/Error.hpp>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace aspen::detail {

namespace fs = std::filesystem;

fs::path codeletCacheDir() {
  fs::path dir;
  if (const char *env = std::getenv("ASPEN_CACHE_DIR"); env && *env)
    dir = env;
  else if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    dir = fs::path(xdg) / "aspen";
  else if (const char *home = std::getenv("HOME"); home && *home)
    dir = fs::path(home) / ".cache" / "aspen";
  else
    dir = fs::temp_directory_path() / "aspen-cache";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw codelet_error("cannot create the codelet cache directory '" + dir.string() +
                        "': " + ec.message() + " (set ASPEN_CACHE_DIR to a writable directory)");
  return dir;
}

fs::path uniqueTempPath(const fs::path &dir, std::string_view stem, std::string_view extension) {
  static std::atomic<unsigned> counter{0};
  return dir / (std::string(stem) + "-" + std::to_string(getpid()) + "-" +
                std::to_string(counter++) + ".tmp" + std::string(extension));
}

void writeFileAtomically(const fs::path &target, std::string_view bytes) {
  const fs::path temp = uniqueTempPath(target.parent_path(), target.filename().string(), "");
  {
    std::ofstream out(temp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out)
      throw codelet_error("cannot write '" + temp.string() + "'");
  }
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw codelet_error("cannot write '" + target.string() + "': " + ec.message());
  }
}

std::string readWholeFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw codelet_error("cannot read '" + path.string() + "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

} // namespace aspen::detail
