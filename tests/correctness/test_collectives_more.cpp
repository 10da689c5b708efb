// The rest of the in-process collectives of issue 33 (aspen/Collectives.hpp): replica groups
// (CommGroup ALL, CONSECUTIVE, ORTHOGONAL), every integer type, multi-tensor all-reduce,
// all-to-all and CrossReplicaCopy, createReplicatedGraph, the older PopLibs names, and
// executables that keep groups, copy maps and BROADCAST stream modes. Every result is checked bit for bit
// against a host reference that forms each group from GCL's definition and combines the
// members' values exactly (integers in 64 bits, then wrapped to the type; floats in double,
// then rounded once), and every refusal by the rule its message names.
#include "TestDevice.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Executable.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace aspen;
using collectives::CollectiveOperator;
using collectives::CommGroup;
using collectives::CommGroupType;
using Bytes = std::vector<std::uint8_t>;

namespace {

// --- Host values of every type ----------------------------------------------------------------

// Calls f(T{}) with the host type of `type`'s elements (bool as one byte).
template <class F> void withHostType(Type type, F &&f) {
  if (type == FLOAT) f(float{});
  else if (type == HALF) f(half{});
  else if (type == INT) f(std::int32_t{});
  else if (type == UNSIGNED_INT) f(std::uint32_t{});
  else if (type == SHORT) f(std::int16_t{});
  else if (type == UNSIGNED_SHORT) f(std::uint16_t{});
  else if (type == CHAR) f(char{});
  else if (type == SIGNED_CHAR) f((signed char){});
  else if (type == UNSIGNED_CHAR || type == BOOL) f(std::uint8_t{});
  else if (type == LONGLONG) f(std::int64_t{});
  else if (type == UNSIGNED_LONGLONG) f(std::uint64_t{});
  else FAIL("no host type for " << type.toString());
}

// Exact values (integers, or multiples of 1/2 for the floating types) as the type's bytes:
// integers converted through 64 bits, so out-of-range ones wrap as the device's do; floats
// rounded once (HALF through float, as the device accumulates).
Bytes toBytes(Type type, const std::vector<double> &values) {
  Bytes out(values.size() * type.size());
  withHostType(type, [&](auto t) {
    using T = decltype(t);
    for (std::size_t i = 0; i < values.size(); ++i) {
      T v;
      if constexpr (std::is_same_v<T, half>)
        v = half(float(values[i]));
      else if constexpr (std::is_floating_point_v<T>)
        v = T(values[i]);
      else
        v = T(std::int64_t(values[i]));
      std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
    }
  });
  return out;
}

// Replica `replica`'s element i of a collective's data: small, distinct across replicas,
// negative for the signed types, 0 or 1 for BOOL.
double valueOf(Type type, unsigned replica, std::size_t i) {
  if (type == BOOL)
    return double((replica + i) % 3 != 0);
  const int v = (int(i) * 7 + int(replica) * 5) % 11;
  if (!type.isSigned())
    return v;
  return type.isFloatingPoint() ? (v - 4) * 0.5 : v - 4;
}

std::vector<double> valuesOf(Type type, unsigned replica, std::size_t n, std::size_t offset = 0) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = valueOf(type, replica, i + offset);
  return v;
}

// --- Replica groups, from GCL's definition -----------------------------------------------------

struct Groups {
  unsigned r;
  CommGroup group;
  unsigned size() const { return group.type == CommGroupType::ALL ? r : group.replicaGroupSize; }
  // The members of replica's group, in increasing replica order: CONSECUTIVE groups are runs
  // of k; ORTHOGONAL ones gather the replicas equal modulo r / k.
  std::vector<unsigned> membersWith(unsigned replica) const {
    std::vector<unsigned> members;
    const unsigned k = size(), m = r / k;
    for (unsigned j = 0; j < r; ++j) {
      const bool same = group.type == CommGroupType::ALL           ? true
                        : group.type == CommGroupType::CONSECUTIVE ? j / k == replica / k
                                                                   : j % m == replica % m;
      if (same)
        members.push_back(j);
    }
    return members;
  }
  unsigned positionOf(unsigned replica) const {
    const std::vector<unsigned> members = membersWith(replica);
    return unsigned(std::find(members.begin(), members.end(), replica) - members.begin());
  }
  std::string describe() const {
    return std::to_string(r) + " replicas, " + collectives::toString(group.type) + " " +
           std::to_string(size());
  }
};

// op over the members' element i, exactly (LOCAL: replica's own).
double reduceReference(Type type, CollectiveOperator op, const std::vector<unsigned> &members,
                       unsigned replica, std::size_t i) {
  if (op == CollectiveOperator::LOCAL)
    return valueOf(type, replica, i);
  double acc = 0;
  for (std::size_t m = 0; m < members.size(); ++m) {
    const double v = valueOf(type, members[m], i);
    const bool first = m == 0;
    switch (op) {
    case CollectiveOperator::ADD: case CollectiveOperator::MEAN: acc = first ? v : acc + v; break;
    case CollectiveOperator::SQUARE_ADD: acc = first ? v * v : acc + v * v; break;
    case CollectiveOperator::MUL: acc = first ? v : acc * v; break;
    case CollectiveOperator::MIN: acc = first ? v : std::min(acc, v); break;
    case CollectiveOperator::MAX: acc = first ? v : std::max(acc, v); break;
    case CollectiveOperator::LOGICAL_AND: acc = first ? v : double(acc != 0 && v != 0); break;
    case CollectiveOperator::LOGICAL_OR: acc = first ? v : double(acc != 0 || v != 0); break;
    case CollectiveOperator::LOCAL: break;
    }
  }
  return op == CollectiveOperator::MEAN ? acc / double(members.size()) : acc;
}

// The operators each type takes (aspen/Collectives.hpp), and the types.
std::vector<CollectiveOperator> operatorsOf(Type type) {
  using O = CollectiveOperator;
  if (type == BOOL)
    return {O::LOGICAL_AND, O::LOGICAL_OR, O::LOCAL};
  std::vector<O> ops = {O::ADD, O::MUL, O::MIN, O::MAX, O::SQUARE_ADD, O::LOCAL};
  if (type.isFloatingPoint())
    ops.push_back(O::MEAN);
  return ops;
}
const std::vector<Type> kTypes = {FLOAT,         HALF,        INT,           UNSIGNED_INT,
                                  SHORT,         UNSIGNED_SHORT, CHAR,        SIGNED_CHAR,
                                  UNSIGNED_CHAR, LONGLONG,    UNSIGNED_LONGLONG, BOOL};

// --- A graph of every collective of every type over one grouping --------------------------------

constexpr std::size_t kN = 6;   // data elements (reduce-scatter pads when k = 4)
constexpr std::size_t kRow = 2; // all-to-all: data [k, kRow]

// A host write of every replica's valuesOf(type, replica, elements).
struct Input {
  std::string handle;
  Type type;
  std::size_t elements;
};

// One read of a result: its handle, and each replica's expected bytes.
struct Expectation {
  std::string handle;
  std::vector<Bytes> want; // by replica
};

struct EveryCollective {
  Graph graph;
  program::Sequence prog;
  std::vector<Expectation> expectations;
  std::vector<Input> inputs;

  EveryCollective(const Groups &groups)
      : graph(Target::createGeneric(2), replication_factor(groups.r)) {
    for (Type t : kTypes)
      addType(groups, t);
  }

  void addType(const Groups &groups, Type t) {
    const unsigned k = groups.size();
    const std::string name = t.toString();
    Tensor data = graph.addVariable(t, {kN}, "data/" + name);
    Tensor rows = graph.addVariable(t, {k, kRow}, "rows/" + name);
    graph.setTileMapping(data, 0);
    graph.setTileMapping(rows, 1);
    graph.createHostWrite("data/" + name, data);
    graph.createHostWrite("rows/" + name, rows);
    inputs.push_back({"data/" + name, t, kN});
    inputs.push_back({"rows/" + name, t, k * kRow}); // valueOf's elements, row-major
    for (CollectiveOperator op : operatorsOf(t)) {
      expect("allReduce/" + name + "/" + collectives::toString(op),
             collectives::allReduceCrossReplica(graph, data, op, prog, groups.group),
             groups, t, [&](unsigned rep) { return allReduceOf(groups, t, op, rep); });
      if (op == CollectiveOperator::LOCAL || op == CollectiveOperator::MUL ||
          op == CollectiveOperator::MIN || op == CollectiveOperator::MEAN)
        continue; // reduce-scatter shares the reduction: ADD, MAX, SQUARE_ADD, the logical ones
      expect("reduceScatter/" + name + "/" + collectives::toString(op),
             collectives::reduceScatterCrossReplica(graph, data, op, prog, groups.group), groups,
             t, [&](unsigned rep) { return reduceScatterOf(groups, t, op, rep); });
    }
    expect("allGather/" + name, collectives::allGatherCrossReplica(graph, data, prog, groups.group),
           groups, t, [&](unsigned rep) {
             std::vector<double> all;
             for (unsigned m : groups.membersWith(rep))
               for (double v : valuesOf(t, m, kN))
                 all.push_back(v);
             return all;
           });
    expect("broadcast/" + name,
           collectives::broadcastCrossReplica(graph, data, prog, groups.group, k - 1), groups, t,
           [&](unsigned rep) { return valuesOf(t, groups.membersWith(rep).back(), kN); });
    expect("allToAll/" + name, collectives::allToAllCrossReplica(graph, rows, prog, groups.group),
           groups, t, [&](unsigned rep) {
             // [j] is member j's row [position]: rows hold element j * kRow + e of valueOf.
             std::vector<double> out;
             const unsigned p = groups.positionOf(rep);
             for (unsigned m : groups.membersWith(rep))
               for (double v : valuesOf(t, m, kRow, p * kRow))
                 out.push_back(v);
             return out;
           });
  }

  template <class F>
  void expect(const std::string &handle, const Tensor &result, const Groups &groups, Type t,
              F &&reference) {
    graph.createHostRead(handle, result);
    Expectation e{handle, {}};
    for (unsigned rep = 0; rep < groups.r; ++rep)
      e.want.push_back(toBytes(t, reference(rep)));
    expectations.push_back(std::move(e));
  }

  static std::vector<double> allReduceOf(const Groups &groups, Type t, CollectiveOperator op,
                                         unsigned rep) {
    std::vector<double> out(kN);
    for (std::size_t i = 0; i < kN; ++i)
      out[i] = reduceReference(t, op, groups.membersWith(rep), rep, i);
    return out;
  }
  // Piece `position` of the group's reduction, ceil(n / k) long, zero past the data.
  static std::vector<double> reduceScatterOf(const Groups &groups, Type t, CollectiveOperator op,
                                             unsigned rep) {
    const std::size_t k = groups.size(), piece = (kN + k - 1) / k;
    std::vector<double> out(piece, 0.0);
    for (std::size_t j = 0; j < piece; ++j) {
      const std::size_t i = groups.positionOf(rep) * piece + j;
      if (i < kN)
        out[j] = reduceReference(t, op, groups.membersWith(rep), rep, i);
    }
    return out;
  }
};

// Writes every replica's inputs, runs, and checks every result of every replica.
void runAndCheck(Engine &e, const EveryCollective &c, unsigned r) {
  for (unsigned rep = 0; rep < r; ++rep)
    for (const Input &in : c.inputs) {
      const Bytes bytes = toBytes(in.type, valuesOf(in.type, rep, in.elements));
      e.writeTensor(in.handle, rep, bytes.data(), bytes.data() + bytes.size());
    }
  e.run();
  for (const Expectation &x : c.expectations)
    for (unsigned rep = 0; rep < r; ++rep) {
      INFO(x.handle << ", replica " << rep);
      Bytes got(x.want[rep].size());
      e.readTensor(x.handle, rep, got.data(), got.data() + got.size());
      REQUIRE(got == x.want[rep]);
    }
}

std::vector<Groups> groupingsOf(unsigned r) {
  std::vector<Groups> all = {{r, CommGroup()}};
  for (unsigned k = 1; k <= r; ++k)
    if (r % k == 0)
      for (CommGroupType type : {CommGroupType::CONSECUTIVE, CommGroupType::ORTHOGONAL})
        all.push_back({r, CommGroup(type, k)});
  return all;
}

} // namespace

TEST_CASE("every collective of every type gives each replica its group's result, for each "
          "grouping of 1 to 4 replicas",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  for (unsigned r = 1; r <= 4; ++r)
    for (const Groups &groups : groupingsOf(r)) {
      INFO(groups.describe());
      EveryCollective c(groups);
      Engine e(c.graph, c.prog);
      e.load(Device::createCPUDevice());
      runAndCheck(e, c, r);
    }
}

TEST_CASE("the groups are GCL's: CONSECUTIVE neighbours and ORTHOGONAL strides",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  // Each replica's index, summed over its group: {0,1},{2,3} give 1, 1, 5, 5; {0,2},{1,3} give
  // 2, 4, 2, 4 (written out, not derived from the reference above).
  Graph g(Target::createGeneric(1), replication_factor(4));
  Tensor index = g.addReplicationIndexConstant("index");
  g.setTileMapping(index, 0);
  program::Sequence prog;
  Tensor consecutive = collectives::allReduceCrossReplica(
      g, index, CollectiveOperator::ADD, prog, CommGroup(CommGroupType::CONSECUTIVE, 2));
  Tensor orthogonal = collectives::allReduceCrossReplica(
      g, index, CollectiveOperator::ADD, prog, CommGroup(CommGroupType::ORTHOGONAL, 2));
  Tensor all = collectives::allReduceCrossReplica(g, index, CollectiveOperator::ADD, prog,
                                                  CommGroup(CommGroupType::ALL, 0));
  g.createHostRead("consecutive", consecutive);
  g.createHostRead("orthogonal", orthogonal);
  g.createHostRead("all", all);
  Engine e(g, prog);
  e.load(Device::createCPUDevice());
  e.run();
  const unsigned wantConsecutive[4] = {1, 1, 5, 5}, wantOrthogonal[4] = {2, 4, 2, 4};
  for (unsigned rep = 0; rep < 4; ++rep) {
    unsigned c = 0, o = 0, a = 0;
    e.readTensor("consecutive", rep, &c, &c + 1);
    e.readTensor("orthogonal", rep, &o, &o + 1);
    e.readTensor("all", rep, &a, &a + 1);
    CHECK(c == wantConsecutive[rep]);
    CHECK(o == wantOrthogonal[rep]);
    CHECK(a == 6);
  }
}

TEST_CASE("grouped collectives inside Repeat and If", "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  // 4 replicas in ORTHOGONAL pairs {0,2},{1,3}: a Repeat of 3 in-place sums leaves
  // 2^2 * (x_a + x_b); an If whose predicate every replica holds true runs a CONSECUTIVE
  // all-to-all of the pairs {0,1},{2,3}, and its false branch (never taken) a MAX.
  const unsigned R = 4;
  Graph g(Target::createGeneric(1), replication_factor(R));
  Tensor x = g.addVariable(INT, {3}, "x");
  Tensor rows = g.addVariable(FLOAT, {2, 2}, "rows");
  Tensor yes = g.addVariable(BOOL, {}, "yes");
  for (const Tensor &t : {x, rows, yes})
    g.setTileMapping(t, 0);
  program::Sequence sum, swap, other, prog;
  collectives::allReduceInPlaceCrossReplica(g, x, CollectiveOperator::ADD, sum,
                                            CommGroup(CommGroupType::ORTHOGONAL, 2));
  prog.add(program::Repeat(3, sum));
  Tensor swapped = g.clone(rows, "swapped");
  swap.add(program::CrossReplicaAllToAll(rows, swapped, CommGroup(CommGroupType::CONSECUTIVE, 2)));
  other.add(program::CrossReplicaAllReduce(rows, swapped, CollectiveOperator::MAX));
  prog.add(program::If(yes, swap, other));
  g.createHostWrite("x", x);
  g.createHostWrite("rows", rows);
  g.createHostWrite("yes", yes);
  g.createHostRead("xOut", x);
  g.createHostRead("swapped", swapped);
  Engine e(g, prog);
  e.load(Device::createCPUDevice());
  std::int32_t xs[R][3];
  float rs[R][4];
  const bool t = true;
  for (unsigned rep = 0; rep < R; ++rep) {
    for (int i = 0; i < 3; ++i)
      xs[rep][i] = std::int32_t(10 * rep + i) - 7;
    for (int i = 0; i < 4; ++i)
      rs[rep][i] = float(100 * rep + i);
    e.writeTensor("x", rep, xs[rep], xs[rep] + 3);
    e.writeTensor("rows", rep, rs[rep], rs[rep] + 4);
    e.writeTensor("yes", rep, &t, &t + 1);
  }
  e.run();
  for (unsigned rep = 0; rep < R; ++rep) {
    INFO("replica " << rep);
    std::int32_t out[3];
    float got[4];
    e.readTensor("xOut", rep, out, out + 3);
    e.readTensor("swapped", rep, got, got + 4);
    const unsigned partner = rep ^ 2, pairBase = rep & ~1u, position = rep & 1u;
    for (int i = 0; i < 3; ++i)
      CHECK(out[i] == 4 * (xs[rep][i] + xs[partner][i]));
    for (unsigned j = 0; j < 2; ++j)
      for (unsigned e2 = 0; e2 < 2; ++e2)
        CHECK(got[j * 2 + e2] == rs[pairBase + j][position * 2 + e2]);
  }
}

TEST_CASE("a multi-tensor all-reduce reduces every tensor, fused into one step a type",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  const unsigned R = 3;
  Graph g(Target::createGeneric(2), replication_factor(R));
  // Mixed types, a non-contiguous view (a transposed slice) and a scalar.
  Tensor a = g.addVariable(FLOAT, {4}, "a");
  Tensor b = g.addVariable(INT, {2, 2}, "b");
  Tensor big = g.addVariable(FLOAT, {3, 3}, "big");
  Tensor c = big.slice({0, 1}, {3, 3}).transpose(); // [2, 3], strided
  Tensor d = g.addVariable(HALF, {5}, "d");
  Tensor e1 = g.addVariable(INT, {}, "e");
  for (const Tensor &t : {a, b, big, d, e1})
    g.setTileMapping(t, 1);
  const std::vector<Tensor> datas = {a, b, c, d, e1};
  std::vector<Tensor> inPlace = datas, dests;
  for (std::size_t i = 0; i < datas.size(); ++i) {
    dests.push_back(g.addVariable(datas[i].elementType(), datas[i].shape(),
                                  "dest" + std::to_string(i)));
    g.setTileMapping(dests.back(), 0);
  }
  program::Sequence prog;
  const std::vector<Tensor> sums =
      collectives::allReduceCrossReplica(g, datas, CollectiveOperator::ADD, prog, "sums");
  collectives::allReduceToDestinationCrossReplica(g, datas, dests, CollectiveOperator::MAX, prog,
                                                  CommGroup(CommGroupType::CONSECUTIVE, 1),
                                                  "own");
  collectives::allReduceInPlaceCrossReplica(g, inPlace, CollectiveOperator::MUL, prog, "products");
  REQUIRE(sums.size() == datas.size());
  for (std::size_t i = 0; i < datas.size(); ++i) {
    CHECK(sums[i].shape() == datas[i].shape());
    CHECK(sums[i].elementType() == datas[i].elementType());
    g.createHostRead("sum" + std::to_string(i), sums[i]);
    g.createHostRead("dest" + std::to_string(i), dests[i]);
    g.createHostRead("product" + std::to_string(i), datas[i]);
  }
  g.createHostWrite("a", a);
  g.createHostWrite("b", b);
  g.createHostWrite("big", big);
  g.createHostWrite("d", d);
  g.createHostWrite("e", e1);
  Engine e(g, prog);
  e.load(Device::createCPUDevice());
  // Replica rep's element i of datas[t] (flattened) is valueOf(type, rep, i + 10 t).
  for (unsigned rep = 0; rep < R; ++rep) {
    const auto write = [&](const char *h, Type t, std::size_t n, std::size_t off) {
      const Bytes bytes = toBytes(t, valuesOf(t, rep, n, off));
      e.writeTensor(h, rep, bytes.data(), bytes.data() + bytes.size());
    };
    write("a", FLOAT, 4, 0);
    write("b", INT, 4, 10);
    write("d", HALF, 5, 30);
    write("e", INT, 1, 40);
    // big: c = big[0:3, 1:3]^T, so c's element (i, j) is big's (j, i + 1).
    std::vector<double> bigValues(9, 99.0);
    const std::vector<double> cValues = valuesOf(FLOAT, rep, 6, 20);
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 3; ++j)
        bigValues[j * 3 + i + 1] = cValues[i * 3 + j];
    const Bytes bytes = toBytes(FLOAT, bigValues);
    e.writeTensor("big", rep, bytes.data(), bytes.data() + bytes.size());
  }
  e.run();
  const std::size_t offsets[5] = {0, 10, 20, 30, 40};
  const std::vector<unsigned> everyone = {0, 1, 2};
  for (unsigned rep = 0; rep < R; ++rep)
    for (std::size_t t = 0; t < datas.size(); ++t) {
      INFO("replica " << rep << ", tensor " << t);
      const Type type = datas[t].elementType();
      const std::size_t n = datas[t].numElements();
      std::vector<double> sum(n), own(n), product(n);
      for (std::size_t i = 0; i < n; ++i) {
        sum[i] = reduceReference(type, CollectiveOperator::ADD, everyone, rep, i + offsets[t]);
        own[i] = valueOf(type, rep, i + offsets[t]); // MAX over a group of one
        product[i] = reduceReference(type, CollectiveOperator::MUL, everyone, rep, i + offsets[t]);
      }
      for (const auto &[handle, want] :
           {std::pair{"sum", sum}, {"dest", own}, {"product", product}}) {
        Bytes got(n * type.size());
        e.readTensor(handle + std::to_string(t), rep, got.data(), got.data() + got.size());
        CHECK(got == toBytes(type, want));
      }
    }
  // The profile lists each kernel once: three types, three calls, nine all-reduce steps.
  std::ostringstream profile;
  e.printProfileSummary(profile);
  std::istringstream lines(profile.str());
  std::vector<std::string> steps;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("    AllReduce ", 0) == 0)
      steps.push_back(line.substr(14, line.find(':') - 14));
  std::sort(steps.begin(), steps.end());
  CHECK(steps == std::vector<std::string>{
                     "own/allReduce/float", "own/allReduce/half", "own/allReduce/int",
                     "products/allReduce/float", "products/allReduce/half",
                     "products/allReduce/int", "sums/allReduce/float", "sums/allReduce/half",
                     "sums/allReduce/int"});
}

TEST_CASE("CrossReplicaCopy gives each replica its source's tensor, for rings and other "
          "permutations of any type",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  const std::vector<std::map<unsigned, unsigned>> maps = {
      {{0, 1}, {1, 0}},
      {{0, 2}, {2, 1}, {1, 0}},
      {{0, 2}, {2, 3}, {3, 1}, {1, 0}}, // Poplar's documented clockwise ring
      {{0, 1}, {1, 0}, {2, 3}, {3, 2}}};
  for (const auto &map : maps) {
    const unsigned R = unsigned(map.size());
    INFO(R << " replicas, map starting 0 -> " << map.at(0));
    Graph g(Target::createGeneric(2), replication_factor(R));
    program::Sequence prog;
    std::vector<Tensor> dsts;
    for (Type t : {FLOAT, HALF, UNSIGNED_LONGLONG, SIGNED_CHAR, BOOL}) {
      Tensor src = g.addVariable(t, {2, 3}, "src/" + t.toString());
      Tensor dst = g.addVariable(t, {6}, "dst/" + t.toString());
      g.setTileMapping(src, 0);
      g.setTileMapping(dst, 1);
      prog.add(program::CrossReplicaCopy(src, dst, map, "copy/" + t.toString()));
      g.createHostWrite("src/" + t.toString(), src);
      g.createHostRead("dst/" + t.toString(), dst);
    }
    Engine e(g, prog);
    e.load(Device::createCPUDevice());
    for (Type t : {FLOAT, HALF, UNSIGNED_LONGLONG, SIGNED_CHAR, BOOL})
      for (unsigned rep = 0; rep < R; ++rep) {
        const Bytes bytes = toBytes(t, valuesOf(t, rep, 6));
        e.writeTensor("src/" + t.toString(), rep, bytes.data(), bytes.data() + bytes.size());
      }
    e.run();
    for (Type t : {FLOAT, HALF, UNSIGNED_LONGLONG, SIGNED_CHAR, BOOL})
      for (const auto &[source, destination] : map) {
        INFO(t.toString() << ": " << source << " -> " << destination);
        Bytes got(6 * t.size());
        e.readTensor("dst/" + t.toString(), destination, got.data(), got.data() + got.size());
        CHECK(got == toBytes(t, valuesOf(t, source, 6)));
      }
  }
}

namespace {

// Runs `call` and checks that it throws E whose message contains every one of `texts`.
template <class E, class F> void refuses(F &&call, std::vector<std::string> texts) {
  try {
    call();
    FAIL("accepted; expected a refusal naming: " << texts.front());
  } catch (const E &err) {
    for (const std::string &text : texts)
      CHECK_THAT(err.what(), Catch::Matchers::Contains(text));
  }
}

} // namespace

TEST_CASE("collectives refuse groups, shapes, maps and types their rules do not allow, by "
          "name",
          "[correctness][replication][collectives][error]") {
  Graph g(Target::createGeneric(2), replication_factor(4));
  Tensor f = g.addVariable(FLOAT, {4}, "f");
  Tensor f3 = g.addVariable(FLOAT, {3, 2}, "f3");
  Tensor i = g.addVariable(INT, {4}, "i");
  Tensor s = g.addVariable(SHORT, {4}, "s");
  Tensor q = g.addVariable(QUARTER, {4}, "q");
  for (const Tensor &t : {f, f3, i, s, q})
    g.setTileMapping(t, 0);
  program::Sequence prog;
  const CommGroup three(CommGroupType::CONSECUTIVE, 3), zero(CommGroupType::ORTHOGONAL, 0);
  refuses<invalid_option>(
      [&] { collectives::allReduceCrossReplica(g, f, CollectiveOperator::ADD, prog, three, "g3"); },
      {"AllReduce 'g3/allReduce' (ADD, CONSECUTIVE groups of 3)", "group size of 3 does not "
       "divide the graph's 4 replicas", "must be at least 1 and divide the replication factor"});
  refuses<invalid_option>([&] { collectives::allGatherCrossReplica(g, f, prog, zero, "g0"); },
                          {"allGatherCrossReplica 'g0'", "group size of 0"});
  refuses<invalid_option>(
      [&] { collectives::reduceScatterCrossReplica(g, f, CollectiveOperator::ADD, prog, three); },
      {"reduceScatterCrossReplica", "group size of 3"});
  // all-to-all: the leading dimension is the group size.
  refuses<shape_error>([&] { collectives::allToAllCrossReplica(g, f3, prog, "a2a"); },
                       {"AllToAll 'a2a/allToAll'", "shape is {3,2}",
                        "leading dimension must be the group size 4"});
  CHECK_NOTHROW(collectives::allToAllCrossReplica(g, f3.slice(0, 2), prog,
                                                  CommGroup(CommGroupType::ORTHOGONAL, 2)));
  // Broadcast's root is a position in a group.
  refuses<index_error>([&] {
    collectives::broadcastCrossReplica(g, f, prog, CommGroup(CommGroupType::CONSECUTIVE, 2), 2);
  }, {"root replica 2 is not one of a group's 2"});
  // Types: QUARTER by name, MEAN of an integer type, a logical operator of SHORT.
  refuses<type_error>([&] { collectives::allGatherCrossReplica(g, q, prog, "quarter"); },
                      {"AllGather 'quarter/allGather'", "quarter data cannot take part",
                       "metadata"});
  refuses<type_error>(
      [&] { collectives::allReduceCrossReplica(g, s, CollectiveOperator::MEAN, prog); },
      {"MEAN does not take short data"});
  refuses<type_error>(
      [&] { collectives::allReduceCrossReplica(g, s, CollectiveOperator::LOGICAL_OR, prog); },
      {"LOGICAL_OR does not take short data"});
  // Multi-tensor: mismatched lists, a destination of the wrong size or type, overlapping ones.
  Tensor d4 = g.addVariable(FLOAT, {4}, "d4"), d2 = g.addVariable(FLOAT, {2}, "d2");
  g.setTileMapping(d4, 1);
  g.setTileMapping(d2, 1);
  refuses<shape_error>([&] {
    collectives::allReduceToDestinationCrossReplica(g, {f, i}, {d4}, CollectiveOperator::ADD,
                                                    prog, "lists");
  }, {"allReduceToDestinationCrossReplica 'lists'", "2 data tensors for 1 destinations"});
  refuses<type_error>([&] {
    collectives::allReduceToDestinationCrossReplica(g, {f, f}, {d4, d2}, CollectiveOperator::ADD,
                                                    prog, "sizes");
  }, {"destination 1", "must have its data's type and element count"});
  refuses<shape_error>([&] {
    collectives::allReduceToDestinationCrossReplica(g, {f, f}, {d4, d4}, CollectiveOperator::ADD,
                                                    prog, "twice");
  }, {"elements that alias one another"});
  // CrossReplicaCopy: the map is a permutation of the replicas without fixed points.
  Tensor f2 = g.addVariable(FLOAT, {4}, "f2");
  g.setTileMapping(f2, 1);
  refuses<index_error>([&] { program::CrossReplicaCopy(f, f2, {{0, 1}, {1, 4}, {2, 3}, {3, 0}}); },
                       {"CrossReplicaCopy", "entry 1 -> 4 names a replica past the graph's 4"});
  refuses<control_program_error>(
      [&] { program::CrossReplicaCopy(f, f2, {{0, 1}, {1, 0}, {2, 2}, {3, 3}}); },
      {"sends replica 2 to itself"});
  refuses<control_program_error>(
      [&] { program::CrossReplicaCopy(f, f2, {{0, 1}, {1, 0}, {2, 1}, {3, 2}}); },
      {"replicas 0 and 2 both copy to replica 1"});
  refuses<control_program_error>([&] { program::CrossReplicaCopy(f, f2, {{0, 1}, {1, 0}}); },
                                 {"has 2 entries for the graph's 4 replicas",
                                  "a permutation without fixed points"});
  refuses<shape_error>(
      [&] { program::CrossReplicaCopy(f, d2, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}, "short"); },
      {"CrossReplicaCopy 'short'", "the result has 2 elements"});
  // Nothing was added by the refusals but the accepted all-to-all; the program still compiles.
  CHECK_NOTHROW(compileGraph(g, {prog}));
}

TEST_CASE("an executable keeps replica groups, copy maps, the new kernels and stream modes",
          "[correctness][replication][collectives]") {
  if (aspen::test::skipOnGpuRun())
    return;
  const unsigned R = 4;
  Graph g(Target::createGeneric(2), replication_factor(R));
  Tensor x = g.addVariable(LONGLONG, {4}, "x");
  g.setTileMapping(x, 0);
  program::Sequence prog;
  prog.add(program::Copy(g.addHostToDeviceFIFO("x", LONGLONG, 4, ReplicatedStreamMode::BROADCAST),
                         x));
  Tensor mine = g.clone(x, "mine");
  Tensor pairs = collectives::allReduceCrossReplica(g, x, CollectiveOperator::ADD, prog,
                                                    CommGroup(CommGroupType::ORTHOGONAL, 2));
  Tensor rows = g.addVariable(LONGLONG, {2, 2}, "rows");
  g.setTileMapping(rows, 0);
  Tensor swapped = collectives::allToAllCrossReplica(g, rows, prog,
                                                     CommGroup(CommGroupType::CONSECUTIVE, 2));
  // Replica d receives replica d + 1's rows (mod 4).
  prog.add(program::CrossReplicaCopy(rows, mine, {{0, 3}, {3, 2}, {2, 1}, {1, 0}}));
  g.createHostWrite("rows", rows);
  g.createHostRead("pairs", pairs);
  g.createHostRead("swapped", swapped);
  g.createHostRead("mine", mine);
  std::stringstream bytes;
  compileGraph(g, {prog}).serialize(bytes);
  Engine e(Executable::deserialize(bytes));
  e.load(Device::createCPUDevice());
  const std::int64_t xs[4] = {5, -6, 7, 1LL << 40};
  e.connectStream("x", const_cast<std::int64_t *>(xs)); // one BROADCAST stream
  std::int64_t rs[R][4];
  for (unsigned rep = 0; rep < R; ++rep) {
    for (int i = 0; i < 4; ++i)
      rs[rep][i] = std::int64_t(rep) * 1000 + i;
    e.writeTensor("rows", rep, rs[rep], rs[rep] + 4);
  }
  e.run();
  for (unsigned rep = 0; rep < R; ++rep) {
    INFO("replica " << rep);
    std::int64_t p[4], s[4], m[4];
    e.readTensor("pairs", rep, p, p + 4);
    e.readTensor("swapped", rep, s, s + 4);
    e.readTensor("mine", rep, m, m + 4);
    const unsigned base = rep & ~1u, position = rep & 1u, source = (rep + 1) % R;
    for (int i = 0; i < 4; ++i) {
      CHECK(p[i] == 2 * xs[i]); // an ORTHOGONAL pair of the same broadcast data
      CHECK(m[i] == rs[source][i]);
    }
    for (unsigned j = 0; j < 2; ++j)
      for (unsigned k = 0; k < 2; ++k)
        CHECK(s[j * 2 + k] == rs[base + j][position * 2 + k]);
  }
}

TEST_CASE("createReplicatedGraph replicates a graph, its target one replica's share of tiles",
          "[correctness][replication]") {
  if (aspen::test::skipOnGpuRun())
    return;
  Graph parent(Target::createGeneric(4));
  Graph g = parent.createReplicatedGraph(2);
  CHECK(g.getReplicationFactor() == 2);
  CHECK(parent.getReplicationFactor() == 2); // Aspen replicates the whole graph
  CHECK(g.getTarget().getNumTiles() == 2);
  Tensor index = g.addReplicationIndexConstant("index");
  g.setTileMapping(index, 1);
  program::Sequence prog;
  Tensor all = collectives::allGatherCrossReplica(g, index, prog);
  g.createHostRead("all", all);
  g.createHostRead("index", index);
  Engine e(parent, prog);
  e.load(Device::createCPUDevice());
  e.run();
  for (unsigned rep = 0; rep < 2; ++rep) {
    unsigned got[2] = {9, 9}, own = 9;
    e.readTensor("all", rep, got, got + 2);
    e.readTensor("index", rep, &own, &own + 1);
    CHECK(own == rep);
    CHECK(got[0] == 0);
    CHECK(got[1] == 1);
  }
  refuses<invalid_option>([&] { parent.createReplicatedGraph(2); },
                          {"createReplicatedGraph(2)", "already replicated 2 ways"});
  Graph three(Target::createGeneric(3));
  refuses<invalid_option>([&] { three.createReplicatedGraph(2); },
                          {"must be at least 1 and divide the graph's 3 tiles"});
  Graph used(Target::createGeneric(2));
  used.addVariable(FLOAT, {1}, "early");
  refuses<invalid_option>([&] { used.createReplicatedGraph(2); },
                          {"already has 1 tensors", "before its first tensor"});
}

// The older PopLibs names (popops/Collectives.hpp, deprecated as PopLibs deprecated them) and
// GCL's group names (gcl/Collectives.hpp), through the compatibility headers.
#include <gcl/Collectives.hpp>
#include <popops/Collectives.hpp>
#include <poplar/ReplicatedStreamMode.hpp>

TEST_CASE("the compatibility names: gcl::CommGroup, gcl::allToAllCrossReplica and PopLibs' "
          "replicated collectives",
          "[correctness][replication][collectives][compat]") {
  if (aspen::test::skipOnGpuRun())
    return;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  poplar::Graph g(poplar::Target::createGeneric(1), poplar::replication_factor(2));
  poplar::Tensor x = g.addVariable(poplar::INT, {2}, "x");
  poplar::Tensor out = g.addVariable(poplar::INT, {2}, "out");
  g.setTileMapping(x, 0);
  g.setTileMapping(out, 0);
  poplar::program::Sequence prog;
  prog.add(poplar::program::Copy(
      g.addHostToDeviceFIFO("x", poplar::INT, 2, poplar::ReplicatedStreamMode::REPLICATE), x));
  poplar::Tensor sum = popops::replicatedAllReduce(g, x, popops::Operation::ADD, prog, "sum");
  popops::replicatedAllReduceWithOutput(g, x, out, popops::CollectiveOperator::MAX, prog);
  poplar::Tensor piece = popops::replicatedReduceScatter(g, x, popops::Operation::ADD, prog);
  poplar::Tensor gathered = popops::replicatedAllGather(g, x, prog);
  poplar::Tensor swapped = popops::allToAllPersonalizedExchange(g, x, prog);
  poplar::Tensor own = gcl::allToAllCrossReplica(g, x, prog, {}, "own"); // {}: ALL, as PopART
  poplar::Tensor ownGroup = gcl::allReduceCrossReplica(
      g, x, gcl::CollectiveOperator::ADD, prog, {gcl::CommGroupType::CONSECUTIVE, 1}, "one");
  popops::replicatedAllReduceInPlace(g, x, popops::CollectiveOperator::MUL, prog);
  CHECK(popops::operationToCollectiveOperator(popops::Operation::SQUARE_ADD) ==
        popops::CollectiveOperator::SQUARE_ADD);
  CHECK_THROWS_AS(popops::operationToCollectiveOperator(popops::Operation::LOG_ADD),
                  poputil::poplibs_error);
#pragma GCC diagnostic pop
  std::ostringstream written;
  written << popops::CollectiveOperator::LOGICAL_OR;
  CHECK(written.str() == "LOGICAL_OR");
  std::istringstream read("SQUARE_ADD");
  popops::CollectiveOperator op = popops::CollectiveOperator::ADD;
  read >> op;
  CHECK(op == popops::CollectiveOperator::SQUARE_ADD);
  const std::pair<const char *, poplar::Tensor> reads[] = {
      {"sum", sum}, {"out", out}, {"piece", piece}, {"gathered", gathered},
      {"swapped", swapped}, {"own", own}, {"ownGroup", ownGroup}, {"product", x}};
  for (const auto &[handle, t] : reads)
    g.createHostRead(handle, t);
  poplar::Engine e(g, prog);
  e.load(poplar::Device::createCPUDevice());
  std::int32_t in[2][2] = {{3, -4}, {5, 6}};
  for (unsigned rep = 0; rep < 2; ++rep)
    e.connectStream("x", rep, in[rep]);
  e.run();
  const auto read2 = [&](const char *handle, unsigned rep, std::size_t n) {
    std::vector<std::int32_t> v(n);
    e.readTensor(handle, rep, v.data(), v.data() + n);
    return v;
  };
  using V = std::vector<std::int32_t>;
  for (unsigned rep = 0; rep < 2; ++rep) {
    INFO("replica " << rep);
    CHECK(read2("sum", rep, 2) == V{8, 2});
    CHECK(read2("out", rep, 2) == V{5, 6});
    CHECK(read2("piece", rep, 1) == V{rep == 0 ? 8 : 2});
    CHECK(read2("gathered", rep, 4) == V{3, -4, 5, 6});
    CHECK(read2("swapped", rep, 2) == V{in[0][rep], in[1][rep]});
    CHECK(read2("own", rep, 2) == V{in[0][rep], in[1][rep]});
    CHECK(read2("ownGroup", rep, 2) == V{in[rep][0], in[rep][1]});
    CHECK(read2("product", rep, 2) == V{15, -24});
  }
}
