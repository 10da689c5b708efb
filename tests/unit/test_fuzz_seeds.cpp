// The deserialize fuzzer (fuzz/fuzz_deserialize.cpp) starts from its seed corpus: seeds of an
// older executable format are refused at the version check, and the fuzzer then never reaches
// the reader behind it. So the seeds must be of the current format, deserialise whole and
// serialise to the same bytes (fuzz/make_deserialize_seeds.cpp makes them again when the format
// changes).
#include "compiler/CompiledGraph.hpp"

#include <aspen/Executable.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

TEST_CASE("the deserialize fuzzer's seeds are of the executable format and deserialise",
          "[unit][serialize]") {
  namespace fs = std::filesystem;
  const fs::path corpus =
      fs::path(ASPEN_TEST_CODELETS_DIR).parent_path().parent_path() / "fuzz/corpus/deserialize";
  REQUIRE(fs::is_directory(corpus));
  unsigned raw = 0;
  for (const auto &entry : fs::directory_iterator(corpus)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 4 || name.substr(name.size() - 4) != "-raw")
      continue;
    INFO(name);
    std::ifstream file(entry.path(), std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    // The harness passes a seed whose first byte is odd as it is: the stream follows it.
    REQUIRE(bytes.size() > 13);
    CHECK((bytes[0] & 1) == 1);
    CHECK(bytes.substr(1, 8) == "ASPENEXE");
    std::uint32_t version = 0;
    std::memcpy(&version, bytes.data() + 9, sizeof version);
    CHECK(version == aspen::detail::kExecutableFormatVersion);
    // As the harness requires of any stream that deserialises: it serialises to the same bytes.
    std::istringstream in(bytes.substr(1));
    std::ostringstream again;
    CHECK_NOTHROW(aspen::Executable::deserialize(in).serialize(again));
    CHECK(again.str() == bytes.substr(1));
    ++raw;
  }
  CHECK(raw >= 3);
}
