// The arithmetic of the cross-replica collectives, apart from how the replicas' bytes travel:
// from every replica's contribution (in replica order) the bytes every replica shares (the
// whole), and each replica's result out of it. Every transport (in process, MPI) ends in these,
// so every transport gives the same bytes.
#pragma once

#include "compiler/CompiledGraph.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace aspen::detail::collective {

using Bytes = std::vector<std::uint8_t>;

// Whether collective kernel k moves data between replicas (an all-reduce with LOCAL does not:
// each replica's result is its own data).
bool exchanges(const CompiledKernel &k);

// The whole of collective kernel k from the contributions of all `contributions.size()`
// replicas, in replica order: each group's whole (ReplicaGroups.hpp), one after the other in
// group order; a group's whole is made from its members' contributions in position order.
// All-reduce and reduce-scatter: the reduction (every element combined in member order);
// all-gather and all-to-all: the contributions one after the other; broadcast: the root
// member's; CrossReplicaCopy (one group of all replicas): every contribution in replica order.
Bytes whole(const CompiledKernel &k, const std::vector<Bytes> &contributions);

// Whether k's whole is element-wise: its element i is the reduction of every replica's element
// i (the all-reduce and reduce-scatter of ALL replicas; never a grouped or permuting
// collective). A transport may then cut the elements into chunks and reduce each apart
// (reduceInto), with the same bytes as whole().
bool elementwise(const CompiledKernel &k);
// Whether k's groups are ALL: one group of every replica.
bool ungrouped(const CompiledKernel &k);
// Whether a transport may run k for an engine of one replica straight from its data into its
// result (CollectiveTransport::runDirect): the element-wise all-reduce (result = whole), and the
// all-gather of ALL replicas (result = whole, the contributions in replica order).
bool direct(const CompiledKernel &k);
// The reduction of `elements` elements of each replica's contribution (`in`: one pointer a
// replica, in replica order) into `out` (which may be one of them).
void reduceInto(const CollectiveShape &shape, const std::vector<const std::uint8_t *> &in,
                std::size_t elements, std::uint8_t *out);

// Replica `replica`'s result (k's result operand's bytes) out of the whole, with `replicas`
// replicas: its group's whole, or of it, reduce-scatter's piece at the replica's position,
// all-to-all's slice [position] of each member's data, CrossReplicaCopy's source's data.
Bytes resultOf(const CompiledKernel &k, unsigned replica, unsigned replicas, Bytes whole);

// One line naming collective kernel k and what it exchanges ("'grads' AllReduce ADD 4096 FLOAT"):
// ranks compare these at load (the MPI transport's fingerprint check).
std::string describe(const CompiledKernel &k);

} // namespace aspen::detail::collective
