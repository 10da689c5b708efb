// The collectives' arithmetic (engine/CollectiveMath.hpp) as a transport sees it: which kernels
// are element-wise (and that cutting those into chunks gives whole()'s bytes), and the layout
// of a grouped whole: each group's whole in group order, every replica's result out of it.
#include "engine/CollectiveMath.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

using namespace aspen;
using namespace aspen::detail;
using collective::Bytes;
using collectives::CollectiveOperator;
using collectives::CommGroupType;

namespace {

CompiledKernel kernelOf(KernelKind kind, CommGroupType type, std::uint32_t k, std::uint64_t n,
                        CollectiveOperator op = CollectiveOperator::ADD) {
  CompiledKernel kernel;
  kernel.kind = kind;
  kernel.collective.op = std::uint32_t(op);
  kernel.collective.type = INT;
  kernel.collective.elements = n;
  kernel.collective.groupType = std::uint32_t(type);
  kernel.collective.groupSize = k;
  return kernel;
}

// Replica r's n INT values: 100 r + i.
std::vector<Bytes> contributionsOf(unsigned replicas, std::size_t n) {
  std::vector<Bytes> all;
  for (unsigned r = 0; r < replicas; ++r) {
    Bytes b(n * 4);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t v = std::int32_t(100 * r + i);
      std::memcpy(b.data() + i * 4, &v, 4);
    }
    all.push_back(b);
  }
  return all;
}

std::vector<std::int32_t> ints(const Bytes &b) {
  std::vector<std::int32_t> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

} // namespace

TEST_CASE("only ungrouped reductions are element-wise, and their chunks give whole()'s bytes",
          "[unit][collectives]") {
  const unsigned R = 4;
  const std::size_t n = 5;
  CHECK(collective::elementwise(kernelOf(KernelKind::AllReduce, CommGroupType::ALL, R, n)));
  CHECK(collective::elementwise(kernelOf(KernelKind::ReduceScatter, CommGroupType::ALL, R, n)));
  CHECK_FALSE(collective::elementwise(
      kernelOf(KernelKind::AllReduce, CommGroupType::ALL, R, n, CollectiveOperator::LOCAL)));
  // A CONSECUTIVE group of all replicas reduces the same, but is not claimed element-wise.
  for (CommGroupType type : {CommGroupType::CONSECUTIVE, CommGroupType::ORTHOGONAL})
    for (std::uint32_t k : {1u, 2u, 4u})
      CHECK_FALSE(collective::elementwise(kernelOf(KernelKind::AllReduce, type, k, n)));
  for (KernelKind kind : {KernelKind::AllGather, KernelKind::Broadcast, KernelKind::AllToAll,
                          KernelKind::CrossReplicaCopy})
    CHECK_FALSE(collective::elementwise(kernelOf(kind, CommGroupType::ALL, R, R)));
  // Chunks [0, 2) and [2, 5) of every contribution, reduced apart into their places (the
  // second in place over replica 0's, as a transport may), are whole().
  const CompiledKernel sum = kernelOf(KernelKind::AllReduce, CommGroupType::ALL, R, n);
  std::vector<Bytes> in = contributionsOf(R, n);
  const Bytes expected = collective::whole(sum, in);
  std::vector<const std::uint8_t *> first, second;
  for (const Bytes &b : in) {
    first.push_back(b.data());
    second.push_back(b.data() + 8);
  }
  Bytes joined(n * 4);
  collective::reduceInto(sum.collective, first, 2, joined.data());
  collective::reduceInto(sum.collective, second, 3, in[0].data() + 8);
  std::memcpy(joined.data() + 8, in[0].data() + 8, 12);
  CHECK(joined == expected);
  // The all-reduce and the all-gather of all replicas may run straight into the result; nothing
  // grouped or permuted may.
  CHECK(collective::direct(sum));
  CHECK(collective::direct(kernelOf(KernelKind::AllGather, CommGroupType::ALL, R, n)));
  CHECK_FALSE(collective::direct(kernelOf(KernelKind::AllGather, CommGroupType::CONSECUTIVE, 2, n)));
  CHECK_FALSE(collective::direct(kernelOf(KernelKind::ReduceScatter, CommGroupType::ALL, R, n)));
  CHECK_FALSE(collective::direct(kernelOf(KernelKind::Broadcast, CommGroupType::ALL, R, n)));
  CHECK(ints(joined) == std::vector<std::int32_t>{600, 604, 608, 612, 616});
}

TEST_CASE("a grouped whole is each group's in group order, and each replica's result is its "
          "group's",
          "[unit][collectives]") {
  const unsigned R = 4;
  const std::vector<Bytes> in = contributionsOf(R, 2);
  // ORTHOGONAL pairs {0, 2}, {1, 3}: group 0's sum, then group 1's.
  const CompiledKernel sum = kernelOf(KernelKind::AllReduce, CommGroupType::ORTHOGONAL, 2, 2);
  const Bytes w = collective::whole(sum, in);
  CHECK(ints(w) == std::vector<std::int32_t>{200, 202, 400, 402});
  CHECK(ints(collective::resultOf(sum, 3, R, w)) == std::vector<std::int32_t>{400, 402});
  CHECK(ints(collective::resultOf(sum, 2, R, w)) == std::vector<std::int32_t>{200, 202});
  // CONSECUTIVE pairs {0, 1}, {2, 3}: an all-gather's group whole is its members' data.
  const CompiledKernel gather = kernelOf(KernelKind::AllGather, CommGroupType::CONSECUTIVE, 2, 2);
  const Bytes g = collective::whole(gather, in);
  CHECK(g.size() == in.size() * 8);
  CHECK(ints(collective::resultOf(gather, 3, R, g)) ==
        std::vector<std::int32_t>{200, 201, 300, 301});
  // CrossReplicaCopy: replica d gets sources[d]'s data.
  CompiledKernel copy = kernelOf(KernelKind::CrossReplicaCopy, CommGroupType::ALL, R, 2);
  copy.collective.sources = {1, 2, 3, 0};
  const Bytes c = collective::whole(copy, in);
  CHECK(ints(collective::resultOf(copy, 0, R, c)) == std::vector<std::int32_t>{100, 101});
  CHECK(ints(collective::resultOf(copy, 3, R, c)) == std::vector<std::int32_t>{0, 1});
}
