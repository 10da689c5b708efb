// A damaged executable stream is reported as serialization_error, never loaded: random byte
// flips, truncations and insertions over a whole serialised executable (codelets included).
#include "TestDevice.hpp"
#include "TestPaths.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>

using namespace aspen;

namespace {
std::string serialisedExample() {
  Graph g(Target::createGeneric(2));
  g.addCodelets(aspen::test::codelet("graph_fields.cpp"));
  Tensor in = g.addConstant<float>(FLOAT, {3}, {1, 2, 3}, "in");
  Tensor out = g.addVariable(FLOAT, {}, "out");
  g.setTileMapping(in, 0);
  g.setTileMapping(out, 1);
  ComputeSet cs = g.addComputeSet("cs");
  VertexRef v = g.addVertex(cs, "FieldKinds", {{"in", in}, {"out", out}});
  g.setFieldSize(v["rows"], 0);
  g.setInitialValue(v["small"], 1);
  g.setInitialValue(v["scale"], 2.0f);
  g.setTileMapping(v, 1);
  g.createHostRead("out", out);
  std::ostringstream bytes;
  compileGraph(g, {program::Execute(cs)}).serialize(bytes);
  return bytes.str();
}

float runSerialised(const std::string &bytes) {
  std::istringstream in(bytes);
  Engine engine(Executable::deserialize(in));
  engine.load(aspen::test::deviceFor(Target::createGeneric(2)));
  engine.run();
  float out = 0;
  engine.readTensor("out", &out, &out + 1);
  return out;
}
} // namespace

TEST_CASE("an executable of another format version is refused with what to do",
          "[correctness][executable]") {
  std::string old = serialisedExample();
  // Magic (8 bytes), then the format version, little-endian.
  std::uint32_t version = 0;
  std::memcpy(&version, old.data() + 8, sizeof version);
  REQUIRE(version >= 10); // 10: gathers and scatters became Copy steps (issue 27)
  for (const std::uint32_t other : {version - 1, version + 1}) {
    std::memcpy(old.data() + 8, &other, sizeof other);
    std::istringstream in(old);
    REQUIRE_THROWS_MATCHES(
        Executable::deserialize(in), serialization_error,
        Catch::Matchers::Message(
            "Executable::deserialize: format version " + std::to_string(other) +
            " is not supported (this build reads version " + std::to_string(version) +
            " only; compile the graph again with this build to make an executable it can load)"));
  }
}

TEST_CASE("damaged executables are rejected before anything is loaded", "[correctness][executable]") {
  const std::string good = serialisedExample();
  REQUIRE(runSerialised(good) == 2.0f * (1 + 2 + 3) + 1); // scale * sum + small, by hand
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = good;
    const std::size_t at = rng() % bad.size();
    switch (trial % 3) {
    case 0:
      bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
      break;
    case 1:
      bad.resize(at);
      break;
    case 2:
      bad.insert(bad.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(rng()));
      break;
    }
    INFO("trial " << trial << " at byte " << at << " of " << good.size());
    std::istringstream in(bad);
    REQUIRE_THROWS_AS(Executable::deserialize(in), serialization_error);
  }
}
