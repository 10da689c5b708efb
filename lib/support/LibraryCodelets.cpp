#include "LibraryCodelets.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>

namespace fs = std::filesystem;

namespace aspen::detail {

namespace {
// The folder of the file this function was loaded from: an Aspen shared library (each carries
// the support layer), or a program that links Aspen's archives (aspen-cc, the tests).
fs::path libraryFolder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&libraryFolder), &info) == 0 || !info.dli_fname)
    return {};
  std::error_code ec;
  const fs::path path = fs::canonical(info.dli_fname, ec);
  return ec ? fs::path() : path.parent_path();
}

// Whether `path` is `folder` or inside it (both canonical).
bool inside(const fs::path &path, const fs::path &folder) {
  if (path.empty())
    return false;
  std::error_code ec;
  const fs::path root = fs::canonical(folder, ec);
  if (ec)
    return false;
  const auto [rootEnd, pathAt] = std::mismatch(root.begin(), root.end(), path.begin(), path.end());
  return rootEnd == root.end();
}
} // namespace

std::string aspenLibraryFolder() { return libraryFolder().string(); }

bool aspenRunsFromBuildTree() { return inside(libraryFolder(), ASPEN_BUILD_ROOT); }

std::string libraryCodeletsDir() {
  if (const char *env = std::getenv("ASPEN_CODELETS_DIR"); env && *env)
    return env;
  if (aspenRunsFromBuildTree())
    return ASPEN_BUILD_CODELETS_DIR;
  return (libraryFolder() / ASPEN_INSTALL_CODELETS_SUBDIR).string();
}

std::vector<std::string> libraryCodeletFiles(std::string_view library) {
  const std::string dir = libraryCodeletsDir();
  const std::string prefix = std::string(library) + "_";
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.starts_with(prefix) && entry.path().extension() == ".gp")
      files.push_back(entry.path().string());
  }
  if (files.empty())
    throw codelet_error(fmt::format(
        "no codelets of library '{}' ({}*.gp) in '{}'; set ASPEN_CODELETS_DIR to the folder "
        "holding Aspen's precompiled codelets",
        library, prefix, dir));
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace aspen::detail
