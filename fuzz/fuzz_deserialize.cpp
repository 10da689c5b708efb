// Executable::deserialize on arbitrary streams. The checksum would turn almost every mutation
// away at the door, so by default the harness frames the fuzzer's bytes as a well-formed stream
// (magic, version, body, the body's checksum): that is what a damaged or hostile file with a
// correct checksum looks like, and it reaches the body's reader and validate(). An input whose
// first byte is odd is passed as it is, for the header's checks. A stream that deserialises must
// serialise again to an equal stream.
//
// Codelet libraries in a stream are shared objects that the reader writes to the cache and
// loads: an executable is code, to be trusted like a shared library. The seeds carry none.
#include "FuzzCommon.hpp"

#include "codelets/ContentHash.hpp"
#include "compiler/CompiledGraph.hpp"

#include <aspen/Engine.hpp>

#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace {

std::string frame(std::string_view body) {
  std::string s("ASPENEXE", 8);
  const std::uint32_t version = aspen::detail::kExecutableFormatVersion;
  s.append(reinterpret_cast<const char *>(&version), sizeof version);
  s.append(body);
  const std::uint64_t checksum = aspen::detail::ContentHash().add(body).value();
  s.append(reinterpret_cast<const char *>(&checksum), sizeof checksum);
  return s;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Libraries the reader loads go to a cache of this process's own.
  static std::string dir =
      (std::filesystem::temp_directory_path() / ("aspen-fuzz-" + std::to_string(::getpid())))
          .string();
  setenv("ASPEN_CACHE_DIR", dir.c_str(), 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace aspen;
  if (size == 0)
    return 0;
  const std::string_view rest(reinterpret_cast<const char *>(data) + 1, size - 1);
  const std::string stream = (data[0] & 1) ? std::string(rest) : frame(rest);
  std::istringstream in(stream);
  std::optional<Executable> exe;
  if (!fuzz::refusedOrDone([&] { exe.emplace(Executable::deserialize(in)); }))
    return 0;
  std::ostringstream out;
  exe->serialize(out);
  fuzz::check(out.str() == stream, "a deserialised executable serialises to a different stream");
  return 0;
}
