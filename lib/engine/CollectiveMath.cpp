// The collectives' arithmetic (CollectiveMath.hpp).
#include "CollectiveMath.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Error.hpp>
#include <aspen/HalfFloat.hpp>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace aspen::detail::collective {

namespace {

using collectives::CollectiveOperator;

template <class T> T load(const Bytes &b, std::size_t i) {
  T v;
  std::memcpy(&v, b.data() + i * sizeof(T), sizeof(T));
  return v;
}

template <class T> void store(Bytes &b, std::size_t i, T v) {
  std::memcpy(b.data() + i * sizeof(T), &v, sizeof(T));
}

// Integers wrap: they are combined as unsigned values at least as wide as unsigned int, so
// that no promotion to int can overflow (unsigned short * unsigned short would).
template <class T>
using Wrapping =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// a op b, for the operators that combine two values (ADD, MUL, MIN, MAX, the logical ones;
// SQUARE_ADD and MEAN add).
template <class T> T combineTwo(CollectiveOperator op, T a, T b) {
  switch (op) {
  case CollectiveOperator::MUL:
    if constexpr (std::is_integral_v<T>)
      return T(Wrapping<T>(a) * Wrapping<T>(b));
    else
      return a * b;
  case CollectiveOperator::MIN:
    return std::min(a, b);
  case CollectiveOperator::MAX:
    return std::max(a, b);
  case CollectiveOperator::LOGICAL_AND:
    return T(a && b);
  case CollectiveOperator::LOGICAL_OR:
    return T(a || b);
  default:
    if constexpr (std::is_integral_v<T>)
      return T(Wrapping<T>(a) + Wrapping<T>(b));
    else
      return a + b;
  }
}

template <class T> T squared(T v) { return combineTwo(CollectiveOperator::MUL, v, v); }

// The members' values of type Stored, combined in member order in type Acc (float for HALF),
// element by element.
template <class Stored, class Acc>
Bytes combineAll(CollectiveOperator op, const std::vector<const Bytes *> &in) {
  Bytes out(in.front()->size());
  const std::size_t elements = out.size() / sizeof(Stored);
  for (std::size_t i = 0; i < elements; ++i) {
    Acc acc = Acc(load<Stored>(*in[0], i));
    if (op == CollectiveOperator::SQUARE_ADD)
      acc = squared(acc);
    for (std::size_t r = 1; r < in.size(); ++r) {
      const Acc v = Acc(load<Stored>(*in[r], i));
      acc = combineTwo(op, acc, op == CollectiveOperator::SQUARE_ADD ? squared(v) : v);
    }
    if constexpr (!std::is_integral_v<Acc>)
      if (op == CollectiveOperator::MEAN)
        acc = acc / Acc(in.size());
    store<Stored>(out, i, Stored(acc));
  }
  return out;
}

// combineAll for the element type: its values' host type and the type they combine in.
Bytes reduce(const CollectiveShape &shape, const std::vector<const Bytes *> &in) {
  const auto op = CollectiveOperator(shape.op);
  switch (shape.type.id()) {
  case TypeId::Float:
    return combineAll<float, float>(op, in);
  case TypeId::Half:
    return combineAll<half, float>(op, in);
  case TypeId::Int:
    return combineAll<std::int32_t, std::int32_t>(op, in);
  case TypeId::UnsignedInt:
    return combineAll<std::uint32_t, std::uint32_t>(op, in);
  case TypeId::Short:
    return combineAll<std::int16_t, std::int16_t>(op, in);
  case TypeId::UnsignedShort:
    return combineAll<std::uint16_t, std::uint16_t>(op, in);
  case TypeId::Char:
    return combineAll<char, char>(op, in);
  case TypeId::SignedChar:
    return combineAll<signed char, signed char>(op, in);
  case TypeId::UnsignedChar:
  case TypeId::Bool:
    return combineAll<std::uint8_t, std::uint8_t>(op, in);
  case TypeId::LongLong:
    return combineAll<std::int64_t, std::int64_t>(op, in);
  case TypeId::UnsignedLongLong:
    return combineAll<std::uint64_t, std::uint64_t>(op, in);
  default:
    throw internal_error("a collective reduction of type " + shape.type.toString());
  }
}

Bytes concatenated(const std::vector<const Bytes *> &in) {
  Bytes all;
  for (const Bytes *b : in)
    all.insert(all.end(), b->begin(), b->end());
  return all;
}

// The whole of one group, from its members' contributions in position order.
Bytes groupWhole(const CompiledKernel &k, const std::vector<const Bytes *> &members) {
  switch (k.kind) {
  case KernelKind::AllReduce:
  case KernelKind::ReduceScatter:
    return reduce(k.collective, members);
  case KernelKind::Broadcast:
    return *members.at(k.collective.root);
  default: // AllGather, AllToAll, CrossReplicaCopy (one group of all replicas)
    return concatenated(members);
  }
}

Bytes slice(const Bytes &b, std::size_t offset, std::size_t bytes) {
  return Bytes(b.begin() + std::ptrdiff_t(offset), b.begin() + std::ptrdiff_t(offset + bytes));
}

} // namespace

bool exchanges(const CompiledKernel &k) {
  return k.kind != KernelKind::AllReduce ||
         CollectiveOperator(k.collective.op) != CollectiveOperator::LOCAL;
}

bool elementwise(const CompiledKernel &k) {
  return exchanges(k) &&
         (k.kind == KernelKind::AllReduce || k.kind == KernelKind::ReduceScatter) &&
         collectives::CommGroupType(k.collective.groupType) == collectives::CommGroupType::ALL;
}

Bytes reduceChunk(const CompiledKernel &k, const std::vector<Bytes> &chunks) {
  std::vector<const Bytes *> in;
  for (const Bytes &b : chunks)
    in.push_back(&b);
  return reduce(k.collective, in);
}

Bytes whole(const CompiledKernel &k, const std::vector<Bytes> &contributions) {
  const auto r = std::uint32_t(contributions.size());
  const ReplicaGroups groups = k.collective.groups();
  Bytes all;
  for (std::uint32_t g = 0; g < groups.count(r); ++g) {
    std::vector<const Bytes *> members;
    for (std::uint32_t p = 0; p < groups.size; ++p)
      members.push_back(&contributions.at(groups.member(g, p, r)));
    const Bytes part = groupWhole(k, members);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

Bytes resultOf(const CompiledKernel &k, unsigned replica, unsigned replicas, Bytes whole) {
  const CollectiveShape &shape = k.collective;
  const ReplicaGroups groups = shape.groups();
  const std::size_t elementBytes = shape.type.size(), dataBytes = shape.elements * elementBytes;
  const std::size_t groupBytes = whole.size() / groups.count(replicas),
                    groupStart = groups.groupOf(replica, replicas) * groupBytes;
  const std::uint32_t position = groups.positionOf(replica, replicas);
  switch (k.kind) {
  case KernelKind::ReduceScatter: { // this member's piece, zero past the data's end
    const std::size_t piece = shape.resultElements(k.kind), first = position * piece;
    Bytes own(piece * elementBytes, 0);
    if (first < shape.elements)
      std::memcpy(own.data(), whole.data() + groupStart + first * elementBytes,
                  std::min(piece, std::size_t(shape.elements) - first) * elementBytes);
    return own;
  }
  case KernelKind::AllToAll: { // slice [position] of every member's data, in member order
    const std::size_t sliceBytes = dataBytes / groups.size;
    Bytes own;
    for (std::uint32_t j = 0; j < groups.size; ++j) {
      const auto from = whole.begin() + std::ptrdiff_t(groupStart + j * dataBytes +
                                                        position * sliceBytes);
      own.insert(own.end(), from, from + std::ptrdiff_t(sliceBytes));
    }
    return own;
  }
  case KernelKind::CrossReplicaCopy:
    return slice(whole, shape.sources.at(replica) * dataBytes, dataBytes);
  default: // the group's whole
    return groups.count(replicas) == 1 ? whole : slice(whole, groupStart, groupBytes);
  }
}

} // namespace aspen::detail::collective
