// Liveness and memory layout on small programs of copies: which buffers are always live, the live
// range of each reusable one (steps numbered by hand in run order) and the offsets that first-fit
// placement gives. Every variable is 256 floats (1024 bytes, a multiple of the 64-byte alignment),
// so offsets are whole multiples of 1024 above the always-live and scratch region.
#include "TestPaths.hpp"
#include "compiler/CompiledGraph.hpp"
#include "core/TensorRegions.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

using namespace aspen;
using namespace aspen::program;
using aspen::detail::Buffer;
using aspen::detail::CompiledGraph;

namespace {

constexpr std::uint64_t kBytes = 1024;

struct LivenessGraph {
  Graph g;
  explicit LivenessGraph(std::size_t bytesPerTile = 0)
      : g(bytesPerTile ? Target::createGeneric(2, 6, bytesPerTile) : Target::createGeneric(2)) {}

  Tensor var(const std::string &name) {
    Tensor t = g.addVariable(FLOAT, {256}, name);
    g.setTileMapping(t, 0);
    return t;
  }
  Tensor input(const std::string &name) {
    Tensor t = var(name);
    g.createHostWrite(name, t);
    return t;
  }
  Tensor output(const std::string &name) {
    Tensor t = var(name);
    g.createHostRead(name, t);
    return t;
  }
};

struct Compiled {
  Executable exe;
  const CompiledGraph &graph() const { return exe.compiled(); }
  // Variable v is buffer v.
  const Buffer &buffer(const Tensor &t) const {
    return graph().buffers.at(aspen::detail::variablesOf(t).at(0));
  }
};

Compiled compile(const LivenessGraph &lg, std::vector<Program> programs) {
  return {compileGraph(lg.g, programs)};
}

void requireRange(const Buffer &b, std::uint64_t begin, std::uint64_t end) {
  INFO("buffer " << b.name);
  REQUIRE_FALSE(b.alwaysLive);
  REQUIRE(b.liveBegin == begin);
  REQUIRE(b.liveEnd == end);
}

bool shareBytes(const Buffer &a, const Buffer &b) {
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

} // namespace

TEST_CASE("Liveness: a chain of temporaries needs two buffers, not one each",
          "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), t1 = lg.var("t1"), t2 = lg.var("t2"), t3 = lg.var("t3");
  Tensor out = lg.output("out");
  // steps: 0 in->t1, 1 t1->t2, 2 t2->t3, 3 t3->out
  const Compiled c = compile(lg, {Sequence({Copy(in, t1), Copy(t1, t2), Copy(t2, t3),
                                            Copy(t3, out)})});
  REQUIRE(c.buffer(in).alwaysLive);
  REQUIRE(c.buffer(out).alwaysLive);
  REQUIRE(c.buffer(in).offset == 0);
  REQUIRE(c.buffer(out).offset == kBytes);
  requireRange(c.buffer(t1), 0, 1);
  requireRange(c.buffer(t2), 1, 2);
  requireRange(c.buffer(t3), 2, 3);
  // Always live 2 KB, no scratch; then t1 at 0, t2 next to it, t3 where t1 was.
  REQUIRE(c.graph().alwaysLiveBytes == 2 * kBytes);
  REQUIRE(c.buffer(t1).offset == 2 * kBytes);
  REQUIRE(c.buffer(t2).offset == 3 * kBytes);
  REQUIRE(c.buffer(t3).offset == 2 * kBytes);
  REQUIRE(c.graph().arenaBytes == 4 * kBytes);
  REQUIRE(c.graph().bufferBytes == 5 * kBytes);
}

TEST_CASE("Liveness: a tile's budget holds the bytes live at once, not all variables",
          "[unit][liveness]") {
  // in, out and two of the three temporaries at once: 4096 bytes of 5120 on tile 0.
  for (std::size_t budget : {4096, 4095}) {
    LivenessGraph lg(budget);
    Tensor in = lg.input("in"), t1 = lg.var("t1"), t2 = lg.var("t2"), t3 = lg.var("t3");
    Tensor out = lg.output("out");
    const std::vector<Program> programs = {
        Sequence({Copy(in, t1), Copy(t1, t2), Copy(t2, t3), Copy(t3, out)})};
    INFO("budget " << budget);
    if (budget == 4096) {
      const Compiled c{compileGraph(lg.g, programs)};
      REQUIRE(c.graph().tileBytes[0] == 5 * kBytes);
      REQUIRE(c.graph().tilePeakBytes[0] == 4 * kBytes);
      REQUIRE(c.graph().tilePeakBytes[1] == 0);
    } else {
      REQUIRE_THROWS_WITH(compileGraph(lg.g, programs),
                          Catch::Contains("tile 0") && Catch::Contains("4096 bytes"));
    }
  }
}

TEST_CASE("Liveness: a value read in a loop is live for the whole loop", "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), x = lg.var("x"), y = lg.var("y"), z = lg.var("z");
  Tensor out = lg.output("out");
  // steps: 0 in->x, loop [1, 2] { 1 x->y, 2 y->out }, 3 in->z, 4 z->out
  const Compiled c = compile(lg, {Sequence({Copy(in, x),
                                            Repeat(3, Sequence({Copy(x, y), Copy(y, out)})),
                                            Copy(in, z), Copy(z, out)})});
  requireRange(c.buffer(x), 0, 2); // accessed at 0 and 1, widened to the loop
  requireRange(c.buffer(y), 1, 2); // written and read in each iteration: no widening
  requireRange(c.buffer(z), 3, 4);
  REQUIRE_FALSE(shareBytes(c.buffer(x), c.buffer(y)));
  REQUIRE(c.buffer(z).offset == c.buffer(x).offset);
  REQUIRE(c.graph().arenaBytes == 4 * kBytes);
}

TEST_CASE("Liveness: a value crossing the loop's back edge keeps its bytes", "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), x = lg.var("x"), w = lg.var("w"), v = lg.var("v");
  Tensor out = lg.output("out");
  // steps: 0 in->x, loop [1, 5] { 1 x->out, 2 in->w, 3 w->x, 4 in->v, 5 v->out }
  const Compiled c = compile(
      lg, {Sequence({Copy(in, x), Repeat(2, Sequence({Copy(x, out), Copy(in, w), Copy(w, x),
                                                      Copy(in, v), Copy(v, out)}))})});
  requireRange(c.buffer(x), 0, 5); // last access at 3, but iteration 2 reads what 3 wrote
  requireRange(c.buffer(w), 2, 3);
  requireRange(c.buffer(v), 4, 5);
  REQUIRE_FALSE(shareBytes(c.buffer(x), c.buffer(v)));
  REQUIRE_FALSE(shareBytes(c.buffer(x), c.buffer(w)));
  REQUIRE(c.buffer(v).offset == c.buffer(w).offset);
}

TEST_CASE("Liveness: RepeatWhile widens values its condition reads", "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), x = lg.var("x"), y = lg.var("y");
  Tensor pred = lg.g.addVariable(BOOL, {}, "pred");
  lg.g.setTileMapping(pred, 0);
  Tensor out = lg.output("out");
  // steps: 0 in->x, loop [1, 3] { cond: 1 x->out; body: 2 in->y, 3 y->out }
  const Compiled c = compile(
      lg, {Sequence({Copy(in, x), RepeatWhileTrue(Copy(x, out), pred,
                                                  Sequence({Copy(in, y), Copy(y, out)}))})});
  REQUIRE(c.buffer(pred).alwaysLive); // predicates are read by the executor's control flow
  requireRange(c.buffer(x), 0, 3);
  requireRange(c.buffer(y), 2, 3);
}

TEST_CASE("Liveness: a value written on one branch only is always live", "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), x = lg.var("x"), y = lg.var("y");
  Tensor pred = lg.g.addVariable(BOOL, {}, "pred");
  lg.g.setTileMapping(pred, 0);
  Tensor out = lg.output("out");
  SECTION("one branch writes: the other keeps the value of the previous run") {
    // steps: 0 in->x (true), 1 in->y (false), 2 x->out
    const Compiled c =
        compile(lg, {Sequence({If(pred, Copy(in, x), Copy(in, y)), Copy(x, out)})});
    REQUIRE(c.buffer(x).alwaysLive);
    requireRange(c.buffer(y), 1, 1);
  }
  SECTION("both branches write") {
    // steps: 0 in->x (true), 1 out->x (false), 2 x->out
    const Compiled c =
        compile(lg, {Sequence({If(pred, Copy(in, x), Copy(out, x)), Copy(x, out)})});
    requireRange(c.buffer(x), 0, 2);
  }
}

TEST_CASE("Liveness: values read before their program writes them are always live",
          "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), x = lg.var("x"), half = lg.var("half"), y = lg.var("y");
  Tensor out = lg.output("out");
  // steps: 0 x->out, 1 in->x: x carries a value from one run to the next
  // 2 in[0:128]->half[0:128], 3 half->out: half is read where nothing wrote it
  // 4 in->y[0:128], 5 in->y[128:256], 6 y->out: written completely in two parts
  const Compiled c = compile(
      lg, {Sequence({Copy(x, out), Copy(in, x), Copy(in.slice(0, 128), half.slice(0, 128)),
                     Copy(half, out), Copy(in.slice(0, 128), y.slice(0, 128)),
                     Copy(in.slice(128, 256), y.slice(128, 256)), Copy(y, out)})});
  REQUIRE(c.buffer(x).alwaysLive);
  REQUIRE(c.buffer(half).alwaysLive);
  requireRange(c.buffer(y), 4, 6);
}

TEST_CASE("Liveness: a strided write covering the variable kills it", "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), x = lg.var("x");
  Tensor out = lg.output("out");
  Tensor transposed = x.reshape({16, 16}).dimShuffle({1, 0});
  const Compiled c = compile(lg, {Sequence({Copy(in.reshape({16, 16}), transposed),
                                            Copy(x, out)})});
  requireRange(c.buffer(x), 0, 1);
}

TEST_CASE("Liveness: WriteUndef ends a value's life", "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), x = lg.var("x");
  Tensor out = lg.output("out");
  Program loop = Repeat(2, Sequence({Copy(x, out), Copy(in, x)}));
  SECTION("without it, the first iteration reads the previous run's value") {
    REQUIRE(compile(lg, {loop}).buffer(x).alwaysLive);
  }
  SECTION("with it, nothing before the program is read") {
    // steps: 0 WriteUndef, loop [1, 2] { 1 x->out, 2 in->x }
    requireRange(compile(lg, {Sequence({WriteUndef(x), loop})}).buffer(x), 1, 2);
  }
}

TEST_CASE("Liveness: calls are inlined in step order", "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), t = lg.var("t"), u = lg.var("u");
  Tensor out = lg.output("out");
  Function f = lg.g.addFunction(Sequence({Copy(in, t), Copy(t, out)}));
  // steps: 0 in->t, 1 t->out, 2 in->u, 3 u->out, 4 in->t, 5 t->out
  const Compiled c =
      compile(lg, {Sequence({Call(f), Copy(in, u), Copy(u, out), Call(f)})});
  requireRange(c.buffer(t), 0, 5);
  requireRange(c.buffer(u), 2, 3);
  REQUIRE_FALSE(shareBytes(c.buffer(t), c.buffer(u)));
}

TEST_CASE("Liveness: programs share bytes; a variable of two programs is always live",
          "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), x = lg.var("x"), y = lg.var("y"), both = lg.var("both");
  Tensor out = lg.output("out");
  const Compiled c =
      compile(lg, {Sequence({Copy(in, x), Copy(x, out), Copy(in, both), Copy(both, out)}),
                   Sequence({Copy(in, y), Copy(y, out), Copy(in, both), Copy(both, out)})});
  REQUIRE(c.buffer(both).alwaysLive);
  const Buffer &bx = c.buffer(x), &by = c.buffer(y);
  requireRange(bx, 0, 1);
  requireRange(by, 0, 1);
  REQUIRE(bx.liveProgram == 0);
  REQUIRE(by.liveProgram == 1);
  REQUIRE(bx.offset == by.offset); // programs never run at the same time
  REQUIRE(c.graph().arenaBytes == 4 * kBytes);
}

TEST_CASE("Liveness: host handles, constants and unused variables", "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), x = lg.var("x"), unused = lg.var("unused");
  Tensor out = lg.output("out");
  lg.g.createHostRead("x", x);
  Tensor k = lg.g.addConstant(FLOAT, {256}, 1.0f, "k");
  lg.g.setTileMapping(k, 0);
  const Compiled c = compile(lg, {Sequence({Copy(in, x), Copy(k, out)})});
  REQUIRE(c.buffer(x).alwaysLive); // written before any read, but the host reads it
  REQUIRE(c.buffer(k).alwaysLive);
  const Buffer &u = c.buffer(unused);
  REQUIRE_FALSE(u.alwaysLive);
  REQUIRE(u.liveBegin > u.liveEnd);
  REQUIRE(u.offset == 4 * kBytes); // holds nothing, but still has bytes in the arena
  REQUIRE(c.graph().arenaBytes == 5 * kBytes);
}

TEST_CASE("Liveness: live ranges survive serialisation", "[unit][liveness]") {
  LivenessGraph lg;
  Tensor in = lg.input("in"), t = lg.var("t");
  Tensor out = lg.output("out");
  const Compiled c = compile(lg, {Sequence({Copy(in, out), Copy(in, t), Copy(t, out)})});
  std::stringstream stream;
  c.exe.serialize(stream);
  const Compiled back{Executable::deserialize(stream)};
  requireRange(back.buffer(t), 1, 2);
  REQUIRE(back.buffer(t).offset == c.buffer(t).offset);
  REQUIRE(back.graph().alwaysLiveBytes == c.graph().alwaysLiveBytes);
  REQUIRE(back.graph().bufferBytes == c.graph().bufferBytes);
}

TEST_CASE("ASPEN_COMPILER_DUMP writes each pass's result to a folder", "[unit][liveness]") {
  const std::filesystem::path folder =
      std::filesystem::path(aspen::test::binaryDir()) / "liveness-dump";
  std::filesystem::remove_all(folder);
  LivenessGraph lg;
  Tensor in = lg.input("in"), t = lg.var("t");
  Tensor out = lg.output("out");
  ::setenv("ASPEN_COMPILER_DUMP", folder.c_str(), 1);
  compile(lg, {Sequence({Copy(in, t), Copy(t, out)})});
  ::unsetenv("ASPEN_COMPILER_DUMP");
  const std::vector<std::string> passes = {
      "01-verify.txt",        "02-lower-programs.txt", "03-lower-compute-sets.txt",
      "04-lower-kernels.txt", "05-lower-copies.txt",   "06-caches.txt",
      "07-liveness.txt",      "08-memory-layout.txt",  "09-simplify-steps.txt",
      "10-cache-invalidations.txt"};
  for (const std::string &name : passes) {
    INFO(name);
    REQUIRE(std::filesystem::exists(folder / name));
  }
  auto text = [&](const std::string &name) {
    std::ifstream file(folder / name);
    return std::string(std::istreambuf_iterator<char>(file), {});
  };
  REQUIRE_THAT(text("07-liveness.txt"), Catch::StartsWith("== compiler pass 7 'liveness': ") &&
                                            Catch::Contains("name: \"t\", bytes: 1024, offset: 0, "
                                                            "alwaysLive: false, liveProgram: 0, "
                                                            "liveBegin: 0, liveEnd: 1, written: false}"));
  // Offsets appear after memory layout: in, out, then t above them.
  REQUIRE_THAT(text("08-memory-layout.txt"),
               Catch::Contains("name: \"t\", bytes: 1024, offset: 2048, alwaysLive: false"));
  // Steps exist from program lowering on; liveness and memory layout work on them.
  REQUIRE_THAT(text("02-lower-programs.txt"), Catch::Contains("program 0:\n  Sequence #"));
  // The program tree is walked by verification, then once more to lower it to steps, and never
  // after: every later pass works on the steps.
  REQUIRE_THAT(text("01-verify.txt"), Catch::Contains("program tree walks so far: 1 =="));
  for (std::size_t p = 1; p < passes.size(); ++p) {
    INFO(passes[p]);
    REQUIRE_THAT(text(passes[p]), Catch::Contains("program tree walks so far: 2 =="));
  }
}
