// countedLoop and countedForLoop: trip counts and the index seen by the body, against a host
// for-loop, with limits written at run time, on every configuration of the harness.
#include "correctness/test_fill_harness.hpp"

#include <aspen/ops/Loop.hpp>
#include <aspen/ops/ScaledAdd.hpp>
#include <aspen/ops/Zero.hpp>

#include <catch2/catch.hpp>

using namespace aspen;

TEST_CASE("countedLoop runs ceil((end - begin) / step) times with the index on device",
          "[correctness][loop]") {
  struct Range {
    std::size_t begin, end, step;
  };
  for (const auto &c : dmtest::configs()) {
    INFO(c.name);
    for (const Range r : {Range{2, 11, 3}, Range{0, 5, 1}, Range{7, 8, 100}, Range{4, 10, 2}}) {
      Graph g = dmtest::makeGraph(c);
      Tensor sum = dmtest::variable(g, UNSIGNED_INT, {1}, "sum");
      Tensor trips = dmtest::variable(g, UNSIGNED_INT, {1}, "trips");
      Tensor one = g.addConstant(UNSIGNED_INT, {1}, 1u);
      g.setTileMapping(one, 0);
      program::Sequence prog;
      ops::zero(g, concat(sum, trips), prog);
      prog.add(ops::countedLoop(g, r.begin, r.end, r.step, [&](const Tensor &index) {
        program::Sequence body;
        ops::scaledAddTo(g, sum, index, 10.0f, body); // sum += 10 * index
        ops::scaledAddTo(g, trips, one, 1.0f, body);
        return body;
      }));
      Engine e = dmtest::load(g, prog, c);
      e.run();
      unsigned wantSum = 0, wantTrips = 0;
      for (std::size_t i = r.begin; i < r.end; i += r.step) {
        wantSum += 10 * static_cast<unsigned>(i);
        ++wantTrips;
      }
      REQUIRE(dmtest::read<unsigned>(e, "sum", 1)[0] == wantSum);
      REQUIRE(dmtest::read<unsigned>(e, "trips", 1)[0] == wantTrips);
    }
    // countedLoop(graph, count, body) counts 0..count-1.
    Graph g = dmtest::makeGraph(c);
    Tensor sum = dmtest::variable(g, UNSIGNED_INT, {1}, "sum");
    program::Sequence prog;
    ops::zero(g, sum, prog);
    prog.add(ops::countedLoop(g, 6, [&](const Tensor &index) {
      program::Sequence body;
      ops::scaledAddTo(g, sum, index, 1.0f, body);
      return body;
    }));
    Engine e = dmtest::load(g, prog, c);
    e.run();
    REQUIRE(dmtest::read<unsigned>(e, "sum", 1)[0] == 15u);
  }
}

TEST_CASE("countedForLoop counts from initialCount to a limit read on device",
          "[correctness][loop]") {
  for (const auto &c : dmtest::configs()) {
    INFO(c.name);
    Graph g = dmtest::makeGraph(c);
    Tensor limit = dmtest::variable(g, INT, {}, "limit");
    Tensor sum = dmtest::variable(g, INT, {1}, "sum");
    Tensor trips = dmtest::variable(g, INT, {1}, "trips");
    Tensor count = dmtest::variable(g, INT, {1}, "count");
    Tensor one = g.addConstant(INT, {1}, 1);
    g.setTileMapping(one, 0);
    program::Sequence body;
    ops::scaledAddTo(g, sum, count, 1.0f, body);
    ops::scaledAddTo(g, trips, one, 1.0f, body);
    program::Sequence prog;
    ops::zero(g, concat(sum, trips), prog);
    prog.add(ops::countedForLoop(g, count, -3, limit, 3, body));
    // The overload that makes its own count: unsigned, counting down by wrapping steps.
    Tensor ulimit = dmtest::variable(g, UNSIGNED_INT, {1}, "ulimit");
    Tensor utrips = dmtest::variable(g, UNSIGNED_INT, {1}, "utrips");
    Tensor uone = g.addConstant(UNSIGNED_INT, {1}, 1u);
    g.setTileMapping(uone, 0);
    program::Sequence ubody;
    ops::scaledAddTo(g, utrips, uone, 1.0f, ubody);
    ops::zero(g, utrips, prog);
    prog.add(ops::countedForLoop(g, 10, ulimit, -2, ubody));
    Engine e = dmtest::load(g, prog, c);
    for (int lim : {9, -3, 0, 30}) {
      INFO("limit " << lim);
      dmtest::write(e, "limit", std::vector<int>{lim});
      // 10, 8, ... reaches the limit after (lim + 3) / 3 steps, wrapping below 0 for lim = 30.
      const unsigned ulim = 10u - 2u * static_cast<unsigned>((lim + 3) / 3);
      dmtest::write(e, "ulimit", std::vector<unsigned>{ulim});
      e.run();
      int wantSum = 0, wantTrips = 0, lastCount = -3;
      for (int k = -3; k != lim; k += 3) {
        wantSum += k;
        ++wantTrips;
        lastCount = k + 3;
      }
      REQUIRE(dmtest::read<int>(e, "sum", 1)[0] == wantSum);
      REQUIRE(dmtest::read<int>(e, "trips", 1)[0] == wantTrips);
      REQUIRE(dmtest::read<int>(e, "count", 1)[0] == lastCount); // the count that stopped it
      unsigned wantU = 0;
      for (unsigned k = 10; k != ulim; k -= 2)
        ++wantU;
      REQUIRE(dmtest::read<unsigned>(e, "utrips", 1)[0] == wantU);
    }
  }
}
