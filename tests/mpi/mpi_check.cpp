// The MPI transport under mpiexec (ctest label mpi; tests/mpi/CMakeLists.txt launches it with
// 1-4 ranks). Mode `collectives`: every rank builds one graph holding every kind of collective
// (each operator on each type it takes, odd sizes, a size smaller than the ranks, inside a
// Repeat and an If) at small sizes and at 80 KB a replica, replicated one and two replicas a
// rank, and runs it twice over MPI and
// twice in this process with every replica (aspen.collectives.transport=threads); its replicas'
// results must be the in-process ones bit for bit (the in-process transport is itself checked
// against the host's arithmetic in tests/correctness/test_replication.cpp). The other modes are
// the faults: each rank must end, within the launch's bound, with the message it expects, and
// exits 0 only then.
#include <aspen/Collectives.hpp>
#include <aspen/Device.hpp>
#include <aspen/Distributed.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace aspen;
using collectives::CollectiveOperator;

namespace {

const dist::World world = dist::World::fromEnvironment();

[[noreturn]] void failed(const std::string &why) {
  std::fprintf(stderr, "rank %u: FAILED: %s\n", world.rank(), why.c_str());
  std::fflush(stderr);
  std::exit(1);
}

// Replica `replica`'s value at element e of collective `salt`'s data: values of either sign
// with fractions, so that the order of a float sum shows in its bits.
std::vector<std::uint8_t> dataOf(Type type, std::size_t n, unsigned replica, unsigned salt) {
  std::vector<std::uint8_t> bytes(n * type.size());
  for (std::size_t e = 0; e < n; ++e) {
    const long v = long((replica * 7 + e * 3 + salt * 5) % 23) - 11;
    if (type == FLOAT) {
      const float f = float(v) * 0.371f + float(replica) * 1e-3f;
      std::memcpy(&bytes[e * 4], &f, 4);
    } else if (type == HALF) {
      const half h = half(float(v) * 0.125f + 0.01f * float(replica));
      std::memcpy(&bytes[e * 2], &h, 2);
    } else if (type == INT || type == UNSIGNED_INT) {
      const std::int32_t i = std::int32_t(v * 1000003 + long(replica));
      std::memcpy(&bytes[e * 4], &i, 4);
    } else if (type == SHORT || type == LONGLONG) {
      const long long i = v * 997 + long(replica);
      std::memcpy(&bytes[e * type.size()], &i, type.size()); // the low bytes (little-endian)
    } else if (type == UNSIGNED_CHAR) {
      bytes[e] = std::uint8_t(v * 37 + long(replica));
    } else {
      bytes[e] = (replica + e + salt) % 3 != 0;
    }
  }
  return bytes;
}

// The graph: collective i reads "in<i>" and leaves its result in "out<i>".
struct Collectives {
  Graph graph;
  program::Sequence prog;
  struct One {
    Type type;
    std::size_t n, outElements;
  };
  std::vector<One> inputs;

  // Spread over the tiles so that the large sizes fit a tile's memory.
  static constexpr unsigned kTiles = 64;
  Collectives(unsigned r, std::size_t base)
      : graph(Target::createGeneric(kTiles), replication_factor(r)) {
    const std::size_t odd = base + 1;
    for (CollectiveOperator op :
         {CollectiveOperator::ADD, CollectiveOperator::MEAN, CollectiveOperator::MUL,
          CollectiveOperator::MIN, CollectiveOperator::MAX, CollectiveOperator::SQUARE_ADD,
          CollectiveOperator::LOCAL})
      allReduce(FLOAT, odd, op);
    for (CollectiveOperator op : {CollectiveOperator::ADD, CollectiveOperator::MEAN,
                                  CollectiveOperator::MAX})
      allReduce(HALF, odd, op);
    for (CollectiveOperator op : {CollectiveOperator::ADD, CollectiveOperator::MUL,
                                  CollectiveOperator::MIN, CollectiveOperator::SQUARE_ADD})
      allReduce(INT, odd, op);
    allReduce(UNSIGNED_INT, odd, CollectiveOperator::MAX);
    allReduce(BOOL, odd, CollectiveOperator::LOGICAL_AND);
    allReduce(BOOL, odd, CollectiveOperator::LOGICAL_OR);
    allReduce(FLOAT, 1, CollectiveOperator::ADD); // fewer elements than ranks
    for (Type t : {FLOAT, HALF, INT})
      add(t, odd, [&](const Tensor &in) {
        return collectives::reduceScatterCrossReplica(graph, in, CollectiveOperator::ADD, prog);
      });
    for (Type t : {FLOAT, BOOL})
      add(t, 5, [&](const Tensor &in) {
        return collectives::allGatherCrossReplica(graph, in, prog);
      });
    add(FLOAT, odd, [&](const Tensor &in) {
      return collectives::broadcastCrossReplica(graph, in, prog, r - 1);
    });
    // In place in a Repeat (the sum grows each time round) and inside an If.
    add(FLOAT, 9, [&](const Tensor &in) {
      program::Sequence body;
      Tensor data = in;
      collectives::allReduceInPlaceCrossReplica(graph, data, CollectiveOperator::ADD, body);
      prog.add(program::Repeat(3, body));
      return in;
    });
    moreKinds(r, odd);
    add(INT, 9, [&](const Tensor &in) {
      Tensor yes = graph.addConstant<int>(INT, {}, {1});
      graph.setTileMapping(yes, 0);
      program::Sequence then;
      Tensor out = collectives::allReduceCrossReplica(graph, in, CollectiveOperator::MAX, then);
      prog.add(program::If(yes, then, program::Sequence()));
      return out;
    });
  }

  // The other integer types, a multi-tensor call, all-to-all, and, with an even number of
  // replicas, replica groups and a cross-replica copy: the MPI transport's gather path.
  void moreKinds(unsigned r, std::size_t odd) {
    using collectives::CommGroup;
    using collectives::CommGroupType;
    allReduce(SHORT, odd, CollectiveOperator::MUL);
    allReduce(UNSIGNED_CHAR, odd, CollectiveOperator::ADD);
    allReduce(LONGLONG, odd, CollectiveOperator::SQUARE_ADD);
    add(FLOAT, 7, [&](const Tensor &in) { // fused with an INT tensor made here
      Tensor other = graph.addVariable(INT, {3}, "other");
      graph.setTileMapping(other, 0);
      std::vector<Tensor> both{in, other};
      collectives::allReduceInPlaceCrossReplica(graph, both, CollectiveOperator::MAX, prog);
      return in;
    });
    add(FLOAT, r * 3, [&](const Tensor &in) {
      return collectives::allToAllCrossReplica(graph, in.reshape({r, 3}), prog);
    });
    if (r % 2 != 0)
      return;
    for (CommGroupType type : {CommGroupType::CONSECUTIVE, CommGroupType::ORTHOGONAL}) {
      const CommGroup pairs(type, 2);
      add(FLOAT, odd, [&](const Tensor &in) {
        return collectives::allReduceCrossReplica(graph, in, CollectiveOperator::ADD, prog,
                                                  pairs);
      });
      add(INT, 5, [&](const Tensor &in) {
        return collectives::allGatherCrossReplica(graph, in, prog, pairs);
      });
      add(HALF, 5, [&](const Tensor &in) {
        return collectives::broadcastCrossReplica(graph, in, prog, pairs, 1);
      });
      add(FLOAT, odd, [&](const Tensor &in) {
        return collectives::reduceScatterCrossReplica(graph, in, CollectiveOperator::MAX, prog,
                                                      pairs);
      });
    }
    add(INT, 4, [&](const Tensor &in) { // a ring: replica i's data to replica i + 1
      Tensor out = graph.addVariable(INT, {4}, "copied");
      graph.setTileMapping(out, 0);
      std::map<unsigned, unsigned> ring;
      for (unsigned i = 0; i < r; ++i)
        ring[i] = (i + 1) % r;
      prog.add(program::CrossReplicaCopy(in, out, ring));
      return out;
    });
  }

  void allReduce(Type type, std::size_t n, CollectiveOperator op) {
    add(type, n, [&](const Tensor &in) {
      return collectives::allReduceCrossReplica(graph, in, op, prog);
    });
  }

  void add(Type type, std::size_t n, const std::function<Tensor(const Tensor &)> &collective) {
    const std::string i = std::to_string(inputs.size());
    Tensor in = graph.addVariable(type, {n}, "in" + i);
    const unsigned tile = unsigned(inputs.size()) % kTiles;
    graph.setTileMapping(in, tile);
    Tensor out = collective(in);
    graph.setTileMapping(out, tile);
    graph.createHostWrite("in" + i, in);
    graph.createHostRead("out" + i, out);
    inputs.push_back({type, n, out.numElements()});
  }
};

std::vector<std::uint8_t> readOut(Engine &e, const std::string &handle, unsigned replica,
                                  std::size_t bytes) {
  std::vector<std::uint8_t> out(bytes);
  e.readTensor(handle, replica, out.data(), out.data() + bytes);
  return out;
}

// Runs the graph over MPI and in this process, twice each, and compares this rank's replicas.
void collectivesMatch(unsigned perRank, std::size_t base) {
  const unsigned r = world.size() * perRank;
  Collectives over(r, base), here(r, base);
  // A world of one rank still goes through MPI.
  Engine mpi(over.graph, over.prog, {{"aspen.collectives.transport", "mpi"}});
  Engine local(here.graph, here.prog, {{"aspen.collectives.transport", "threads"}});
  const Device device = Device::createCPUDevice();
  mpi.load(device);
  local.load(device);
  const unsigned first = world.rank() * perRank;
  for (std::size_t i = 0; i < over.inputs.size(); ++i)
    for (unsigned replica = 0; replica < r; ++replica) {
      const auto data = dataOf(over.inputs[i].type, over.inputs[i].n, replica, unsigned(i));
      const std::string h = "in" + std::to_string(i);
      local.writeTensor(h, replica, data.data(), data.data() + data.size());
      if (replica >= first && replica < first + perRank)
        mpi.writeTensor(h, replica, data.data(), data.data() + data.size());
    }
  for (int run = 0; run < 2; ++run) {
    mpi.run(0);
    local.run(0);
    for (std::size_t i = 0; i < over.inputs.size(); ++i) {
      const std::string h = "out" + std::to_string(i);
      const std::size_t bytes = over.inputs[i].type.size() * over.inputs[i].outElements;
      for (unsigned replica = first; replica < first + perRank; ++replica)
        if (readOut(mpi, h, replica, bytes) != readOut(local, h, replica, bytes))
          failed("collective " + std::to_string(i) + " in run " + std::to_string(run) +
                 ", replica " + std::to_string(replica) + " of " + std::to_string(r) +
                 ": MPI and in-process results differ");
    }
  }
  std::printf("rank %u: %zu collectives x 2 runs over %u replicas (%u a rank): bitwise equal "
              "to the in-process run\n",
              world.rank(), over.inputs.size(), r, perRank);
}

// One all-reduce of n floats, replicated one a rank.
struct Small {
  Graph graph;
  program::Sequence prog;
  explicit Small(std::size_t n, unsigned r = world.size())
      : graph(Target::createGeneric(1), replication_factor(r)) {
    Tensor x = graph.addVariable(FLOAT, {n}, "x");
    graph.setTileMapping(x, 0);
    collectives::allReduceInPlaceCrossReplica(graph, x, CollectiveOperator::ADD, prog,
                                              "gradients");
    graph.createHostWrite("x", x);
  }
};

// Runs `f`, which must raise an aspen::error whose message holds every one of `expected`.
void expectError(const std::string &what, const std::function<void()> &f,
                 const std::vector<std::string> &expected) {
  try {
    f();
  } catch (const error &e) {
    for (const std::string &part : expected)
      if (std::string(e.what()).find(part) == std::string::npos)
        failed(what + ": the error lacks '" + part + "': " + e.what());
    std::printf("rank %u: %s: %s\n", world.rank(), what.c_str(), e.what());
    return;
  }
  failed(what + ": no error");
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const OptionFlags kShort = {{"aspen.collectives.timeout", "3"}};

void mismatch() {
  Small g(world.rank() == 1 ? 4097 : 4096);
  Engine e(g.graph, g.prog, kShort);
  expectError("a rank with another graph", [&] { e.load(Device::createCPUDevice()); },
              {"different executables", "'gradients", "4097", "4096"});
  expectError("run after", [&] { e.run(0); }, {"not loaded"});
}

// The last rank destroys its engine before running it; the others' first run must fail within
// a second or so naming it, far inside the timeout.
void leave() {
  Small g(64);
  auto e = std::make_unique<Engine>(g.graph, g.prog, OptionFlags{{"aspen.collectives.timeout", "60"}});
  e->load(Device::createCPUDevice());
  if (world.rank() == world.size() - 1) {
    e.reset();
    std::printf("rank %u: left\n", world.rank());
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  expectError("a rank that left", [&] { e->run(0); },
              {"rank " + std::to_string(world.size() - 1) + " left", "destroyed after 0 runs",
               "'gradients"});
  if (since(start) > 10)
    failed("the run took " + std::to_string(since(start)) + " s to fail");
  expectError("a run after", [&] { e->run(0); }, {"refuses further runs"});
}

// The last rank sleeps past the 3 s timeout before its run.
void sleeper() {
  Small g(64);
  Engine e(g.graph, g.prog, kShort);
  e.load(Device::createCPUDevice());
  const bool late = world.rank() == world.size() - 1;
  if (late) // well past the others' 3 s, also on a loaded machine
    std::this_thread::sleep_for(std::chrono::seconds(8));
  const auto start = std::chrono::steady_clock::now();
  if (late) {
    // Told that rank 0 gave up, or, if that has not reached it yet, timed out waiting for
    // rank 0 to confirm: either way without entering the data exchange.
    expectError("the late rank", [&] { e.run(0); }, {"'gradients", "timed out after 3 s"});
  } else {
    expectError("waiting for a late rank", [&] { e.run(0); },
                {"timed out after 3 s", "'gradients", "rank " + std::to_string(world.size() - 1),
                 "did not"});
  }
  // The timeout and a margin for a loaded machine: never the late rank's 8 s more.
  if (since(start) > 8)
    failed("the run took " + std::to_string(since(start)) + " s to fail");
  expectError("a run after", [&] { e.run(0); }, {"refuses further runs"});
}

// The last rank never loads in time: the others' loads fail naming it, and its own late load
// fails because they gave up.
void noJoin() {
  Small g(64);
  Engine e(g.graph, g.prog, kShort);
  if (world.rank() == world.size() - 1) {
    // Well past the others' 3 s, which start after their own load's work (slow on a loaded
    // machine).
    std::this_thread::sleep_for(std::chrono::seconds(9));
    expectError("the late load", [&] { e.load(Device::createCPUDevice()); },
                {"stopped waiting"});
  } else {
    expectError("a load the last rank missed", [&] { e.load(Device::createCPUDevice()); },
                {"rank " + std::to_string(world.size() - 1) + " did not load", "within 3 s"});
  }
}

// Replication factors the launch cannot run: one that does not divide among the ranks, and
// ranks whose explicit replicas do not cover the graph's.
void factor() {
  Small three(16, 3);
  expectError("3 replicas on 2 ranks",
              [&] { Engine e(three.graph, three.prog, kShort); }, {"does not divide", "2 ranks"});
  Small four(16, 4);
  Engine e(four.graph, four.prog,
           {{"aspen.collectives.timeout", "3"},
            {"target.firstRuntimeReplica", std::to_string(world.rank())},
            {"target.numberRuntimeReplica", "1"}});
  expectError("4 replicas, one a rank", [&] { e.load(Device::createCPUDevice()); },
              {"must be the graph's 4", "rank 0 runs 0, rank 1 runs 1"});
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "collectives";
  try {
    if (mode == "collectives") {
      // 80 KB a replica too: the in-process run then works on the replicas' memory (from 64 KB,
      // EngineImpl::runTogether), which the MPI run must match as well.
      collectivesMatch(1, 1000);
      collectivesMatch(2, 37);
      collectivesMatch(1, 20000);
    } else if (mode == "mismatch") {
      mismatch();
    } else if (mode == "leave") {
      leave();
    } else if (mode == "exit") { // ends the process without a word: mpiexec ends the job
      Small g(64);
      Engine e(g.graph, g.prog, kShort);
      e.load(Device::createCPUDevice());
      if (world.rank() == world.size() - 1)
        _exit(3);
      e.run(0);
      failed("the run completed without the rank that exited");
    } else if (mode == "sleep") {
      sleeper();
    } else if (mode == "nojoin") {
      noJoin();
    } else if (mode == "factor") {
      factor();
    } else {
      failed("unknown mode '" + mode + "'");
    }
  } catch (const std::exception &e) {
    failed(mode + ": " + e.what());
  }
  std::printf("rank %u: %s ok\n", world.rank(), mode.c_str());
  return 0;
}
