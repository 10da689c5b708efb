// Replicated graphs in one process (issue 33, its first part): Graph(target,
// replication_factor(r)) compiles one program for r replicas, and an Engine runs the replicas it
// is given (target.firstRuntimeReplica, target.numberRuntimeReplica), each with its own memory,
// at once on host threads. Each replica's result is checked against the same program run alone
// in a graph of one replica (bit for bit) and against the host's value; its replication index
// constant is its index in the whole graph. Host access and streams go to one replica, or, for
// writeTensor, to all; the ambiguous forms are refused by name.
#include "TestDevice.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Executable.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Expr.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

using namespace aspen;
namespace expr = aspen::ops::expr;

namespace {

constexpr std::size_t kN = 6;

// y = x * 3 + (float) replicaIndex, and the index itself, in a graph replicated r ways (r 0:
// the plain Graph(target), which has one replica and index 0). x comes from a host write or,
// with `streams`, from a host-to-device FIFO, and y goes to one the other way as well.
struct Program {
  Graph graph;
  program::Sequence prog;
  explicit Program(unsigned r, bool streams = false)
      : graph(r ? Graph(Target::createGeneric(2), replication_factor(r))
                : Graph(Target::createGeneric(2))) {
    ops::addCodelets(graph);
    Tensor x = graph.addVariable(FLOAT, {kN}, "x");
    graph.setTileMapping(x.slice(0, kN / 2), 0);
    graph.setTileMapping(x.slice(kN / 2, kN), 1);
    Tensor index = graph.addReplicationIndexConstant("replicaIndex");
    graph.setTileMapping(index, 1);
    if (streams)
      prog.add(program::Copy(graph.addHostToDeviceFIFO("in", FLOAT, kN), x));
    Tensor y = ops::map(graph, expr::_1 * 3.0f + expr::Cast(expr::_2, FLOAT),
                        {x, index.expand({0}).broadcast(unsigned(kN), 0)}, prog, "y");
    if (streams)
      prog.add(program::Copy(y, graph.addDeviceToHostFIFO("out", FLOAT, kN)));
    graph.createHostWrite("x", x);
    graph.createHostRead("y", y);
    graph.createHostRead("index", index);
  }
};

std::vector<float> inputOf(unsigned replica) {
  std::vector<float> x(kN);
  for (std::size_t i = 0; i < kN; ++i)
    x[i] = 0.25f * float(i) - 1.5f + 10.0f * float(replica);
  return x;
}

// x * 3 + index: exact in float for inputOf's values (multiples of 1/4 below 2^20).
std::vector<float> expected(const std::vector<float> &x, unsigned index) {
  std::vector<float> y(kN);
  for (std::size_t i = 0; i < kN; ++i)
    y[i] = x[i] * 3.0f + float(index);
  return y;
}

std::vector<float> readY(Engine &e, unsigned replica) {
  std::vector<float> y(kN);
  e.readTensor("y", replica, y.data(), y.data() + kN);
  return y;
}

unsigned readIndex(Engine &e, unsigned replica) {
  unsigned index = ~0u;
  e.readTensor("index", replica, &index, &index + 1);
  return index;
}

} // namespace

TEST_CASE("a replicated graph knows its factor, and refuses a factor of 0",
          "[correctness][replication]") {
  Graph plain(Target::createGeneric(2));
  CHECK(plain.getReplicationFactor() == 1);
  Graph four(Target::createGeneric(2), replication_factor(4));
  CHECK(four.getReplicationFactor() == 4);
  CHECK(four.createVirtualGraph(1, 2).getReplicationFactor() == 4);
  CHECK(unsigned(replication_factor(7)) == 7);
  try {
    Graph zero(Target::createGeneric(2), replication_factor(0));
    FAIL("replication_factor(0) was accepted");
  } catch (const invalid_option &e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("replication_factor must be at least 1"));
  }
}

TEST_CASE("each replica runs the program on its own copy of every tensor, with its own index",
          "[correctness][replication]") {
  if (aspen::test::skipOnGpuRun()) // replicas run on the CPU executor (one a GPU)
    return;
  Program p(3);
  Engine e(p.graph, p.prog);
  e.load(Device::createCPUDevice());
  for (unsigned r = 0; r < 3; ++r) {
    const std::vector<float> x = inputOf(r);
    e.writeTensor("x", r, x.data(), x.data() + kN);
  }
  for (unsigned run = 0; run < 2; ++run) {
    e.run();
    for (unsigned r = 0; r < 3; ++r) {
      INFO("replica " << r << ", run " << run);
      CHECK(readIndex(e, r) == r);
      CHECK(readY(e, r) == expected(inputOf(r), r));
    }
  }
  // writeTensor without a replica writes every replica's copy.
  const std::vector<float> same = inputOf(5);
  e.writeTensor("x", same.data(), same.data() + kN);
  e.run();
  for (unsigned r = 0; r < 3; ++r)
    CHECK(readY(e, r) == expected(same, r));
  // A graph of one replica is what it was: index 0, readTensor without a replica.
  Program plain(0);
  Engine one(plain.graph, plain.prog);
  one.load(Device::createCPUDevice());
  one.writeTensor("x", same.data(), same.data() + kN);
  one.run();
  std::vector<float> y(kN);
  one.readTensor("y", y.data(), y.data() + kN);
  CHECK(y == expected(same, 0));
  CHECK(readIndex(one, 0) == 0);
}

TEST_CASE("target.firstRuntimeReplica and numberRuntimeReplica choose the replicas an engine "
          "runs, and out-of-range ones are refused by name",
          "[correctness][replication]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Program p(4);
  Engine e(p.graph, p.prog,
           {{"target.firstRuntimeReplica", "1"}, {"target.numberRuntimeReplica", "2"}});
  e.load(Device::createCPUDevice());
  for (unsigned r = 1; r <= 2; ++r) {
    const std::vector<float> x = inputOf(r);
    e.writeTensor("x", r, x.data(), x.data() + kN);
  }
  e.run();
  for (unsigned r = 1; r <= 2; ++r) {
    CHECK(readIndex(e, r) == r); // its index in the whole graph
    CHECK(readY(e, r) == expected(inputOf(r), r));
  }
  try {
    readY(e, 0);
    FAIL("replica 0 was read from an engine that runs replicas 1 and 2");
  } catch (const stream_connection_error &e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("replica 0 is not one this engine runs "
                                                   "(replicas 1 to 2 of 4)"));
  }
  const auto refused = [&](const OptionFlags &options, const char *text) {
    INFO(text);
    try {
      Engine bad(p.graph, p.prog, options);
      FAIL("the options were accepted");
    } catch (const invalid_option &e) {
      CHECK_THAT(e.what(), Catch::Matchers::Contains(text));
    }
  };
  refused({{"target.firstRuntimeReplica", "4"}}, "past the graph's 4");
  refused({{"target.firstRuntimeReplica", "3"}, {"target.numberRuntimeReplica", "2"}},
          "past the graph's 4");
  refused({{"target.numberRuntimeReplica", "0"}}, "target.numberRuntimeReplica");
  refused({{"target.numberRuntimeReplica", "two"}}, "target.numberRuntimeReplica");
  // The engine that refused nothing still runs.
  CHECK_NOTHROW(e.run());
}

TEST_CASE("with several replicas, reads, streams and bindings name the replica",
          "[correctness][replication]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Program p(2, true);
  Engine e(p.graph, p.prog);
  e.load(Device::createCPUDevice());
  std::vector<float> y(kN);
  try {
    e.readTensor("y", y.data(), y.data() + kN);
    FAIL("a read without a replica was accepted");
  } catch (const stream_connection_error &err) {
    CHECK_THAT(err.what(), Catch::Matchers::Contains("runs 2 replicas"));
    CHECK_THAT(err.what(), Catch::Matchers::Contains("readTensor(handle, replica, begin, end)"));
  }
  std::vector<float> in[2] = {inputOf(0), inputOf(1)}, out[2] = {y, y};
  try {
    e.connectStream("in", in[0].data());
    FAIL("a stream connected without a replica was accepted");
  } catch (const stream_connection_error &err) {
    CHECK_THAT(err.what(), Catch::Matchers::Contains("connect each with the replica's index"));
  }
  CHECK_THROWS_AS(e.connectStream("in", 2u, in[0].data()), stream_connection_error);
  for (unsigned r = 0; r < 2; ++r) {
    e.connectStream("in", r, in[r].data());
    e.connectStream("out", r, out[r].data());
  }
  e.run();
  for (unsigned r = 0; r < 2; ++r) {
    CHECK(out[r] == expected(in[r], r));
    CHECK(readY(e, r) == expected(in[r], r));
  }
  // One buffer cannot be two replicas' copies of a tensor: the caller copies instead.
  alignas(64) float buffer[kN] = {};
  CHECK_FALSE(e.bindTensor("x", buffer, buffer + kN));
}

TEST_CASE("the replicas of a run run at once, each on its own host thread",
          "[correctness][replication]") {
  if (aspen::test::skipOnGpuRun())
    return;
  // Replica 0's input callback waits for replica 1's: replicas run one after the other, in any
  // order, could not both finish (the wait gives up after 20 s and the test fails).
  Program p(2, true);
  Engine e(p.graph, p.prog);
  e.load(Device::createCPUDevice());
  std::mutex m;
  std::condition_variable cv;
  bool secondCalled = false, firstSawSecond = false;
  const std::vector<float> in[2] = {inputOf(0), inputOf(1)};
  std::vector<float> out[2] = {std::vector<float>(kN), std::vector<float>(kN)};
  e.connectStreamToCallback("in", 0u, [&](void *p) {
    std::unique_lock<std::mutex> lock(m);
    firstSawSecond = cv.wait_for(lock, std::chrono::seconds(20), [&] { return secondCalled; });
    std::memcpy(p, in[0].data(), kN * sizeof(float));
  });
  e.connectStreamToCallback("in", 1u, [&](void *p) {
    {
      std::lock_guard<std::mutex> lock(m);
      secondCalled = true;
    }
    cv.notify_all();
    std::memcpy(p, in[1].data(), kN * sizeof(float));
  });
  for (unsigned r = 0; r < 2; ++r)
    e.connectStream("out", r, out[r].data());
  e.run();
  CHECK(firstSawSecond);
  for (unsigned r = 0; r < 2; ++r)
    CHECK(out[r] == expected(in[r], r));
}

TEST_CASE("a failure in one replica's run names the replica, and the engine runs again",
          "[correctness][replication]") {
  if (aspen::test::skipOnGpuRun())
    return;
  // Replica 1's output stream is left unconnected.
  Program p(2, true);
  Engine e(p.graph, p.prog);
  e.load(Device::createCPUDevice());
  const std::vector<float> in[2] = {inputOf(0), inputOf(1)};
  std::vector<float> out(kN);
  for (unsigned r = 0; r < 2; ++r)
    e.connectStream("in", r, const_cast<float *>(in[r].data()));
  e.connectStream("out", 0u, out.data());
  try {
    e.run();
    FAIL("a run with replica 1's output stream unconnected succeeded");
  } catch (const stream_connection_error &err) {
    CHECK_THAT(err.what(), Catch::Matchers::Contains("in replica 1"));
  }
  CHECK(out == expected(in[0], 0)); // replica 0 ran to its end
  std::vector<float> out1(kN);
  e.connectStream("out", 1u, out1.data());
  e.run();
  CHECK(out1 == expected(in[1], 1));
}

TEST_CASE("a replicated graph's executable keeps its factor and index constant",
          "[correctness][replication]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Program p(2);
  std::stringstream bytes;
  compileGraph(p.graph, {p.prog}).serialize(bytes);
  Engine e(Executable::deserialize(bytes));
  e.load(Device::createCPUDevice());
  for (unsigned r = 0; r < 2; ++r) {
    const std::vector<float> x = inputOf(r + 2);
    e.writeTensor("x", r, x.data(), x.data() + kN);
  }
  e.run();
  for (unsigned r = 0; r < 2; ++r) {
    CHECK(readIndex(e, r) == r);
    CHECK(readY(e, r) == expected(inputOf(r + 2), r));
  }
}

// --- Collectives -------------------------------------------------------------------------------

namespace {

using collectives::CollectiveOperator;

// Replica r's value of element i for a collective's data: small integers (exact in every type;
// negative for the signed ones), so that the sums, products and squares the reference makes
// in float or wrapping integers are what the engine must give bit for bit.
double valueOf(Type type, unsigned r, std::size_t i) {
  if (type == BOOL)
    return double((r + i) % 3 != 0);
  const double v = double((int(i) * 7 + int(r) * 5) % 11) - (type == UNSIGNED_INT ? 0.0 : 4.0);
  return type == FLOAT || type == HALF ? v * 0.5 : v;
}

// Every replica's result of one all-reduce of `type` data over r replicas.
std::vector<std::vector<double>> allReduceRun(unsigned replicas, Type type, CollectiveOperator op,
                                              std::size_t n) {
  Graph g(Target::createGeneric(2), replication_factor(replicas));
  ops::addCodelets(g);
  Tensor data = g.addVariable(type, {n}, "data");
  g.setTileMapping(data, 0);
  program::Sequence prog;
  Tensor out = collectives::allReduceCrossReplica(g, data, op, prog, "sum");
  g.createHostWrite("data", data);
  g.createHostRead("out", out);
  Engine e(g, prog);
  e.load(Device::createCPUDevice());
  for (unsigned r = 0; r < replicas; ++r) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = valueOf(type, r, i);
    std::vector<std::uint8_t> raw(n * type.size());
    for (std::size_t i = 0; i < n; ++i) {
      if (type == FLOAT) { const float x = float(v[i]); std::memcpy(&raw[i * 4], &x, 4); }
      else if (type == HALF) { const half x = half(float(v[i])); std::memcpy(&raw[i * 2], &x, 2); }
      else if (type == INT) { const std::int32_t x = std::int32_t(v[i]); std::memcpy(&raw[i * 4], &x, 4); }
      else if (type == UNSIGNED_INT) { const std::uint32_t x = std::uint32_t(v[i]); std::memcpy(&raw[i * 4], &x, 4); }
      else raw[i] = v[i] != 0;
    }
    e.writeTensor("data", r, raw.data(), raw.data() + raw.size());
  }
  e.run();
  std::vector<std::vector<double>> results(replicas, std::vector<double>(n));
  for (unsigned r = 0; r < replicas; ++r) {
    std::vector<std::uint8_t> raw(n * type.size());
    e.readTensor("out", r, raw.data(), raw.data() + raw.size());
    for (std::size_t i = 0; i < n; ++i) {
      if (type == FLOAT) { float x; std::memcpy(&x, &raw[i * 4], 4); results[r][i] = x; }
      else if (type == HALF) { half x; std::memcpy(&x, &raw[i * 2], 2); results[r][i] = float(x); }
      else if (type == INT) { std::int32_t x; std::memcpy(&x, &raw[i * 4], 4); results[r][i] = x; }
      else if (type == UNSIGNED_INT) { std::uint32_t x; std::memcpy(&x, &raw[i * 4], 4); results[r][i] = x; }
      else results[r][i] = raw[i];
    }
  }
  return results;
}

// The host's all-reduce of element i in double (exact for these values), replica `r`'s for
// LOCAL.
double reference(Type type, CollectiveOperator op, unsigned replicas, unsigned r, std::size_t i) {
  double acc = 0;
  for (unsigned k = 0; k < replicas; ++k) {
    const double v = valueOf(type, k, i);
    switch (op) {
    case CollectiveOperator::ADD: case CollectiveOperator::MEAN: acc = k ? acc + v : v; break;
    case CollectiveOperator::SQUARE_ADD: acc = k ? acc + v * v : v * v; break;
    case CollectiveOperator::MUL: acc = k ? acc * v : v; break;
    case CollectiveOperator::MIN: acc = k ? std::min(acc, v) : v; break;
    case CollectiveOperator::MAX: acc = k ? std::max(acc, v) : v; break;
    case CollectiveOperator::LOGICAL_AND: acc = k ? double(acc != 0 && v != 0) : v; break;
    case CollectiveOperator::LOGICAL_OR: acc = k ? double(acc != 0 || v != 0) : v; break;
    case CollectiveOperator::LOCAL: acc = valueOf(type, r, i); break;
    }
  }
  if (op == CollectiveOperator::MEAN)
    acc /= replicas;
  return acc;
}

} // namespace

TEST_CASE("allReduce gives every replica the operator's result over all replicas, for each "
          "operator and type",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  const std::size_t n = 13;
  const std::vector<std::pair<Type, std::vector<CollectiveOperator>>> cases = {
      {FLOAT,
       {CollectiveOperator::ADD, CollectiveOperator::MEAN, CollectiveOperator::MUL,
        CollectiveOperator::MIN, CollectiveOperator::MAX, CollectiveOperator::SQUARE_ADD,
        CollectiveOperator::LOCAL}},
      {HALF, {CollectiveOperator::ADD, CollectiveOperator::MEAN, CollectiveOperator::MAX,
              CollectiveOperator::SQUARE_ADD}},
      {INT, {CollectiveOperator::ADD, CollectiveOperator::MUL, CollectiveOperator::MIN,
             CollectiveOperator::SQUARE_ADD, CollectiveOperator::LOCAL}},
      {UNSIGNED_INT, {CollectiveOperator::ADD, CollectiveOperator::MAX}},
      {BOOL, {CollectiveOperator::LOGICAL_AND, CollectiveOperator::LOGICAL_OR,
              CollectiveOperator::LOCAL}}};
  for (unsigned replicas : {1u, 3u})
    for (const auto &[type, operators] : cases)
      for (CollectiveOperator op : operators) {
        INFO(replicas << " replicas, " << type.toString() << ", " << collectives::toString(op));
        const auto results = allReduceRun(replicas, type, op, n);
        for (unsigned r = 0; r < replicas; ++r)
          for (std::size_t i = 0; i < n; ++i) {
            INFO("replica " << r << ", element " << i);
            double want = reference(type, op, replicas, r, i);
            if (type == HALF) // rounded once, at the end
              want = float(half(float(want)));
            else if (type == FLOAT)
              want = float(want);
            REQUIRE(results[r][i] == want);
          }
      }
}

TEST_CASE("allReduce adds in replica order, so every replica has the same bits",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  // 1 + 1e8 rounds to 1e8 in float, so replica order 0, 1, 2 gives 0; the reverse order, or
  // any order that adds -1e8 to 1e8 first, gives 1.
  Graph g(Target::createGeneric(2), replication_factor(3));
  ops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {1}, "x");
  g.setTileMapping(x, 0);
  program::Sequence prog;
  collectives::allReduceInPlaceCrossReplica(g, x, CollectiveOperator::ADD, prog, "sum");
  g.createHostWrite("x", x);
  g.createHostRead("out", x);
  Engine e(g, prog);
  e.load(Device::createCPUDevice());
  const float values[3] = {1.0f, 1e8f, -1e8f};
  for (unsigned run = 0; run < 3; ++run) {
    for (unsigned r = 0; r < 3; ++r)
      e.writeTensor("x", r, &values[r], &values[r] + 1);
    e.run();
    for (unsigned r = 0; r < 3; ++r) {
      float out = -1;
      e.readTensor("out", r, &out, &out + 1);
      CHECK(out == 0.0f);
    }
  }
}

TEST_CASE("large all-reduces, all-gathers, reduce-scatters and broadcasts, run on the "
          "replicas' own memory, keep replica order",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  // Big enough (200 KB a tensor) for the in-process path that works on the executors' memory:
  // each replica reduces its chunk (bounds on multiples of 64 elements, uneven for 3 replicas
  // and 50001 elements) of every replica's data in replica order, then copies the others'.
  // The reference adds in replica order on the host; every seventh element is 1, 1e8, -1e8,
  // which gives 0 in that order and 1 in any order that adds the large ones first.
  constexpr unsigned R = 3;
  constexpr std::size_t n = 50001, gathered = 20000, scattered = 50000;
  Graph g(Target::createGeneric(4), replication_factor(R));
  ops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {n}, "x");
  Tensor y = g.addVariable(FLOAT, {n}, "y");
  Tensor m = g.addVariable(FLOAT, {n}, "m");
  Tensor h = g.addVariable(HALF, {n}, "h");
  Tensor k = g.addVariable(INT, {n}, "k");
  Tensor a = g.addVariable(FLOAT, {gathered}, "a");
  Tensor z = g.addVariable(FLOAT, {scattered}, "z");
  unsigned tile = 0;
  for (const Tensor &t : {x, y, m, k, h, a})
    g.setTileMapping(t, tile++ % 4);
  g.setTileMapping(z, 3);
  program::Sequence prog, twice;
  collectives::allReduceInPlaceCrossReplica(g, x, CollectiveOperator::ADD, twice, "sum");
  prog.add(program::Repeat(2, twice));
  collectives::allReduceToDestinationCrossReplica(g, y, m, CollectiveOperator::MEAN, prog, "mean");
  collectives::allReduceInPlaceCrossReplica(g, h, CollectiveOperator::ADD, prog, "half");
  collectives::allReduceInPlaceCrossReplica(g, k, CollectiveOperator::MIN, prog, "min");
  Tensor all = collectives::allGatherCrossReplica(g, a, prog, "gather");
  g.setTileMapping(all, 2);
  // Reduce-scatter: pieces of 16667, the last one a zero short; broadcast from replica 2.
  Tensor piece = collectives::reduceScatterCrossReplica(g, z, CollectiveOperator::ADD, prog,
                                                        "scatter");
  g.setTileMapping(piece, 3);
  Tensor root = collectives::broadcastCrossReplica(g, a, prog, 2, "broadcast");
  g.setTileMapping(root, 1);
  g.createHostWrite("x", x);
  g.createHostWrite("y", y);
  g.createHostWrite("h", h);
  g.createHostWrite("k", k);
  g.createHostWrite("a", a);
  g.createHostWrite("z", z);
  g.createHostRead("piece", piece);
  g.createHostRead("root", root);
  g.createHostRead("xOut", x);
  g.createHostRead("m", m);
  g.createHostRead("hOut", h);
  g.createHostRead("kOut", k);
  g.createHostRead("all", all);
  Engine e(g, prog);
  e.load(Device::createCPUDevice());

  std::vector<std::vector<float>> xs(R, std::vector<float>(n)), ys = xs, as(R),
      zs(R, std::vector<float>(scattered));
  std::vector<std::vector<half>> hs(R, std::vector<half>(n));
  std::vector<std::vector<int>> ks(R, std::vector<int>(n));
  std::uint32_t seed = 12345;
  const auto next = [&] { return (seed = seed * 1664525u + 1013904223u) >> 8; };
  const float cancel[R] = {1.0f, 1e8f, -1e8f};
  for (unsigned r = 0; r < R; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      xs[r][i] = i % 7 == 0 ? cancel[r] : float(int(next() % 2001) - 1000) * 0.37f;
      ys[r][i] = i % 5 == 0 ? cancel[r] : float(int(next() % 2001) - 1000) * 0.11f;
      hs[r][i] = half(float(int(next() % 201) - 100) * 0.125f);
      ks[r][i] = int(next() % 100001) - 50000;
    }
    for (std::size_t i = 0; i < scattered; ++i)
      zs[r][i] = i % 3 == 0 ? cancel[r] : float(int(next() % 2001) - 1000) * 0.23f;
    as[r].resize(gathered);
    for (std::size_t i = 0; i < gathered; ++i)
      as[r][i] = float(r * gathered + i);
  }
  for (unsigned run = 0; run < 2; ++run) {
    INFO("run " << run);
    for (unsigned r = 0; r < R; ++r) {
      e.writeTensor("x", r, xs[r].data(), xs[r].data() + n);
      e.writeTensor("y", r, ys[r].data(), ys[r].data() + n);
      e.writeTensor("h", r, hs[r].data(), hs[r].data() + n);
      e.writeTensor("k", r, ks[r].data(), ks[r].data() + n);
      e.writeTensor("a", r, as[r].data(), as[r].data() + gathered);
      e.writeTensor("z", r, zs[r].data(), zs[r].data() + scattered);
    }
    e.run();
    for (unsigned r = 0; r < R; ++r) {
      INFO("replica " << r);
      std::vector<float> xOut(n), mOut(n), allOut(R * gathered);
      std::vector<half> hOut(n);
      std::vector<int> kOut(n);
      e.readTensor("xOut", r, xOut.data(), xOut.data() + n);
      e.readTensor("m", r, mOut.data(), mOut.data() + n);
      e.readTensor("hOut", r, hOut.data(), hOut.data() + n);
      e.readTensor("kOut", r, kOut.data(), kOut.data() + n);
      e.readTensor("all", r, allOut.data(), allOut.data() + allOut.size());
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < n; ++i) {
        float sum = xs[0][i]; // twice: the sum, then three times it, in replica order
        for (unsigned q = 1; q < R; ++q)
          sum += xs[q][i];
        const float again = (sum + sum) + sum;
        float mean = ys[0][i];
        for (unsigned q = 1; q < R; ++q)
          mean += ys[q][i];
        mean /= float(R);
        float halves = float(hs[0][i]);
        for (unsigned q = 1; q < R; ++q)
          halves += float(hs[q][i]);
        const half halfSum(halves);
        const int least = std::min({ks[0][i], ks[1][i], ks[2][i]});
        wrong += xOut[i] != again || mOut[i] != mean ||
                 std::memcmp(&hOut[i], &halfSum, sizeof halfSum) != 0 || kOut[i] != least;
        if (i % 7 == 0)
          wrong += xOut[i] != 0.0f; // the cancelling elements: replica order gives 0
      }
      CHECK(wrong == 0);
      std::size_t gatheredWrong = 0;
      for (unsigned q = 0; q < R; ++q)
        for (std::size_t i = 0; i < gathered; ++i)
          gatheredWrong += allOut[q * gathered + i] != as[q][i];
      CHECK(gatheredWrong == 0);
      constexpr std::size_t pieceSize = (scattered + R - 1) / R;
      std::vector<float> pieceOut(pieceSize), rootOut(gathered);
      e.readTensor("piece", r, pieceOut.data(), pieceOut.data() + pieceSize);
      e.readTensor("root", r, rootOut.data(), rootOut.data() + gathered);
      std::size_t pieceWrong = 0;
      for (std::size_t i = 0; i < pieceSize; ++i) {
        const std::size_t at = r * pieceSize + i;
        float sum = 0; // past the data's end: zero
        if (at < scattered) {
          sum = zs[0][at];
          for (unsigned q = 1; q < R; ++q)
            sum += zs[q][at];
        }
        pieceWrong += pieceOut[i] != sum;
      }
      CHECK(pieceWrong == 0);
      CHECK(rootOut == as[2]);
    }
  }
}

TEST_CASE("allReduce in place, to a destination, and inside a Repeat",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Graph g(Target::createGeneric(2), replication_factor(2));
  ops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {4}, "x");
  Tensor d = g.addVariable(FLOAT, {2, 2}, "d");
  g.setTileMapping(x, 0);
  g.setTileMapping(d, 1);
  program::Sequence body, prog;
  collectives::allReduceInPlaceCrossReplica(g, x, CollectiveOperator::ADD, body, "inPlace");
  prog.add(program::Repeat(3, body));
  collectives::allReduceToDestinationCrossReplica(g, x, d, CollectiveOperator::MAX, prog, "dest");
  g.createHostWrite("x", x);
  g.createHostRead("xOut", x);
  g.createHostRead("d", d);
  Engine e(g, prog);
  e.load(Device::createCPUDevice());
  const float a[2][4] = {{1, 2, 3, 4}, {10, 20, 30, 40}};
  for (unsigned r = 0; r < 2; ++r)
    e.writeTensor("x", r, a[r], a[r] + 4);
  e.run();
  // Each Repeat iteration doubles the sum of the two: S, 2S, 4S.
  for (unsigned r = 0; r < 2; ++r) {
    float xs[4], ds[4];
    e.readTensor("xOut", r, xs, xs + 4);
    e.readTensor("d", r, ds, ds + 4);
    for (int i = 0; i < 4; ++i) {
      CHECK(xs[i] == 4 * (a[0][i] + a[1][i]));
      CHECK(ds[i] == xs[i]);
    }
  }
}

TEST_CASE("a collective that cannot complete fails every replica by name, never hangs, and the "
          "engine runs again",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  // Replica 1 skips the collective (an If on the replication index), or waits at another one.
  for (const bool otherCollective : {false, true}) {
    INFO((otherCollective ? "replicas at different collectives" : "replica 1 skips it"));
    Graph g(Target::createGeneric(2), replication_factor(2));
    ops::addCodelets(g);
    Tensor x = g.addVariable(FLOAT, {3}, "x");
    g.setTileMapping(x, 0);
    Tensor index = g.addReplicationIndexConstant("index");
    g.setTileMapping(index, 0);
    program::Sequence first, second, prog;
    collectives::allReduceInPlaceCrossReplica(g, x, CollectiveOperator::ADD, first, "first");
    if (otherCollective)
      collectives::allReduceInPlaceCrossReplica(g, x, CollectiveOperator::MAX, second, "second");
    prog.add(program::If(index, second, first));
    Engine e(g, prog, {{"aspen.collectives.timeout", "60"}});
    e.load(Device::createCPUDevice());
    const auto started = std::chrono::steady_clock::now();
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        e.run();
        FAIL("the run completed");
      } catch (const runtime_error &err) {
        const std::string text = err.what();
        INFO(text);
        CHECK_THAT(text, Catch::Matchers::Contains("collective"));
        if (otherCollective)
          CHECK_THAT(text, Catch::Matchers::Contains("reached different collectives"));
        else
          CHECK_THAT(text, Catch::Matchers::Contains("replica 1 finished its run without "
                                                     "reaching it"));
      }
    }
    // Well inside the 60 s deadline: the failure is seen, not waited out.
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));
  }
}

TEST_CASE("a wait at a collective past aspen.collectives.timeout fails naming who arrived",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  // Replica 1's input callback takes 1.5 s; replica 0 waits 0.2 s at the collective after it.
  Graph g(Target::createGeneric(2), replication_factor(2));
  ops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {3}, "x");
  g.setTileMapping(x, 0);
  program::Sequence prog;
  prog.add(program::Copy(g.addHostToDeviceFIFO("in", FLOAT, 3), x));
  collectives::allReduceInPlaceCrossReplica(g, x, CollectiveOperator::ADD, prog, "late");
  Engine e(g, prog, {{"aspen.collectives.timeout", "0.2"}});
  e.load(Device::createCPUDevice());
  const float in[3] = {1, 2, 3};
  e.connectStreamToCallback("in", 0u, [&](void *p) { std::memcpy(p, in, sizeof in); });
  e.connectStreamToCallback("in", 1u, [&](void *p) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    std::memcpy(p, in, sizeof in);
  });
  try {
    e.run();
    FAIL("the run completed");
  } catch (const runtime_error &err) {
    const std::string text = err.what();
    INFO(text);
    CHECK_THAT(text, Catch::Matchers::Contains("timed out after 0.2 s"));
    CHECK_THAT(text, Catch::Matchers::Contains("aspen.collectives.timeout"));
    CHECK_THAT(text, Catch::Matchers::Contains("replicas 0 arrived, 1 did not"));
  }
}

TEST_CASE("collectives refuse operators their type cannot take, mismatched destinations and "
          "engines that run only some replicas",
          "[correctness][replication][collectives][error]") {
  Graph g(Target::createGeneric(2), replication_factor(2));
  ops::addCodelets(g);
  Tensor f = g.addVariable(FLOAT, {4}, "f");
  Tensor i = g.addVariable(INT, {4}, "i");
  Tensor f3 = g.addVariable(FLOAT, {3}, "f3");
  for (const Tensor &t : {f, i, f3})
    g.setTileMapping(t, 0);
  program::Sequence prog;
  try {
    collectives::allReduceInPlaceCrossReplica(g, i, CollectiveOperator::MEAN, prog);
    FAIL("MEAN of INT was accepted");
  } catch (const type_error &e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("MEAN does not take int data"));
  }
  CHECK_THROWS_AS(collectives::allReduceInPlaceCrossReplica(g, f, CollectiveOperator::LOGICAL_OR,
                                                            prog),
                  type_error);
  CHECK_THROWS_AS(
      collectives::allReduceToDestinationCrossReplica(g, f, i, CollectiveOperator::ADD, prog),
      type_error);
  try {
    collectives::allReduceToDestinationCrossReplica(g, f, f3, CollectiveOperator::ADD, prog);
    FAIL("a destination of 3 elements for 4 was accepted");
  } catch (const shape_error &e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("the result has 3 elements"));
  }
  // (A braced {} debug context would be ambiguous with GCL's CommGroup overload, as in GCL.)
  CHECK_THROWS_AS(collectives::allReduceInPlaceCrossReplica(g, f, CollectiveOperator::ADD, prog,
                                                            "opts", {{"method", "ring"}}),
                  invalid_option);
  // Nothing was added by the refusals; a good call then builds and loads only with every replica.
  collectives::allReduceInPlaceCrossReplica(g, f, CollectiveOperator::ADD, prog, "sum");
  Engine part(g, prog, {{"target.numberRuntimeReplica", "1"}});
  try {
    part.load(Device::createCPUDevice());
    FAIL("an engine of 1 of 2 replicas loaded a program with collectives");
  } catch (const error &e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("join all 2 replicas"));
    CHECK_THAT(e.what(), Catch::Matchers::Contains("launch with mpiexec"));
  }
  Engine whole(g, prog);
  CHECK_NOTHROW(whole.load(Device::createCPUDevice()));
}

TEST_CASE("reduceScatter, allGather and broadcast give each replica its part, its copy or the "
          "root's",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  const unsigned R = 3;
  Graph g(Target::createGeneric(2), replication_factor(R));
  ops::addCodelets(g);
  Tensor x = g.addVariable(FLOAT, {7}, "x");      // 7 = 3 + 3 + 1 (+ 2 zeros of padding)
  Tensor b = g.addVariable(INT, {2, 2}, "b");
  g.setTileMapping(x, 0);
  g.setTileMapping(b, 1);
  program::Sequence prog;
  Tensor scattered = collectives::reduceScatterCrossReplica(g, x, CollectiveOperator::ADD, prog);
  Tensor maxima = collectives::reduceScatterCrossReplica(g, x, CollectiveOperator::MAX, prog);
  Tensor gathered = collectives::allGatherCrossReplica(g, b, prog);
  Tensor fromRoot = collectives::broadcastCrossReplica(g, x, prog, 2);
  CHECK(scattered.shape() == std::vector<std::size_t>{3});
  CHECK(gathered.shape() == std::vector<std::size_t>{R, 2, 2});
  g.createHostWrite("x", x);
  g.createHostWrite("b", b);
  g.createHostRead("scattered", scattered);
  g.createHostRead("maxima", maxima);
  g.createHostRead("gathered", gathered);
  g.createHostRead("fromRoot", fromRoot);
  Engine e(g, prog);
  e.load(Device::createCPUDevice());
  float xs[R][7];
  std::int32_t bs[R][4];
  for (unsigned r = 0; r < R; ++r) {
    for (int i = 0; i < 7; ++i)
      xs[r][i] = float(valueOf(FLOAT, r, std::size_t(i)));
    for (int i = 0; i < 4; ++i)
      bs[r][i] = std::int32_t(valueOf(INT, r, std::size_t(i)));
    e.writeTensor("x", r, xs[r], xs[r] + 7);
    e.writeTensor("b", r, bs[r], bs[r] + 4);
  }
  e.run();
  for (unsigned r = 0; r < R; ++r) {
    INFO("replica " << r);
    float sum[3], max[3], root[7];
    std::int32_t all[R * 4];
    e.readTensor("scattered", r, sum, sum + 3);
    e.readTensor("maxima", r, max, max + 3);
    e.readTensor("gathered", r, all, all + R * 4);
    e.readTensor("fromRoot", r, root, root + 7);
    for (unsigned j = 0; j < 3; ++j) {
      const std::size_t i = r * 3 + j;
      const bool padding = i >= 7;
      CHECK(sum[j] == (padding ? 0.0f : xs[0][i] + xs[1][i] + xs[2][i]));
      CHECK(max[j] == (padding ? 0.0f : std::max({xs[0][i], xs[1][i], xs[2][i]})));
    }
    for (unsigned k = 0; k < R; ++k)
      for (int i = 0; i < 4; ++i)
        CHECK(all[k * 4 + i] == bs[k][i]);
    for (int i = 0; i < 7; ++i)
      CHECK(root[i] == xs[2][i]);
  }
  // Refusals: a root past the replicas, a result of the wrong size, LOCAL for a reduce-scatter.
  program::Sequence more;
  CHECK_THROWS_AS(collectives::broadcastCrossReplica(g, x, more, 3), index_error);
  Tensor wrong = g.addVariable(FLOAT, {2}, "wrong");
  g.setTileMapping(wrong, 0);
  try {
    more.add(program::CrossReplicaReduceScatter(x, wrong, CollectiveOperator::ADD));
    FAIL("a reduce-scatter into 2 elements for 7 over 3 replicas was accepted");
  } catch (const shape_error &err) {
    CHECK_THAT(err.what(), Catch::Matchers::Contains("it must have 3"));
  }
  CHECK_THROWS_AS(collectives::reduceScatterCrossReplica(g, x, CollectiveOperator::LOCAL, more),
                  type_error);
}
