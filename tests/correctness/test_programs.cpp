// Control programs on the CPU executor: every program type, nested control flow, copies through
// views, compute sets with non-contiguous connections, and independence from thread count and
// worker order. Expected values come from hand calculation or plain host loops.
#include "correctness/ProgramTestUtils.hpp"

#include <aspen/Error.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <sstream>

using namespace aspen;
using namespace aspen::program;
using namespace progtest;

TEST_CASE("Sequence, Copy, Execute, Repeat, Call, WriteUndef and Sync", "[correctness][programs]") {
  Graph g = makeGraph();
  Tensor x = scalar(g, INT, "x");
  ComputeSet inc = g.addComputeSet("inc");
  VertexRef v = g.addVertex(inc, "Increment", {{"x", x}});
  g.setTileMapping(v, 1);
  Function twice = g.addFunction(Sequence({Execute(inc), Execute(inc)}));
  Sequence prog({Copy(constant(g, INT, 5), x), WriteUndef(g.addVariable(INT, {0})), Sync(),
                 Repeat(3, Execute(inc)), Call(twice), Call(twice)});
  Engine e(g, prog);
  e.load(deviceFor(g));
  e.run();
  REQUIRE(readBack<int>(e, "x", 1)[0] == 5 + 3 + 4);
  // Memory keeps its contents between runs: the copy resets x each time.
  e.run();
  REQUIRE(readBack<int>(e, "x", 1)[0] == 12);
}

TEST_CASE("If takes the branch of its predicate, for bool, int and float predicates",
          "[correctness][programs]") {
  for (Type predType : {BOOL, INT, FLOAT}) {
    Graph g = makeGraph();
    Tensor x = scalar(g, INT, "x");
    Tensor pred = scalar(g, predType, "pred");
    ComputeSet inc = g.addComputeSet("inc");
    g.setTileMapping(g.addVertex(inc, "Increment", {{"x", x}}), 0);
    Engine e(g, If(pred, Execute(inc), Copy(constant(g, INT, 100), x)));
    e.load(deviceFor(g));
    for (int truth : {1, 0, 1}) {
      writeIn<int>(e, "x", {7});
      std::vector<std::uint8_t> bytes(predType.size(), 0);
      if (truth) {
        const float half = 0.5f; // a true float that is not 1
        const int three = 3;
        if (predType == FLOAT)
          std::memcpy(bytes.data(), &half, 4);
        else if (predType == INT)
          std::memcpy(bytes.data(), &three, 4);
        else
          bytes[0] = 1;
      }
      e.writeTensor("pred", bytes.data(), bytes.data() + bytes.size());
      e.run();
      INFO("predicate type " << predType << ", truth " << truth);
      REQUIRE(readBack<int>(e, "x", 1)[0] == (truth ? 8 : 100));
    }
  }
}

TEST_CASE("Switch runs the matching case or the default", "[correctness][programs]") {
  Graph g = makeGraph();
  Tensor x = scalar(g, INT, "x");
  Tensor control = scalar(g, INT, "control");
  Switch sw(control, Copy(constant(g, INT, 99), x), "sw");
  sw.add(1, Copy(constant(g, INT, 10), x));
  sw.add(-2, Copy(constant(g, INT, 20), x));
  Engine e(g, sw);
  e.load(deviceFor(g));
  const std::vector<std::pair<int, int>> cases = {{1, 10}, {-2, 20}, {7, 99}, {0, 99}, {2, 99}};
  for (auto [value, expected] : cases) {
    writeIn<int>(e, "control", {value});
    e.run();
    INFO("control " << value);
    REQUIRE(readBack<int>(e, "x", 1)[0] == expected);
  }
}

namespace {
// A graph with a counter (count, more, done) and an incremented y.
struct CounterGraph {
  Graph g = makeGraph();
  Tensor count = scalar(g, INT, "count");
  Tensor y = scalar(g, INT, "y");
  Tensor more = scalar(g, BOOL, "more");
  Tensor done = scalar(g, BOOL, "done");
  ComputeSet step = g.addComputeSet("count");
  ComputeSet incY = g.addComputeSet("incY");
  explicit CounterGraph(int limit) {
    VertexRef c = g.addVertex(step, "Counter", {{"count", count}, {"more", more}, {"done", done}});
    g.setInitialValue(c["limit"], limit);
    g.setTileMapping(c, 2);
    g.setTileMapping(g.addVertex(incY, "Increment", {{"x", y}}), 3);
  }
};
} // namespace

TEST_CASE("RepeatWhileTrue and RepeatWhileFalse run the body while the predicate allows",
          "[correctness][programs]") {
  for (bool whileTrue : {true, false}) {
    CounterGraph cg(5);
    Program loop = whileTrue ? Program(RepeatWhileTrue(Execute(cg.step), cg.more, Execute(cg.incY)))
                             : Program(RepeatWhileFalse(Execute(cg.step), cg.done, Execute(cg.incY)));
    Engine e(cg.g, loop);
    e.load(deviceFor(cg.g));
    e.run();
    // cond runs for count = 1..5; the body after each of count = 1..4.
    REQUIRE(readBack<int>(e, "count", 1)[0] == 5);
    REQUIRE(readBack<int>(e, "y", 1)[0] == 4);
  }
}

TEST_CASE("nested control flow: Repeat inside If inside RepeatWhileTrue", "[correctness][programs]") {
  CounterGraph cg(4);
  Tensor flag = scalar(cg.g, BOOL, "flag");
  Program body = If(flag, Repeat(3, Execute(cg.incY)), Copy(constant(cg.g, INT, -1), cg.y));
  Engine e(cg.g, RepeatWhileTrue(Execute(cg.step), cg.more, body));
  e.load(deviceFor(cg.g));
  for (bool f : {true, false}) {
    writeIn<int>(e, "count", {0});
    writeIn<int>(e, "y", {0});
    const std::uint8_t flagByte = f;
    e.writeTensor("flag", &flagByte, &flagByte + 1);
    e.run();
    // Host model of the same loop.
    int count = 0, y = 0;
    for (;;) {
      ++count;
      if (!(count < 4))
        break;
      if (f)
        for (int i = 0; i < 3; ++i)
          ++y;
      else
        y = -1;
    }
    REQUIRE(readBack<int>(e, "count", 1)[0] == count);
    REQUIRE(readBack<int>(e, "y", 1)[0] == y);
  }
}

TEST_CASE("AbortOnCondition stops the run only when its predicate is true",
          "[correctness][programs]") {
  Graph g = makeGraph();
  Tensor pred = scalar(g, INT, "pred");
  Tensor x = scalar(g, INT, "x");
  Engine e(g, Sequence({AbortOnCondition(pred, "checkPred"), Copy(constant(g, INT, 1), x)}));
  e.load(deviceFor(g));
  writeIn<int>(e, "pred", {0});
  e.run();
  REQUIRE(readBack<int>(e, "x", 1)[0] == 1);
  writeIn<int>(e, "x", {0});
  writeIn<int>(e, "pred", {-4});
  REQUIRE_THROWS_WITH(e.run(), Catch::Contains("checkPred") && Catch::Contains("abort"));
  REQUIRE(readBack<int>(e, "x", 1)[0] == 0);
}

TEST_CASE("copies through views match a host model", "[correctness][programs][copy]") {
  Graph g = makeGraph();
  const std::size_t R = 4, C = 6;
  Tensor m = g.addVariable(FLOAT, {R, C}, "m");
  Tensor t = g.addVariable(FLOAT, {C, R}, "t");
  Tensor v = g.addVariable(FLOAT, {C}, "v");
  Tensor w = g.addVariable(FLOAT, {C}, "w");
  Tensor s = g.addVariable(FLOAT, {1}, "s");
  Tensor u = g.addVariable(FLOAT, {8}, "u");
  for (const Tensor &x : {m, t, v, w, s, u}) {
    g.setTileMapping(x, 1);
  }
  g.setTileMapping(m.slice(0, 2), 0); // across tiles
  for (auto [name, x] : std::vector<std::pair<std::string, Tensor>>{
           {"m", m}, {"t", t}, {"v", v}, {"w", w}, {"s", s}, {"u", u}}) {
    hostAccess(g, name, x);
  }
  Sequence prog({Copy(m.transpose(), t),          // t[j][i] = m[i][j]
                 Copy(v.reverse(0), w),           // w[i] = v[C-1-i]
                 Copy(v.slice(0, 5), v.slice(1, 6)), // overlapping shift right
                 Copy(u.reverse(0), u),           // in-place reversal
                 Copy(s.broadcast(4, 0), u.slice(2, 6)), // broadcast source
                 Copy(m[1].slice(0, 4), m.slice({0, 4}, {4, 5}).flatten())}); // row into column
  Engine e(g, prog);
  e.load(deviceFor(g));
  std::vector<float> hm(R * C), hv(C), hu(8);
  for (std::size_t i = 0; i < hm.size(); ++i)
    hm[i] = float(i) * 1.5f + 1;
  for (std::size_t i = 0; i < C; ++i)
    hv[i] = float(i * i) + 0.25f;
  for (std::size_t i = 0; i < 8; ++i)
    hu[i] = float(i) - 3;
  writeIn(e, "m", hm);
  writeIn(e, "v", hv);
  writeIn(e, "u", hu);
  writeIn<float>(e, "s", {42.5f});
  e.run();

  // The host model, step by step, each copy through a temporary.
  std::vector<float> et(C * R), ew(C);
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t j = 0; j < C; ++j)
      et[j * R + i] = hm[i * C + j];
  for (std::size_t i = 0; i < C; ++i)
    ew[i] = hv[C - 1 - i];
  std::vector<float> ev = hv;
  for (std::size_t i = 1; i < C; ++i)
    ev[i] = hv[i - 1];
  std::vector<float> eu(hu.rbegin(), hu.rend());
  for (std::size_t i = 2; i < 6; ++i)
    eu[i] = 42.5f;
  std::vector<float> em = hm;
  for (std::size_t i = 0; i < 4; ++i)
    em[i * C + 4] = hm[1 * C + i];

  REQUIRE(readBack<float>(e, "t", C * R) == et);
  REQUIRE(readBack<float>(e, "w", C) == ew);
  REQUIRE(readBack<float>(e, "v", C) == ev);
  REQUIRE(readBack<float>(e, "u", 8) == eu);
  REQUIRE(readBack<float>(e, "m", R * C) == em);
}

namespace {
// Many tiles of MultiVertices and in-place vertices, run with the given engine options.
std::vector<float> runManyTiles(const OptionFlags &options) {
  const unsigned tiles = 16;
  const std::size_t perTile = 37;
  Graph g = makeGraph(tiles);
  Tensor in = g.addVariable(FLOAT, {tiles, perTile}, "in");
  Tensor out = g.addVariable(FLOAT, {tiles, perTile}, "out");
  Tensor delta = g.addVariable(FLOAT, {tiles, perTile}, "delta");
  ComputeSet square = g.addComputeSet("square"), mulAdd = g.addComputeSet("mulAdd");
  for (unsigned t = 0; t < tiles; ++t) {
    for (const Tensor &x : {in, out, delta})
      g.setTileMapping(x[t], t);
    g.setTileMapping(g.addVertex(square, "SquareMulti", {{"in", in[t]}, {"out", out[t]}}), t);
    // Two vertices on the tile, in order: the second sees the first's result.
    g.setTileMapping(g.addVertex(mulAdd, "MulAdd", {{"data", out[t].slice(0, 20)},
                                                    {"delta", delta[t].slice(0, 20)}}), t);
    g.setTileMapping(g.addVertex(mulAdd, "MulAdd", {{"data", out[t].slice(20, perTile)},
                                                    {"delta", out[t].slice(0, perTile - 20)}}), t);
  }
  g.createHostWrite("in", in);
  g.createHostWrite("delta", delta);
  g.createHostRead("out-read", out);
  Engine e(g, Sequence({Execute(square), Execute(mulAdd)}), options);
  e.load(deviceFor(g));
  std::vector<float> hin(tiles * perTile), hdelta(tiles * perTile);
  for (std::size_t i = 0; i < hin.size(); ++i) {
    hin[i] = float(i % 97) * 0.37f - 5;
    hdelta[i] = float(i % 13) * 0.11f;
  }
  writeIn(e, "in", hin);
  writeIn(e, "delta", hdelta);
  e.run();
  std::vector<float> result = readBack<float>(e, "out", tiles * perTile);

  // Host model.
  std::vector<float> expected(hin.size());
  for (unsigned t = 0; t < tiles; ++t) {
    float *o = &expected[t * perTile];
    const float *x = &hin[t * perTile], *d = &hdelta[t * perTile];
    for (std::size_t i = 0; i < perTile; ++i)
      o[i] = x[i] * x[i] - float(i);
    for (std::size_t i = 0; i < 20; ++i)
      o[i] = o[i] * 3 + d[i];
    for (std::size_t i = 20; i < perTile; ++i)
      o[i] = o[i] * 3 + o[i - 20];
  }
  REQUIRE(result == expected);
  return result;
}
} // namespace

TEST_CASE("results do not depend on thread count or worker order", "[correctness][programs]") {
  const auto a = runManyTiles({{"aspen.cpu.threads", "1"}, {"aspen.cpu.workerOrder", "forward"}});
  const auto b = runManyTiles({{"aspen.cpu.threads", "4"},
                                {"aspen.cpu.workerOrder", "reverse"},
                                {"aspen.cpu.inlineElements", "0"}});
  REQUIRE(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST_CASE("non-contiguous connections go through temporaries with the same results",
          "[correctness][programs][rearrange]") {
  Graph g = makeGraph();
  const std::size_t R = 5, C = 4;
  Tensor m = g.addVariable(FLOAT, {R, C}, "m");
  Tensor outS = g.addVariable(FLOAT, {R, C}, "outS"); // written column by column (strided)
  Tensor outC = g.addVariable(FLOAT, {R, C}, "outC"); // written contiguously
  Tensor sums = g.addVariable(FLOAT, {3}, "sums");
  for (const Tensor &x : {m, outS, outC, sums})
    g.setTileMapping(x, 0);
  ComputeSet cs = g.addComputeSet("scale");
  for (std::size_t j = 0; j < C; ++j) {
    // Column j of m into column j of outS (both stride C): gathered and scattered.
    VertexRef strided = g.addVertex(cs, "Scale", {{"in", m.transpose()[j]},
                                                  {"out", outS.slice(j, j + 1, 1).flatten()}});
    g.setInitialValue(strided["factor"], 2.0f);
    g.setInitialValue(strided["offset"], 0.5f);
    g.setTileMapping(strided, j % 4);
  }
  VertexRef plain = g.addVertex(cs, "Scale", {{"in", m.flatten()}, {"out", outC.flatten()}});
  g.setInitialValue(plain["factor"], 2.0f);
  g.setInitialValue(plain["offset"], 0.5f);
  g.setTileMapping(plain, 1);
  VertexRef rows = g.addVertex(cs, "SumRows");
  g.connect(rows["rows"], {m[0], m.transpose()[1], m[4].reverse(0)});
  g.connect(rows["sums"], sums);
  g.setTileMapping(rows, 2);
  // The same non-contiguous tensor on two fields of one vertex shares one temporary.
  Tensor shared = g.addVariable(FLOAT, {6}, "shared");
  g.setTileMapping(shared, 3);
  ComputeSet inPlace = g.addComputeSet("inPlace");
  g.setTileMapping(g.addVertex(inPlace, "SameMemory",
                               {{"a", shared.subSample(2, 0)}, {"b", shared.subSample(2, 0)}}), 3);
  for (auto [name, x] : std::vector<std::pair<std::string, Tensor>>{
           {"m", m}, {"outS", outS}, {"outC", outC}, {"sums", sums}, {"shared", shared}}) {
    hostAccess(g, name, x);
  }
  Engine e(g, Sequence({Execute(cs), Execute(inPlace)}));
  e.load(deviceFor(g));
  std::vector<float> hm(R * C);
  for (std::size_t i = 0; i < hm.size(); ++i)
    hm[i] = float(i) * 0.75f - 2;
  writeIn(e, "m", hm);
  writeIn<float>(e, "shared", {1, 2, 3, 4, 5, 6});
  e.run();

  std::vector<float> expected(R * C);
  for (std::size_t i = 0; i < R * C; ++i)
    expected[i] = hm[i] * 2 + 0.5f;
  REQUIRE(readBack<float>(e, "outC", R * C) == expected);
  REQUIRE(readBack<float>(e, "outS", R * C) == expected);
  float s0 = 0, s1 = 0, s2 = 0;
  for (std::size_t j = 0; j < C; ++j)
    s0 += hm[j], s2 += hm[4 * C + (C - 1 - j)];
  for (std::size_t i = 0; i < R; ++i)
    s1 += hm[i * C + 1];
  REQUIRE(readBack<float>(e, "sums", 3) == std::vector<float>{s0, s1, s2});
  REQUIRE(readBack<float>(e, "shared", 6) == std::vector<float>{2, 2, 4, 4, 6, 6});

  std::ostringstream profile;
  e.printProfileSummary(profile);
  // Per run: 4 columns in (4 x 5 floats) and out (4 x 5), SumRows' strided column (5) and
  // reversed row (4) in (m[0] is contiguous), the shared temporary in and out (3 + 3):
  // 40 + 9 + 6 = 55 floats.
  REQUIRE_THAT(profile.str(), Catch::Contains("Rearrangement bytes moved: " + std::to_string(55 * 4)));
}

TEST_CASE("a vertex returning false stops the run with its names", "[correctness][programs]") {
  Graph g = makeGraph();
  Tensor xs = g.addVariable(INT, {3}, "xs");
  g.setTileMapping(xs, 0);
  g.createHostWrite("xs", xs);
  ComputeSet cs = g.addComputeSet("check");
  for (unsigned i = 0; i < 3; ++i)
    g.setTileMapping(g.addVertex(cs, "FailOn13", {{"in", xs[i]}}), i);
  Engine e(g, Execute(cs));
  e.load(deviceFor(g));
  writeIn<int>(e, "xs", {1, 2, 3});
  e.run();
  writeIn<int>(e, "xs", {1, 2, 13});
  REQUIRE_THROWS_AS(e.run(), aspen::runtime_error);
  REQUIRE_THROWS_WITH(e.run(), Catch::Contains("FailOn13") && Catch::Contains("'check'") &&
                                   Catch::Contains("tile 2") && Catch::Contains("vertex"));
  writeIn<int>(e, "xs", {1, 2, 3});
  REQUIRE_NOTHROW(e.run()); // still usable
}

// Several vertices fail at once: the one reported is the lowest of the compute set, whatever order
// threads (and, on a GPU, blocks and warps) run them in, so the message is the same every run and
// on every device. 40 vertices, 10 a tile (on a GPU: single-thread vertices spread over a tile's
// threads); 12, 15 and 35 fail, and 12 (tile 1) is named.
TEST_CASE("of several failing vertices the lowest is reported", "[correctness][programs]") {
  Graph g = makeGraph();
  Tensor xs = g.addVariable(INT, {40}, "xs");
  g.createHostWrite("xs", xs);
  ComputeSet cs = g.addComputeSet("many");
  std::vector<unsigned> ids;
  for (unsigned i = 0; i < 40; ++i) {
    g.setTileMapping(xs[i], i / 10);
    VertexRef v = g.addVertex(cs, "FailOn13", {{"in", xs[i]}});
    g.setTileMapping(v, i / 10);
    ids.push_back(v.getId());
  }
  Engine e(g, Execute(cs));
  e.load(deviceFor(g));
  std::vector<int> values(40, 1);
  values[35] = values[15] = values[12] = 13;
  for (int run = 0; run < 3; ++run) {
    writeIn<int>(e, "xs", values);
    REQUIRE_THROWS_WITH(e.run(), Catch::Contains("vertex " + std::to_string(ids[12]) +
                                                   " (FailOn13) on tile 1 in compute set 'many'"));
  }
  values[12] = 1; // now 15 is the lowest
  writeIn<int>(e, "xs", values);
  REQUIRE_THROWS_WITH(e.run(), Catch::Contains("vertex " + std::to_string(ids[15]) + " (FailOn13)"));
}

TEST_CASE("PrintTensor prints Poplar's format", "[correctness][programs][print]") {
  Graph g = makeGraph();
  auto mapped = [&](Tensor t) {
    g.setTileMapping(t, 0);
    return t;
  };
  Tensor f = mapped(g.addConstant<float>(FLOAT, {2}, {1.0f, 1.5f}));
  Tensor i = mapped(g.addConstant<int>(INT, {3}, {-1, 0, 42}));
  Tensor b = mapped(g.addConstant<bool>(BOOL, {2}, {true, false}));
  Tensor m = mapped(g.addConstant<float>(FLOAT, {2, 2}, {1, 2, 3, 4}));
  Tensor c = mapped(g.addConstant<unsigned>(UNSIGNED_INT, {2, 1, 2}, {1, 2, 3, 4}));
  Tensor s = mapped(g.addConstant(INT, {}, 5));
  Engine e(g, Sequence({PrintTensor("f", f), PrintTensor("i", i), PrintTensor("b", b),
                        PrintTensor("m", m), PrintTensor("c", c), PrintTensor("s", s),
                        PrintTensor("rev", f.reverse(0))}));
  std::ostringstream out;
  e.setPrintStream(out);
  e.load(deviceFor(g));
  e.run();
  REQUIRE(out.str() == "f: [1.0000000 1.5000000]\n"
                       "i: [-1 0 42]\n"
                       "b: [1 0]\n"
                       "m: [\n [1.0000000 2.0000000]\n [3.0000000 4.0000000]\n]\n"
                       "c: [\n [\n  [1 2]\n ]\n [\n  [3 4]\n ]\n]\n"
                       "s: 5\n"
                       "rev: [1.5000000 1.0000000]\n");
}
