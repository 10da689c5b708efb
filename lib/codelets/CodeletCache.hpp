// The on-disk cache of compiled codelet libraries: ASPEN_CACHE_DIR, else $XDG_CACHE_HOME/aspen,
// else $HOME/.cache/aspen. Files appear atomically (written under a unique temporary name and
// renamed), so processes compiling the same codelets concurrently never see partial files.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace aspen::detail {

// The cache directory, created when missing; raises codelet_error when it cannot be created.
std::filesystem::path codeletCacheDir();

// A path in `dir` that no other thread or process uses: stem-pid-counter.extension.
std::filesystem::path uniqueTempPath(const std::filesystem::path &dir, std::string_view stem,
                                     std::string_view extension);

// Writes bytes to `target` through a temporary file and a rename.
void writeFileAtomically(const std::filesystem::path &target, std::string_view bytes);

// The whole file, or raises codelet_error naming the path.
std::string readWholeFile(const std::filesystem::path &path);

} // namespace aspen::detail
