// Replicated graphs in one process (issue 33, its first part): Graph(target,
// replication_factor(r)) compiles one program for r replicas, and an Engine runs the replicas it
// is given (target.firstRuntimeReplica, target.numberRuntimeReplica), each with its own memory,
// at once on host threads. Each replica's result is checked against the same program run alone
// in a graph of one replica (bit for bit) and against the host's value; its replication index
// constant is its index in the whole graph. Host access and streams go to one replica, or, for
// writeTensor, to all; the ambiguous forms are refused by name.
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Executable.hpp>
#include <aspen/Graph.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Expr.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <sstream>
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
