// The on-disk cache of compiled codelet libraries: ASPEN_CACHE_DIR, else $XDG_CACHE_HOME/aspen,
// else $HOME/.cache/aspen. Files appear atomically (written under a unique temporary name,
// flushed to the disk and renamed), so processes compiling the same codelets concurrently, or a
// process that dies in the middle of a write, never leave a partial entry under its final name.
//
// A directory that cannot be created or written (a read-only file system, a path through a
// file) is replaced, with one warning, by a private one in the temporary directory; a write that
// fails (a full disk, a file size limit) raises codelet_error naming the file and the reason,
// and leaves no temporary file behind. Temporary files older than an hour, left by processes
// that died, are removed the first time a process uses the directory.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace aspen::detail {

// The cache directory, created when missing (see above); raises codelet_error when neither it
// nor the fallback can be used.
std::filesystem::path codeletCacheDir();

// A path in `dir` that no other thread or process uses: stem-pid-counter.tmp.extension.
std::filesystem::path uniqueTempPath(const std::filesystem::path &dir, std::string_view stem,
                                     std::string_view extension);

// Writes bytes to `target` through a temporary file, fsync and a rename; raises codelet_error
// (with the system's reason) and removes the temporary file when any step fails.
void writeFileAtomically(const std::filesystem::path &target, std::string_view bytes);

// The whole file, or raises codelet_error naming the path.
std::string readWholeFile(const std::filesystem::path &path);

} // namespace aspen::detail
