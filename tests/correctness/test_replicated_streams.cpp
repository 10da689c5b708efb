// Host-to-device streams of a replicated graph in their two ReplicatedStreamModes (Poplar's):
// REPLICATE gives each replica its own stream, connected with the replica's index; BROADCAST
// gives the replicas one stream, connected once (with or without an index), whose every
// transfer each replica receives alike, taken from the host once whatever the connection (a
// circular buffer, a callback).
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>

#include <catch2/catch.hpp>

#include <cstring>

using namespace aspen;

TEST_CASE("a BROADCAST stream gives every replica the same data, taken from the host once, and "
          "REPLICATE streams stay each replica's own",
          "[correctness][replication][streams]") {
  if (aspen::test::skipOnGpuRun())
    return;
  const unsigned R = 3;
  Graph g(Target::createGeneric(2), replication_factor(R));
  Tensor w = g.addVariable(FLOAT, {3}, "w");
  Tensor x = g.addVariable(FLOAT, {3}, "x");
  g.setTileMapping(w, 0);
  g.setTileMapping(x, 1);
  program::Sequence prog;
  prog.add(program::Copy(g.addHostToDeviceFIFO("w", FLOAT, 3, ReplicatedStreamMode::BROADCAST), w));
  prog.add(program::Copy(g.addHostToDeviceFIFO("x", FLOAT, 3), x)); // REPLICATE
  g.createHostRead("wOut", w);
  g.createHostRead("xOut", x);
  Engine e(g, prog);
  e.load(Device::createCPUDevice());
  // A circular buffer of two transfers, connected once for all replicas.
  const float ws[6] = {1, 2, 3, 4, 5, 6};
  e.connectStream("w", const_cast<float *>(ws), const_cast<float *>(ws) + 6);
  float xs[R][3];
  for (unsigned rep = 0; rep < R; ++rep) {
    for (int i = 0; i < 3; ++i)
      xs[rep][i] = float(10 * rep + i);
    e.connectStream("x", rep, xs[rep]);
  }
  try {
    e.connectStream("x", xs[0]);
    FAIL("a REPLICATE stream was connected without a replica");
  } catch (const stream_connection_error &err) {
    CHECK_THAT(err.what(), Catch::Matchers::Contains("each with its own stream "
                                                     "(ReplicatedStreamMode::REPLICATE)"));
  }
  for (unsigned run = 0; run < 3; ++run) {
    e.run();
    for (unsigned rep = 0; rep < R; ++rep) {
      INFO("run " << run << ", replica " << rep);
      float got[3];
      e.readTensor("wOut", rep, got, got + 3);
      for (int i = 0; i < 3; ++i)
        CHECK(got[i] == ws[(run % 2) * 3 + i]); // every replica the same transfer
      e.readTensor("xOut", rep, got, got + 3);
      for (int i = 0; i < 3; ++i)
        CHECK(got[i] == xs[rep][i]);
    }
  }
  // A callback, connected through a replica's index as PopART does (replica 0 only): called
  // once a transfer, not once a replica.
  unsigned calls = 0;
  e.connectStreamToCallback("w", 0u, [&](void *p) {
    const float v[3] = {float(100 + calls), 0.5f, -1};
    ++calls;
    std::memcpy(p, v, sizeof v);
  });
  e.run();
  e.run();
  CHECK(calls == 2);
  for (unsigned rep = 0; rep < R; ++rep) {
    float got[3];
    e.readTensor("wOut", rep, got, got + 3);
    CHECK(got[0] == 101);
    CHECK(got[2] == -1);
  }
  try {
    e.connectStream("w", 3u, const_cast<float *>(ws));
    FAIL("a BROADCAST stream was connected through a replica the engine does not run");
  } catch (const stream_connection_error &err) {
    CHECK_THAT(err.what(), Catch::Matchers::Contains("replica 3 is not one this engine runs"));
  }
}
