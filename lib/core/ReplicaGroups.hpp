// The replica groups of a collective (GCL's CommGroup, aspen/Collectives.hpp) as arithmetic,
// shared by the graph side (checking a call's result size), the compiled graph (the executable
// keeps the groups) and the engine (each replica's group, its position in it, its result).
//
// Of r replicas and groups of k (k divides r, checked when the step is made): CONSECUTIVE
// groups are {g*k .. g*k+k-1}; ORTHOGONAL ones {g, g+m, g+2m, ...} with m = r / k; ALL is the
// one CONSECUTIVE group of k = r. A member's position is its rank in its group, in increasing
// replica order.
#pragma once

#include "core/KernelKinds.hpp"

#include <cstdint>

namespace aspen::detail {

struct ReplicaGroups {
  std::uint32_t size = 1;  // k
  bool orthogonal = false; // ORTHOGONAL, else consecutive (ALL included)

  std::uint32_t count(std::uint32_t replicas) const { return replicas / size; }
  std::uint32_t groupOf(std::uint32_t replica, std::uint32_t replicas) const {
    return orthogonal ? replica % count(replicas) : replica / size;
  }
  std::uint32_t positionOf(std::uint32_t replica, std::uint32_t replicas) const {
    return orthogonal ? replica / count(replicas) : replica % size;
  }
  std::uint32_t member(std::uint32_t group, std::uint32_t position,
                       std::uint32_t replicas) const {
    return orthogonal ? group + position * count(replicas) : group * size + position;
  }
};

// The result elements of collective `kind` over groups of k with n elements of data: n / k
// rounded up (reduce-scatter), k * n (all-gather), n (the others).
inline std::uint64_t collectiveResultElements(KernelKind kind, std::uint64_t n,
                                              std::uint64_t k) {
  if (kind == KernelKind::ReduceScatter)
    return (n + k - 1) / k;
  return kind == KernelKind::AllGather ? n * k : n;
}

} // namespace aspen::detail
