// The collectives on a GPU through NCCL (a world of one rank: one GPU cannot be two ranks of a
// communicator), against the CPU executor's host path on the same graph: every kind, operator
// and type NCCL takes, a reduce-scatter that needs padding, groups of one, an all-to-all, eager,
// captured into a CUDA graph (a sequence with no control flow) and inside a Repeat (which the
// engine drives from the host: NCCL's captured work cannot share a graph with conditional
// nodes). With one replica every reduction is the data itself (MEAN divides by one), so the
// bytes must be the CPU's exactly; the test also requires that NCCL ran them
// (aspen.collectives.onDevice true fails the load otherwise). Needs a GPU: ASPEN-SKIPPED without
// one.
#include "TestDevice.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace aspen;
using collectives::CollectiveOperator;
using aspen::test::skipWithoutGpu;

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes dataOf(Type type, std::size_t n, unsigned salt) {
  Bytes b(n * type.size());
  for (std::size_t e = 0; e < n; ++e) {
    const int v = int((e * 7 + salt * 3) % 19) - 9;
    if (type == FLOAT) {
      const float f = float(v) * 0.37f;
      std::memcpy(&b[e * 4], &f, 4);
    } else if (type == HALF) {
      const half h = half(float(v) * 0.25f);
      std::memcpy(&b[e * 2], &h, 2);
    } else if (type == INT || type == UNSIGNED_INT) {
      const std::int32_t i = v * 1009;
      std::memcpy(&b[e * 4], &i, 4);
    } else if (type == LONGLONG) {
      const std::int64_t i = std::int64_t(v) * 1000000007;
      std::memcpy(&b[e * 8], &i, 8);
    } else {
      b[e] = (e + salt) % 3 == 0;
    }
  }
  return b;
}

struct Collectives {
  Graph graph{Target::createGeneric(1), replication_factor(1)};
  program::Sequence prog;
  std::vector<std::pair<Type, std::size_t>> ins, outs;

  // loop: one collective inside a Repeat (the root is then no device graph).
  explicit Collectives(bool loop) {
    using Op = CollectiveOperator;
    for (Op op : {Op::ADD, Op::MEAN, Op::MUL, Op::MIN, Op::MAX, Op::LOCAL})
      add(FLOAT, 1001, [&](Tensor in) {
        return collectives::allReduceCrossReplica(graph, in, op, prog);
      });
    for (Op op : {Op::ADD, Op::MAX})
      add(HALF, 333, [&](Tensor in) {
        return collectives::allReduceCrossReplica(graph, in, op, prog);
      });
    add(INT, 77, [&](Tensor in) {
      return collectives::allReduceCrossReplica(graph, in, Op::MIN, prog);
    });
    add(UNSIGNED_INT, 77, [&](Tensor in) {
      return collectives::allReduceCrossReplica(graph, in, Op::ADD, prog);
    });
    for (Op op : {Op::LOGICAL_AND, Op::LOGICAL_OR})
      add(BOOL, 65, [&](Tensor in) {
        return collectives::allReduceCrossReplica(graph, in, op, prog);
      });
    add(FLOAT, 129, [&](Tensor in) {
      return collectives::reduceScatterCrossReplica(graph, in, Op::ADD, prog);
    });
    add(FLOAT, 10, [&](Tensor in) { return collectives::allGatherCrossReplica(graph, in, prog); });
    add(INT, 10, [&](Tensor in) { return collectives::broadcastCrossReplica(graph, in, prog, 0); });
    add(LONGLONG, 33, [&](Tensor in) {
      return collectives::allReduceCrossReplica(graph, in, Op::MAX, prog);
    });
    add(UNSIGNED_CHAR, 17, [&](Tensor in) {
      return collectives::allReduceCrossReplica(graph, in, Op::MIN, prog);
    });
    add(FLOAT, 12, [&](Tensor in) { // a group of one: its own communicator
      return collectives::allReduceCrossReplica(
          graph, in, Op::ADD, prog,
          collectives::CommGroup(collectives::CommGroupType::CONSECUTIVE, 1));
    });
    add(FLOAT, 24, [&](Tensor in) { // leading dimension: the group size
      return collectives::allToAllCrossReplica(graph, in.reshape({1, 24}), prog);
    });
    if (!loop)
      return;
    add(FLOAT, 64, [&](Tensor in) { // in place, three times
      program::Sequence body;
      collectives::allReduceInPlaceCrossReplica(graph, in, Op::ADD, body);
      prog.add(program::Repeat(3, body));
      return in;
    });
  }

  template <class F> void add(Type type, std::size_t n, F &&collective) {
    const std::string i = std::to_string(ins.size());
    Tensor in = graph.addVariable(type, {n}, "in" + i);
    graph.setTileMapping(in, 0);
    Tensor out = collective(in);
    graph.setTileMapping(out, 0);
    graph.createHostWrite("in" + i, in);
    graph.createHostRead("out" + i, out);
    ins.push_back({type, n});
    outs.push_back({type, out.numElements()});
  }

  std::vector<Bytes> run(const Device &device, const OptionFlags &options,
                         std::string *profile = nullptr) {
    Engine e(graph, prog, options);
    e.load(device);
    for (std::size_t i = 0; i < ins.size(); ++i) {
      const Bytes b = dataOf(ins[i].first, ins[i].second, unsigned(i));
      e.writeTensor("in" + std::to_string(i), b.data(), b.data() + b.size());
    }
    e.run(0);
    std::vector<Bytes> results;
    for (std::size_t i = 0; i < outs.size(); ++i) {
      Bytes b(outs[i].first.size() * outs[i].second);
      e.readTensor("out" + std::to_string(i), b.data(), b.data() + b.size());
      results.push_back(std::move(b));
    }
    if (profile) {
      std::ostringstream summary;
      e.printProfileSummary(summary);
      *profile = summary.str();
    }
    return results;
  }
};

} // namespace

TEST_CASE("NCCL runs every collective of a world of one on the GPU, byte for byte the CPU's",
          "[gpu][collectives]") {
  for (bool loop : {false, true}) {
    INFO((loop ? "with" : "without") << " a Repeat");
    Collectives c(loop);
    const auto cpu = c.run(Device::createCPUDevice(), {}); // the reference, with or without a GPU
    // The data in, unchanged by one replica's ADD, and three in-place sums of one replica.
    CHECK(cpu[0] == dataOf(FLOAT, 1001, 0));
    if (skipWithoutGpu())
      return;
    for (const char *flow : {"host", "graph"}) {
      INFO("control flow " << flow);
      std::string profile;
      const auto gpu = c.run(Device::createGpuDevice(0),
                             {{"aspen.collectives.onDevice", "true"},
                              {"aspen.cuda.controlFlow", flow}},
                             &profile);
      for (std::size_t i = 0; i < cpu.size(); ++i) {
        INFO("collective " << i);
        REQUIRE(gpu[i] == cpu[i]);
      }
      // Without control flow the whole program, collectives and all, is one captured graph;
      // with a Repeat around a collective nothing holding it is.
      INFO(profile);
      CHECK((profile.find("Device graphs: 1 launches") != std::string::npos) ==
            (!loop && std::string(flow) == "graph"));
    }
  }
}

TEST_CASE("a graph with SQUARE_ADD keeps its collectives on the host path on the GPU",
          "[gpu][collectives]") {
  if (skipWithoutGpu())
    return;
  Graph graph(Target::createGeneric(1), replication_factor(1));
  Tensor x = graph.addVariable(FLOAT, {8}, "x");
  graph.setTileMapping(x, 0);
  program::Sequence prog;
  Tensor y = collectives::allReduceCrossReplica(graph, x, CollectiveOperator::SQUARE_ADD, prog);
  graph.setTileMapping(y, 0);
  graph.createHostWrite("x", x);
  graph.createHostRead("y", y);
  REQUIRE_THROWS_WITH(Engine(graph, prog, {{"aspen.collectives.onDevice", "true"}})
                          .load(Device::createGpuDevice(0)),
                      Catch::Contains("aspen.collectives.onDevice is true"));
  Engine e(graph, prog);
  e.load(Device::createGpuDevice(0));
  const std::vector<float> in{1, -2, 3, -4, 0.5f, 6, 7, 8};
  e.writeTensor("x", in.data(), in.data() + 8);
  e.run(0);
  std::vector<float> out(8);
  e.readTensor("y", out.data(), out.data() + 8);
  for (std::size_t i = 0; i < 8; ++i)
    CHECK(out[i] == in[i] * in[i]);
}
