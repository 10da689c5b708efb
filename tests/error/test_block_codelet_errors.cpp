// Misuse of block codelets and program::Launch: the user error naming the compute set, the
// vertex class and the rule, raised when the program is compiled (or built), and a graph that
// stays usable afterwards.
#include "TestPaths.hpp"
#include "correctness/test_fill_harness.hpp"

#include <aspen/BlockCodelets.hpp>
#include <aspen/Engine.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
using dmtest::requireError;

TEST_CASE("Launch and Execute reject compute sets that do not fit them, and bad shapes",
          "[error][block]") {
  Graph g(Target::createGeneric(4));
  g.addCodelets(test::codelet("block_codelets.cpp"));
  Tensor in = g.addVariable(FLOAT, {64}, "in"), out = g.addVariable(FLOAT, {1}, "out");
  Tensor x = g.addVariable(FLOAT, {}, "x");
  for (const Tensor &t : {in, out, x})
    g.setTileMapping(t, 0);
  auto blockSet = [&](const std::string &name) {
    ComputeSet cs = g.addComputeSet(name);
    VertexRef v = g.addVertex(cs, "bc::BlockSum", {{"in", in}, {"out", out}});
    g.setTileMapping(v, 0);
    return cs;
  };
  const ComputeSet sum = blockSet("sum");
  ComputeSet plain = g.addComputeSet("plain");
  g.setTileMapping(g.addVertex(plain, "bc::Plain", {{"out", x}}), 0);
  ComputeSet two = blockSet("two");
  g.setTileMapping(g.addVertex(two, "bc::Plain", {{"out", x}}), 0);
  const ComputeSet empty = g.addComputeSet("empty");

  requireError<control_program_error>([&] { program::Launch(sum, {0, 32, 128}); },
                                      {"Launch", "'sum'", "at least one block"});
  requireError<control_program_error>([&] { program::Launch(ComputeSet(), {}); },
                                      {"Launch", "invalid"});
  requireError<control_program_error>([&] { Engine(g, program::Launch(plain, {1, 32, 0})); },
                                      {"Launch", "'plain'", "exactly one vertex", "BlockVertex",
                                       "bc::Plain"});
  requireError<control_program_error>([&] { Engine(g, program::Launch(two, {1, 32, 0})); },
                                      {"'two'", "exactly one vertex", "holds 2 vertices"});
  requireError<control_program_error>([&] { Engine(g, program::Launch(empty, {1, 32, 0})); },
                                      {"'empty'", "holds 0 vertices"});
  requireError<control_program_error>([&] { Engine(g, program::Execute(sum, "run")); },
                                      {"Execute 'run'", "'sum'", "block codelet",
                                       "bc::BlockSum", "program::Launch"});
  requireError<control_program_error>([&] { Engine(g, program::Launch(sum, {1, 2048, 0})); },
                                      {"'sum'", "2048 threads", "1024"});
  requireError<control_program_error>(
      [&] { Engine(g, program::Launch(sum, {1, 32, 300000})); },
      {"'sum'", "300000 bytes of shared memory", "232448"});
  // A GPU target's own limits.
  Graph gpu(Target::createModel("h200"));
  gpu.addCodelets(test::codelet("block_codelets.cpp"));
  Tensor gin = gpu.addVariable(FLOAT, {64}, "in"), gout = gpu.addVariable(FLOAT, {1}, "out");
  gpu.setTileMapping(gin, 0);
  gpu.setTileMapping(gout, 0);
  ComputeSet gcs = gpu.addComputeSet("gsum");
  gpu.setTileMapping(gpu.addVertex(gcs, "bc::BlockSum", {{"in", gin}, {"out", gout}}), 0);
  requireError<control_program_error>(
      [&] { Engine(gpu, program::Launch(gcs, {1, 256, 232449})); },
      {"'gsum'", "232449 bytes", "232448", "'h200'"});

  // Still usable: the good launch compiles.
  Engine ok(g, program::Launch(sum, {2, 32, 32 * sizeof(float)}));
  SUCCEED();
}

TEST_CASE("co-residency and declared block limits are checked when the program is compiled",
          "[error][block][coresident]") {
  Graph g(Target::createGeneric(4));
  g.addCodelets(test::codelet("block_codelets.cpp"));
  Tensor ring = g.addVariable(FLOAT, {64}, "ring"), out = g.addVariable(UNSIGNED_INT, {256}, "o");
  g.setTileMapping(ring, 0);
  g.setTileMapping(out, 0);
  ComputeSet rings = g.addComputeSet("rings");
  VertexRef rv = g.addVertex(rings, "bc::BlockRing", {{"ring", ring}});
  g.setInitialValue(rv["steps"], 1u);
  g.setTileMapping(rv, 0);
  ComputeSet bounded = g.addComputeSet("bounded");
  g.setTileMapping(g.addVertex(bounded, "bc::BoundedBlock", {{"out", out}}), 0);

  // A codelet whose blocks wait for each other, launched without the promise.
  requireError<control_program_error>([&] { Engine(g, program::Launch(rings, {4, 8, 0})); },
                                      {"'rings'", "bc::BlockRing", "declares coResident",
                                       "LaunchShape::coResident"});
  requireError<control_program_error>(
      [&] { Engine(g, program::Launch(bounded, {1, 128, 0})); },
      {"'bounded'", "128 threads", "the 64 block codelet", "bc::BoundedBlock",
       "maxThreadsPerBlock"});

  // On a GPU target, more blocks than fit at once by threads or by shared memory.
  Graph gpu(Target::createModel("h200"));
  gpu.addCodelets(test::codelet("block_codelets.cpp"));
  Tensor gring = gpu.addVariable(FLOAT, {64}, "ring");
  gpu.setTileMapping(gring, 0);
  ComputeSet grings = gpu.addComputeSet("grings");
  VertexRef gv = gpu.addVertex(grings, "bc::BlockRing", {{"ring", gring}});
  gpu.setInitialValue(gv["steps"], 1u);
  gpu.setTileMapping(gv, 0);
  LaunchShape tooMany{132 * 8 + 1, 256, 0};
  tooMany.coResident = true;
  requireError<control_program_error>(
      [&] { Engine(gpu, program::Launch(grings, tooMany)); },
      {"'grings'", "1057 blocks cannot all be resident", "'h200'", "132 multiprocessors",
       "8 blocks each of 256 threads", "1056 in all"});
  LaunchShape bigShared{133, 32, 120 * 1024};
  bigShared.coResident = true;
  requireError<control_program_error>(
      [&] { Engine(gpu, program::Launch(grings, bigShared)); },
      {"133 blocks", "hold 1 blocks each", "122880 bytes of shared memory", "132 in all"});

  // Still usable: the launches within the limits compile.
  LaunchShape fits{132 * 8, 256, 0};
  fits.coResident = true;
  Engine gpuOk(gpu, program::Launch(grings, fits));
  LaunchShape shape{4, 8, 0};
  shape.coResident = true;
  Engine ok(g, {program::Launch(rings, shape), program::Launch(bounded, {4, 64, 0})});
  SUCCEED();
}
